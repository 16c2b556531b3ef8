package config

import (
	"errors"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/pipedbn/pipedbn/data"
)

// loadProblems loads body (plus data: {source: synthetic} unless body names
// a data section, so that no data.dir matters) with sets and returns the
// problems as their strings. It fails the test unless Load reports Problems
// in one line naming the file.
func loadProblems(t *testing.T, body string, sets ...string) []string {
	t.Helper()
	if !strings.Contains(body, "data:") {
		body += "data: {source: synthetic}\n"
	}
	p := write(t, "p.yaml", body)
	_, err := Load(p, sets)
	var ps Problems
	if !errors.As(err, &ps) {
		t.Fatalf("Load(%q, %q) = %v; want Problems", body, sets, err)
	}
	if msg := err.Error(); strings.ContainsAny(msg, "\n\r") || !strings.HasPrefix(msg, "config "+p+": ") {
		t.Errorf("error %q: want one line starting with config %s: ", msg, p)
	}
	var got []string
	for _, p := range ps {
		got = append(got, p.String())
	}
	return got
}

// checkProblems fails unless got holds exactly want, in any order.
func checkProblems(t *testing.T, got []string, want ...string) {
	t.Helper()
	g, w := slices.Clone(got), slices.Clone(want)
	slices.Sort(g)
	slices.Sort(w)
	if !slices.Equal(g, w) {
		t.Errorf("problems:\n  %s\nwant:\n  %s", strings.Join(got, "\n  "), strings.Join(want, "\n  "))
	}
}

// A problem names where its value came from: nothing more for the config
// file (whose path starts the error), else the environment variable, the
// --set override or the default.
func TestProblemSources(t *testing.T) {
	t.Setenv("PIPEDBN_PRETRAIN_BATCH_SIZE", "-5")
	t.Setenv("PIPEDBN_PRETRAIN_EPOCHS", "1.7")
	got := loadProblems(t, "pretrain: {cd_k: 0, k_batches: 3}\n",
		"pretrain.k_batches=-2", "pretrain.learning_rate={initial: -1}", "finetune.momentum=1")
	checkProblems(t, got,
		"pretrain.cd_k = 0: must be >= 1",
		"pretrain.batch_size = -5 (from env PIPEDBN_PRETRAIN_BATCH_SIZE): must be >= 1",
		`pretrain.epochs = "1.7" (from env PIPEDBN_PRETRAIN_EPOCHS): must be an integer`,
		"pretrain.k_batches = -2 (from --set pretrain.k_batches): must be >= 1",
		"pretrain.learning_rate.initial = -1 (from --set pretrain.learning_rate): must be in (0, 10]",
		"finetune.momentum = 1 (from --set finetune.momentum): must be in [0, 1)",
	)
}

// A default is named as such: the file did not set it.
func TestProblemSourceDefault(t *testing.T) {
	got := loadProblems(t, "data: {source: idx}\n", "data.dir=")
	checkProblems(t, got,
		`data.dir = "" (from --set data.dir): not readable: no such file or directory`)

	inFile := map[string]bool{"pretrain.epochs": true, "pretrain.learning_rate.final": true, "dbn.layers": true}
	env := map[string]string{"PIPEDBN_PRETRAIN_EPOCHS": "3", "PIPEDBN_PRETRAIN_CD_K": "2"}
	o := origins{
		inFile: func(k string) bool { return inFile[k] },
		env:    func(k string) (string, bool) { v, ok := env[k]; return v, ok },
	}
	o.set("pretrain.cd_k", 1)
	o.set("pretrain.learning_rate", map[string]any{"initial": 0.1})
	for key, want := range map[string]string{
		"data.dir":                       "default",
		"pretrain.epochs":                "env PIPEDBN_PRETRAIN_EPOCHS",
		"pretrain.cd_k":                  "--set pretrain.cd_k",
		"pretrain.learning_rate.initial": "--set pretrain.learning_rate",
		"pretrain.learning_rate.final":   "",
		"dbn.layers[3]":                  "",
		"dbn.visible":                    "default",
	} {
		if got := o.of(key); got != want {
			t.Errorf("origin of %s = %q; want %q", key, got, want)
		}
	}
}

