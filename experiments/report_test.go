package experiments

import (
	"bytes"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/pipedbn/pipedbn/config"
	"github.com/pipedbn/pipedbn/dbn"
	"github.com/pipedbn/pipedbn/internal/atomicfile"
)

// fabricate makes the rows of a finished sweep of plan from fakeResult.
func fabricate(t *testing.T, p *SweepPlan) []SweepRow {
	t.Helper()
	var rows []SweepRow
	for _, r := range p.Runs {
		res := fakeResult(r.Config)
		if err := os.MkdirAll(p.runDir(&r), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := atomicfile.WriteJSON(filepath.Join(p.runDir(&r), "result.json"), res); err != nil {
			t.Fatal(err)
		}
		back, err := dbn.ReadResult(filepath.Join(p.runDir(&r), "result.json"))
		if err != nil {
			t.Fatal(err)
		}
		rows = append(rows, SweepRow{SweepRun: r, Status: RunDone, Result: back})
	}
	return rows
}

var pngMagic = []byte("\x89PNG\r\n\x1a\n")

func checkPNGs(t *testing.T, dir string, want, absent []string) {
	t.Helper()
	for _, name := range want {
		b, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil || len(b) < 1000 || !bytes.HasPrefix(b, pngMagic) {
			t.Errorf("%s: %d bytes, %v; want a PNG", name, len(b), err)
		}
	}
	for _, name := range absent {
		if _, err := os.Stat(filepath.Join(dir, name)); err == nil {
			t.Errorf("%s written; want no such plot for this sweep", name)
		}
	}
}

// The Table 3 sweep: three settings x two depths, fine-tuned, repeated.
func TestWriteReportTable3(t *testing.T) {
	t.Parallel()
	p := plan(t, writeConfig(t, `
data: {source: synthetic}
dbn: {layers: [16, 16, 16, 16, 16]}
pretrain: {epochs: 3}
cluster: {cpus_per_worker: 0.45}
finetune: {epochs: 2}
sweep:
  repeats: 2
  vary:
    - key: dbn.layers
      values: [[16, 16, 16, 16, 16], [16, 16, 16, 16, 16, 16]]
    - key: pretrain.mode
      values: [greedy, pipelined]
    - key: cluster.colocate
      values: [false, true]
`))
	rows := fabricate(t, p)
	rows[len(rows)-1].Status, rows[len(rows)-1].Result, rows[len(rows)-1].Err = RunFailed, nil, "slave local-3 failed"
	files, err := WriteReport(p, rows, "go run ./cmd/master sweep --config x.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if len(files) != 8 {
		t.Errorf("files written: %v; want 7 plots and report.md", files)
	}
	checkPNGs(t, p.Dir, []string{plotTime, plotSpeedup, plotAccuracy, plotRecon, plotBusy, plotSim, plotPaired}, nil)
	b, err := os.ReadFile(filepath.Join(p.Dir, "report.md"))
	if err != nil {
		t.Fatal(err)
	}
	md := string(b)
	// fakeResult: greedy 10 s per RBM, pipelined on 1 machine 10.5 s per
	// RBM, on L machines 11 s; seed 1 adds 0.01 s. Repeats are equal.
	for _, want := range []string{
		"```sh\ngo run ./cmd/master sweep --config x.yaml\n```",
		"| setting | L=4 | L=5 |",
		"| greedy, 1 machine | 40.0 | 50.0 |",
		"| pipelined, 1 machine | 42.0 | 52.5 |",
		"| pipelined, L machines | 11.0 | 11.0 |",
		"| greedy, 1 machine | 68.68 | 90.30 |", // the paper's
		"| L=4 | 40.0 | 42.0 | 11.0 | 3.63 | 0.91 | 2.84 | 0.71 |",
		"| L=5 | 50.0 | 52.5 | 11.0 | 4.54 | 0.91 | 3.60 | 0.72 |",
		"| greedy, 1 machine | 89.00 | 90.00 |", // test accuracy %
		"![speed-up and parallel efficiency vs slaves](speedup.png)",
		"| layers=16-16-16-16-16-16_mode=pipelined_colocate=true_r2 | failed | slave local-3 failed |",
		"2 combinations merged",
		"## Cluster simulator", "Largest error: ", "| 16 | ",
	} {
		if !strings.Contains(md, want) {
			t.Errorf("report.md lacks %q:\n%s", want, md)
		}
	}
}

// A sweep that varies none of Table 3's keys still gets a report: a table
// of its runs, and only the plots that apply.
func TestWriteReportOtherKeys(t *testing.T) {
	t.Parallel()
	p := plan(t, writeConfig(t, `
data: {source: synthetic}
dbn: {layers: [16, 8]}
pretrain: {epochs: 1, mode: greedy}
finetune: {epochs: 0}
sweep:
  vary:
    - key: pretrain.learning_rate.initial
      values: [0.1, 0.01]
`))
	// A plot left from an earlier report that no longer applies goes.
	if err := os.MkdirAll(p.Dir, 0o755); err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(p.Dir, plotSpeedup), []byte("old"), 0o644)
	rows := fabricate(t, p)
	if _, err := WriteReport(p, rows, ""); err != nil {
		t.Fatal(err)
	}
	checkPNGs(t, p.Dir, []string{plotBusy}, []string{plotTime, plotSpeedup, plotAccuracy, plotRecon, plotSim})
	b, _ := os.ReadFile(filepath.Join(p.Dir, "report.md"))
	md := string(b)
	for _, want := range []string{
		"| greedy, whole box · pretrain.learning_rate.initial=0.1 | 10.0 |",
		"| greedy, whole box · pretrain.learning_rate.initial=0.01 | 10.0 |",
		"no speed-up", "One depth only", "One epoch",
	} {
		if !strings.Contains(md, want) {
			t.Errorf("report.md lacks %q:\n%s", want, md)
		}
	}
	if strings.Contains(md, "Accuracy") {
		t.Errorf("report.md has an accuracy section without fine-tuning:\n%s", md)
	}
}

