package config

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/pipedbn/pipedbn/rbm"
)

func write(t *testing.T, name, body string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// The defaults are the contract's (../shared/CONTRACT.md).
func TestDefaults(t *testing.T) {
	c, err := Load(write(t, "exp-1.yaml", "{}\n"), nil)
	if err != nil {
		t.Fatal(err)
	}
	if c.Name != "exp-1" {
		t.Errorf("Name = %q; want the file's base name exp-1", c.Name)
	}
	if c.Seed != 1 || c.Data.Source != FashionMNIST || c.Data.Dir != "/usr/share/datasets/fashion-mnist" ||
		!slices.Equal(c.DBN.Layers, []int{784, 500, 500, 2000}) || c.DBN.Visible != rbm.Bernoulli ||
		c.Pretrain.Mode != Pipelined || c.Pretrain.Epochs != 20 || c.Pretrain.BatchSize != 256 ||
		c.Pretrain.KBatches != 10 || c.Pretrain.CDK != 1 || c.Pretrain.Middle != rbm.Probabilities ||
		c.Pretrain.LearningRate != (Schedule{0.015, 0.002}) || c.Pretrain.Momentum != (Schedule{0.5, 0.9}) ||
		c.Pretrain.WeightDecay != 0.0002 || c.Cluster.NatsURL != "" || c.Cluster.Slaves != 0 ||
		c.Cluster.JoinTimeout != 60*time.Second || c.Cluster.CPUsPerWorker != 0 || c.Cluster.Transport != NATS ||
		c.Finetune.Epochs != 10 || c.Finetune.BatchSize != 128 || c.Finetune.LearningRate != 0.1 ||
		c.Finetune.Momentum != 0.9 || c.Finetune.InputDropout != 0 || c.Output.Dir != "" {
		t.Errorf("defaults = %+v; want the contract's", c)
	}
}

// Overrides apply in order: file, then PIPEDBN_* environment, then --set.
func TestOverrides(t *testing.T) {
	p := write(t, "o.yaml", "name: o\npretrain:\n  epochs: 3\n  batch_size: 64\n  k_batches: 2\n")
	t.Setenv("PIPEDBN_PRETRAIN_BATCH_SIZE", "32")
	t.Setenv("PIPEDBN_PRETRAIN_K_BATCHES", "5")
	if got := EnvVar("cluster.nats_url"); got != "PIPEDBN_CLUSTER_NATS_URL" {
		t.Errorf("EnvVar(cluster.nats_url) = %s; want PIPEDBN_CLUSTER_NATS_URL", got)
	}
	t.Setenv(EnvVar("cluster.nats_url"), "nats://nats:4222")
	c, err := Load(p, []string{"pretrain.k_batches=7", "dbn.layers=[784, 100]", "pretrain.learning_rate={initial: 0.1, final: 0.01}", "cluster.join_timeout=5s"})
	if err != nil {
		t.Fatal(err)
	}
	if c.Pretrain.Epochs != 3 || c.Pretrain.BatchSize != 32 || c.Pretrain.KBatches != 7 ||
		!slices.Equal(c.DBN.Layers, []int{784, 100}) || c.Pretrain.LearningRate != (Schedule{0.1, 0.01}) ||
		c.Cluster.NatsURL != "nats://nats:4222" || c.Cluster.JoinTimeout != 5*time.Second {
		t.Errorf("config = %+v; want file < env < --set", c)
	}
}

// Validate reports every problem at once, each naming key and value.
func TestValidateReportsAll(t *testing.T) {
	p := write(t, "bad.yaml", `
name: "a/b"
data: {source: synthetic, train_limit: -1}
dbn: {layers: [10, 0, 5], visible: poisson}
pretrain: {epochs: 0, batch_size: 0, k_batches: 0, cd_k: 0, middle: maybe, weight_decay: -1,
           learning_rate: {initial: 0, final: .inf}, momentum: {initial: -0.1, final: 1}}
cluster: {slaves: 1, join_timeout: 0s, cpus_per_worker: -2, credits: 0, transport: pigeon}
finetune: {epochs: -1, batch_size: 0, learning_rate: -1, momentum: 2, validation: 1, init: zeros, input_dropout: 1, max_norm: -1, label_smoothing: 1}
sweep: {repeats: 0, vary: [{key: pretrain.speed, values: []}]}
`)
	_, err := Load(p, nil)
	var ps Problems
	if !errors.As(err, &ps) {
		t.Fatalf("Load = %v; want Problems", err)
	}
	want := []string{"name", "data.train_limit", "dbn.layers[1]", "dbn.visible", "pretrain.epochs", "pretrain.batch_size",
		"pretrain.k_batches", "pretrain.cd_k", "pretrain.middle", "pretrain.learning_rate.initial", "pretrain.learning_rate.final",
		"pretrain.momentum.initial", "pretrain.momentum.final", "pretrain.weight_decay", "cluster.slaves", "cluster.join_timeout",
		"cluster.cpus_per_worker", "cluster.credits", "cluster.transport", "finetune.epochs", "finetune.batch_size",
		"finetune.learning_rate", "finetune.momentum", "finetune.validation", "finetune.init", "finetune.input_dropout", "finetune.max_norm", "finetune.label_smoothing", "sweep.repeats",
		"sweep.vary[0].key", "sweep.vary[0].values"}
	var got []string
	for _, p := range ps {
		got = append(got, p.Key)
	}
	for _, k := range want {
		if !slices.Contains(got, k) {
			t.Errorf("problems %v: missing %s", got, k)
		}
	}
	if msg := err.Error(); strings.Contains(msg, "\n") || !strings.Contains(msg, "bad.yaml") {
		t.Errorf("error %q: want one line naming the file", msg)
	}
}

func TestEveryKeyHasADefault(t *testing.T) {
	for _, k := range Keys() {
		if !knownKey(k) {
			t.Errorf("key %s is not known", k)
		}
	}
	if knownKey("pretrain.speed") || !knownKey("pretrain.learning_rate") {
		t.Error("knownKey: sections and unknown keys misjudged")
	}
	// Every key's value is checked before decoding.
	kinds := keyKinds()
	if len(kinds) != len(Keys()) {
		t.Errorf("keyKinds() has %d keys; want the %d of Keys()", len(kinds), len(Keys()))
	}
	for _, k := range Keys() {
		if kind, ok := kinds[k]; !ok || kind == kindOther {
			t.Errorf("key %s: kind %v, %v; want a checked kind", k, kind, ok)
		}
	}
}

// finetune.average_last defaults to 0 and must lie in [0, finetune.epochs],
// without finetune.patience.
func TestFinetuneAverageLast(t *testing.T) {
	p := write(t, "a.yaml", "name: a\nfinetune:\n  epochs: 10\n")
	c, err := Load(p, nil)
	if err != nil {
		t.Fatal(err)
	}
	if c.Finetune.AverageLast != 0 {
		t.Errorf("finetune.average_last default = %d; want 0", c.Finetune.AverageLast)
	}
	if c, err := Load(p, []string{"finetune.average_last=10"}); err != nil || c.Finetune.AverageLast != 10 {
		t.Errorf("finetune.average_last=10 of 10 epochs: %v, %+v; want it accepted", err, c)
	}
	for _, set := range [][]string{
		{"finetune.average_last=11"},
		{"finetune.average_last=-1"},
		{"finetune.average_last=3", "finetune.patience=2"},
	} {
		_, err := Load(p, set)
		var ps Problems
		if !errors.As(err, &ps) || len(ps) != 1 || ps[0].Key != "finetune.average_last" {
			t.Errorf("Load with %v = %v; want one problem with finetune.average_last", set, err)
		}
	}
}

// A value of a typed key that names none of its values is one problem
// naming the key and the value, reported with every other problem, from
// the file, the environment or --set alike.
func TestBadEnumValues(t *testing.T) {
	cases := []struct {
		name, body string
		env        [2]string
		set        string
		key, value string
	}{
		{"source", "data: {source: hdf5}\n", [2]string{}, "", "data.source", `"hdf5"`},
		{"visible", "dbn: {visible: poisson}\n", [2]string{}, "", "dbn.visible", `"poisson"`},
		{"mode case", "pretrain: {mode: Greedy}\n", [2]string{}, "", "pretrain.mode", `"Greedy"`},
		{"mode number", "pretrain: {mode: 1}\n", [2]string{}, "", "pretrain.mode", "1"},
		{"mode list", "pretrain: {mode: [greedy]}\n", [2]string{}, "", "pretrain.mode", "[greedy]"},
		{"middle env", "", [2]string{"PIPEDBN_PRETRAIN_MIDDLE", "guesses"}, "", "pretrain.middle", `"guesses" (from env PIPEDBN_PRETRAIN_MIDDLE)`},
		{"transport set", "", [2]string{}, "cluster.transport=pigeon", "cluster.transport", `"pigeon" (from --set cluster.transport)`},
		{"l_copy", "pretrain: {l_copy: sometimes}\n", [2]string{}, "", "pretrain.l_copy", `"sometimes"`},
		{"middle_precision", "pretrain: {middle_precision: half}\n", [2]string{}, "", "pretrain.middle_precision", `"half"`},
		{"middle_precision binary", "", [2]string{}, "pretrain.middle_precision=binary", "pretrain.middle_precision", `"binary" (from --set pretrain.middle_precision)`},
		{"middle_precision env", "", [2]string{"PIPEDBN_PRETRAIN_MIDDLE_PRECISION", "float64"}, "", "pretrain.middle_precision", `"float64" (from env PIPEDBN_PRETRAIN_MIDDLE_PRECISION)`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if c.env[0] != "" {
				t.Setenv(c.env[0], c.env[1])
			}
			var sets []string
			if c.set != "" {
				sets = []string{c.set}
			}
			body := c.body
			if c.key != "data.source" {
				body += "data: {source: synthetic}\n" // no data.dir to check
			}
			p := write(t, "enum.yaml", body+"finetune: {epochs: -1}\n")
			_, err := Load(p, sets)
			var ps Problems
			if !errors.As(err, &ps) {
				t.Fatalf("Load = %v; want Problems", err)
			}
			var keys []string
			for _, p := range ps {
				keys = append(keys, p.Key)
			}
			if !slices.Equal(keys, []string{c.key, "finetune.epochs"}) {
				t.Errorf("problems with %v; want %s and finetune.epochs (%v)", keys, c.key, err)
			}
			want := c.key + " = " + c.value + ": must be one of "
			if msg := err.Error(); !strings.Contains(msg, want) || strings.Contains(msg, "\n") {
				t.Errorf("error %q; want one line containing %q", msg, want)
			}
		})
	}
}

