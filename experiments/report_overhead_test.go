package experiments

import (
	"encoding/csv"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/pipedbn/pipedbn/dbn"
)

// fakePhases gives a pipelined result pretrain_phases with a fill of
// 0.3 s and a drain of 0.2 s, W windows and an overhead of 1.05 s (none
// when resumed).
func fakePhases(r *dbn.Result, resumed bool) {
	r.PretrainPhases = []dbn.Phase{{Name: "calibration", Seconds: 0.01}, {Name: "start", Seconds: 0.5},
		{Name: "fill", Seconds: 0.3}, {Name: "steady", Seconds: r.PretrainSeconds - 1.05}, {Name: "drain", Seconds: 0.2},
		{Name: "collect", Seconds: 0.04}}
	r.Windows, r.BottleneckWindowSeconds = 100, (r.PretrainSeconds-1.05)/100
	r.Resumed = resumed
	if !resumed {
		r.OverheadSeconds = 1.05
	}
}

// sweep.csv has a pipelined run's overhead_seconds, and leaves it empty
// for a resumed run, which has none.
func TestSweepCSVOverhead(t *testing.T) {
	t.Parallel()
	p := plan(t, writeConfig(t, baseConfig))
	for _, c := range []struct {
		resumed bool
		want    string
	}{{false, "1.05"}, {true, ""}} {
		res := fakeResult(p.Runs[0].Config)
		fakePhases(res, c.resumed)
		b, err := SweepCSV(p, []SweepRow{{SweepRun: p.Runs[0], Status: RunDone, Result: res}})
		if err != nil {
			t.Fatal(err)
		}
		recs, err := csv.NewReader(strings.NewReader(string(b))).ReadAll()
		if err != nil {
			t.Fatal(err)
		}
		i := slices.Index(recs[0], "overhead_seconds")
		if i < 0 {
			t.Fatalf("sweep.csv has no overhead_seconds: %v", recs[0])
		}
		if recs[1][i] != c.want {
			t.Errorf("resumed %v: overhead_seconds %q; want %q", c.resumed, recs[1][i], c.want)
		}
	}
}

// Pipelined runs with pretrain_phases get fill, drain and overhead in the
// timing table and a table of every pipelined row's fixed costs; a cell
// of results without them (written before them, or resumed: no overhead)
// reads "–", and results without any have neither.
func TestWriteReportFixedCosts(t *testing.T) {
	t.Parallel()
	p := plan(t, writeConfig(t, `
data: {source: synthetic}
dbn: {layers: [16, 16, 16, 16, 16]}
pretrain: {epochs: 3}
cluster: {cpus_per_worker: 0.45}
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
		r, s := rows[i].Result, SettingOf(rows[i].Config)
		switch {
		case s == GreedyOneMachine, s == PipelinedOneMachine && len(r.Layers) == 6:
			// greedy has no phases; the other as an older version wrote it
		default:
			fakePhases(r, s == PipelinedLMachines && len(r.Layers) == 6)
		}
	}
	if _, err := WriteReport(p, rows, ""); err != nil {
		t.Fatal(err)
	}
	b, _ := os.ReadFile(filepath.Join(p.Dir, "report.md"))
	md := string(b)
	for _, want := range []string{
		"| busy share | efficiency | pipelined fill (s) | pipelined drain (s) | pipelined overhead (s) |",
		"| 0.91 | 0.300 | 0.200 | 1.05 |\n", // L=4
		"| 0.91 | 0.300 | 0.200 | – |\n",    // L=5, resumed
		"| setting | L=4 | L=5 |\n|---|---:|---:|\n| pipelined, 1 machine | 0.300 / 0.200 / 1.05 | – / – / – |\n" +
			"| pipelined, L machines | 0.300 / 0.200 / 1.05 | 0.300 / 0.200 / – |\n\n",
	} {
		if !strings.Contains(md, want) {
			t.Errorf("report.md lacks %q:\n%s", want, md)
		}
	}

	for i := range rows {
		r := rows[i].Result
		r.PretrainPhases, r.Windows, r.OverheadSeconds, r.Resumed = nil, 0, 0, false
	}
	if _, err := WriteReport(p, rows, ""); err != nil {
		t.Fatal(err)
	}
	b, _ = os.ReadFile(filepath.Join(p.Dir, "report.md"))
	if md := string(b); strings.Contains(md, "pipelined fill (s)") || strings.Contains(md, "Fixed costs") {
		t.Errorf("report.md of results without pretrain_phases has a fixed-cost column or table:\n%s", md)
	}
}
