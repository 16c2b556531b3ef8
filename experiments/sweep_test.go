package experiments

import (
	"context"
	"encoding/csv"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/pipedbn/pipedbn/config"
	"github.com/pipedbn/pipedbn/dbn"
	"github.com/pipedbn/pipedbn/internal/atomicfile"
)

// The sweep tests run the test binary itself as a fake `master run`: with
// PIPEDBN_FAKE_RUN=1 it loads the config like master run does and writes a
// made-up result.json at once. Seed 13 makes it fail, seed 99 makes it wait
// for SIGINT (then it writes "stopped" and exits 130, as master run does).
func init() {
	if os.Getenv("PIPEDBN_FAKE_RUN") == "1" {
		os.Exit(fakeRun(os.Args[1:]))
	}
}

func fakeRun(args []string) int {
	fs := flag.NewFlagSet("run", flag.ContinueOnError)
	cfgPath := fs.String("config", "", "")
	out := fs.String("out", "", "")
	var sets []string
	fs.Func("set", "", func(s string) error { sets = append(sets, s); return nil })
	if len(args) > 0 && args[0] == "run" {
		args = args[1:]
	}
	if err := fs.Parse(args); err != nil {
		return 2
	}
	cfg, err := config.Load(*cfgPath, sets)
	if err != nil {
		fmt.Fprintf(os.Stderr, "master: %v\n", err)
		return 1
	}
	// Every invocation leaves a line, so tests can count them.
	if f, err := os.OpenFile(filepath.Join(filepath.Dir(*out), "invocations"), os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644); err == nil {
		fmt.Fprintln(f, filepath.Base(*out))
		f.Close()
	}
	switch cfg.Seed {
	case 13:
		fmt.Fprintln(os.Stderr, "2026-01-01T00:00:00Z [INFO]  master: loading data")
		fmt.Fprintf(os.Stderr, "master: config %s: seed = 13: unlucky\n", *cfgPath)
		return 1
	case 99:
		ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
		defer stop()
		os.WriteFile(filepath.Join(*out, "started"), nil, 0o644)
		select {
		case <-ctx.Done():
			os.WriteFile(filepath.Join(*out, "stopped"), nil, 0o644)
			return 130
		case <-time.After(30 * time.Second):
			return 3
		}
	}
	if err := atomicfile.WriteJSON(filepath.Join(*out, "result.json"), fakeResult(cfg)); err != nil {
		fmt.Fprintf(os.Stderr, "master: %v\n", err)
		return 1
	}
	return 0
}

// fakeResult makes up a result for cfg: greedy takes 10 s per RBM,
// pipelined on L machines 11 s, pipelined on one machine 10.5 s per RBM.
func fakeResult(cfg *config.Config) *dbn.Result {
	l := len(cfg.DBN.Layers) - 1
	secs := 11.0
	switch SettingOf(cfg) {
	case GreedyOneMachine, GreedyWholeBox:
		secs = 10 * float64(l)
	case PipelinedOneMachine:
		secs = 10.5 * float64(l)
	}
	secs += float64(cfg.Seed) / 100
	r := &dbn.Result{Name: cfg.Name, Mode: cfg.Pretrain.Mode, Seed: cfg.Seed, Layers: cfg.DBN.Layers, PretrainSeconds: secs,
		Weights: "weights.npz", CPUsPerWorker: cfg.Cluster.CPUsPerWorker, Colocate: cfg.Cluster.Colocate,
		Data: dbn.DataInfo{Source: "fake", Train: 100, Test: 10, Dim: cfg.DBN.Layers[0]}, BLAS: "none", Config: cfg.File}
	for i := 1; i <= l; i++ {
		var recon []float64
		for e := 0; e < cfg.Pretrain.Epochs; e++ {
			recon = append(recon, 0.1/float64(i)/float64(e+1))
		}
		r.RBMs = append(r.RBMs, dbn.RBMResult{Index: i, Visible: cfg.DBN.Layers[i-1], Hidden: cfg.DBN.Layers[i], Worker: fmt.Sprintf("local-%d", i),
			Batches: 40, ReconError: recon, BusySeconds: 9.5, WaitSeconds: 0.5 * float64(i), BytesOut: 1000, FinalReconError: 0.05 / float64(i)})
	}
	if cfg.Finetune.Epochs > 0 {
		acc := 0.85 + float64(l)/100
		r.Finetune = &dbn.FinetuneResult{Epochs: cfg.Finetune.Epochs, Seconds: 3, TrainAccuracy: acc + 0.05, TestAccuracy: acc,
			ValidationAccuracy: acc, History: make([]dbn.FinetuneEpoch, cfg.Finetune.Epochs), Init: "pretrained"}
	}
	return r
}

