package experiments

import (
	"bytes"
	"os"
	"path/filepath"
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
	if len(files) != 7 {
		t.Errorf("files written: %v; want 6 plots and report.md", files)
	}
	checkPNGs(t, p.Dir, []string{plotTime, plotSpeedup, plotAccuracy, plotRecon, plotBusy, plotSim}, nil)
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
		want      Setting
	}{
		{config.Greedy, config.NATS, 0.45, true, 0, GreedyOneMachine},
		{config.Greedy, config.NATS, 0, false, 0, GreedyWholeBox},
		{config.Pipelined, config.NATS, 0.45, true, 0, PipelinedOneMachine},
		{config.Pipelined, config.NATS, 0.45, false, 0, PipelinedLMachines},
		{config.Pipelined, config.NATS, 0, false, 4, PipelinedLMachines},
		{config.Pipelined, config.NATS, 0, true, 0, PipelinedWholeBox},
		{config.Pipelined, config.Memory, 0.45, false, 0, PipelinedInProcess},
	}
	for _, c := range cases {
		cfg := &config.Config{}
		cfg.Pretrain.Mode, cfg.Cluster.Transport, cfg.Cluster.CPUsPerWorker, cfg.Cluster.Colocate, cfg.Cluster.Slaves = c.mode, c.transport, c.cpus, c.colocate, c.slaves
		if got := SettingOf(cfg); got != c.want {
			t.Errorf("SettingOf(%+v) = %v; want %v", c, got, c.want)
		}
	}
}