func TestSettingOf(t *testing.T) {
	t.Parallel()
	cases := []struct {
		mode      config.Mode
		transport config.Transport
		cpus      float64
		colocate  bool
		slaves    int
		machines  []float64
		want      Setting
	}{
		{config.Greedy, config.NATS, 0.45, true, 0, nil, GreedyOneMachine},
		{config.Greedy, config.NATS, 0, false, 0, nil, GreedyWholeBox},
		{config.Pipelined, config.NATS, 0.45, true, 0, nil, PipelinedOneMachine},
		{config.Pipelined, config.NATS, 0.45, false, 0, nil, PipelinedLMachines},
		{config.Pipelined, config.NATS, 0, false, 4, nil, PipelinedLMachines},
		{config.Pipelined, config.NATS, 0, true, 0, nil, PipelinedWholeBox},
		{config.Pipelined, config.NATS, 0, false, 0, []float64{0.5, 0.25}, PipelinedLMachines},
		{config.Pipelined, config.Memory, 0.45, false, 0, nil, PipelinedInProcess},
	}
	for _, c := range cases {
		cfg := &config.Config{}
		cfg.Pretrain.Mode, cfg.Cluster.Transport, cfg.Cluster.CPUsPerWorker, cfg.Cluster.Colocate, cfg.Cluster.Slaves = c.mode, c.transport, c.cpus, c.colocate, c.slaves
		cfg.Cluster.MachineCPUs = c.machines
		if got := SettingOf(cfg); got != c.want {
			t.Errorf("SettingOf(%+v) = %v; want %v", c, got, c.want)
		}
	}
}

// meanSD is the mean and the standard deviation (n−1) of xs, computed here
// by hand so that the report's statistics are checked against another
// computation.
func meanSD(xs []float64) (mean, sd float64) {
	for _, x := range xs {
		mean += x
	}
	mean /= float64(len(xs))
	for _, x := range xs {
		sd += (x - mean) * (x - mean)
	}
	return mean, math.Sqrt(sd / float64(len(xs)-1))
}

