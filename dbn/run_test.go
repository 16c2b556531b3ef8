package dbn

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/pipedbn/pipedbn/config"
	"github.com/pipedbn/pipedbn/data"
	"github.com/pipedbn/pipedbn/internal/testbin"
	"github.com/pipedbn/pipedbn/pipeline"
)

var slaveBin string

func TestMain(m *testing.M) {
	var err error
	if slaveBin, err = testbin.Build("github.com/pipedbn/pipedbn/cmd/slave"); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	os.Exit(m.Run())
}

// loadConfig writes a config file and loads it with overrides.
func loadConfig(t *testing.T, body string, sets ...string) *config.Config {
	t.Helper()
	p := filepath.Join(t.TempDir(), "test.yaml")
	if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	cfg, err := config.Load(p, sets)
	if err != nil {
		t.Fatal(err)
	}
	return cfg
}

// numpyCheck runs a Python snippet with NumPy on the output folder, if
// Debian's python3-numpy is installed.
func numpyCheck(t *testing.T, dir, script string) string {
	t.Helper()
	py := "/usr/bin/python3"
	if err := exec.Command(py, "-c", "import numpy").Run(); err != nil {
		t.Logf("skipping the NumPy check: %s has no numpy (apt-get install python3-numpy)", py)
		return ""
	}
	out, err := exec.Command(py, "-c", script, dir).CombinedOutput()
	if err != nil {
		t.Fatalf("numpy check: %v\n%s", err, out)
	}
	return strings.TrimSpace(string(out))
}

// TestRunFashionMNIST pre-trains a small DBN on real Fashion-MNIST in both
// modes, the pipelined one over an embedded NATS server with local slave
// processes, and checks result.json and weights.npz.
func TestRunFashionMNIST(t *testing.T) {
	if _, err := os.Stat(data.FashionMNISTDir); err != nil {
		t.Skipf("Fashion-MNIST not installed (apt-get install dataset-fashion-mnist): %v", err)
	}
	for _, mode := range []config.Mode{config.Greedy, config.Pipelined} {
		t.Run(mode.String(), func(t *testing.T) {
			cfg := loadConfig(t, `
name: fmnist-small
data: {train_limit: 2000, test_limit: 500}
dbn: {layers: [784, 64, 32]}
pretrain: {epochs: 3, batch_size: 50, k_batches: 4, learning_rate: {initial: 0.05, final: 0.02}}
finetune: {epochs: 6, learning_rate: 0.2, batch_size: 50}
`, "pretrain.mode="+mode.String())
			out := t.TempDir()
			res, err := Run(context.Background(), cfg, Options{OutDir: out, SlaveCommand: []string{slaveBin}})
			if err != nil {
				t.Fatal(err)
			}
			got, err := ReadResult(filepath.Join(out, ResultFile))
			if err != nil {
				t.Fatal(err)
			}
			if got.Mode != mode || len(got.RBMs) != 2 || got.Weights != "weights.npz" || got.Finetune == nil {
				t.Fatalf("result.json = %+v; want mode %s, 2 RBMs, weights.npz, finetune", got, mode)
			}
			ft := got.Finetune
			t.Logf("%s: test accuracy %.3f", mode, ft.TestAccuracy)
			if ft.TestAccuracy < 0.6 {
				t.Errorf("test accuracy %.3f; want well above chance (0.1): >= 0.6", ft.TestAccuracy)
			}
			n := 0
			for i, row := range ft.Confusion {
				n += row[i]
			}
			if len(ft.Confusion) != 10 || float64(n)/500 != ft.TestAccuracy {
				t.Errorf("confusion matrix %v does not match test accuracy %v", ft.Confusion, ft.TestAccuracy)
			}
			stages := Stages(cfg, res.Data.Train)
			for i, r := range res.RBMs {
				// 3 epochs of 40 mini-batches, and pipelined, the settle
				// phase: its reconstruction error apart, where the RBM
				// trained in windows after the epochs (none here: the
				// default schedule, in_epochs, has them in the epochs).
				settles := 0
				if stages[i].Settle.Windows > 0 && stages[i].Settle.Train > 0 {
					settles = 1
				}
				if want := stages[i].Batches(res.Data.Train); r.Batches != want || want < 3*40 {
					t.Errorf("rbm %d: %d batches; want %d (>= 3 x 40)", r.Index, r.Batches, want)
				}
				if len(r.ReconError) != 3 || len(r.SettleReconError) != settles {
					t.Fatalf("rbm %d: recon errors %v, in the settle phase %v; want 3, %d", r.Index, r.ReconError, r.SettleReconError, settles)
				}
				if r.Index == 1 && r.ReconError[2] >= r.ReconError[0] {
					t.Errorf("rbm 1: recon error %v did not fall", r.ReconError)
				}
				if mode == config.Pipelined && (r.BytesIn == 0 || !strings.HasPrefix(r.Worker, "local-")) {
					t.Errorf("rbm %d: worker %q, bytes in %d; want a local slave with traffic", r.Index, r.Worker, r.BytesIn)
				}
			}
			shapes := numpyCheck(t, out, `
import sys, numpy as np
d = np.load(sys.argv[1] + "/weights.npz")
print(" ".join(f"{k}:{d[k].dtype}:{'x'.join(map(str, d[k].shape))}" for k in sorted(d.files)))`)
			if want := "W1:float32:784x64 W2:float32:64x32 a1:float32:784 a2:float32:64 b1:float32:64 b2:float32:32 " +
				"ft_W1:float32:784x64 ft_W2:float32:64x32 ft_Wout:float32:32x10 ft_b1:float32:64 ft_b2:float32:32 ft_bout:float32:10"; shapes != "" && shapes != want {
				t.Errorf("weights.npz = %s; want %s", shapes, want)
			}
			// NumPy alone reproduces the reported test accuracy from the
			// test images scaled to [0,1] (the contract).
			acc := numpyCheck(t, out, `
import sys, gzip, numpy as np
d = np.load(sys.argv[1] + "/weights.npz")
with gzip.open("/usr/share/datasets/fashion-mnist/t10k-images-idx3-ubyte.gz") as f:
    x = np.frombuffer(f.read(), np.uint8, offset=16).reshape(-1, 784)[:500].astype(np.float32) / 255
with gzip.open("/usr/share/datasets/fashion-mnist/t10k-labels-idx1-ubyte.gz") as f:
    y = np.frombuffer(f.read(), np.uint8, offset=8)[:500]
h, i = x, 1
while f"ft_W{i}" in d.files:
    h = 1 / (1 + np.exp(-(h @ d[f"ft_W{i}"] + d[f"ft_b{i}"])))
    i += 1
print((np.argmax(h @ d["ft_Wout"] + d["ft_bout"], axis=1) == y).mean())`)
			if acc != "" {
				var np float64
				fmt.Sscan(acc, &np)
				if d := np - ft.TestAccuracy; d > 0.004 || d < -0.004 {
					t.Errorf("NumPy test accuracy %v; result.json says %v", np, ft.TestAccuracy)
				}
			}
		})
	}
}

