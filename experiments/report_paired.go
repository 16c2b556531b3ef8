package experiments

import (
	"fmt"
	"image/color"
	"math"
	"slices"
	"strconv"
	"strings"

	"gonum.org/v1/gonum/stat"
	"gonum.org/v1/gonum/stat/distuv"
	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/plotutil"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"

	"github.com/pipedbn/pipedbn/config"
	"github.com/pipedbn/pipedbn/dbn"
)

// The report's paired comparison of pipelined against greedy pre-training:
// each pipelined run against the greedy run of its seed and repeat, so that
// the spread between seeds, which both modes share, drops out of the
// difference.

// The swept keys a paired comparison is built on: the mode it compares and
// the seed that makes the pairs.
const (
	modeKey = "pretrain.mode"
	seedKey = "seed"
)

// pair is a pipelined run and the greedy run it is compared with.
type pair struct {
	greedy, pipelined *SweepRow
}

func (p pair) finished() bool {
	return p.greedy.Status == RunDone && p.greedy.Result != nil &&
		p.pipelined.Status == RunDone && p.pipelined.Result != nil
}

// pairGroup is the pairs that share the values of every swept key but the
// mode and the seed, and so differ only by seed and repeat.
type pairGroup struct {
	label    string // "pipelined, whole box vs greedy, whole box · pretrain.k_batches=5"
	planned  int    // pairs in the plan
	finished []pair // pairs both of whose runs finished, in the plan's order
}

// pairGroups pairs every pipelined run with the greedy run it is compared
// with in the report's tables: the same repeat and the same value of every
// swept key (the seed included) that the greedy run reads. A greedy run
// ignores keys such as pretrain.k_batches and cluster.colocate, and runs once
// for all their values (SweepPlan.Merged), so one greedy run may partner
// several pipelined ones. nil when the sweep does not vary pretrain.mode.
func (a *analysis) pairGroups() []pairGroup {
	if !slices.Contains(a.plan.Keys, modeKey) {
		return nil
	}
	var groups []pairGroup
	for i := range a.rows {
		p := &a.rows[i]
		if p.Config.Pretrain.Mode != config.Pipelined {
			continue
		}
		g := a.greedyPartner(p)
		if g == nil {
			continue
		}
		label := SettingOf(p.Config).String() + " vs " + SettingOf(g.Config).String()
		if o := a.sharedLabel(p); o != "" {
			label += " · " + o
		}
		gi := slices.IndexFunc(groups, func(pg pairGroup) bool { return pg.label == label })
		if gi < 0 {
			gi = len(groups)
			groups = append(groups, pairGroup{label: label})
		}
		groups[gi].planned++
		if pr := (pair{greedy: g, pipelined: p}); pr.finished() {
			groups[gi].finished = append(groups[gi].finished, pr)
		}
	}
	return groups
}

// greedyPartner returns the greedy run of p's repeat whose every swept value
// (but the mode) equals p's or is one the greedy run ignores; nil if none.
func (a *analysis) greedyPartner(p *SweepRow) *SweepRow {
	for i := range a.rows {
		g := &a.rows[i]
		if g.Config.Pretrain.Mode != config.Greedy || g.Repeat != p.Repeat {
			continue
		}
		match := true
		for k, key := range a.plan.Keys {
			if key != modeKey && g.Values[k] != "" && g.Values[k] != p.Values[k] {
				match = false
				break
			}
		}
		if match {
			return g
		}
	}
	return nil
}

// sharedLabel names p's values of the swept keys that a pair group shares:
// all but the mode and the seed.
func (a *analysis) sharedLabel(p *SweepRow) string {
	var parts []string
	for k, key := range a.plan.Keys {
		if key == modeKey || key == seedKey || p.Values[k] == "" {
			continue
		}
		parts = append(parts, key+"="+p.Values[k])
	}
	return strings.Join(parts, ", ")
}

// pairName tells a pair apart within its group: "seed=3", "r2" or
// "seed=3, r2".
func (a *analysis) pairName(p pair) string {
	var parts []string
	if k := slices.Index(a.plan.Keys, seedKey); k >= 0 {
		parts = append(parts, seedKey+"="+p.pipelined.Values[k])
	}
	if a.plan.Repeats > 1 {
		parts = append(parts, "r"+strconv.Itoa(p.pipelined.Repeat))
	}
	return strings.Join(parts, ", ")
}

// pairedQuantity is one result compared pair by pair.
type pairedQuantity struct {
	name   string // "test accuracy (%)"
	format string // of a value; differences add a sign
	value  func(*dbn.Result) (float64, bool)
	// ratio also compares pipelined / greedy.
	ratio bool
}