// t975df4 is the 0.975 quantile of Student's t with 4 degrees of freedom
// (five pairs), from a table.
const t975df4 = 2.776445

// pairedRow is the line of the paired summary table for a quantity whose
// greedy and pipelined values over the pairs are g and p.
func pairedRow(name, format string, g, p []float64) string {
	var d []float64
	for i := range g {
		d = append(d, p[i]-g[i])
	}
	gm, gs := meanSD(g)
	pm, ps := meanSD(p)
	dm, ds := meanSD(d)
	half := t975df4 * ds / math.Sqrt(float64(len(d)))
	f, sf := format, strings.Replace(format, "%", "%+", 1)
	return fmt.Sprintf("| %s | %d | "+f+" ± "+f+" | "+f+" ± "+f+" | pipelined − greedy | "+sf+" | "+f+" | ["+sf+", "+sf+"] |",
		name, len(d), gm, gs, pm, ps, dm, ds, dm-half, dm+half)
}

// The paired comparison: five seeds, greedy against pipelined at two
// values of K, which greedy ignores (its runs are merged: each partners
// both K). Its numbers are made up here.
func TestWriteReportPaired(t *testing.T) {
	t.Parallel()
	p := plan(t, writeConfig(t, `
data: {source: synthetic}
dbn: {layers: [16, 8, 4]}
pretrain: {epochs: 1}
finetune: {epochs: 1}
sweep:
  vary:
    - key: pretrain.mode
      values: [greedy, pipelined]
    - key: pretrain.k_batches
      values: [5, 10]
    - key: seed
      values: [1, 2, 3, 4, 5]
`))
	if len(p.Runs) != 15 || p.Merged != 5 {
		t.Fatalf("plan: %d runs, %d merged; want 15 and 5", len(p.Runs), p.Merged)
	}
	// Per seed: greedy's test accuracy (%) and RBM 1 error; what pipelined
	// adds to them (at K = 10, 0.10 more accuracy). RBM 2 is fakeResult's
	// in both modes.
	greedyAcc := []float64{89.00, 89.50, 89.20, 89.80, 89.10}
	accDiff := []float64{0.10, -0.20, 0.30, 0.00, 0.05}
	greedyRecon := []float64{0.01840, 0.01850, 0.01830, 0.01845, 0.01835}
	reconDiff := []float64{0.00010, 0.00020, -0.00005, 0.00015, 0.00010}
	rows := fabricate(t, p)
	for _, r := range rows {
		s := r.Config.Seed - 1
		acc, recon := greedyAcc[s], greedyRecon[s]
		if r.Config.Pretrain.Mode == config.Pipelined {
			acc, recon = acc+accDiff[s], recon+reconDiff[s]
			if r.Config.Pretrain.KBatches == 10 {
				acc += 0.10
			}
		}
		r.Result.Finetune.TestAccuracy, r.Result.RBMs[0].FinalReconError = acc/100, recon
	}
	if _, err := WriteReport(p, rows, ""); err != nil {
		t.Fatal(err)
	}
	checkPNGs(t, p.Dir, []string{plotPaired}, nil)
	b, _ := os.ReadFile(filepath.Join(p.Dir, "report.md"))
	md := string(b)

	var pipelinedAcc, pipelinedAcc10, pipelinedRecon, ratio []float64
	for i := range greedyAcc {
		pipelinedAcc = append(pipelinedAcc, greedyAcc[i]+accDiff[i])
		pipelinedAcc10 = append(pipelinedAcc10, greedyAcc[i]+accDiff[i]+0.10)
		pipelinedRecon = append(pipelinedRecon, greedyRecon[i]+reconDiff[i])
		ratio = append(ratio, pipelinedRecon[i]/greedyRecon[i])
	}
	rm, rs := meanSD(ratio)
	rh := t975df4 * rs / math.Sqrt(5)
	accRow := pairedRow("test accuracy (%)", "%.2f", greedyAcc, pipelinedAcc)
	// The same by hand: differences 0.10 -0.20 0.30 0 0.05, mean 0.05, sd
	// sqrt(0.13/4) = 0.180, half-width 2.776445 x 0.180 / sqrt(5) = 0.224.
	if want := "| test accuracy (%) | 5 | 89.32 ± 0.33 | 89.37 ± 0.29 | pipelined − greedy | +0.05 | 0.18 | [-0.17, +0.27] |"; accRow != want {
		t.Fatalf("the test's own expectation %q; want %q", accRow, want)
	}
	k5, k10 := "### (a) pipelined, whole box vs greedy, whole box · pretrain.k_batches=5", "### (b) pipelined, whole box vs greedy, whole box · pretrain.k_batches=10"
	for _, want := range []string{
		"## Pipelined vs greedy, paired",
		k5 + "\n\n5 of 5 pairs finished.\n",
		accRow,
		pairedRow("RBM 1 final recon. error", "%.5f", greedyRecon, pipelinedRecon),
		fmt.Sprintf("| RBM 1 final recon. error | 5 | | | pipelined / greedy | %.4f | %.4f | [%.4f, %.4f] |", rm, rs, rm-rh, rm+rh),
		"| RBM 2 final recon. error | 5 | 0.02500 ± 0.00000 | 0.02500 ± 0.00000 | pipelined − greedy | +0.00000 | 0.00000 | [+0.00000, +0.00000] |",
		"Test accuracy (%), per pair:\n\n| pair | greedy | pipelined | pipelined − greedy |\n|---|---:|---:|---:|\n| seed=1 | 89.00 | 89.10 | +0.10 |\n| seed=2 | 89.50 | 89.30 | -0.20 |",
		"| seed=3 | 0.01830 | 0.01825 | -0.00005 | 0.9973 |",
		k10 + "\n\n5 of 5 pairs finished.\n",
		pairedRow("test accuracy (%)", "%.2f", greedyAcc, pipelinedAcc10),
		"](paired.png)",
		// Each RBM's error against greedy's, at a glance: both K have
		// the same RBM 1 errors; RBM 2 is fakeResult's in both modes.
		"## Each RBM's final error against greedy's",
		fmt.Sprintf("| pipelined, whole box vs greedy, whole box · pretrain.k_batches=5 | 5 | %.3f | 1.000 |", rm),
		fmt.Sprintf("| pipelined, whole box vs greedy, whole box · pretrain.k_batches=10 | 5 | %.3f | 1.000 |", rm),
	} {
		if !strings.Contains(md, want) {
			t.Errorf("report.md lacks %q:\n%s", want, md)
		}
	}
	if i, j := strings.Index(md, k5), strings.Index(md, k10); i < 0 || j < 0 || strings.Count(md[i:j], accRow) != 1 {
		t.Errorf("the K=5 section does not hold %q:\n%s", accRow, md)
	}
	if strings.Contains(md, "no confidence interval") {
		t.Errorf("report.md says no interval with five pairs:\n%s", md)
	}
}