// TestRunContract runs a small pipelined DBN in the master (transport
// memory) on synthetic data with gaussian visible units and checks what
// result.json and weights.npz hold by the contract (../shared/CONTRACT.md),
// NumPy or not.
func TestRunContract(t *testing.T) {
	t.Parallel()
	cfg := loadConfig(t, `
name: contract
data: {source: synthetic, train_limit: 200, test_limit: 50}
dbn: {layers: [16, 8, 6], visible: gaussian}
pretrain: {epochs: 2, batch_size: 20, k_batches: 2}
cluster: {transport: memory}
finetune: {epochs: 1, batch_size: 20}
`)
	out := t.TempDir()
	if _, err := Run(context.Background(), cfg, Options{OutDir: out}); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(filepath.Join(out, ResultFile))
	if err != nil {
		t.Fatal(err)
	}
	var raw map[string]any
	if err := json.Unmarshal(b, &raw); err != nil {
		t.Fatal(err)
	}
	if raw["mode"] != "pipelined" || raw["name"] != "contract" || raw["weights"] != WeightsFile {
		t.Errorf("result.json: mode %v, name %v, weights %v; want pipelined, contract, %s", raw["mode"], raw["name"], raw["weights"], WeightsFile)
	}
	rbms, _ := raw["rbms"].([]any)
	if len(rbms) != 2 {
		t.Fatalf("result.json: rbms = %v; want 2", raw["rbms"])
	}
	for i, r := range rbms {
		row, _ := r.(map[string]any)
		for _, k := range []string{"index", "visible", "hidden", "worker", "batches", "recon_error", "busy_seconds", "wait_seconds", "bytes_in", "bytes_out"} {
			if _, ok := row[k]; !ok {
				t.Errorf("result.json: rbms[%d] has no %s", i, k)
			}
		}
		// 2 epochs of 10 mini-batches, and for RBM_2 its part of the
		// settle phase.
		want := Stages(cfg, 200)[i].Batches(200)
		if w := fmt.Sprintf("memory-%d", i+1); row["worker"] != w || row["batches"] != float64(want) || want < 2*10 {
			t.Errorf("result.json: rbms[%d] worker %v, batches %v; want %s, %d", i, row["worker"], row["batches"], w, want)
		}
	}
	arrays, err := readNPZ(filepath.Join(out, WeightsFile))
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]int{"W1": 16 * 8, "b1": 8, "a1": 16, "W2": 8 * 6, "b2": 6, "a2": 8,
		"ft_W1": 16 * 8, "ft_b1": 8, "ft_W2": 8 * 6, "ft_b2": 6, "ft_Wout": 6 * 10, "ft_bout": 10,
		"input_mean": 16, "input_scale": 16}
	for name, n := range want {
		if got := len(arrays[name]); got != n {
			t.Errorf("weights.npz: %s has %d values; want %d", name, got, n)
		}
	}
	if len(arrays) != len(want) {
		t.Errorf("weights.npz holds %d arrays; want %d", len(arrays), len(want))
	}
}