// An unknown key is one problem among the others, not a decoding error
// that hides them; so is an unknown --set key.
func TestUnknownKeyAmongOthers(t *testing.T) {
	got := loadProblems(t, "bogus: 1\npretrain: {epochs: 0, lerning_rate: 0.1}\nfinetune: {batch_size: 0}\n", "pretrain.speed=11")
	checkProblems(t, got,
		"bogus = 1: unknown key",
		"pretrain.lerning_rate = 0.1: unknown key (did you mean pretrain.learning_rate?)",
		"pretrain.speed = 11 (from --set pretrain.speed): unknown key",
		"pretrain.epochs = 0: must be >= 1",
		"finetune.batch_size = 0: must be >= 1",
	)
}

// A bad list item is shown with its index and value, never as <nil>.
func TestBadListItems(t *testing.T) {
	got := loadProblems(t, "dbn: {layers: [784, abc, 2.5, 0, [1]]}\npretrain: {epochs: 0}\n")
	checkProblems(t, got,
		`dbn.layers[1] = "abc": must be an integer`,
		"dbn.layers[2] = 2.5: must be an integer",
		"dbn.layers[3] = 0: must be >= 1",
		"dbn.layers[4] = [1]: must be an integer",
		"pretrain.epochs = 0: must be >= 1",
	)
	got = loadProblems(t, "dbn: {layers: {a: 1}}\n")
	checkProblems(t, got, "dbn.layers = map[a:1]: must be a list of integers")
}

// Integer keys take integers: 1.7 is not silently truncated to 1. A float
// with no fraction is an integer.
func TestNonIntegral(t *testing.T) {
	got := loadProblems(t, "seed: -1\npretrain: {epochs: 1.7, batch_size: 1e300, cd_k: true}\ndbn: {layers: [784, 2.5]}\nfinetune: {epochs: .nan}\n",
		"cluster.credits=2.5")
	checkProblems(t, got,
		"seed = -1: must be an integer >= 0",
		"pretrain.epochs = 1.7: must be an integer",
		"pretrain.batch_size = 1e+300: must be an integer",
		"pretrain.cd_k = true: must be an integer",
		"dbn.layers[1] = 2.5: must be an integer",
		"finetune.epochs = NaN: must be an integer",
		"cluster.credits = 2.5 (from --set cluster.credits): must be an integer",
	)
	p := write(t, "whole.yaml", "data: {source: synthetic}\npretrain: {epochs: 2.0}\ndbn: {layers: [784, 100.0]}\n")
	c, err := Load(p, []string{"pretrain.batch_size=64.0"})
	if err != nil {
		t.Fatal(err)
	}
	if c.Pretrain.Epochs != 2 || c.Pretrain.BatchSize != 64 || !slices.Equal(c.DBN.Layers, []int{784, 100}) {
		t.Errorf("epochs %d batch_size %d layers %v; want 2 64 [784 100]", c.Pretrain.Epochs, c.Pretrain.BatchSize, c.DBN.Layers)
	}
}

// A limit above the examples the data holds is an error naming the key,
// the value and the size, not silently capped.
func TestLimitAboveData(t *testing.T) {
	dir := t.TempDir()
	train, test := data.SyntheticPair(1, 30, 7, 16, 3)
	if err := data.WriteIDXFiles(dir, train, data.TrainImagesFile+".gz", data.TrainLabelsFile+".gz", true); err != nil {
		t.Fatal(err)
	}
	if err := data.WriteIDXFiles(dir, test, data.TestImagesFile, data.TestLabelsFile, false); err != nil {
		t.Fatal(err)
	}
	body := "data: {source: idx, dir: " + dir + ", train_limit: 31, test_limit: 8}\npretrain: {epochs: 0}\n"
	got := loadProblems(t, body)
	checkProblems(t, got,
		"data.train_limit = 31: must be at most 30, the examples of the training set in "+dir+" (0 keeps all)",
		"data.test_limit = 8: must be at most 7, the examples of the test set in "+dir+" (0 keeps all)",
		"pretrain.epochs = 0: must be >= 1",
	)
	if _, err := Load(write(t, "ok.yaml", "data: {source: idx, dir: "+dir+", train_limit: 30, test_limit: 7}\n"), nil); err != nil {
		t.Errorf("limits equal to the sizes: %v; want no error", err)
	}
}

