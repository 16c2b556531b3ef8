package experiments

import (
	"fmt"
	"math"
	"strconv"
	"strings"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/vg"

	"github.com/pipedbn/pipedbn/dbn"
)

// The report's probe section (runs with pretrain.probe.rows): each RBM's
// reconstruction error on the probe set and the drift of its middle results
// over pre-training's wall time, greedy and pipelined on the same axes.

const plotProbe = "probe.png"

// The bounds of the probe plot: comparisons (two rows of panels each) and
// runs drawn in one panel.
const (
	maxProbeComparisons = 4
	maxProbeRuns        = 6
)

// probeComparison is runs of one DBN shape drawn in the same panels.
type probeComparison struct {
	title string
	runs  []*SweepRow
	names []string
}

func hasProbe(r *SweepRow) bool {
	return r.Status == RunDone && r.Result != nil && len(r.Result.RBMs) > 0 && len(r.Result.RBMs[0].Probe) > 0
}

// probeComparisons returns the first finished pair of every pair group, or,
// when the sweep does not vary the mode, the first finished run of every
// row of each column.
func (a *analysis) probeComparisons() []probeComparison {
	var cs []probeComparison
	for _, g := range a.pairGroups() {
		for _, p := range g.finished {
			if hasProbe(p.greedy) && hasProbe(p.pipelined) {
				title := g.label
				if name := a.pairName(p); name != "" {
					title += " (" + name + ")"
				}
				cs = append(cs, probeComparison{title: title, runs: []*SweepRow{p.greedy, p.pipelined}, names: []string{"greedy", "pipelined"}})
				break
			}
		}
	}
	if len(cs) > 0 {
		return cs
	}
	for ci, c := range a.cols {
		pc := probeComparison{title: c.label}
		for gi, g := range a.groups {
			for _, r := range a.ok[cell{gi, ci}] {
				if hasProbe(r) && len(pc.runs) < maxProbeRuns {
					pc.runs = append(pc.runs, r)
					pc.names = append(pc.names, g.label())
					break
				}
			}
		}
		if len(pc.runs) > 0 {
			cs = append(cs, pc)
		}
	}
	return cs
}

func (a *analysis) probe(md *strings.Builder, add plotAdder) {
	cs := a.probeComparisons()
	if len(cs) == 0 {
		return
	}
	cs = cs[:min(len(cs), maxProbeComparisons)]
	md.WriteString("\n## Probe: learning over wall time\n\n")
	fmt.Fprintf(md, "Snapshots of every RBM over pre-training (`pretrain.probe.rows`: greedy after any window, pipelined at its checkpoints), "+
		"measured at the end on the probe set, the first %d training examples. **Error**: the snapshot's reconstruction error on the probe rows "+
		"passed up through the *final* RBMs below (as `final_recon_error`; the last point is the final RBM). **Drift**: the root mean square "+
		"distance of what the RBM sent up at that time (the probe rows through the RBMs below as they were then) from what it sends at the "+
		"end: the RBM above trains on that moving input. Seconds of pre-training; the first pair of each comparison.\n", cs[0].runs[0].Result.ProbeRows)
	for k, c := range cs {
		fmt.Fprintf(md, "\n**%s %s**: seconds until the RBM's probe error is within 5%% of the first run's final one (`-`: never), and its final error.\n\n", panelTag(k), c.title)
		md.WriteString("| RBM |")
		for _, n := range c.names {
			fmt.Fprintf(md, " %s: s to 1.05x | %s: final |", n, n)
		}
		md.WriteString("\n|---|" + strings.Repeat("---:|---:|", len(c.runs)) + "\n")
		ref := c.runs[0].Result.RBMs
		for i := range ref {
			target := 1.05 * finalProbe(ref[i])
			fmt.Fprintf(md, "| %d |", i+1)
			for _, r := range c.runs {
				if i >= len(r.Result.RBMs) || len(r.Result.RBMs[i].Probe) == 0 {
					md.WriteString(" | |")
					continue
				}
				pts := r.Result.RBMs[i].Probe
				reached := "-"
				for _, p := range pts {
					if p.ReconError <= target {
						reached = fmt.Sprintf("%.1f", p.Seconds)
						break
					}
				}
				fmt.Fprintf(md, " %s | %.5f |", reached, pts[len(pts)-1].ReconError)
			}
			md.WriteString("\n")
		}
	}
	png, err := probePlot(cs)
	md.WriteString("\nIn `probe.png`, two rows of panels per comparison, (a), (b), ...: each RBM's probe error (log scale), then the drift of its middle results.\n")
	add(plotProbe, "probe error and drift of each RBM over wall time", png, err)
}

// probePlot draws two rows of panels per comparison: each RBM's probe error
// (log scale), then the drift of its middle results.
func probePlot(cs []probeComparison) ([]byte, error) {
	var grid [][]*plot.Plot
	for k, c := range cs {
		var errs, drifts []*plot.Plot
		for i := range c.runs[0].Result.RBMs {
			pe := newPlot(fmt.Sprintf("%s RBM %d: probe error", panelTag(k), i+1), "seconds", "recon. error", true)
			pd := newPlot(fmt.Sprintf("%s RBM %d: drift of its middle results", panelTag(k), i+1), "seconds", "RMS from final", true)
			var es, ds []series
			for k, r := range c.runs {
				if i >= len(r.Result.RBMs) {
					continue
				}
				e, d := series{name: c.names[k], style: k}, series{name: c.names[k], style: k}
				for _, p := range r.Result.RBMs[i].Probe {
					e.xs, e.ys = append(e.xs, p.Seconds), append(e.ys, p.ReconError)
					if p.Drift != nil {
						d.xs, d.ys = append(d.xs, p.Seconds), append(d.ys, *p.Drift)
					}
				}
				es, ds = append(es, e), append(ds, d)
			}
			if err := addSeries(pe, es); err != nil {
				return nil, err
			}
			pe.Y.Scale, pe.Y.Tick.Marker = plot.LogScale{}, logTicks125{}
			pe.Legend.Top = true
			errs = append(errs, pe)
			if i < len(c.runs[0].Result.RBMs)-1 {
				if err := addSeries(pd, ds); err != nil {
					return nil, err
				}
				pd.Y.Min = 0
				pd.Legend.Top = true
				drifts = append(drifts, pd)
			}
		}
		grid = append(grid, errs, drifts)
	}
	return renderGrid(grid, 9*vg.Centimeter, 7*vg.Centimeter)
}

// finalProbe is an RBM's last probe point's error (its final RBM's).
func finalProbe(b dbn.RBMResult) float64 { return b.Probe[len(b.Probe)-1].ReconError }

// logTicks125 labels a log axis at 1, 2 and 5 times the powers of ten (a
// range inside one decade still gets labels), with unlabelled minor ticks
// at the other whole multiples.
type logTicks125 struct{}

func (logTicks125) Ticks(lo, hi float64) []plot.Tick {
	if !(lo > 0 && hi >= lo) {
		return nil
	}
	var ts []plot.Tick
	for p := math.Pow(10, math.Floor(math.Log10(lo))); p <= hi; p *= 10 {
		for m := 1; m < 10; m++ {
			v := float64(m) * p
			if v < lo*(1-1e-9) || v > hi*(1+1e-9) {
				continue
			}
			t := plot.Tick{Value: v}
			if m == 1 || m == 2 || m == 5 {
				t.Label = strconv.FormatFloat(v, 'g', 3, 64)
			}
			ts = append(ts, t)
		}
	}
	return ts
}