// No paired section where there is nothing to pair, or only one pair of
// each kind.
func TestWriteReportPairedAbsent(t *testing.T) {
	t.Parallel()
	for name, vary := range map[string]string{
		"mode not swept": `
    - key: seed
      values: [1, 2, 3]`,
		"one pair each": `
    - key: pretrain.mode
      values: [greedy, pipelined]
    - key: pretrain.k_batches
      values: [5, 10]`,
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			p := plan(t, writeConfig(t, `
data: {source: synthetic}
dbn: {layers: [16, 8]}
pretrain: {epochs: 1}
finetune: {epochs: 1}
sweep:
  vary:`+vary+"\n"))
			if _, err := WriteReport(p, fabricate(t, p), ""); err != nil {
				t.Fatal(err)
			}
			checkPNGs(t, p.Dir, nil, []string{plotPaired})
			b, _ := os.ReadFile(filepath.Join(p.Dir, "report.md"))
			md := string(b)
			if strings.Contains(md, "paired") {
				t.Errorf("report.md has a paired comparison:\n%s", md)
			}
			// One pair per group still gets each RBM's error against
			// greedy's; a sweep without both modes does not.
			if got, want := strings.Contains(md, "## Each RBM's final error against greedy's"), name == "one pair each"; got != want {
				t.Errorf("report.md has each RBM's error against greedy's: %t; want %t:\n%s", got, want, md)
			}
		})
	}
}