// pairedQuantities are the results every pair of prs has: the fine-tuned
// test accuracy and each RBM's final reconstruction error.
func pairedQuantities(prs []pair) []pairedQuantity {
	qs := []pairedQuantity{{name: "test accuracy (%)", format: "%.2f", value: func(r *dbn.Result) (float64, bool) {
		acc, ok := testAccuracy(r)
		return 100 * acc, ok
	}}}
	rbms := 0
	for _, p := range prs {
		rbms = max(rbms, len(p.greedy.Result.RBMs), len(p.pipelined.Result.RBMs))
	}
	for i := range rbms {
		qs = append(qs, reconQuantity(i))
	}
	return slices.DeleteFunc(qs, func(q pairedQuantity) bool {
		return !slices.ContainsFunc(prs, func(p pair) bool { _, _, ok := q.values(p); return ok })
	})
}

// reconQuantity is RBM i+1's final reconstruction error, compared as a
// ratio too.
func reconQuantity(i int) pairedQuantity {
	return pairedQuantity{name: fmt.Sprintf("RBM %d final recon. error", i+1), format: "%.5f", ratio: true,
		value: func(r *dbn.Result) (float64, bool) {
			if i >= len(r.RBMs) {
				return 0, false
			}
			return r.RBMs[i].FinalReconError, true
		}}
}

// values returns q of both runs of p, and whether both have it.
func (q pairedQuantity) values(p pair) (greedy, pipelined float64, ok bool) {
	g, gok := q.value(p.greedy.Result)
	pl, pok := q.value(p.pipelined.Result)
	return g, pl, gok && pok
}

// pairedValues is a quantity over the pairs that have it.
type pairedValues struct {
	names               []string
	greedy, pipelined   []float64
	difference, ratio   []float64 // pipelined − greedy, pipelined / greedy
	greedyS, pipelinedS meanCI
	differenceS, ratioS meanCI
}

func (q pairedQuantity) over(a *analysis, prs []pair) pairedValues {
	var v pairedValues
	for _, p := range prs {
		g, pl, ok := q.values(p)
		if !ok {
			continue
		}
		v.names = append(v.names, a.pairName(p))
		v.greedy, v.pipelined = append(v.greedy, g), append(v.pipelined, pl)
		v.difference, v.ratio = append(v.difference, pl-g), append(v.ratio, pl/g)
	}
	v.greedyS, v.pipelinedS = meanCIOf(v.greedy), meanCIOf(v.pipelined)
	v.differenceS, v.ratioS = meanCIOf(v.difference), meanCIOf(v.ratio)
	return v
}

// meanCI is the mean of n values, their standard deviation (n−1 in the
// denominator) and the 95% confidence interval of the mean from Student's
// t with n−1 degrees of freedom; sd, lo and hi are NaN for fewer than two
// values.
type meanCI struct {
	n                int
	mean, sd, lo, hi float64
}

func meanCIOf(xs []float64) meanCI {
	m := meanCI{n: len(xs), mean: math.NaN(), sd: math.NaN(), lo: math.NaN(), hi: math.NaN()}
	switch {
	case m.n == 1:
		m.mean = xs[0]
	case m.n > 1:
		m.mean, m.sd = stat.MeanStdDev(xs, nil)
		t := distuv.StudentsT{Mu: 0, Sigma: 1, Nu: float64(m.n - 1)}.Quantile(0.975)
		half := t * m.sd / math.Sqrt(float64(m.n))
		m.lo, m.hi = m.mean-half, m.mean+half
	}
	return m
}

// numberText formats v, or "–" for NaN.
func numberText(format string, v float64) string {
	if math.IsNaN(v) {
		return "–"
	}
	return fmt.Sprintf(format, v)
}

func (m meanCI) meanSDText(format string) string {
	if m.n < 2 {
		return numberText(format, m.mean)
	}
	return numberText(format, m.mean) + " ± " + numberText(format, m.sd)
}

func (m meanCI) intervalText(format string) string {
	if m.n < 2 {
		return "–"
	}
	return "[" + numberText(format, m.lo) + ", " + numberText(format, m.hi) + "]"
}

// signed turns a value's format into a difference's: "%.2f" into "%+.2f".
func signed(format string) string { return strings.Replace(format, "%", "%+", 1) }

const ratioFormat = "%.4f"