// fakeCommand runs this test binary as the fake master run.
func fakeCommand(t *testing.T) []string {
	t.Helper()
	t.Setenv("PIPEDBN_FAKE_RUN", "1")
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	return []string{exe, "run"}
}

// writeConfig writes a sweep config into a new folder and returns its path.
func writeConfig(t *testing.T, body string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "sw.yaml")
	if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func plan(t *testing.T, path string) *SweepPlan {
	t.Helper()
	cfg, err := config.Load(path, nil)
	if err != nil {
		t.Fatal(err)
	}
	p, err := PlanSweep(cfg, filepath.Join(filepath.Dir(path), "out"))
	if err != nil {
		t.Fatal(err)
	}
	return p
}

const baseConfig = `
data: {source: synthetic, train_limit: 64, test_limit: 16}
dbn: {layers: [16, 8]}
pretrain: {epochs: 1}
cluster: {cpus_per_worker: 0.5}
finetune: {epochs: 0}
`

func TestPlanSweep(t *testing.T) {
	t.Parallel()
	p := plan(t, writeConfig(t, baseConfig+`
sweep:
  repeats: 2
  vary:
    - key: dbn.layers
      values: [[16, 8], [16, 8, 8]]
    - key: pretrain.mode
      values: [greedy, pipelined]
    - key: cluster.colocate
      values: [false, true]
`))
	if want := []string{"dbn.layers", "pretrain.mode", "cluster.colocate"}; !slices.Equal(p.Keys, want) {
		t.Errorf("Keys = %v; want %v", p.Keys, want)
	}
	// Greedy ignores cluster.colocate: 3 runs per depth, not 4.
	var names []string
	for _, r := range p.Runs {
		names = append(names, r.Name)
	}
	want := []string{
		"layers=16-8_mode=greedy_r1", "layers=16-8_mode=pipelined_colocate=false_r1", "layers=16-8_mode=pipelined_colocate=true_r1",
		"layers=16-8-8_mode=greedy_r1", "layers=16-8-8_mode=pipelined_colocate=false_r1", "layers=16-8-8_mode=pipelined_colocate=true_r1",
		"layers=16-8_mode=greedy_r2", "layers=16-8_mode=pipelined_colocate=false_r2", "layers=16-8_mode=pipelined_colocate=true_r2",
		"layers=16-8-8_mode=greedy_r2", "layers=16-8-8_mode=pipelined_colocate=false_r2", "layers=16-8-8_mode=pipelined_colocate=true_r2",
	}
	if !slices.Equal(names, want) {
		t.Errorf("run names =\n%v; want\n%v", names, want)
	}
	if p.Merged != 2 {
		t.Errorf("Merged = %d; want 2 (greedy x colocate true, at each depth)", p.Merged)
	}
	r := p.Runs[4]
	if r.Index != 5 || r.Repeat != 1 || !slices.Equal(r.Sets, []string{"dbn.layers=[16, 8, 8]", "pretrain.mode=pipelined", "cluster.colocate=false"}) ||
		!slices.Equal(r.Values, []string{"[16, 8, 8]", "pipelined", "false"}) {
		t.Errorf("run 5 = %+v; want index 5, repeat 1, sets for [16, 8, 8] pipelined colocate=false", r)
	}
	g := p.Runs[0]
	if !slices.Equal(g.Sets, []string{"dbn.layers=[16, 8]", "pretrain.mode=greedy"}) || g.Values[2] != "" {
		t.Errorf("greedy run sets %v, values %q; want no cluster.colocate", g.Sets, g.Values)
	}
	if c := p.Runs[5].Config; c.Pretrain.Mode != config.Pipelined || !c.Cluster.Colocate || !slices.Equal(c.DBN.Layers, []int{16, 8, 8}) {
		t.Errorf("run 6 config = %+v; want its sets applied", c)
	}
	if got := SettingOf(p.Runs[5].Config); got != PipelinedOneMachine {
		t.Errorf("run 6 setting = %v; want %v", got, PipelinedOneMachine)
	}
}