// Of two seeds, one pipelined run failed: one pair, no interval.
func TestWriteReportPairedOnePair(t *testing.T) {
	t.Parallel()
	p := plan(t, writeConfig(t, `
data: {source: synthetic}
dbn: {layers: [16, 8]}
pretrain: {epochs: 1}
finetune: {epochs: 1}
sweep:
  vary:
    - key: pretrain.mode
      values: [greedy, pipelined]
    - key: seed
      values: [1, 2]
`))
	rows := fabricate(t, p)
	last := &rows[len(rows)-1] // pipelined, seed 2
	if last.Config.Pretrain.Mode != config.Pipelined || last.Config.Seed != 2 {
		t.Fatalf("last run %s; want pipelined seed 2", last.Name)
	}
	last.Status, last.Result, last.Err = RunFailed, nil, "slave local-1 failed"
	rows[2].Result.Finetune.TestAccuracy = 0.8912 // pipelined, seed 1
	if _, err := WriteReport(p, rows, ""); err != nil {
		t.Fatal(err)
	}
	checkPNGs(t, p.Dir, nil, []string{plotPaired})
	b, _ := os.ReadFile(filepath.Join(p.Dir, "report.md"))
	md := string(b)
	for _, want := range []string{
		"## Pipelined vs greedy, paired",
		"1 of 2 pairs finished. One pair: no confidence interval can be given (it needs two pairs or more).",
		"| test accuracy (%) | 1 | 86.00 | 89.12 | pipelined − greedy | +3.12 | – | – |",
		"| seed=1 | 86.00 | 89.12 | +3.12 |",
	} {
		if !strings.Contains(md, want) {
			t.Errorf("report.md lacks %q:\n%s", want, md)
		}
	}
}

// A sweep of greedy against pipelined with probes: the probe section's
// table (seconds to within 5% of greedy's final probe error) and probe.png;
// none without probes.
func TestWriteReportProbe(t *testing.T) {
	t.Parallel()
	p := plan(t, writeConfig(t, `
data: {source: synthetic}
dbn: {layers: [16, 8, 4]}
pretrain: {epochs: 1, probe: {rows: 100}}
finetune: {epochs: 0}
sweep:
  vary:
    - key: pretrain.mode
      values: [greedy, pipelined]
`))
	rows := fabricate(t, p)
	if _, err := WriteReport(p, rows, ""); err != nil {
		t.Fatal(err)
	}
	checkPNGs(t, p.Dir, nil, []string{plotProbe})
	drift := func(v float64) *float64 { return &v }
	for _, r := range rows {
		r.Result.ProbeRows = 100
		pts := [][]dbn.ProbePoint{
			{{Seconds: 1, ReconError: 0.04, Drift: drift(0.3)}, {Seconds: 2, ReconError: 0.02, Drift: drift(0.1)}, {Seconds: 3, ReconError: 0.0100, Drift: drift(0)}},
			{{Seconds: 4, ReconError: 0.03}, {Seconds: 5, ReconError: 0.0200}},
		}
		if r.Config.Pretrain.Mode == config.Pipelined {
			pts = [][]dbn.ProbePoint{
				{{Seconds: 1, ReconError: 0.03, Drift: drift(0.2)}, {Seconds: 1.5, ReconError: 0.0105, Drift: drift(0.1)}, {Seconds: 2.5, ReconError: 0.0101, Drift: drift(0)}},
				{{Seconds: 1, ReconError: 0.05}, {Seconds: 2.5, ReconError: 0.0300}},
			}
		}
		for i := range r.Result.RBMs {
			r.Result.RBMs[i].Probe = pts[i]
		}
	}
	if _, err := WriteReport(p, rows, ""); err != nil {
		t.Fatal(err)
	}
	checkPNGs(t, p.Dir, []string{plotProbe}, nil)
	b, _ := os.ReadFile(filepath.Join(p.Dir, "report.md"))
	md := string(b)
	for _, want := range []string{
		"## Probe: learning over wall time",
		"the first 100 training examples",
		"**(a) pipelined, whole box vs greedy, whole box**",
		"| RBM | greedy: s to 1.05x | greedy: final | pipelined: s to 1.05x | pipelined: final |",
		"| 1 | 3.0 | 0.01000 | 1.5 | 0.01010 |",
		"| 2 | 5.0 | 0.02000 | - | 0.03000 |",
		"](probe.png)",
	} {
		if !strings.Contains(md, want) {
			t.Errorf("report.md lacks %q:\n%s", want, md)
		}
	}
}