// Floats are finite and in sane ranges: a learning rate of 1e308 is refused.
func TestFloatRanges(t *testing.T) {
	got := loadProblems(t, `
pretrain: {learning_rate: {initial: 1e308, final: 10.5}, momentum: {initial: .inf}, weight_decay: 1}
finetune: {learning_rate: 11, learning_rate_final: -.inf, weight_decay: 1.5, momentum: -0.1, max_norm: .inf}
cluster: {cpus_per_worker: 1e300}
`)
	checkProblems(t, got,
		"pretrain.learning_rate.initial = 1e+308: must be in (0, 10]",
		"pretrain.learning_rate.final = 10.5: must be in (0, 10]",
		"pretrain.momentum.initial = +Inf: must be in [0, 1)",
		"pretrain.weight_decay = 1: must be in [0, 1)",
		"finetune.learning_rate = 11: must be in (0, 10]",
		"finetune.learning_rate_final = -Inf: must be in (0, 10] (0: keep finetune.learning_rate)",
		"finetune.weight_decay = 1.5: must be in [0, 1)",
		"finetune.momentum = -0.1: must be in [0, 1)",
		"finetune.max_norm = +Inf: must be a finite number >= 0 (0: no constraint)",
		"cluster.cpus_per_worker = 1e+300: must be a number of CPUs in [0, 4096] (0: no cap)",
	)
	p := write(t, "edge.yaml", "data: {source: synthetic}\npretrain: {learning_rate: {initial: 10, final: 1e-9}, weight_decay: 0.999}\n")
	if _, err := Load(p, nil); err != nil {
		t.Errorf("learning rates 10 and 1e-9, weight decay 0.999: %v; want them accepted", err)
	}
}

// A PIPEDBN_* variable that names no key (and none of the variables other
// parts of pipedbn read) is a problem naming it, not silently ignored; its
// value is not shown, for it may be a secret.
func TestUnknownEnv(t *testing.T) {
	t.Setenv("PIPEDBN_PRETRAIN_EPOCH", "3")
	t.Setenv("PIPEDBN_NATS_URL", "nats://x:4222")
	t.Setenv("PIPEDBN_PRETRAIN_LEARNING_RATE", "0.1") // a section
	t.Setenv("PIPEDBN_NATS_CREDENTIALS", "/run/secrets/nats")
	t.Setenv("PIPEDBN_FAULT_SEED", "3")
	got := loadProblems(t, "pretrain: {epochs: 0}\n")
	checkProblems(t, got,
		"env PIPEDBN_PRETRAIN_EPOCH: names no config key (did you mean PIPEDBN_PRETRAIN_EPOCHS?)",
		"env PIPEDBN_NATS_URL: names no config key (did you mean PIPEDBN_CLUSTER_NATS_URL?)",
		"env PIPEDBN_PRETRAIN_LEARNING_RATE: names the section pretrain.learning_rate, not a key (like PIPEDBN_PRETRAIN_LEARNING_RATE_FINAL)",
		"pretrain.epochs = 0: must be >= 1",
	)
}

// A section given a value that is not a map is one problem, and the keys
// below it are still checked where they can be.
func TestScalarSection(t *testing.T) {
	got := loadProblems(t, "pretrain: 5\nfinetune: {epochs: -1}\n")
	checkProblems(t, got,
		"pretrain = 5: must be a map of the keys pretrain.*",
		"finetune.epochs = -1: must be >= 0",
	)
}