func TestPlanSweepNoVary(t *testing.T) {
	t.Parallel()
	p := plan(t, writeConfig(t, baseConfig+"sweep: {repeats: 3}\n"))
	if len(p.Runs) != 3 || p.Runs[2].Name != "r3" || len(p.Runs[0].Sets) != 0 {
		t.Errorf("runs = %+v; want r1, r2, r3 without sets", p.Runs)
	}
}

func TestFlowYAML(t *testing.T) {
	t.Parallel()
	cases := []struct {
		v    any
		want string
	}{
		{784, "784"},
		{0.45, "0.45"},
		{1e-5, "1e-05"},
		{true, "true"},
		{"greedy", "greedy"},
		{"true", `"true"`},
		{"12", `"12"`},
		{"a: b", `"a: b"`},
		{"", `""`},
		{[]any{784, 500, 500}, "[784, 500, 500]"},
		{map[string]any{"initial": 0.1, "final": 0.01}, "{final: 0.01, initial: 0.1}"},
	}
	for _, c := range cases {
		got, err := flowYAML(c.v)
		if err != nil || got != c.want {
			t.Errorf("flowYAML(%#v) = %q, %v; want %q", c.v, got, err, c.want)
		}
	}
	if s := slug("[784, 500, 500]"); s != "784-500-500" {
		t.Errorf("slug = %q; want 784-500-500", s)
	}
	if s := slug(`{final: 0.01, initial: 0.1}`); s != "final-0.01-initial-0.1" {
		t.Errorf("slug = %q", s)
	}
}

// Every set-string reads back, through config.Load, as the value swept.
func TestSweepSetsRoundTrip(t *testing.T) {
	t.Parallel()
	p := plan(t, writeConfig(t, baseConfig+`
sweep:
  vary:
    - key: pretrain.learning_rate
      values: [{initial: 0.1, final: 0.01}]
    - key: cluster.cpus_per_worker
      values: [0.25]
    - key: data.source
      values: [synthetic]
    - key: seed
      values: [7]
`))
	c := p.Runs[0].Config
	if c.Pretrain.LearningRate != (config.Schedule{Initial: 0.1, Final: 0.01}) || c.Cluster.CPUsPerWorker != 0.25 || c.Seed != 7 {
		t.Errorf("config = %+v; want the swept values", c)
	}
	if want := "learning_rate=final-0.01-initial-0.1_cpus_per_worker=0.25_source=synthetic_seed=7_r1"; p.Runs[0].Name != want {
		t.Errorf("name = %q; want %q", p.Runs[0].Name, want)
	}
}

// Bad sweep input stops before any run with one line naming the file, the
// key and the value.
func TestPlanSweepBadInput(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name, sweep string
		want        []string
	}{
		{"unknown key", "vary: [{key: pretrain.speed, values: [1]}]", []string{"sweep.vary[0].key", `"pretrain.speed"`}},
		{"no values", "vary: [{key: pretrain.epochs, values: []}]", []string{"sweep.vary[0].values"}},
		{"duplicate key", "vary: [{key: pretrain.epochs, values: [1]}, {key: pretrain.epochs, values: [2]}]", []string{"sweep.vary[1].key", "pretrain.epochs", "already varied"}},
		{"section and key", "vary: [{key: pretrain.learning_rate, values: [{initial: 0.1}]}, {key: pretrain.learning_rate.final, values: [0.1]}]", []string{"sweep.vary[1].key", "already varied"}},
		{"output folder", "vary: [{key: output.dir, values: [a, b]}]", []string{"sweep.vary[0].key", `"output.dir"`}},
		{"bad value", "vary: [{key: dbn.layers, values: [[16, 8], [16]]}]", []string{"dbn.layers=[16]", "dbn.layers = [16]", "at least 2"}},
		{"bad type", "vary: [{key: pretrain.epochs, values: [many]}]", []string{"pretrain.epochs=many", `pretrain.epochs = "many"`}},
		{"zero repeats", "repeats: 0", []string{"sweep.repeats = 0"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			path := writeConfig(t, baseConfig+"sweep: {"+c.sweep+"}\n")
			cfg, err := config.Load(path, nil)
			if err == nil {
				_, err = PlanSweep(cfg, t.TempDir())
			}
			if err == nil {
				t.Fatal("no error; want one")
			}
			msg := err.Error()
			if strings.Contains(msg, "\n") || !strings.Contains(msg, path) {
				t.Errorf("error %q: want one line naming %s", msg, path)
			}
			for _, w := range c.want {
				if !strings.Contains(msg, w) {
					t.Errorf("error %q: want it to name %q", msg, w)
				}
			}
		})
	}
}