// A sweep of the mode and one numeric key (the K study): the section by
// that key, with each value's times, speed-up and error ratios, and its
// plot; none where a second key is swept.
func TestWriteReportAxis(t *testing.T) {
	t.Parallel()
	p := plan(t, writeConfig(t, `
data: {source: synthetic}
dbn: {layers: [16, 8, 4]}
pretrain: {epochs: 1}
finetune: {epochs: 0}
sweep:
  vary:
    - key: pretrain.mode
      values: [greedy, pipelined]
    - key: pretrain.k_batches
      values: [200, 5, 1]
`))
	rows := fabricate(t, p)
	for _, r := range rows {
		r.Result.PretrainSeconds, r.Result.RBMs[1].FinalReconError = 100, 0.02
		if r.Config.Pretrain.Mode == config.Pipelined {
			k := float64(r.Config.Pretrain.KBatches)
			r.Result.PretrainSeconds, r.Result.RBMs[1].FinalReconError = 50+k/4, 0.02*(1+k/1000)
		}
	}
	if _, err := WriteReport(p, rows, ""); err != nil {
		t.Fatal(err)
	}
	checkPNGs(t, p.Dir, []string{plotAxis}, nil)
	b, _ := os.ReadFile(filepath.Join(p.Dir, "report.md"))
	md := string(b)
	for _, want := range []string{
		"## Pipelined against greedy, by `pretrain.k_batches`",
		"| `pretrain.k_batches` | pairs | pipelined s | greedy s | speed-up | RBM_1 / greedy | RBM_2 / greedy | test accuracy pipelined − greedy (points) |",
		"| 1 | 1 | 50.2 | 100.0 | 1.99 | 1.000 | 1.001 | |\n| 5 | 1 | 51.2 | 100.0 | 1.95 | 1.000 | 1.005 | |\n| 200 | 1 | 100.0 | 100.0 | 1.00 | 1.000 | 1.200 | |",
		"](against_key.png)",
	} {
		if !strings.Contains(md, want) {
			t.Errorf("report.md lacks %q:\n%s", want, md)
		}
	}
	// Two keys besides the mode: no such section.
	p2 := plan(t, writeConfig(t, `
data: {source: synthetic}
dbn: {layers: [16, 8, 4]}
pretrain: {epochs: 1}
finetune: {epochs: 0}
sweep:
  vary:
    - key: pretrain.mode
      values: [greedy, pipelined]
    - key: pretrain.k_batches
      values: [5, 1]
    - key: seed
      values: [1, 2]
`))
	if _, err := WriteReport(p2, fabricate(t, p2), ""); err != nil {
		t.Fatal(err)
	}
	checkPNGs(t, p2.Dir, nil, []string{plotAxis})
}

