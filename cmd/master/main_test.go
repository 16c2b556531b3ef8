package main

import (
	"bytes"
	"compress/gzip"
	"encoding/binary"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/pipedbn/pipedbn/data"
	"github.com/pipedbn/pipedbn/internal/testbin"
)

var masterBin string

func TestMain(m *testing.M) {
	var err error
	if masterBin, err = testbin.Build("github.com/pipedbn/pipedbn/cmd/master"); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	os.Exit(m.Run())
}

// master runs the built binary and returns its exit code and stderr.
func master(t *testing.T, env []string, args ...string) (int, string) {
	t.Helper()
	cmd := exec.Command(masterBin, args...)
	cmd.Env = append(os.Environ(), env...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	err := cmd.Run()
	if err == nil {
		return 0, stderr.String()
	}
	ee, ok := err.(*exec.ExitError)
	if !ok {
		t.Fatalf("run master: %v", err)
	}
	return ee.ExitCode(), stderr.String()
}

// writeIDXDir writes a small valid IDX data set (train and t10k files) into a
// new folder and returns it.
func writeIDXDir(t *testing.T, gz bool) string {
	t.Helper()
	dir := t.TempDir()
	train, test := data.SyntheticPair(7, 64, 16, 16, 4)
	suffix := ""
	if gz {
		suffix = ".gz"
	}
	if err := data.WriteIDXFiles(dir, train, data.TrainImagesFile+suffix, data.TrainLabelsFile+suffix, gz); err != nil {
		t.Fatal(err)
	}
	if err := data.WriteIDXFiles(dir, test, data.TestImagesFile+suffix, data.TestLabelsFile+suffix, gz); err != nil {
		t.Fatal(err)
	}
	return dir
}

// TestBadInput runs master on bad configs and bad data files: each must exit
// non-zero with one line on stderr that names the file and the key/value or
// problem, and never a panic trace.
func TestBadInput(t *testing.T) {
	t.Parallel()
	cfgDir := t.TempDir()
	write := func(name, body string) string {
		p := filepath.Join(cfgDir, name)
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	// idxCfg writes a config that reads the IDX files in dir.
	idxCfg := func(name, dir string) string {
		return write(name, fmt.Sprintf("data: {source: idx, dir: %s}\ndbn: {layers: [16, 8]}\npretrain: {mode: greedy, epochs: 1}\nfinetune: {epochs: 0}\n", dir))
	}
	corrupt := func(mod func(dir string)) string {
		dir := writeIDXDir(t, false)
		mod(dir)
		return dir
	}
	badMagic := corrupt(func(dir string) {
		p := filepath.Join(dir, data.TrainImagesFile)
		b, _ := os.ReadFile(p)
		binary.BigEndian.PutUint32(b, 0x12345678)
		os.WriteFile(p, b, 0o644)
	})
	truncated := corrupt(func(dir string) {
		p := filepath.Join(dir, data.TrainImagesFile)
		b, _ := os.ReadFile(p)
		os.WriteFile(p, b[:len(b)/2], 0o644)
	})
	missing := corrupt(func(dir string) { os.Remove(filepath.Join(dir, data.TestLabelsFile)) })
	countMismatch := corrupt(func(dir string) {
		s := data.Synthetic(3, 10, 16, 4)
		data.WriteIDXFiles(dir, s, "x", data.TrainLabelsFile, false)
	})
	// labelsDir writes an IDX data set of 16-pixel examples whose train
	// labels are these (the test set's are 0..3).
	labelsDir := func(labels ...uint8) string {
		dir := t.TempDir()
		train := &data.Set{N: len(labels), Dim: 16, X: make([]float32, 16*len(labels)), Labels: labels}
		test := &data.Set{N: 4, Dim: 16, X: make([]float32, 16*4), Labels: []uint8{0, 1, 2, 3}}
		if err := data.WriteIDXFiles(dir, train, data.TrainImagesFile, data.TrainLabelsFile, false); err != nil {
			t.Fatal(err)
		}
		if err := data.WriteIDXFiles(dir, test, data.TestImagesFile, data.TestLabelsFile, false); err != nil {
			t.Fatal(err)
		}
		return dir
	}
	strayLabels := labelsDir(0, 1, 2, 200, 3, 250)
	good := writeIDXDir(t, false) // 64 train, 16 test examples
	badGzip := writeIDXDir(t, true)
	{
		p := filepath.Join(badGzip, data.TrainImagesFile+".gz")
		b, _ := os.ReadFile(p)
		var buf bytes.Buffer
		zw := gzip.NewWriter(&buf)
		zw.Write([]byte("not an idx file at all"))
		zw.Close()
		copy(b, buf.Bytes()[:10]) // keep the gzip magic, break the stream
		b = b[:len(b)-20]
		os.WriteFile(p, b, 0o644)
	}

	busy := busyAddr(t) // a port in use
	cases := []struct {
		name string
		args []string
		env  []string
		want []string // substrings of the one stderr line
	}{
		{"missing file", []string{"--config", filepath.Join(cfgDir, "nope.yaml")}, nil, []string{"nope.yaml", "no such file"}},
		{"yaml syntax", []string{"--config", write("syntax.yaml", "pretrain: [\n")}, nil, []string{"syntax.yaml", "not valid YAML"}},
		{"unknown key", []string{"--config", write("unknown.yaml", "bogus: 1\n")}, nil, []string{"unknown.yaml", "bogus = 1: unknown key"}},
		{"unknown nested key", []string{"--config", write("nested.yaml", "pretrain:\n  lerning_rate: 0.1\n")}, nil, []string{"nested.yaml", "pretrain.lerning_rate"}},
		{"wrong type", []string{"--config", write("type.yaml", "pretrain:\n  epochs: many\n")}, nil, []string{"type.yaml", `pretrain.epochs = "many"`}},
		{"zero epochs", []string{"--config", write("epochs.yaml", "pretrain:\n  epochs: 0\n")}, nil, []string{"epochs.yaml", "pretrain.epochs = 0", ">= 1"}},
		{"negative batch", []string{"--config", write("batch.yaml", "pretrain:\n  batch_size: -5\n")}, nil, []string{"batch.yaml", "pretrain.batch_size = -5"}},
		{"zero K", []string{"--config", write("k.yaml", "pretrain:\n  k_batches: 0\n")}, nil, []string{"k.yaml", "pretrain.k_batches = 0"}},
		{"negative learning rate", []string{"--config", write("lr.yaml", "pretrain:\n  learning_rate: {initial: -0.1}\n")}, nil, []string{"lr.yaml", "pretrain.learning_rate.initial = -0.1"}},
		{"NaN learning rate", []string{"--config", write("nan.yaml", "finetune:\n  learning_rate: .nan\n")}, nil, []string{"nan.yaml", "finetune.learning_rate = NaN"}},
		{"momentum 1", []string{"--config", write("mom.yaml", "pretrain:\n  momentum: {final: 1.0}\n")}, nil, []string{"mom.yaml", "pretrain.momentum.final = 1", "[0, 1)"}},
		{"unknown mode", []string{"--config", write("mode.yaml", "pretrain:\n  mode: turbo\n")}, nil, []string{"mode.yaml", `pretrain.mode = "turbo"`, "greedy, pipelined"}},
		{"unknown units", []string{"--config", write("units.yaml", "dbn:\n  visible: poisson\n")}, nil, []string{"units.yaml", `dbn.visible = "poisson"`}},
		{"one layer", []string{"--config", write("layers.yaml", "dbn:\n  layers: [784]\n")}, nil, []string{"layers.yaml", "dbn.layers = [784]"}},
		{"zero layer", []string{"--config", write("layer0.yaml", "dbn:\n  layers: [784, 0]\n")}, nil, []string{"layer0.yaml", "dbn.layers[1] = 0"}},
		{"layers vs data", []string{"--config", write("dim.yaml", "data: {source: fashion-mnist, train_limit: 10, test_limit: 10}\ndbn:\n  layers: [100, 10]\n"), "--set", "pretrain.mode=greedy"}, nil, []string{"dim.yaml", "dbn.layers[0] = 100", "784"}},
		{"unknown source", []string{"--config", write("source.yaml", "data:\n  source: hdf5\n")}, nil, []string{"source.yaml", `data.source = "hdf5"`}},
		{"missing data dir", []string{"--config", write("dir.yaml", "data:\n  dir: /nonexistent/fmnist\n")}, nil, []string{"dir.yaml", `data.dir = "/nonexistent/fmnist"`}},
		{"bad nats url", []string{"--config", write("url.yaml", "cluster:\n  nats_url: localhost\n")}, nil, []string{"url.yaml", `cluster.nats_url = "localhost"`}},
		{"bad duration", []string{"--config", write("dur.yaml", "cluster:\n  join_timeout: soon\n")}, nil, []string{"dur.yaml", "cluster.join_timeout", "soon"}},
		{"fewer slaves than RBMs", []string{"--config", write("slaves.yaml", "cluster:\n  slaves: 2\n")}, nil, []string{"slaves.yaml", "cluster.slaves = 2", "the DBN of dbn.layers has 3 RBMs and each needs its own slave"}},
		{"zero credits", []string{"--config", write("credits.yaml", "cluster:\n  credits: 0\n")}, nil, []string{"credits.yaml", "cluster.credits = 0", ">= 1"}},
		{"negative checkpoint cadence", []string{"--config", write("every.yaml", "reliability:\n  checkpoint_every: -1\n")}, nil, []string{"every.yaml", "reliability.checkpoint_every = -1", ">= 0"}},
		{"zero lost_after", []string{"--config", write("lost.yaml", "reliability:\n  lost_after: 0s\n")}, nil, []string{"lost.yaml", "reliability.lost_after", "must be a duration > 0"}},
		{"several problems at once", []string{"--config", write("many.yaml", "pretrain:\n  epochs: 0\n  cd_k: 0\nfinetune:\n  batch_size: 0\n")}, nil, []string{"many.yaml", "pretrain.epochs = 0", "pretrain.cd_k = 0", "finetune.batch_size = 0"}},
		{"--set unknown key", []string{"--config", write("ok1.yaml", "name: ok\n"), "--set", "pretrain.speed=11"}, nil, []string{"ok1.yaml", "pretrain.speed = 11 (from --set pretrain.speed): unknown key"}},
		{"--set without =", []string{"--config", write("ok2.yaml", "name: ok\n"), "--set", "pretrain.epochs"}, nil, []string{"ok2.yaml", "want key=value"}},
		// Issue 13, defect 7a: a value is blamed on where it came from.
		{"--set bad value", []string{"--config", write("ok3.yaml", "name: ok\n"), "--set", "pretrain.k_batches=-2"}, nil, []string{"ok3.yaml", "pretrain.k_batches = -2 (from --set pretrain.k_batches): must be >= 1"}},
		{"env bad value", []string{"--config", write("ok4.yaml", "name: ok\n")}, []string{"PIPEDBN_PRETRAIN_MIDDLE=guesses"}, []string{"ok4.yaml", `pretrain.middle = "guesses" (from env PIPEDBN_PRETRAIN_MIDDLE): must be one of`}},
		{"env and file problems", []string{"--config", write("src.yaml", "pretrain: {cd_k: 0}\n"), "--set", "pretrain.learning_rate={initial: -1}"}, []string{"PIPEDBN_PRETRAIN_EPOCHS=0"},
			[]string{"src.yaml: ", "pretrain.cd_k = 0: must be >= 1", "pretrain.epochs = 0 (from env PIPEDBN_PRETRAIN_EPOCHS): must be >= 1",
				"pretrain.learning_rate.initial = -1 (from --set pretrain.learning_rate): must be in (0, 10]"}},
		// 7b: an unknown key is one problem among the others.
		{"unknown key among others", []string{"--config", write("unknown2.yaml", "bogus: 1\npretrain: {epochs: 0, lerning_rate: 0.1}\n"), "--set", "cluster.speed=2"}, nil,
			[]string{"unknown2.yaml", "bogus = 1: unknown key", "pretrain.lerning_rate = 0.1: unknown key (did you mean pretrain.learning_rate?)",
				"cluster.speed = 2 (from --set cluster.speed): unknown key", "pretrain.epochs = 0: must be >= 1"}},
		// 7c: a bad list item shows its index and value, never <nil>.
		{"bad list item", []string{"--config", write("item.yaml", "dbn:\n  layers: [784, abc, 500]\n")}, nil, []string{"item.yaml", `dbn.layers[1] = "abc": must be an integer`}},
		{"bad list item from env", []string{"--config", write("item2.yaml", "name: ok\n")}, []string{"PIPEDBN_DBN_LAYERS=784,x"}, []string{"item2.yaml", `dbn.layers[1] = "x" (from env PIPEDBN_DBN_LAYERS): must be an integer`}},
		// 7d: a float is not silently truncated to an integer.
		{"float epochs", []string{"--config", write("float.yaml", "pretrain:\n  epochs: 1.7\n")}, nil, []string{"float.yaml", "pretrain.epochs = 1.7: must be an integer"}},
		{"float layer", []string{"--config", write("float2.yaml", "dbn:\n  layers: [784, 2.5]\n")}, nil, []string{"float2.yaml", "dbn.layers[1] = 2.5: must be an integer"}},
		{"float --set", []string{"--config", write("float3.yaml", "name: ok\n"), "--set", "finetune.batch_size=12.5"}, nil, []string{"float3.yaml", "finetune.batch_size = 12.5 (from --set finetune.batch_size): must be an integer"}},
		{"negative seed", []string{"--config", write("seed.yaml", "seed: -1\n")}, nil, []string{"seed.yaml", "seed = -1: must be an integer >= 0"}},
		{"duration without unit", []string{"--config", write("dur2.yaml", "cluster:\n  join_timeout: 60\n")}, nil, []string{"dur2.yaml", "cluster.join_timeout = 60: must be a duration, like 60s"}},
		{"scalar section", []string{"--config", write("section.yaml", "pretrain: 5\nfinetune: {epochs: -1}\n")}, nil, []string{"section.yaml", "pretrain = 5: must be a map of the keys pretrain.*", "finetune.epochs = -1: must be >= 0"}},
		// 7e: a limit above the data is an error, not silently capped.
		{"train_limit above data", []string{"--config", write("limit.yaml", fmt.Sprintf("data: {source: idx, dir: %s, train_limit: 65}\ndbn: {layers: [16, 8]}\n", good))}, nil,
			[]string{"limit.yaml", "data.train_limit = 65: must be at most 64, the examples of the training set in " + good}},
		{"test_limit above data", []string{"--config", idxCfg("limit2.yaml", good), "--set", "data.test_limit=17"}, nil,
			[]string{"limit2.yaml", "data.test_limit = 17 (from --set data.test_limit): must be at most 16, the examples of the test set in " + good}},
		// 7f: floats are finite and in sane ranges.
		{"huge learning rate", []string{"--config", write("lr2.yaml", "pretrain:\n  learning_rate: {initial: 1e308}\n")}, nil, []string{"lr2.yaml", "pretrain.learning_rate.initial = 1e+308: must be in (0, 10]"}},
		{"weight decay 1", []string{"--config", write("wd.yaml", "pretrain:\n  weight_decay: 1\n")}, nil, []string{"wd.yaml", "pretrain.weight_decay = 1: must be in [0, 1)"}},
		{"settle fraction 2", []string{"--config", write("settle.yaml", "pretrain:\n  settle: {fraction: 2}\n")}, nil, []string{"settle.yaml", "pretrain.settle.fraction = 2: must be a fraction of the run's windows in [0, 1]"}},
		{"settle rate 0", []string{"--config", write("settle-rate.yaml", "pretrain:\n  settle: {learning_rate: 0}\n")}, nil, []string{"settle-rate.yaml", "pretrain.settle.learning_rate = 0"}},
		{"probe rows", []string{"--config", write("probe.yaml", "pretrain:\n  probe: {rows: 20000}\n")}, nil, []string{"probe.yaml", "pretrain.probe.rows = 20000: must be in [0, 10000]"}},
		{"probe rows negative", []string{"--config", write("ok-probe.yaml", "name: ok\n"), "--set", "pretrain.probe.rows=-1"}, nil, []string{"ok-probe.yaml", "pretrain.probe.rows = -1 (from --set pretrain.probe.rows): must be in [0, 10000]"}},
		{"infinite finetune rate", []string{"--config", write("lr3.yaml", "finetune:\n  learning_rate: .inf\n")}, nil, []string{"lr3.yaml", "finetune.learning_rate = +Inf: must be in (0, 10]"}},
		// 7g: a PIPEDBN_* variable that names no key is a problem.
		{"unknown env", []string{"--config", write("env.yaml", "name: ok\n")}, []string{"PIPEDBN_PRETRAIN_EPOCH=3"}, []string{"env.yaml", "env PIPEDBN_PRETRAIN_EPOCH: names no config key (did you mean PIPEDBN_PRETRAIN_EPOCHS?)"}},
		{"unknown env section", []string{"--config", write("env2.yaml", "name: ok\n")}, []string{"PIPEDBN_PRETRAIN_LEARNING_RATE=0.1"}, []string{"env2.yaml", "env PIPEDBN_PRETRAIN_LEARNING_RATE: names the section pretrain.learning_rate, not a key"}},
		{"idx bad magic", []string{"--config", idxCfg("magic.yaml", badMagic)}, nil, []string{data.TrainImagesFile, "magic"}},
		{"idx truncated", []string{"--config", idxCfg("trunc.yaml", truncated)}, nil, []string{data.TrainImagesFile, "bytes"}},
		{"idx missing labels", []string{"--config", idxCfg("missing.yaml", missing)}, nil, []string{data.TestLabelsFile}},
		{"idx count mismatch", []string{"--config", idxCfg("count.yaml", countMismatch)}, nil, []string{data.TrainLabelsFile, "10"}},
		{"idx corrupt gzip", []string{"--config", idxCfg("gzip.yaml", badGzip)}, nil, []string{data.TrainImagesFile}},
		// Issue 13, defect 6: labels beyond the classes are refused.
		{"fashion-mnist labels 200 and 250", []string{"--config", idxCfg("labels.yaml", strayLabels), "--set", "data.source=fashion-mnist"}, nil,
			[]string{"fashion-mnist train set: labels file " + filepath.Join(strayLabels, data.TrainLabelsFile) + ": label[3] = 200, want 0..9 (fashion-mnist has 10 classes)"}},
		{"idx labels beyond the classes", []string{"--config", idxCfg("labels2.yaml", strayLabels)}, nil,
			[]string{"idx train set: labels file " + filepath.Join(strayLabels, data.TrainLabelsFile) + ": label[3] = 200, want 0..3 (no example has label 4"}},
		// Issue 17: the monitor's address, refused before any work.
		{"monitor address without port", []string{"--config", write("mon1.yaml", "monitor:\n  http: localhost\n")}, nil, []string{"mon1.yaml", `monitor.http = "localhost": must be host:port`}},
		{"monitor port out of range", []string{"--config", write("mon2.yaml", "name: ok\n"), "--set", "monitor.http=:65536"}, nil,
			[]string{"mon2.yaml", `monitor.http = ":65536" (from --set monitor.http): the port must be a number in [0, 65535]`}},
		{"monitor address from env", []string{"--config", write("mon3.yaml", "name: ok\n")}, []string{"PIPEDBN_MONITOR_HTTP=not an address"}, []string{"mon3.yaml", `monitor.http = "not an address" (from env PIPEDBN_MONITOR_HTTP): must be host:port`}},
		{"--http invalid", []string{"--config", write("mon4.yaml", "name: ok\n"), "--http", "127.0.0.1:port"}, nil, []string{"mon4.yaml", `monitor.http = "127.0.0.1:port" (from --http): the port must be a number`}},
		{"--http port in use", []string{"--config", write("mon5.yaml", "data: {source: synthetic}\ndbn: {layers: [16, 8]}\n"), "--http", busy}, nil,
			[]string{"mon5.yaml", `monitor.http = "` + busy + `" (from --http): cannot listen: address already in use`}},
		{"monitor port in use", []string{"--config", write("mon6.yaml", "data: {source: synthetic}\ndbn: {layers: [16, 8]}\nmonitor: {http: '"+busy+"'}\n")}, nil,
			[]string{"mon6.yaml", `monitor.http = "` + busy + `": cannot listen: address already in use`}},
		{"monitor host unknown", []string{"--config", write("mon7.yaml", "data: {source: synthetic}\ndbn: {layers: [16, 8]}\n"), "--http", "host.invalid:0"}, nil,
			[]string{"mon7.yaml", `monitor.http = "host.invalid:0" (from --http): cannot listen: no such host`}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			args := append([]string{"run", "--out", t.TempDir()}, tc.args...)
			code, stderr := master(t, tc.env, args...)
			if code == 0 {
				t.Fatalf("master %v: exit 0; want non-zero\n%s", args, stderr)
			}
			if strings.Contains(stderr, "panic") || strings.Contains(stderr, "goroutine ") {
				t.Fatalf("master %v: panic trace:\n%s", args, stderr)
			}
			lines := strings.Split(strings.TrimRight(stderr, "\n"), "\n")
			if len(lines) != 1 {
				t.Fatalf("master %v: stderr has %d lines; want 1:\n%s", args, len(lines), stderr)
			}
			for _, w := range tc.want {
				if !strings.Contains(lines[0], w) {
					t.Errorf("master %v: stderr = %q; want it to contain %q", args, lines[0], w)
				}
			}
		})
	}
}

// busyAddr returns the address of a loopback port in use until the test
// and its subtests end.
func busyAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	return ln.Addr().String()
}

func TestUsage(t *testing.T) {
	t.Parallel()
	for _, args := range [][]string{{}, {"fly"}, {"run"}, {"run", "--config"}, {"run", "--bogus"}} {
		code, stderr := master(t, nil, args...)
		if code != 2 {
			t.Errorf("master %v: exit %d; want 2\n%s", args, code, stderr)
		}
		if !strings.Contains(stderr, "usage:") {
			t.Errorf("master %v: stderr = %q; want the usage", args, stderr)
		}
	}
}