func readCSV(t *testing.T, path string) [][]string {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	recs, err := csv.NewReader(f).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	return recs
}

func invocations(t *testing.T, dir string) []string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, "invocations"))
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		t.Fatal(err)
	}
	return strings.Fields(string(b))
}

// A sweep runs every run as its own process, records failures and goes on,
// writes sweep.csv and the report; run again, it skips the runs that have a
// result.json and retries the failed ones; a changed config runs them again.
func TestRunSweep(t *testing.T) {
	cmd := fakeCommand(t)
	body := baseConfig + `
sweep:
  vary:
    - key: seed
      values: [1, 13]
    - key: pretrain.mode
      values: [greedy, pipelined]
`
	path := writeConfig(t, body)
	p := plan(t, path)
	opt := SweepOptions{Command: cmd, Logger: hclog.New(&hclog.LoggerOptions{Output: hclog.DefaultOutput, Level: hclog.Warn}), Regenerate: "master sweep --config " + path}
	rows, err := RunSweep(context.Background(), p, opt)
	if !errors.Is(err, ErrRunsFailed) || !strings.Contains(err.Error(), "2 of 4 runs failed") {
		t.Fatalf("RunSweep error = %v; want 2 of 4 runs failed", err)
	}
	var status []string
	for _, r := range rows {
		status = append(status, r.Status.String())
	}
	if want := []string{"ok", "ok", "failed", "failed"}; !slices.Equal(status, want) {
		t.Fatalf("statuses = %v; want %v", status, want)
	}
	if e := rows[2].Err; !strings.HasPrefix(e, "config "+path+": seed = 13: unlucky (exit status 1; log: ") {
		t.Errorf("error of the failed run = %q; want the run's own error line, exit status and log", e)
	}
	for _, f := range []string{"sweep.csv", "report.md", "seed=1_mode=greedy_r1/result.json", "seed=1_mode=greedy_r1/run.log", "seed=13_mode=greedy_r1/run.log"} {
		if st, err := os.Stat(filepath.Join(p.Dir, f)); err != nil || st.Size() == 0 {
			t.Errorf("%s: %v; want a non-empty file", f, err)
		}
	}
	recs := readCSV(t, filepath.Join(p.Dir, "sweep.csv"))
	if len(recs) != 5 {
		t.Fatalf("sweep.csv has %d records; want a header and 4 rows", len(recs))
	}
	col := map[string]int{}
	for i, h := range recs[0] {
		col[h] = i
	}
	if r := recs[1]; r[col["seed"]] != "1" || r[col["pretrain.mode"]] != "greedy" || r[col["status"]] != "ok" ||
		r[col["pretrain_seconds"]] != "10.01" {
		t.Errorf("first row %v; want seed 1, greedy, ok, 10.01 s", r)
	}
	if r := recs[3]; r[col["status"]] != "failed" || !strings.Contains(r[col["error"]], "unlucky") || r[col["pretrain_seconds"]] != "" {
		t.Errorf("failed row %v; want status failed, the error, no results", r)
	}
	if n := len(invocations(t, p.Dir)); n != 4 {
		t.Errorf("%d runs started; want 4", n)
	}

	// Again: the two finished runs are reused, the two failed ones retried.
	rows, err = RunSweep(context.Background(), p, opt)
	if !errors.Is(err, ErrRunsFailed) {
		t.Fatalf("second RunSweep error = %v; want failed runs", err)
	}
	if !rows[0].Reused || !rows[1].Reused || rows[2].Reused || rows[0].Result == nil || rows[0].Result.PretrainSeconds != 10.01 {
		t.Errorf("second sweep rows = %+v; want the finished runs reused", rows)
	}
	if got := invocations(t, p.Dir); len(got) != 6 || !slices.Equal(got[4:], []string{"seed=13_mode=greedy_r1", "seed=13_mode=pipelined_r1"}) {
		t.Errorf("runs started = %v; want only the failed two again", got)
	}

	// A changed config: the same folders, but nothing is reused.
	if err := os.WriteFile(path, []byte(strings.Replace(body, "epochs: 1", "epochs: 3", 1)), 0o644); err != nil {
		t.Fatal(err)
	}
	rows, _ = RunSweep(context.Background(), plan(t, path), opt)
	if rows[0].Reused || rows[0].Status != RunDone || len(rows[0].Result.RBMs[0].ReconError) != 3 {
		t.Errorf("after a config change, row 1 = %+v; want it run again with 3 epochs", rows[0])
	}
	if n := len(invocations(t, p.Dir)); n != 10 {
		t.Errorf("%d runs started in all; want 10", n)
	}
}