// A value of the wrong type is one problem: the stand-in that replaces it
// so that the other keys are still checked is not judged again as if the
// user had written it, nor by checks of other keys that use it. Every
// other problem is still reported.
func TestWrongTypeOneProblem(t *testing.T) {
	for _, tc := range []struct {
		name, body string
		sets       []string
		want       []string
	}{
		{"string for a list", "dbn: {layers: \"abc\"}\npretrain: {epochs: 0}\n", nil, []string{
			`dbn.layers[0] = "abc": must be an integer`,
			"pretrain.epochs = 0: must be >= 1",
		}},
		{"--set string for a list", "", []string{"dbn.layers=abc"}, []string{
			`dbn.layers[0] = "abc" (from --set dbn.layers): must be an integer`,
		}},
		{"map for a list", "dbn: {layers: {a: 1}}\ncluster: {slaves: 2}\n", nil, []string{
			"dbn.layers = map[a:1]: must be a list of integers",
		}},
		{"stand-in in another key's check", "pretrain: {batch_size: x, k_batches: 2147483647}\n", nil, []string{
			`pretrain.batch_size = "x": must be an integer`,
		}},
		{"a real item is still checked", "dbn: {layers: [abc, 0]}\n", nil, []string{
			`dbn.layers[0] = "abc": must be an integer`,
			"dbn.layers[1] = 0: must be >= 1",
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			checkProblems(t, loadProblems(t, tc.body, tc.sets...), tc.want...)
		})
	}
}

// Data-parallel fine-tuning names each key it cannot work with: its own
// out of range, and the rest of the config that rules the workers out.
func TestFinetuneWorkersProblems(t *testing.T) {
	checkProblems(t, loadProblems(t, "finetune: {workers: 0, sync_every: 0, lr_rule: square, warmup_epochs: -1, block_momentum: 1}\n"),
		"finetune.workers = 0: must be >= 1",
		"finetune.sync_every = 0: must be >= 1",
		`finetune.lr_rule = "square": must be one of linear, sqrt, constant`,
		"finetune.warmup_epochs = -1: must be >= 0",
		"finetune.block_momentum = 1: must be in [0, 1)")
	checkProblems(t, loadProblems(t, "finetune: {workers: 4, epochs: 2, warmup_epochs: 3, patience: 2}\n"),
		"finetune.warmup_epochs = 3: must be a number of epochs in [0, finetune.epochs = 2]",
		"finetune.patience = 2: must be 0 with finetune.workers = 4: the workers' network is the last average, with no per-epoch selection")
	if _, err := Load(write(t, "pre.yaml", "finetune: {workers: 4, epochs: 0}\ndata: {source: synthetic}\n"), nil); err != nil {
		t.Errorf("pre-training only, with workers and the default warm-up: %v; want no problem", err)
	}
	checkProblems(t, loadProblems(t, "finetune: {workers: 2}\ncluster: {transport: memory}\n"),
		"cluster.transport = memory: must be nats with finetune.workers = 2: the workers are slaves")
	got := loadProblems(t, "finetune: {workers: 2}\ncluster: {slaves: 3}\n")
	if len(got) != 1 || !strings.HasPrefix(got[0], `cluster.nats_url = "" (default): must name a server of your own`) {
		t.Errorf("slaves by hand on the embedded server: problems %q; want one naming cluster.nats_url", got)
	}
}

func TestPretrainWeightsProblems(t *testing.T) {
	dir := t.TempDir()
	checkProblems(t, loadProblems(t, "pretrain: {weights: "+dir+"}\n"),
		`pretrain.weights = "`+dir+`": is not a file (the weights.npz of an earlier run of this DBN)`)
	missing := filepath.Join(dir, "nothing.npz")
	checkProblems(t, loadProblems(t, "pretrain: {weights: "+missing+"}\nfinetune: {init: random}\n"),
		`pretrain.weights = "`+missing+`": not readable: no such file or directory (the weights.npz of an earlier run of this DBN)`,
		`pretrain.weights = "`+missing+`": is set, but finetune.init = random does not use pre-trained weights`)
}