// paired writes the paired comparison of pipelined against greedy, for a
// sweep that varies pretrain.mode and plans several pairs (seeds, repeats)
// for some group.
func (a *analysis) paired(md *strings.Builder, add plotAdder) {
	groups := a.pairGroups()
	if !slices.ContainsFunc(groups, func(g pairGroup) bool { return g.planned > 1 }) {
		return
	}
	md.WriteString("\n## Pipelined vs greedy, paired\n\n")
	md.WriteString("Each pipelined run is paired with the greedy run of the same seed and repeat that the tables above compare it with " +
		"(the same value of every other swept key the greedy run reads: greedy ignores `pretrain.k_batches`, `cluster.colocate`, …), " +
		"so that what varies from seed to seed for both modes drops out of the difference. Means ± standard deviations over the pairs " +
		"(n−1 in the denominator); the 95% confidence interval of the mean difference (or ratio) is mean ± t·sd/√n, t the 0.975 " +
		"quantile of Student's t with n−1 degrees of freedom. An interval without 0 (a ratio's, without 1) is a difference the pairs resolve.\n")
	var panels [][]*plot.Plot
	var plotErr error
	for gi, g := range groups {
		fmt.Fprintf(md, "\n### %s %s\n\n", panelTag(gi), g.label)
		n := len(g.finished)
		fmt.Fprintf(md, "%d of %d pairs finished.", n, g.planned)
		switch n {
		case 0:
			md.WriteString("\n")
			continue
		case 1:
			md.WriteString(" One pair: no confidence interval can be given (it needs two pairs or more).")
		}
		qs := pairedQuantities(g.finished)
		vs := a.pairedSummary(md, qs, g.finished)
		pairedPerPair(md, qs, vs)
		if n < 2 || len(panels) == maxGrid || plotErr != nil {
			continue
		}
		var row []*plot.Plot
		row, plotErr = differenceRow(panelTag(gi), qs, vs)
		panels = append(panels, row)
	}
	if len(panels) == 0 && plotErr == nil {
		return
	}
	var png []byte
	if plotErr == nil {
		png, plotErr = renderGrid(panels, 9*vg.Centimeter, 7*vg.Centimeter)
	}
	md.WriteString("\nEach pair's difference pipelined − greedy, with the mean difference and its 95% confidence interval " +
		"(groups of two pairs or more; a row of panels per group, tagged as its section above):\n")
	add(plotPaired, "paired differences pipelined - greedy with mean and 95% confidence interval", png, plotErr)
}

// pairedSummary writes the table of the quantities qs over the finished
// pairs of a group, mean, sd and interval of each difference (and ratio),
// and returns the values of each quantity, vs[i] for qs[i].
func (a *analysis) pairedSummary(md *strings.Builder, qs []pairedQuantity, finished []pair) []pairedValues {
	md.WriteString("\n\n| quantity | n | greedy | pipelined | compared as | mean | sd | 95% CI |\n|---|---:|---:|---:|---|---:|---:|---:|\n")
	vs := make([]pairedValues, len(qs))
	for i, q := range qs {
		v := q.over(a, finished)
		vs[i] = v
		d := signed(q.format)
		fmt.Fprintf(md, "| %s | %d | %s | %s | pipelined − greedy | %s | %s | %s |\n", q.name, v.differenceS.n,
			v.greedyS.meanSDText(q.format), v.pipelinedS.meanSDText(q.format),
			numberText(d, v.differenceS.mean), numberText(q.format, v.differenceS.sd), v.differenceS.intervalText(d))
		if q.ratio {
			fmt.Fprintf(md, "| %s | %d | | | pipelined / greedy | %s | %s | %s |\n", q.name, v.ratioS.n,
				numberText(ratioFormat, v.ratioS.mean), numberText(ratioFormat, v.ratioS.sd), v.ratioS.intervalText(ratioFormat))
		}
	}
	return vs
}

// pairedPerPair writes a table per quantity of qs: each pair's values,
// difference (and ratio), from vs[i] for qs[i].
func pairedPerPair(md *strings.Builder, qs []pairedQuantity, vs []pairedValues) {
	for i, q := range qs {
		v := vs[i]
		fmt.Fprintf(md, "\n%s, per pair:\n\n| pair | greedy | pipelined | pipelined − greedy |", strings.ToUpper(q.name[:1])+q.name[1:])
		if q.ratio {
			md.WriteString(" pipelined / greedy |\n|---|---:|---:|---:|---:|\n")
		} else {
			md.WriteString("\n|---|---:|---:|---:|\n")
		}
		for j, name := range v.names {
			fmt.Fprintf(md, "| %s | %s | %s | %s |", name, fmt.Sprintf(q.format, v.greedy[j]), fmt.Sprintf(q.format, v.pipelined[j]),
				fmt.Sprintf(signed(q.format), v.difference[j]))
			if q.ratio {
				fmt.Fprintf(md, " %s |", fmt.Sprintf(ratioFormat, v.ratio[j]))
			}
			md.WriteString("\n")
		}
	}
}

