package config

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
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
	if c.Seed != 1 || c.Data.Source != "fashion-mnist" || c.Data.Dir != "/usr/share/datasets/fashion-mnist" ||
		!slices.Equal(c.DBN.Layers, []int{784, 500, 500, 2000}) || c.DBN.Visible != "bernoulli" ||
		c.Pretrain.Mode != "pipelined" || c.Pretrain.Epochs != 20 || c.Pretrain.BatchSize != 256 ||
		c.Pretrain.KBatches != 10 || c.Pretrain.CDK != 1 || c.Pretrain.Middle != "probabilities" ||
		c.Pretrain.LearningRate != (Schedule{0.015, 0.002}) || c.Pretrain.Momentum != (Schedule{0.5, 0.9}) ||
		c.Pretrain.WeightDecay != 0.0002 || c.Cluster.NatsURL != "" || c.Cluster.Slaves != 0 ||
		c.Cluster.JoinTimeout != 60*time.Second || c.Cluster.CPUsPerWorker != 0 ||
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
	t.Setenv("PIPEDBN_CLUSTER_NATS_URL", "nats://nats:4222")
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