// A pipelined run that followed a plan has a row in the plans section:
// its plan, its prediction and what was measured against its greedy run.
func TestWriteReportPlans(t *testing.T) {
	t.Parallel()
	p := plan(t, writeConfig(t, `
data: {source: synthetic}
dbn: {layers: [16, 8, 6, 4]}
pretrain: {epochs: 1}
finetune: {epochs: 0}
cluster: {cpus_per_worker: 0.5, machine_cpus: [0.5, 0.25, 0.5, 0.5], max_replicas: 4}
sweep:
  vary:
    - key: pretrain.mode
      values: [greedy, pipelined]
`))
	rows := fabricate(t, p)
	for _, r := range rows {
		if r.Config.Pretrain.Mode == config.Greedy {
			r.Result.PretrainSeconds = 100
			continue
		}
		r.Result.PretrainSeconds = 50
		r.Result.Plan = &dbn.PlanResult{PredictedSeconds: 40, PredictedSpeedUp: 2.5, PredictedEfficiency: 0.5, Groups: []dbn.PlanGroup{
			{RBMs: []int{1}, Replicas: 1, CPUs: []float64{0.5}},
			{RBMs: []int{2}, Replicas: 1, CPUs: []float64{0.25}},
			{RBMs: []int{3}, Replicas: 2, CPUs: []float64{0.5, 0.5}},
		}}
	}
	if _, err := WriteReport(p, rows, ""); err != nil {
		t.Fatal(err)
	}
	b, _ := os.ReadFile(filepath.Join(p.Dir, "report.md"))
	md := string(b)
	// Measured 50 s against 40 predicted; speed-up 2 against 2.5, so
	// efficiency 2 x 0.5/2.5 = 0.4 and 0.8 of the plan's.
	want := "| mode=pipelined_r1 | 1 [0.5] · 2 [0.25] · 3x2 [0.5, 0.5] | 40.0 | 50.0 | 1.25 | 2.50 | 2.00 | 0.50 | 0.40 | 0.80 |"
	if !strings.Contains(md, "## Plans: predicted and measured") || !strings.Contains(md, want) {
		t.Errorf("report.md lacks the plans section's row %q:\n%s", want, md)
	}
	if _, err := os.Stat(filepath.Join(p.Dir, plotPlans)); !os.IsNotExist(err) || strings.Contains(md, plotPlans) {
		t.Errorf("one machine count drew %s (%v); it needs two", plotPlans, err)
	}
}

// TestWriteReportPlansPlot: a sweep over machine counts draws the plans'
// speed-up and efficiency against their machines, predicted and measured.
func TestWriteReportPlansPlot(t *testing.T) {
	t.Parallel()
	p := plan(t, writeConfig(t, `
data: {source: synthetic}
dbn: {layers: [16, 8, 6, 4]}
pretrain: {epochs: 1}
finetune: {epochs: 0}
cluster: {cpus_per_worker: 0.25, max_replicas: 4}
sweep:
  vary:
    - key: pretrain.mode
      values: [greedy, pipelined]
    - key: cluster.local_slaves
      values: [2, 4]
`))
	rows := fabricate(t, p)
	for _, r := range rows {
		if r.Config.Pretrain.Mode == config.Greedy {
			r.Result.PretrainSeconds = 100
			continue
		}
		m := float64(r.Config.Cluster.LocalSlaves)
		r.Result.PretrainSeconds = 100 / (0.8 * m)
		r.Result.Plan = &dbn.PlanResult{Strategy: "auto", PredictedSeconds: 100 / (0.9 * m), PredictedSpeedUp: 0.9 * m, PredictedEfficiency: 0.9,
			Groups: []dbn.PlanGroup{{RBMs: []int{1, 2, 3}, Replicas: int(m), CPUs: slices.Repeat([]float64{0.25}, int(m))}}}
	}
	if _, err := WriteReport(p, rows, ""); err != nil {
		t.Fatal(err)
	}
	b, _ := os.ReadFile(filepath.Join(p.Dir, "report.md"))
	if !strings.Contains(string(b), "![speed-up and efficiency of the plans, predicted and measured, against their machines](plans.png)") {
		t.Errorf("report.md does not show %s:\n%s", plotPlans, b)
	}
	png, err := os.ReadFile(filepath.Join(p.Dir, plotPlans))
	if err != nil || !bytes.HasPrefix(png, []byte("\x89PNG")) {
		t.Errorf("%s: %d bytes, %v; want a PNG", plotPlans, len(png), err)
	}
	points := []planPoint{{"auto", 4, 3.6, 3.2}, {"auto", 2, 1.8, 1.6}, {"auto", 4, 3.6, 3.0}}
	if got := distinct(points); !slices.Equal(got, []float64{2, 4}) {
		t.Errorf("distinct = %v; want [2 4]", got)
	}
}

