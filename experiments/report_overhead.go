package experiments

import (
	"fmt"
	"strings"

	"github.com/pipedbn/pipedbn/dbn"
)

// overheadSeconds is a run's overhead_seconds: its pre-training's time
// beyond W windows of its bottleneck; a greedy or resumed run has none,
// nor a result written before the field.
func overheadSeconds(r *dbn.Result) (float64, bool) { return r.Overhead() }

// fillSeconds and drainSeconds are the fill and drain phases of a
// pipelined run's pre-training (pretrain_phases); absent like
// overheadSeconds, but for a resumed run.
func fillSeconds(r *dbn.Result) (float64, bool)  { return r.PhaseSeconds("fill") }
func drainSeconds(r *dbn.Result) (float64, bool) { return r.PhaseSeconds("drain") }

// hasFixedCosts says whether any finished run has pretrain_phases.
func (a *analysis) hasFixedCosts() bool {
	for _, rs := range a.ok {
		for _, r := range rs {
			if len(r.Result.PretrainPhases) > 0 {
				return true
			}
		}
	}
	return false
}

// fixedCostCells are a cell's median fill, drain and overhead seconds,
// "–" for each no finished run of the cell has.
func (a *analysis) fixedCostCells(c cell) []string {
	out := make([]string, 3)
	for i, f := range []func(*dbn.Result) (float64, bool){fillSeconds, drainSeconds, overheadSeconds} {
		out[i] = "–"
		if vs := a.values(c, f); len(vs) > 0 {
			out[i] = secondsText(median(vs))
		}
	}
	return out
}

// fixedCosts writes the table of every pipelined row's fixed costs, per
// DBN shape: fill, drain and overhead_seconds; nothing when no run has
// pretrain_phases.
func (a *analysis) fixedCosts(md *strings.Builder) {
	if !a.hasFixedCosts() {
		return
	}
	md.WriteString("Fixed costs of pipelined pre-training, medians over the repeats (s): `fill` and `drain` from " +
		"`pretrain_phases`, and `overhead_seconds`, the pre-training time beyond W windows of the bottleneck stage group " +
		"(start-up, fill, drain, collecting the weights and the waits in between). Cells read fill / drain / overhead; " +
		"`–`: no finished run of the cell has it (greedy runs, resumed runs, results written before the fields).\n")
	var rows []int
	for gi := range a.groups {
		for ci := range a.cols {
			if len(a.values(cell{gi, ci}, fillSeconds)) > 0 {
				rows = append(rows, gi)
				break
			}
		}
	}
	fmt.Fprintf(md, "\n| setting |")
	for _, c := range a.cols {
		fmt.Fprintf(md, " %s |", c.label)
	}
	md.WriteString("\n|---|" + strings.Repeat("---:|", len(a.cols)) + "\n")
	for _, gi := range rows {
		fmt.Fprintf(md, "| %s |", a.groups[gi].label())
		for ci := range a.cols {
			fmt.Fprintf(md, " %s |", strings.Join(a.fixedCostCells(cell{gi, ci}), " / "))
		}
		md.WriteString("\n")
	}
	md.WriteString("\n")
}
