package config

import (
	"bytes"
	"errors"
	"math"
	"os"
	"reflect"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
)

// TestReference: every key of Config, and only those, has an entry with
// its text, its range and its default, and every section says what it is
// for.
func TestReference(t *testing.T) {
	keys, _ := configKeys(Default())
	if got, want := slices.Sorted(slices.Values(keys)), Keys(); !slices.Equal(got, want) {
		t.Errorf("the keys of Config are\n  %v\nthe keys of Defaults\n  %v\nwant the same", got, want)
	}
	for k := range keyDocs {
		if !slices.Contains(keys, k) {
			t.Errorf("keyDocs documents %s, which is no key of Config", k)
		}
	}
	ref := Reference()
	if len(ref) != len(keys) {
		t.Fatalf("Reference() has %d keys; want the %d of Config", len(ref), len(keys))
	}
	for i, d := range ref {
		if d.Key != keys[i] {
			t.Errorf("Reference()[%d].Key = %s; want %s, in the order of Config", i, d.Key, keys[i])
		}
		if _, ok := keyDocs[d.Key]; !ok {
			t.Errorf("key %s has no entry in keyDocs (config/reference.go): add what it does and the values it takes", d.Key)
			continue
		}
		if strings.TrimSpace(d.Text) == "" {
			t.Errorf("key %s: no description in keyDocs", d.Key)
		}
		if strings.TrimSpace(d.Allowed) == "" {
			t.Errorf("key %s: no range or allowed values in keyDocs", d.Key)
		}
		if d.Default == "" {
			t.Errorf("key %s: no default", d.Key)
		}
		if d.Env != EnvVar(d.Key) {
			t.Errorf("key %s: Env = %s; want %s", d.Key, d.Env, EnvVar(d.Key))
		}
	}
	for _, s := range append(sections(), "") {
		if !strings.Contains(s, ".") && sectionDocs[s] == "" {
			t.Errorf("section %q has no entry in sectionDocs", s)
		}
	}
	for _, e := range enums {
		i := slices.IndexFunc(ref, func(d KeyDoc) bool { return d.Key == e.key })
		if i < 0 || !strings.Contains(ref[i].Allowed, "`"+e.values[0].String()+"`") {
			t.Errorf("enum key %s: Allowed does not list its values", e.key)
		}
	}
	want := map[string]string{
		"dbn.layers":           "[784, 500, 500, 2000]",
		"pretrain.mode":        "pipelined",
		"cluster.join_timeout": "1m0s",
		"cluster.nats_url":     `""`,
		"cluster.machine_cpus": "[]",
		"name":                 "(the config file's base name)",
	}
	for _, d := range ref {
		if w, ok := want[d.Key]; ok && d.Default != w {
			t.Errorf("Reference(): %s has default %s; want %s", d.Key, d.Default, w)
		}
	}
}

// TestReferenceFile: docs/configuration.md is what the code documents.
func TestReferenceFile(t *testing.T) {
	const path = "../docs/configuration.md"
	var want bytes.Buffer
	if err := WriteReference(&want); err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (make docs writes it)", err)
	}
	if !bytes.Equal(got, want.Bytes()) {
		gl, wl := strings.Split(string(got), "\n"), strings.Split(want.String(), "\n")
		i := 0
		for i < len(gl) && i < len(wl) && gl[i] == wl[i] {
			i++
		}
		line := func(ls []string) string {
			if i < len(ls) {
				return ls[i]
			}
			return "(end of file)"
		}
		t.Errorf("%s differs from the reference the code makes, first at line %d:\n  file: %s\n  code: %s\nrun make docs", path, i+1, line(gl), line(wl))
	}
}

// interval reads the range an Allowed starts with: [a, b], (a, b], [a,
// b), (a, b) or >= a.
var interval = regexp.MustCompile(`^(?:([\[(])(-?[0-9.]+), (-?[0-9.]+)([\])])|>= (-?[0-9.]+))(?:[;,]|$)`)