// Stopping a sweep stops the current run cleanly (SIGINT), keeps the
// finished runs and records the rest.
func TestRunSweepInterrupt(t *testing.T) {
	cmd := fakeCommand(t)
	p := plan(t, writeConfig(t, baseConfig+`
sweep:
  vary:
    - key: seed
      values: [1, 99, 2]
`))
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	started := filepath.Join(p.Dir, p.Runs[1].Name, "started")
	go func() {
		for {
			if _, err := os.Stat(started); err == nil {
				cancel()
				return
			}
			select {
			case <-ctx.Done():
				return
			case <-time.After(10 * time.Millisecond):
			}
		}
	}()
	t0 := time.Now()
	rows, err := RunSweep(ctx, p, SweepOptions{Command: cmd, StopGrace: 10 * time.Second})
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("RunSweep error = %v; want context.Canceled", err)
	}
	if d := time.Since(t0); d > 8*time.Second {
		t.Errorf("stopping took %v; want the run stopped at once", d)
	}
	if rows[0].Status != RunDone || rows[1].Status != RunStopped || rows[2].Status != RunPending {
		t.Errorf("statuses %v, %v, %v; want ok, interrupted, pending", rows[0].Status, rows[1].Status, rows[2].Status)
	}
	if _, err := os.Stat(filepath.Join(p.Dir, p.Runs[1].Name, "stopped")); err != nil {
		t.Errorf("the interrupted run did not stop cleanly on SIGINT: %v", err)
	}
	recs := readCSV(t, filepath.Join(p.Dir, "sweep.csv"))
	if len(recs) != 4 || recs[2][slices.Index(recs[0], "status")] != "interrupted" || recs[3][slices.Index(recs[0], "status")] != "pending" {
		t.Errorf("sweep.csv = %v; want rows ok, interrupted, pending", recs)
	}
	if _, err := os.Stat(filepath.Join(p.Dir, p.Runs[0].Name, "result.json")); err != nil {
		t.Errorf("finished run lost: %v", err)
	}
}