// TestMemoryMatchesNATS runs one pipelined config over the in-memory
// network and over an embedded NATS server with local slaves laid out by
// every kind of plan (one process per RBM, stage groups, one process for
// all, all inside the master): the same protocol, so the same weights, bit
// for bit.
func TestMemoryMatchesNATS(t *testing.T) {
	t.Parallel()
	runs := []struct {
		name string
		sets []string
		same string // the run whose weights it must have
	}{
		{"memory", []string{"cluster.transport=memory"}, ""},
		{"nats one-per-rbm", []string{"cluster.plan=one-per-rbm"}, "memory"},
		{"nats 1-2,3", []string{"cluster.plan=1-2,3"}, "memory"},
		{"nats auto", []string{"cluster.plan=auto"}, "memory"},
		{"nats auto in the master", []string{"cluster.plan=auto"}, "memory"},
		// Middle results unrounded: the same on every transport.
		{"memory float32", []string{"cluster.transport=memory", "pretrain.middle_precision=float32"}, ""},
		{"nats one-per-rbm float32", []string{"cluster.plan=one-per-rbm", "pretrain.middle_precision=float32"}, "memory float32"},
	}
	weights := map[string]map[string][]float32{}
	for _, run := range runs {
		cfg := loadConfig(t, `
name: same
data: {source: synthetic, train_limit: 240, test_limit: 20}
dbn: {layers: [16, 8, 6, 4]}
pretrain: {epochs: 2, batch_size: 20, k_batches: 2}
reliability: {checkpoint_every: 2}
finetune: {epochs: 0}
`, run.sets...)
		out := t.TempDir()
		opt := Options{OutDir: out, SlaveCommand: []string{slaveBin}}
		if run.name == "nats auto in the master" {
			opt.SlaveCommand = nil // one group on an uncapped box: its slaves run in the master
		}
		res, err := Run(context.Background(), cfg, opt)
		if err != nil {
			t.Fatalf("%s: %v", run.name, err)
		}
		w, err := readNPZ(filepath.Join(out, WeightsFile))
		if err != nil {
			t.Fatal(err)
		}
		weights[run.name] = w
		if run.name == "nats 1-2,3" {
			if p := res.Plan; p == nil || p.Strategy != "explicit" || len(p.Groups) != 2 ||
				!slices.Equal(p.Groups[0].Slaves, []string{"local-1", "local-2"}) || !slices.Equal(p.Groups[1].RBMs, []int{3}) {
				t.Errorf("%s: result.json plan %+v; want the explicit groups local-1,local-2 and RBM 3", run.name, p)
			}
		}
	}
	if slices.Equal(weights["memory"]["W2"], weights["memory float32"]["W2"]) {
		t.Errorf("weights.npz W2: the same with middle results unrounded; want RBM_2 trained on rounded ones by default")
	}
	for _, run := range runs {
		if run.same == "" {
			continue
		}
		for name, w := range weights[run.name] {
			if !slices.Equal(weights[run.same][name], w) {
				t.Errorf("weights.npz %s: %s and %s differ", name, run.same, run.name)
			}
		}
		if len(weights[run.name]) != 9 {
			t.Errorf("%s: weights.npz holds %d arrays; want 9 (W1-3, b1-3, a1-3)", run.name, len(weights[run.name]))
		}
	}
}

// pretrain.middle_precision reaches every RBM: uint8 by default.
func TestMiddlePrecisionReachesTheStages(t *testing.T) {
	body := "data: {source: synthetic}\ndbn: {layers: [16, 8, 4]}\npretrain: {epochs: 1}\n"
	for _, tc := range []struct {
		sets []string
		want pipeline.Precision
	}{{nil, pipeline.Uint8}, {[]string{"pretrain.middle_precision=float16"}, pipeline.Float16}, {[]string{"pretrain.middle_precision=float32"}, pipeline.Float32}} {
		for _, s := range Stages(loadConfig(t, body, tc.sets...), 64) {
			if s.MiddlePrecision != tc.want {
				t.Errorf("%v: RBM %d MiddlePrecision %v; want %v", tc.sets, s.Index, s.MiddlePrecision, tc.want)
			}
		}
	}
}

// pretrain.l_copy reaches every RBM above the first: first_window by
// default, the paper's every_window when asked for.
func TestLCopyReachesTheStages(t *testing.T) {
	body := "data: {source: synthetic}\ndbn: {layers: [16, 8, 4]}\npretrain: {epochs: 1}\n"
	for _, tc := range []struct {
		sets []string
		once bool
	}{{nil, true}, {[]string{"pretrain.l_copy=every_window"}, false}, {[]string{"pretrain.l_copy=first_window"}, true}} {
		for _, s := range Stages(loadConfig(t, body, tc.sets...), 64) {
			if s.LCopyOnce != tc.once {
				t.Errorf("%v: RBM %d LCopyOnce %t; want %t", tc.sets, s.Index, s.LCopyOnce, tc.once)
			}
		}
	}
}