// differenceRow is a group's row of panels (differencePanel), one per
// quantity of qs up to maxGrid; tag names the group's section. On an error
// the row holds the panels made before it.
func differenceRow(tag string, qs []pairedQuantity, vs []pairedValues) ([]*plot.Plot, error) {
	var row []*plot.Plot
	for i, q := range qs {
		if i == maxGrid {
			break
		}
		p, err := differencePanel(tag, q, vs[i])
		if err != nil {
			return row, err
		}
		row = append(row, p)
	}
	return row, nil
}

// differencePanel plots v's differences pair by pair with their mean, its
// confidence interval and zero; tag names the group's section.
func differencePanel(tag string, q pairedQuantity, v pairedValues) (*plot.Plot, error) {
	p := newPlot(tag+" "+q.name, "pair", "pipelined - greedy", true)
	n := float64(len(v.difference))
	across := func(y float64) plotter.XYs { return plotter.XYs{{X: -0.5, Y: y}, {X: n - 0.5, Y: y}} }
	zero, err := plotter.NewLine(across(0))
	if err != nil {
		return nil, err
	}
	zero.Color = color.Gray{Y: 110}
	p.Add(zero)
	mean, err := plotter.NewLine(across(v.differenceS.mean))
	if err != nil {
		return nil, err
	}
	mean.Color, mean.Width = plotutil.Color(0), vg.Points(1.5)
	p.Add(mean)
	p.Legend.Add("mean", mean)
	for i, y := range []float64{v.differenceS.lo, v.differenceS.hi} {
		ci, err := plotter.NewLine(across(y))
		if err != nil {
			return nil, err
		}
		ci.Color, ci.Dashes = plotutil.Color(0), plotutil.Dashes(1)
		p.Add(ci)
		if i == 0 {
			p.Legend.Add("95% CI", ci)
		}
	}
	xys := make(plotter.XYs, len(v.difference))
	for i, d := range v.difference {
		xys[i].X, xys[i].Y = float64(i), d
	}
	pts, err := plotter.NewScatter(xys)
	if err != nil {
		return nil, err
	}
	pts.Color, pts.Shape, pts.Radius = plotutil.Color(1), draw.CircleGlyph{}, vg.Points(3)
	p.Add(pts)
	p.Legend.Add("pair", pts)
	p.NominalX(v.names...)
	p.X.Min, p.X.Max = -0.5, n-0.5
	p.Legend.Top = true
	span := p.Y.Max - p.Y.Min
	p.Y.Min, p.Y.Max = p.Y.Min-0.1*span, p.Y.Max+0.4*span // room for the glyphs and the legend
	return p, nil
}

// errorRatios writes, for a sweep that varies pretrain.mode, each RBM's
// final reconstruction error as the ratio pipelined / greedy: one row per
// group of pairs, the mean over its finished pairs. It is the quality of the
// two schedules at a glance, with one pair per group too.
func (a *analysis) errorRatios(md *strings.Builder) {
	groups := a.pairGroups()
	rbms := 0
	for _, g := range groups {
		for _, p := range g.finished {
			rbms = max(rbms, len(p.greedy.Result.RBMs), len(p.pipelined.Result.RBMs))
		}
	}
	if rbms == 0 {
		return
	}
	md.WriteString("\n## Each RBM's final error against greedy's\n\n")
	md.WriteString("Each RBM's final reconstruction error (`final_recon_error`, on a common input) in the pipelined runs " +
		"over the greedy run's they are compared with (same seed and repeat; greedy ignores `pretrain.k_batches`, " +
		"`pretrain.settle`, …): above 1, pipelined ends worse. Mean over the finished pairs of each row (n).\n\n")
	md.WriteString("| setting | n |")
	for i := range rbms {
		fmt.Fprintf(md, " RBM %d |", i+1)
	}
	md.WriteString("\n|---|---:|" + strings.Repeat("---:|", rbms) + "\n")
	for _, g := range groups {
		if len(g.finished) == 0 {
			continue
		}
		fmt.Fprintf(md, "| %s | %d |", g.label, len(g.finished))
		for i := range rbms {
			v := reconQuantity(i).over(a, g.finished)
			if len(v.ratio) == 0 {
				md.WriteString(" – |")
				continue
			}
			fmt.Fprintf(md, " %.3f |", v.ratioS.mean)
		}
		md.WriteString("\n")
	}
}