func TestSweepCSVColumns(t *testing.T) {
	t.Parallel()
	p := plan(t, writeConfig(t, baseConfig+`
sweep:
  vary:
    - key: dbn.layers
      values: [[16, 8, 8]]
    - key: pretrain.mode
      values: [pipelined]
`))
	rows := []SweepRow{{SweepRun: p.Runs[0], Status: RunDone, WallSeconds: 3.5, Result: fakeResult(p.Runs[0].Config)}}
	rows[0].Result.Finetune = &dbn.FinetuneResult{History: make([]dbn.FinetuneEpoch, 4), Seconds: 2, TrainAccuracy: 0.9, ValidationAccuracy: 0.8, TestAccuracy: 0.85}
	b, err := SweepCSV(p, rows)
	if err != nil {
		t.Fatal(err)
	}
	recs, err := csv.NewReader(strings.NewReader(string(b))).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"index", "run", "dbn.layers", "pretrain.mode", "repeat", "setting", "status", "mode", "layers", "hidden_layers",
		"cpus_per_worker", "colocate", "pretrain_seconds", "busy_seconds", "wait_seconds", "bytes_out", "final_recon_error",
		"finetune_epochs", "finetune_seconds", "train_accuracy", "validation_accuracy", "test_accuracy", "finetune_cpus", "end_to_end_seconds",
		"overhead_seconds", "wall_seconds", "reused", "error"}
	if !slices.Equal(recs[0], want) {
		t.Errorf("header = %v; want %v", recs[0], want)
	}
	got := map[string]string{}
	for i, h := range recs[0] {
		got[h] = recs[1][i]
	}
	for k, v := range map[string]string{
		"index": "1", "dbn.layers": "[16, 8, 8]", "repeat": "1", "setting": "pipelined, L machines", "status": "ok", "hidden_layers": "2",
		"cpus_per_worker": "0.5", "colocate": "false", "pretrain_seconds": "11.01", "busy_seconds": "19", "wait_seconds": "1.5",
		"bytes_out": "2000", "final_recon_error": "0.0375", "finetune_epochs": "4", "test_accuracy": "0.85", "wall_seconds": "3.5", "error": "",
		// A result.json written before finetune.plan, end_to_end_seconds
		// and overhead_seconds.
		"finetune_cpus": "", "end_to_end_seconds": "", "overhead_seconds": "",
	} {
		if got[k] != v {
			t.Errorf("column %s = %q; want %q", k, got[k], v)
		}
	}
}

// Greedy has no slaves and no checkpoints: it ignores reliability.*, and a
// sweep of reliability.checkpoint_every runs it once.
func TestPlanSweepGreedyIgnoresReliability(t *testing.T) {
	t.Parallel()
	p := plan(t, writeConfig(t, baseConfig+`
sweep:
  vary:
    - key: pretrain.mode
      values: [greedy, pipelined]
    - key: reliability.checkpoint_every
      values: [0, 5]
`))
	var names []string
	for _, r := range p.Runs {
		names = append(names, r.Name)
	}
	if want := []string{"mode=greedy_r1", "mode=pipelined_checkpoint_every=0_r1", "mode=pipelined_checkpoint_every=5_r1"}; !slices.Equal(names, want) || p.Merged != 1 {
		t.Errorf("runs %v, merged %d; want %v, 1", names, p.Merged, want)
	}
}

// A run's stamp written before a config key existed lacks the key: the run
// is reused when the key's default is what the config has now (it ran as
// that default has it), and run again when the config sets another value.
func TestFinishedStampWithoutANewKey(t *testing.T) {
	cmd := fakeCommand(t)
	path := writeConfig(t, baseConfig)
	p := plan(t, path)
	opt := SweepOptions{Command: cmd, Logger: hclog.NewNullLogger(), Regenerate: "master sweep --config " + path}
	rows, err := RunSweep(context.Background(), p, opt)
	if err != nil || len(rows) != 1 {
		t.Fatalf("RunSweep = %d rows, %v; want 1, nil", len(rows), err)
	}
	if got := unstamp(t, p, &rows[0].SweepRun, "Cluster", "SyncEvery"); got != 1.0 {
		t.Fatalf("stamp's cluster.sync_every: %v; want 1 (its default)", got)
	}
	if res, why := finished(p, &rows[0].SweepRun); res == nil {
		t.Errorf("a stamp without cluster.sync_every, at its default now: not reused (%s); want reused", why)
	}
	changed := plan(t, writeConfig(t, strings.Replace(baseConfig, "cluster: {cpus_per_worker: 0.5}", "cluster: {cpus_per_worker: 0.5, sync_every: 5}", 1)))
	changed.Dir = p.Dir
	if res, why := finished(changed, &changed.Runs[0]); res != nil || why != "the configuration changed since it ran" {
		t.Errorf("the same stamp with cluster.sync_every 5 now: reused %v (%q); want run again, the configuration changed", res != nil, why)
	}
}

