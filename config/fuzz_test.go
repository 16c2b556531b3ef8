package config

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

var updateFuzzSeeds = flag.Bool("update", false, "regenerate testdata/fuzz/FuzzLoad seeds")

// loadSeed is one FuzzLoad input: a config file body and one --set string
// ("" for none).
type loadSeed struct {
	body string
	set  string
}

// fuzzSeeds are the repository's own configs plus broken ones that seed
// FuzzLoad; -update writes them to testdata/fuzz/FuzzLoad.
func fuzzSeeds(t testing.TB) map[string]loadSeed {
	seeds := map[string]loadSeed{
		"empty":             {"", ""},
		"empty-map":         {"{}\n", ""},
		"null":              {"~\n", ""},
		"top-level-list":    {"- 1\n- 2\n", ""},
		"top-level-scalar":  {"42\n", ""},
		"yaml-syntax":       {"pretrain: [\n", ""},
		"tab-indent":        {"pretrain:\n\tepochs: 3\n", ""},
		"unknown-key":       {"bogus: 1\n", ""},
		"unknown-nested":    {"pretrain:\n  lerning_rate: 0.1\n", ""},
		"wrong-type":        {"pretrain:\n  epochs: many\n", ""},
		"scalar-section":    {"pretrain: 5\n", ""},
		"list-section":      {"dbn: [1, 2]\n", ""},
		"map-for-scalar":    {"name: {a: \"x\\ny\"}\n", ""},
		"map-for-list":      {"dbn:\n  layers: {a: 1}\n", ""},
		"nan-inf":           {"finetune:\n  learning_rate: .nan\npretrain:\n  weight_decay: -.inf\n", ""},
		"huge-int":          {"pretrain:\n  epochs: 99999999999999999999999\n", ""},
		"bad-duration":      {"cluster:\n  join_timeout: soon\n", ""},
		"bad-url":           {"cluster:\n  nats_url: \"nats://[::1\"\n", ""},
		"name-with-slash":   {"name: a/b\n", ""},
		"name-with-newline": {"name: \"a\\nb\"\n", ""},
		"alias":             {"x: &a [784, 10]\ndbn:\n  layers: *a\n", ""},
		"merge-key":         {"base: &b {epochs: 2}\npretrain:\n  <<: *b\n", ""},
		"multi-document":    {"name: a\n---\nname: b\n", ""},
		"sweep-bad":         {"sweep:\n  repeats: 0\n  vary:\n    - key: bogus\n      values: []\n", ""},
		"idx-missing-dir":   {"data: {source: idx, dir: /nonexistent}\n", ""},
		"bad-enum":          {"pretrain: {mode: turbo, middle: [samples]}\ndbn: {visible: 1}\n", ""},
		"set-bad-enum":      {"name: ok\n", "cluster.transport=\"pi\ngeon\""},
		"set-ok":            {"name: ok\n", "pretrain.epochs=2"},
		"set-section":       {"name: ok\n", "pretrain=5"},
		"set-bad-yaml":      {"name: ok\n", "pretrain.epochs=["},
		"set-no-equals":     {"name: ok\n", "pretrain.epochs"},
		"set-unknown-key":   {"name: ok\n", "pretrain.speed=11"},
		"set-null":          {"name: ok\n", "name="},
		// Line breaks in keys and values must not break the one-line error.
		"key-with-cr":        {"\"bo\\rgus\": 1\n", ""},
		"key-with-newline":   {"\"x\\ny\": 2\n", ""},
		"value-with-cr":      {"pretrain:\n  epochs: \"a\\rb\"\n", ""},
		"map-value-with-cr":  {"name: {a: \"x\\ry\"}\n", ""},
		"set-value-newline":  {"name: ok\n", "pretrain.epochs=[\n"},
		"set-key-newline":    {"name: ok\n", "bo\ngus=1"},
		"set-string-for-int": {"name: ok\n", "pretrain.epochs=\"a\nb\""},
		// Issue 13: wrong types, unknown keys among other problems, absurd
		// values.
		"float-for-int":        {"pretrain:\n  epochs: 1.7\ndbn:\n  layers: [784, 2.5, abc, [1]]\n", ""},
		"set-float-for-int":    {"name: ok\n", "finetune.batch_size=12.5"},
		"unknown-among-others": {"bogus: 1\npretrain: {epochs: 0, lerning_rate: 0.1}\n", "cluster.speed=2"},
		"huge-rate":            {"pretrain:\n  learning_rate: {initial: 1e308}\n  weight_decay: 1\n", ""},
		"duration-number":      {"cluster:\n  join_timeout: 60\n  colocate: 2\n", ""},
		"negative-seed":        {"seed: -1\n", ""},
		"vary-not-maps":        {"sweep:\n  vary: [1, {key: pretrain.epochs, values: [1]}]\n", ""},
		"set-section-map":      {"name: ok\n", "pretrain.learning_rate={initial: -1}"},
	}
	var files []string
	for _, pattern := range []string{"../configs/*.yaml", "../experiments/*.yaml"} {
		m, err := filepath.Glob(pattern)
		if err != nil {
			t.Fatal(err)
		}
		files = append(files, m...)
	}
	if len(files) == 0 {
		t.Fatal("no configs under ../configs or ../experiments")
	}
	for _, p := range files {
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		name := filepath.Base(filepath.Dir(p)) + "-" + strings.TrimSuffix(filepath.Base(p), ".yaml")
		seeds[name] = loadSeed{string(b), ""}
	}
	return seeds
}

func TestUpdateFuzzSeeds(t *testing.T) {
	if !*updateFuzzSeeds {
		t.Skip("seeds in testdata/fuzz/FuzzLoad are regenerated with -update")
	}
	dir := filepath.Join("testdata", "fuzz", "FuzzLoad")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	for name, s := range fuzzSeeds(t) {
		// The corpus file format of go test -fuzz.
		text := fmt.Sprintf("go test fuzz v1\n[]byte(%s)\nstring(%s)\n", strconv.Quote(s.body), strconv.Quote(s.set))
		if err := os.WriteFile(filepath.Join(dir, "seed-"+name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// FuzzLoad checks that Load never panics on any config file body and --set
// string, that every error is one line naming the file, and that whatever it
// accepts passes Validate.
func FuzzLoad(f *testing.F) {
	for _, s := range fuzzSeeds(f) {
		f.Add([]byte(s.body), s.set)
	}
	f.Fuzz(func(t *testing.T, body []byte, set string) {
		path := filepath.Join(t.TempDir(), "fuzz.yaml")
		if err := os.WriteFile(path, body, 0o644); err != nil {
			t.Fatal(err)
		}
		var sets []string
		if set != "" {
			sets = []string{set}
		}
		c, err := Load(path, sets)
		if err != nil {
			if c != nil {
				t.Fatalf("Load() = %+v and error %q; want nil with an error", c, err)
			}
			msg := err.Error()
			if strings.ContainsAny(msg, "\n\r") {
				t.Fatalf("Load() error is not one line: %q", msg)
			}
			if !strings.HasPrefix(msg, "config "+path+": ") {
				t.Fatalf("Load() error %q does not start with %q", msg, "config "+path+": ")
			}
			return
		}
		if c.File != path {
			t.Fatalf("Load() = config with File %q; want %q", c.File, path)
		}
		if err := c.Validate(); err != nil {
			t.Fatalf("Load() accepted a config that Validate rejects: %v", err)
		}
	})
}