// TestReferenceRanges: where the reference gives a key's range as an
// interval, Validate accepts its bounds when they are in, and refuses them
// when they are out, and the values just beyond them.
func TestReferenceRanges(t *testing.T) {
	cfg := write(t, "ranges.yaml", "data: {source: synthetic}\n")
	if _, err := Load(cfg, nil); err != nil {
		t.Fatal(err)
	}
	_, values := configKeys(Default())
	checked := 0
	for i, d := range Reference() {
		m := interval.FindStringSubmatch(d.Allowed)
		if m == nil {
			continue
		}
		checked++
		integer := values[i].Kind() != reflect.Float64
		// beyond is the nearest value past bound, away from the range.
		beyond := func(bound float64, down bool) float64 {
			switch {
			case integer && down:
				return bound - 1
			case integer:
				return bound + 1
			case down:
				return math.Nextafter(bound, math.Inf(-1))
			}
			return math.Nextafter(bound, math.Inf(1))
		}
		type probe struct {
			val float64
			ok  bool
		}
		var probes []probe
		num := func(s string) float64 {
			f, err := strconv.ParseFloat(s, 64)
			if err != nil {
				t.Fatalf("key %s: Allowed %q: %v", d.Key, d.Allowed, err)
			}
			return f
		}
		if m[5] != "" {
			lo := num(m[5])
			probes = append(probes, probe{lo, true}, probe{beyond(lo, true), false})
		} else {
			lo, hi := num(m[2]), num(m[3])
			if m[1] == "[" {
				probes = append(probes, probe{lo, true}, probe{beyond(lo, true), false})
			} else {
				probes = append(probes, probe{lo, false}, probe{beyond(lo, false), true})
			}
			if m[4] == "]" {
				probes = append(probes, probe{hi, true}, probe{beyond(hi, false), false})
			} else {
				probes = append(probes, probe{hi, false}, probe{beyond(hi, true), true})
			}
		}
		for _, p := range probes {
			val := strconv.FormatFloat(p.val, 'g', -1, 64)
			_, err := Load(cfg, []string{d.Key + "=" + val})
			var ps Problems
			if err != nil && !errors.As(err, &ps) {
				t.Fatalf("--set %s=%s: %v", d.Key, val, err)
			}
			refused := slices.ContainsFunc(ps, func(q Problem) bool { return baseKey(q.Key) == d.Key })
			if refused == p.ok {
				t.Errorf("%s = %s: refused %v (%v); want %v, as the reference's %q says", d.Key, val, refused, err, !p.ok, d.Allowed)
			}
		}
	}
	if checked < 30 {
		t.Errorf("checked the ranges of %d keys; want the intervals of at least 30", checked)
	}
}

// TestYAMLRoundTrip: the YAML of a config, read back by Load, is the same
// config, and writes the same YAML.
func TestYAMLRoundTrip(t *testing.T) {
	p := write(t, "trip.yaml", `
data: {source: synthetic, train_limit: 100, scale: unit}
dbn: {layers: [16, 8, 4], visible: gaussian}
pretrain: {mode: greedy, learning_rate: {initial: 0.05, final: 1e-05}, settle: {schedule: after}, l_copy: every_window}
cluster: {machine_cpus: [0.5, 0.25], join_timeout: 90s, plan: "1,2", nats_url: "nats://a:4222,nats://b:4222"}
finetune: {init: random, label_smoothing: 0.1}
reliability: {save_every: 0s}
monitor: {http: ""}
sweep:
  repeats: 2
  vary:
    - {key: dbn.layers, values: [[16, 8], [16, 8, 8]]}
    - {key: pretrain.mode, values: [greedy, pipelined]}
`)
	t.Setenv("PIPEDBN_SEED", "7")
	c, err := Load(p, []string{"pretrain.epochs=3", "data.label_column="})
	if err != nil {
		t.Fatal(err)
	}
	y, err := c.YAML()
	if err != nil {
		t.Fatal(err)
	}
	os.Unsetenv("PIPEDBN_SEED")
	again, err := Load(write(t, "other-name.yaml", string(y)), nil)
	if err != nil {
		t.Fatalf("Load(the YAML of a config): %v\n%s", err, y)
	}
	again.File = c.File
	if !reflect.DeepEqual(again, c) {
		t.Errorf("Load(YAML(c)) = %+v;\nwant c = %+v\nYAML:\n%s", again, c, y)
	}
	if c.Seed != 7 || c.Pretrain.Epochs != 3 || c.Name != "trip" || c.Cluster.JoinTimeout != 90*time.Second {
		t.Errorf("c = %+v; want the environment's seed, --set's epochs and the file's name", c)
	}
	y2, err := again.YAML()
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(y, y2) {
		t.Errorf("YAML(Load(YAML(c))) =\n%s\nwant YAML(c) =\n%s", y2, y)
	}
	for _, w := range []string{"name: trip\n", "layers: [16, 8, 4]\n", "join_timeout: 1m30s\n", "mode: greedy\n"} {
		if !strings.Contains(string(y), w) {
			t.Errorf("YAML(c) =\n%s\nwant it to contain %q", y, w)
		}
	}
}