// pretrain.settle.schedule came with a default that changed the
// schedule: a pipelined run whose stamp lacks it ran the schedule before
// it and runs again. A greedy run has no settle phase: it is reused
// whatever the settle keys say.
func TestFinishedStampSettle(t *testing.T) {
	cmd := fakeCommand(t)
	for _, tc := range []struct {
		mode     string
		reused   bool
		settleTo string // what the config says now
	}{
		{"pipelined", false, ""},
		{"greedy", true, ""},
		{"greedy", true, ", settle: {fraction: 0.5, schedule: after}"},
	} {
		path := writeConfig(t, strings.Replace(baseConfig, "pretrain: {epochs: 1}", "pretrain: {epochs: 1, mode: "+tc.mode+"}", 1))
		p := plan(t, path)
		opt := SweepOptions{Command: cmd, Logger: hclog.NewNullLogger(), Regenerate: "master sweep --config " + path}
		rows, err := RunSweep(context.Background(), p, opt)
		if err != nil || len(rows) != 1 {
			t.Fatalf("%s: RunSweep = %d rows, %v; want 1, nil", tc.mode, len(rows), err)
		}
		unstamp(t, p, &rows[0].SweepRun, "Pretrain", "Settle", "Schedule")
		now := plan(t, writeConfig(t, strings.Replace(baseConfig, "pretrain: {epochs: 1}", "pretrain: {epochs: 1, mode: "+tc.mode+tc.settleTo+"}", 1)))
		now.Dir = p.Dir
		if res, why := finished(now, &now.Runs[0]); (res != nil) != tc.reused {
			t.Errorf("%s, a stamp without the settle schedule, settle now %q: reused %v (%q); want %v", tc.mode, tc.settleTo, res != nil, why, tc.reused)
		}
	}
}

// unstamp deletes the config key at path (its sections and its field, as
// the stamp spells them) from the stamp of run r, as a stamp written
// before the key existed lacks it, and returns what it held.
func unstamp(t *testing.T, p *SweepPlan, r *SweepRun, path ...string) any {
	t.Helper()
	stampPath := filepath.Join(p.runDir(r), runStamp)
	b, err := os.ReadFile(stampPath)
	if err != nil {
		t.Fatal(err)
	}
	var raw map[string]any
	if err := json.Unmarshal(b, &raw); err != nil {
		t.Fatal(err)
	}
	section := raw["config"].(map[string]any)
	for _, name := range path[:len(path)-1] {
		section = section[name].(map[string]any)
	}
	key := path[len(path)-1]
	was := section[key]
	delete(section, key)
	old, _ := json.Marshal(raw)
	if err := os.WriteFile(stampPath, old, 0o644); err != nil {
		t.Fatal(err)
	}
	return was
}

// sweep.csv has a run's end_to_end_seconds and the CPUs its fine-tuning
// ran under, 0 where the cap could not be set.
func TestSweepCSVEndToEnd(t *testing.T) {
	t.Parallel()
	p := plan(t, writeConfig(t, baseConfig))
	res := fakeResult(p.Runs[0].Config)
	res.Finetune = &dbn.FinetuneResult{Seconds: 2, Plan: &dbn.FinetunePlan{Workers: 1, CPUs: 0, Threads: 1}}
	res.EndToEndSeconds = res.PretrainSeconds + 2
	b, err := SweepCSV(p, []SweepRow{{SweepRun: p.Runs[0], Status: RunDone, Result: res}})
	if err != nil {
		t.Fatal(err)
	}
	recs, err := csv.NewReader(strings.NewReader(string(b))).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for i, h := range recs[0] {
		got[h] = recs[1][i]
	}
	if got["finetune_cpus"] != "0" || got["end_to_end_seconds"] != "13.01" || got["cpus_per_worker"] != "0.5" {
		t.Errorf("finetune_cpus %q, end_to_end_seconds %q, cpus_per_worker %q; want 0 (uncapped), 13.01, 0.5",
			got["finetune_cpus"], got["end_to_end_seconds"], got["cpus_per_worker"])
	}
}