// Validate also checks typed values set in code.
func TestValidateEnumInCode(t *testing.T) {
	c, err := Load(write(t, "ok.yaml", "data: {source: synthetic}\n"), nil)
	if err != nil {
		t.Fatal(err)
	}
	c.Pretrain.Mode = Mode(7)
	var ps Problems
	if err := c.Validate(); !errors.As(err, &ps) || len(ps) != 1 || ps[0].String() != `pretrain.mode = "Mode(7)": must be one of greedy, pipelined` {
		t.Errorf("Validate() = %v; want one problem with pretrain.mode", err)
	}
}

// The typed keys are spelled in JSON as in YAML: result.json, the config
// hash of a resumable run and a sweep's record of each run depend on it.
func TestEnumJSON(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		v    any
		want string
	}{
		{Greedy, `"greedy"`}, {Pipelined, `"pipelined"`}, {NATS, `"nats"`}, {Memory, `"memory"`},
		{FashionMNIST, `"fashion-mnist"`}, {IDX, `"idx"`}, {Synthetic, `"synthetic"`},
	} {
		b, err := json.Marshal(tc.v)
		if err != nil || string(b) != tc.want {
			t.Errorf("json.Marshal(%v) = %s, %v; want %s", tc.v, b, err, tc.want)
		}
	}
	var c Config
	in := `{"data":{"source":"idx"},"dbn":{"visible":"gaussian"},"pretrain":{"mode":"greedy","middle":"samples"},"cluster":{"transport":"memory"}}`
	if err := json.Unmarshal([]byte(in), &c); err != nil {
		t.Fatal(err)
	}
	if c.Data.Source != IDX || c.DBN.Visible != rbm.Gaussian || c.Pretrain.Mode != Greedy || c.Pretrain.Middle != rbm.Samples || c.Cluster.Transport != Memory {
		t.Errorf("json.Unmarshal(%s) = %+v", in, c)
	}
	var m Mode
	if err := json.Unmarshal([]byte(`"turbo"`), &m); err == nil {
		t.Error(`json.Unmarshal("turbo") into a Mode: no error`)
	}
	if got := Mode(7).String(); got != "Mode(7)" {
		t.Errorf("Mode(7).String() = %q; want Mode(7)", got)
	}
}
