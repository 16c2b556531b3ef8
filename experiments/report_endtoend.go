package experiments

import (
	"fmt"
	"math"
	"strings"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/vg"

	"github.com/pipedbn/pipedbn/dbn"
)

// plotEndToEnd is the plot of the whole job's seconds, in its two parts.
const plotEndToEnd = "end_to_end.png"

// endToEndSeconds is a run's end_to_end_seconds; a result written before
// the field existed has none (its fine-tuning ran uncapped, so adding its
// two phases up would not compare with the runs that have it).
func endToEndSeconds(r *dbn.Result) (float64, bool) {
	return r.EndToEndSeconds, r.EndToEndSeconds > 0
}

// finetunePart is the fine-tuning part of a run's end_to_end_seconds.
func finetunePart(r *dbn.Result) (float64, bool) {
	if r.EndToEndSeconds <= 0 {
		return 0, false
	}
	return r.EndToEndSeconds - r.PretrainSeconds, true
}

// pretrainPart is the pre-training part of a run's end_to_end_seconds.
func pretrainPart(r *dbn.Result) (float64, bool) {
	return r.PretrainSeconds, r.EndToEndSeconds > 0
}

// hasEndToEnd says whether any finished run has end_to_end_seconds.
func (a *analysis) hasEndToEnd() bool {
	for _, rs := range a.ok {
		for _, r := range rs {
			if _, ok := endToEndSeconds(r.Result); ok {
				return true
			}
		}
	}
	return false
}

// endToEndSpeedup is the speed-up table's end-to-end cell of r: greedy's
// median end_to_end_seconds over pipelined on L machines', or "–".
func (a *analysis) endToEndSpeedup(r speedRow) string {
	g, p := a.values(r.gCell, endToEndSeconds), a.values(r.lCell, endToEndSeconds)
	if len(g) == 0 || len(p) == 0 {
		return "–"
	}
	return fmt.Sprintf("%.2f", median(g)/median(p))
}

// endToEnd writes the section of the whole job's seconds, pre-training and
// fine-tuning, with its plot; nothing when no run has them.
func (a *analysis) endToEnd(md *strings.Builder, add plotAdder) {
	if !a.hasEndToEnd() {
		return
	}
	md.WriteString("\n## End to end (pre-training + fine-tuning)\n\n")
	md.WriteString("Median seconds of the whole job over the repeats ([min–max] when repeated): `end_to_end_seconds`, " +
		"pre-training plus fine-tuning, without loading the data or the evaluation after fine-tuning. Fine-tuning runs " +
		"on one worker, the master, capped at `cluster.cpus_per_worker` like every worker where the run sets it " +
		"(`finetune_cpus` in sweep.csv: 0 where the cap could not be set). `–`: no finished run of the cell has it " +
		"(results written before it).\n")
	a.table(md, "setting", func(c cell) string {
		vs := a.values(c, endToEndSeconds)
		return medianText(vs, secondsFormat(vs))
	})
	md.WriteString("\nFine-tuning's share of it (medians, %):\n")
	a.table(md, "setting", func(c cell) string {
		ft, all := a.values(c, finetunePart), a.values(c, endToEndSeconds)
		if len(all) == 0 {
			return "–"
		}
		return fmt.Sprintf("%.0f", 100*median(ft)/median(all))
	})
	var tags []string
	for gi, g := range a.groups {
		if gi < maxGrid*4 {
			tags = append(tags, panelTag(gi)+" "+g.label())
		}
	}
	fmt.Fprintf(md, "\nBars: %s; pre-training and fine-tuning, the median of each part.\n", strings.Join(tags, "; "))
	png, err := a.endToEndPlot()
	if png == nil && err == nil {
		md.WriteString("\n(No panel within the plot's first shapes and rows has it: no plot.)\n")
		return
	}
	add(plotEndToEnd, "end-to-end seconds per setting, pre-training and fine-tuning", png, err)
}

// endToEndPlot draws one panel per DBN shape: for each row of the tables,
// a bar of its median pre-training seconds with its median fine-tuning
// seconds on top, over the runs that have end_to_end_seconds.
func (a *analysis) endToEndPlot() ([]byte, error) {
	var row []*plot.Plot
	drawn := false
	for ci, c := range a.cols {
		if ci == maxGrid {
			break
		}
		var pre, ft []float64
		var names []string
		for gi := range a.groups {
			if gi == maxGrid*4 {
				break
			}
			p, f := a.values(cell{gi, ci}, pretrainPart), a.values(cell{gi, ci}, finetunePart)
			if len(p) == 0 {
				continue
			}
			pre, ft = append(pre, median(p)), append(ft, median(f))
			names = append(names, panelTag(gi))
		}
		if len(names) == 0 {
			row = append(row, nil)
			continue
		}
		p := newPlot("end to end, "+c.label, "", "seconds", true)
		if err := stackedBars(p, [][]float64{pre, ft}, []string{"pre-training", "fine-tuning"}, vg.Points(14)); err != nil {
			return nil, err
		}
		p.NominalX(names...)
		p.X.Min, p.X.Max = -0.6, float64(len(names))-0.4
		p.Legend.Top = true
		p.Y.Min = 0
		p.Y.Max = math.Max(p.Y.Max, 1e-9) * 1.35 // room for the legend
		row = append(row, p)
		drawn = true
	}
	if !drawn {
		return nil, nil
	}
	return renderGrid([][]*plot.Plot{row}, 9*vg.Centimeter, 7*vg.Centimeter)
}