// Runs with end_to_end_seconds get the end-to-end table, fine-tuning's
// share, the speed-up table's end-to-end column and end_to_end.png; a cell
// of results written before the field stays blank, not zero.
func TestWriteReportEndToEnd(t *testing.T) {
	t.Parallel()
	p := plan(t, writeConfig(t, `
data: {source: synthetic}
dbn: {layers: [16, 16, 16, 16, 16]}
pretrain: {epochs: 3}
cluster: {cpus_per_worker: 0.45}
finetune: {epochs: 2}
sweep:
  vary:
    - key: dbn.layers
      values: [[16, 16, 16, 16, 16], [16, 16, 16, 16, 16, 16]]
    - key: pretrain.mode
      values: [greedy, pipelined]
    - key: cluster.colocate
      values: [false, true]
`))
	rows := fabricate(t, p)
	for i := range rows {
		r := rows[i].Result
		if SettingOf(rows[i].Config) == PipelinedOneMachine && len(r.Layers) == 6 {
			continue // as an older version wrote it
		}
		r.EndToEndSeconds = r.PretrainSeconds + r.Finetune.Seconds
		r.Finetune.Plan = &dbn.FinetunePlan{Workers: 1, BatchPerWorker: 128, CPUs: 0.45, Threads: 1}
	}
	if _, err := WriteReport(p, rows, ""); err != nil {
		t.Fatal(err)
	}
	checkPNGs(t, p.Dir, []string{plotEndToEnd}, nil)
	b, _ := os.ReadFile(filepath.Join(p.Dir, "report.md"))
	md := string(b)
	// fakeResult: greedy 10 s per RBM, pipelined on 1 machine 10.5 s, on L
	// machines 11 s, seed 1 adds 0.01 s; fine-tuning 3 s.
	for _, want := range []string{
		"## End to end (pre-training + fine-tuning)",
		"| greedy, 1 machine | 43.0 | 53.0 |",
		"| pipelined, 1 machine | 45.0 | – |",
		"| pipelined, L machines | 14.0 | 14.0 |",
		"| greedy, 1 machine | 7 | 6 |", // fine-tuning's share, %
		"| paper efficiency | end-to-end speed-up |",
		"| L=4 | 40.0 | 42.0 | 11.0 | 3.63 | 0.91 | 2.84 | 0.71 | 3.07 |",
		"| L=5 | 50.0 | 52.5 | 11.0 | 4.54 | 0.91 | 3.60 | 0.72 | 3.78 |",
		"Bars: (a) greedy, 1 machine; (b) pipelined, 1 machine; (c) pipelined, L machines;",
		"](end_to_end.png)",
	} {
		if !strings.Contains(md, want) {
			t.Errorf("report.md lacks %q:\n%s", want, md)
		}
	}

	// Results without end_to_end_seconds: no section, no column, and the
	// plot goes.
	for i := range rows {
		rows[i].Result.EndToEndSeconds = 0
	}
	if _, err := WriteReport(p, rows, ""); err != nil {
		t.Fatal(err)
	}
	checkPNGs(t, p.Dir, nil, []string{plotEndToEnd})
	b, _ = os.ReadFile(filepath.Join(p.Dir, "report.md"))
	if md := string(b); strings.Contains(md, "End to end") || strings.Contains(md, "end-to-end speed-up") {
		t.Errorf("report.md of results without end_to_end_seconds has an end-to-end section or column:\n%s", md)
	}
}
