package experiments

import (
	"errors"
	"fmt"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/plotutil"
	"gonum.org/v1/plot/vg"

	"github.com/pipedbn/pipedbn/dbn"
	"github.com/pipedbn/pipedbn/internal/atomicfile"
)

// paperTable3 is the paper's Table 3 (minutes, TIMIT, GTX 660 GPUs): for L
// hidden layers, greedy on 1 machine, pipelined on 1 machine, pipelined on
// L machines.
var paperTable3 = map[int][3]float64{
	4: {68.68, 67.89, 24.17},
	5: {90.3, 90.12, 25.09},
	6: {113.67, 112.71, 25.95},
	7: {139.78, 139.82, 26.69},
	8: {166.17, 168.02, 28.15},
}

// Plot files a report may write.
const (
	plotTime     = "time_vs_layers.png"
	plotSpeedup  = "speedup.png"
	plotAccuracy = "accuracy.png"
	plotRecon    = "recon_error.png"
	plotBusy     = "busy_wait.png"
	plotPaired   = "paired.png"
)

// WriteReport writes report.md and its PNG plots into plan.Dir from the rows
// of a sweep (finished or not), skipping the sections and plots the sweep
// has no runs for, and returns the paths of the files written.
// regenerate is the command line the report names as the one that remakes
// it.
func WriteReport(plan *SweepPlan, rows []SweepRow, regenerate string) ([]string, error) {
	a := analyse(plan, rows)
	var md strings.Builder
	var written []string
	plots := map[string][]byte{}
	addPlot := func(name, alt string, png []byte, err error) {
		if err != nil {
			fmt.Fprintf(&md, "\n(plot %s failed: %v)\n", name, err)
			return
		}
		plots[name] = png
		fmt.Fprintf(&md, "\n![%s](%s)\n", alt, name)
	}
	a.header(&md, regenerate)
	a.table3(&md, addPlot)
	a.speedup(&md, addPlot)
	a.timeGoes(&md, addPlot)
	a.simulate(&md, addPlot)
	a.plans(&md, addPlot)
	a.accuracy(&md, addPlot)
	a.endToEnd(&md, addPlot)
	a.recon(&md, addPlot)
	a.errorRatios(&md)
	a.probe(&md, addPlot)
	a.axis(&md, addPlot)
	a.paired(&md, addPlot)
	a.runList(&md)

	for _, name := range []string{plotTime, plotSpeedup, plotAccuracy, plotEndToEnd, plotRecon, plotProbe, plotAxis, plotBusy, plotSim, plotPaired, plotPlans} {
		path := filepath.Join(plan.Dir, name)
		png, ok := plots[name]
		if !ok {
			// A plot that no longer applies must not linger beside the report.
			if err := os.Remove(path); err != nil && !errors.Is(err, fs.ErrNotExist) {
				return written, err
			}
			continue
		}
		if err := atomicfile.WriteFile(path, png); err != nil {
			return written, err
		}
		written = append(written, path)
	}
	path := filepath.Join(plan.Dir, "report.md")
	if err := atomicfile.WriteFile(path, []byte(md.String())); err != nil {
		return written, err
	}
	return append(written, path), nil
}

type plotAdder func(name, alt string, png []byte, err error)

func (a *analysis) header(md *strings.Builder, regenerate string) {
	p := a.plan
	fmt.Fprintf(md, "# Sweep `%s`\n\n", p.Name)
	if regenerate != "" {
		fmt.Fprintf(md, "Regenerate this report and its plots with\n\n```sh\n%s\n```\n\n", regenerate)
		md.WriteString("It reuses every run whose `result.json` is already there for the same configuration " +
			"(delete a run's folder to measure it again). Every run is its own `master run` process; its folder " +
			"holds `result.json`, `weights.npz`, `run.log` and the slaves' logs. `sweep.csv` has one row per run.\n\n")
	}
	count := map[RunStatus]int{}
	for _, r := range a.rows {
		count[r.Status]++
	}
	fmt.Fprintf(md, "- config: `%s`; repeats: %d\n", p.File, p.Repeats)
	for i, k := range p.Keys {
		seen := []string{}
		for _, r := range a.rows {
			if v := r.Values[i]; v != "" && !slices.Contains(seen, v) {
				seen = append(seen, v)
			}
		}
		if len(seen) == 0 {
			seen = append(seen, "(every run ignores it)")
		}
		fmt.Fprintf(md, "- swept `%s`: %s\n", k, strings.Join(seen, "; "))
	}
	fmt.Fprintf(md, "- runs: %d", len(a.rows))
	if p.Merged > 0 {
		fmt.Fprintf(md, " (%d combinations merged into runs that ignore the key they differ in)", p.Merged)
	}
	fmt.Fprintf(md, ": %d ok, %d failed, %d interrupted, %d pending\n",
		count[RunDone], count[RunFailed], count[RunStopped], count[RunPending])
	if r := a.firstResult(); r != nil {
		fmt.Fprintf(md, "- data: %s, %d training examples of %d values; BLAS: %s; this box: %d CPUs\n",
			r.Data.Source, r.Data.Train, r.Data.Dim, r.BLAS, runtime.NumCPU())
	}
	if len(a.rows) > 0 {
		c := a.rows[0].Config
		fmt.Fprintf(md, "- pre-training: pretrain.epochs %d, mini-batches of %d, K = %d mini-batches per window", c.Pretrain.Epochs, c.Pretrain.BatchSize, c.Pretrain.KBatches)
		if c.Cluster.CPUsPerWorker > 0 {
			fmt.Fprintf(md, "; one emulated machine = %g CPU (cgroup quota)", c.Cluster.CPUsPerWorker)
		}
		md.WriteString(" (of the first run; swept keys vary)\n")
	}
	md.WriteString("\nSettings (rows of the tables):\n\n")
	var seen []Setting
	for _, g := range a.groups {
		if !slices.Contains(seen, g.setting) {
			seen = append(seen, g.setting)
			fmt.Fprintf(md, "- **%s**: %s.\n", g.setting, g.setting.describe())
		}
	}
}

func (a *analysis) firstResult() *dbn.Result {
	for _, r := range a.rows {
		if r.Status == RunDone && r.Result != nil {
			return r.Result
		}
	}
	return nil
}

// table writes a markdown table: rows = groups, columns = a.cols, cells from
// text (which returns "" for a cell with no value).
func (a *analysis) table(md *strings.Builder, corner string, text func(cell) string) {
	fmt.Fprintf(md, "\n| %s |", corner)
	for _, c := range a.cols {
		fmt.Fprintf(md, " %s |", c.label)
	}
	md.WriteString("\n|---|")
	for range a.cols {
		md.WriteString("---:|")
	}
	md.WriteString("\n")
	for gi, g := range a.groups {
		fmt.Fprintf(md, "| %s |", g.label())
		for ci := range a.cols {
			fmt.Fprintf(md, " %s |", text(cell{gi, ci}))
		}
		md.WriteString("\n")
	}
}

func (a *analysis) table3(md *strings.Builder, add plotAdder) {
	md.WriteString("\n## Pre-training time (Table 3)\n\n")
	md.WriteString("Median pre-training seconds over the repeats ([min–max] when repeated); columns: hidden layers L, one RBM each.\n")
	a.table(md, "setting", func(c cell) string {
		vs := a.values(c, pretrainSeconds)
		return medianText(vs, secondsFormat(vs))
	})
	var paper []column
	for _, c := range a.cols {
		if _, ok := paperTable3[c.depth]; ok && !slices.ContainsFunc(paper, func(p column) bool { return p.depth == c.depth }) {
			paper = append(paper, c)
		}
	}
	if len(paper) > 0 {
		md.WriteString("\nThe paper's Table 3 at the same depths (minutes; TIMIT, 1024-unit layers, 20 epochs, one GTX 660 GPU per machine):\n\n| setting |")
		for _, c := range paper {
			fmt.Fprintf(md, " L=%d |", c.depth)
		}
		md.WriteString("\n|---|")
		for range paper {
			md.WriteString("---:|")
		}
		for i, s := range []Setting{GreedyOneMachine, PipelinedOneMachine, PipelinedLMachines} {
			fmt.Fprintf(md, "\n| %s |", s)
			for _, c := range paper {
				fmt.Fprintf(md, " %.2f |", paperTable3[c.depth][i])
			}
		}
		md.WriteString("\n")
	}
	if distinctDepths(a.cols) < 2 {
		md.WriteString("\n(One depth only: no plot of time against hidden layers.)\n")
		return
	}
	p := newPlot("Pre-training time vs hidden layers", "hidden layers L", "pre-training time (s)", false)
	p.X.Tick.Marker = integerTicks{}
	var ss []series
	for gi, g := range a.groups {
		s := series{name: g.label(), style: gi}
		for ci, c := range a.cols {
			if vs := a.values(cell{gi, ci}, pretrainSeconds); len(vs) > 0 {
				s.xs = append(s.xs, float64(c.depth))
				s.ys = append(s.ys, median(vs))
			}
		}
		ss = append(ss, s)
	}
	err := addSeries(p, ss)
	var png []byte
	if err == nil {
		p.Legend.Top, p.Legend.Left = true, true
		p.Y.Min = 0
		p.Y.Max *= 1.1 + 0.07*float64(len(ss)) // room for the legend
		padX(p)
		png, err = renderPNG(p, 16*vg.Centimeter, 10*vg.Centimeter)
	}
	add(plotTime, "pre-training time vs hidden layers", png, err)
}

func distinctDepths(cols []column) int {
	d := map[int]bool{}
	for _, c := range cols {
		d[c.depth] = true
	}
	return len(d)
}

func (a *analysis) speedup(md *strings.Builder, add plotAdder) {
	rows := a.speedRows()
	md.WriteString("\n## Speed-up and parallel efficiency (Fig. 6)\n\n")
	if len(rows) == 0 {
		md.WriteString("No depth has both a finished *greedy, 1 machine* run and a finished *pipelined, L machines* run " +
			"(pretrain.mode greedy and pipelined with cluster.cpus_per_worker > 0 and cluster.colocate false): no speed-up.\n")
		return
	}
	md.WriteString("speed-up = greedy time on 1 machine / pipelined time on L machines (medians); " +
		"parallel efficiency = speed-up / L, with L slaves (one per RBM). The paper's are from its Table 3.")
	e2e := a.hasEndToEnd()
	if e2e {
		md.WriteString(" end-to-end speed-up: the same ratio of `end_to_end_seconds`, pre-training + fine-tuning on one worker (–: not in these results).")
	}
	md.WriteString("\n\n| L | greedy, 1 machine (s) | pipelined, 1 machine (s) | pipelined, L machines (s) | speed-up | efficiency | paper speed-up | paper efficiency |")
	if e2e {
		md.WriteString(" end-to-end speed-up |")
	}
	md.WriteString("\n|---|---:|---:|---:|---:|---:|---:|---:|")
	if e2e {
		md.WriteString("---:|")
	}
	md.WriteString("\n")
	for _, r := range rows {
		label := r.col.label
		if r.other != "" {
			label += " · " + r.other
		}
		one := "–"
		if !math.IsNaN(r.one) {
			one = secondsText(r.one)
		}
		ps, pe := "–", "–"
		if t, ok := paperTable3[r.col.depth]; ok {
			ps, pe = fmt.Sprintf("%.2f", t[0]/t[2]), fmt.Sprintf("%.2f", t[0]/t[2]/float64(r.col.depth))
		}
		fmt.Fprintf(md, "| %s | %s | %s | %s | %.2f | %.2f | %s | %s |", label, secondsText(r.greedy), one, secondsText(r.pipelinedL), r.speedup, r.efficiency, ps, pe)
		if e2e {
			fmt.Fprintf(md, " %s |", a.endToEndSpeedup(r))
		}
		md.WriteString("\n")
	}
	png, err := a.speedupPlot(rows)
	add(plotSpeedup, "speed-up and parallel efficiency vs slaves", png, err)
}

func (a *analysis) speedupPlot(rows []speedRow) ([]byte, error) {
	sp := newPlot("Speed-up vs slaves", "slaves L", "speed-up", false)
	ef := newPlot("Parallel efficiency vs slaves", "slaves L", "efficiency", false)
	for _, p := range []*plot.Plot{sp, ef} {
		p.X.Tick.Marker = integerTicks{}
		p.Legend.Top, p.Legend.Left = true, true
	}
	var speed, eff []series
	lo, hi := math.Inf(1), math.Inf(-1)
	for i, o := range a.others() {
		name := "measured"
		if o != "" {
			name = o
		}
		s, e := series{name: name, style: i}, series{name: name, style: i}
		for _, r := range rows {
			if r.other != o {
				continue
			}
			d := float64(r.col.depth)
			s.xs, s.ys = append(s.xs, d), append(s.ys, r.speedup)
			e.xs, e.ys = append(e.xs, d), append(e.ys, r.efficiency)
			lo, hi = math.Min(lo, d), math.Max(hi, d)
		}
		speed, eff = append(speed, s), append(eff, e)
	}
	var pxs, psp, pef []float64
	for l := int(lo); l <= int(hi); l++ {
		if t, ok := paperTable3[l]; ok {
			pxs = append(pxs, float64(l))
			psp = append(psp, t[0]/t[2])
			pef = append(pef, t[0]/t[2]/float64(l))
		}
	}
	speed = append(speed, series{name: "ideal", xs: []float64{lo, hi}, ys: []float64{lo, hi}, dashed: true, style: 0},
		series{name: "paper (TIMIT, GPUs)", xs: pxs, ys: psp, dashed: true, style: 1})
	eff = append(eff, series{name: "ideal", xs: []float64{lo, hi}, ys: []float64{1, 1}, dashed: true, style: 0},
		series{name: "paper (TIMIT, GPUs)", xs: pxs, ys: pef, dashed: true, style: 1})
	if err := addSeries(sp, speed); err != nil {
		return nil, err
	}
	if err := addSeries(ef, eff); err != nil {
		return nil, err
	}
	// Room for the legends at the top.
	sp.Y.Min, sp.Y.Max = 0, sp.Y.Max*(1.1+0.07*float64(len(speed)))
	ef.Y.Min, ef.Y.Max = 0, math.Max(1, ef.Y.Max)*(1.1+0.07*float64(len(eff)))
	padX(sp)
	padX(ef)
	return renderGrid([][]*plot.Plot{{sp, ef}}, 13*vg.Centimeter, 10*vg.Centimeter)
}

// timeGoes explains the efficiency: for each speed-up point, it splits the
// pipelined run's slave-time into training, waiting and the rest, and
// compares the training time with greedy's.
func (a *analysis) timeGoes(md *strings.Builder, add plotAdder) {
	md.WriteString("\n## Where the time goes\n\n")
	if rows := a.speedRows(); len(rows) > 0 {
		md.WriteString("Parallel efficiency = (greedy time / greedy training time) x (greedy training time / pipelined training time) " +
			"x (pipelined training time / (L x pipelined time)): the first factor is greedy's overhead beyond CD-1 " +
			"(passing the whole data set up through each trained RBM), the second how fast a slave trains compared with " +
			"the greedy trainer on the same CPUs, the third the share of its time an average slave spends training rather than " +
			"waiting for input or credit (pipeline fill and drain, flow control) or doing neither (start-up, streaming the data, collecting weights). " +
			"Training times are summed over RBMs; medians over repeats.")
		fixed := a.hasFixedCosts()
		if fixed {
			md.WriteString(" Pipelined fill, drain: those phases of the pipelined run's `pretrain_phases`; pipelined overhead: its `overhead_seconds`, " +
				"its time beyond W windows of its bottleneck stage group (–: not in these results).")
		}
		md.WriteString("\n\n| L | greedy (s) | greedy training (s) | pipelined L machines (s) | pipelined training (s) | waiting per slave (s) | rest per slave (s) | greedy overhead | training speed ratio | busy share | efficiency |")
		if fixed {
			md.WriteString(" pipelined fill (s) | pipelined drain (s) | pipelined overhead (s) |")
		}
		md.WriteString("\n|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
		if fixed {
			md.WriteString("---:|---:|---:|")
		}
		md.WriteString("\n")
		for _, r := range rows {
			gBusy := median(a.values(r.gCell, totalBusy))
			pBusy := median(a.values(r.lCell, totalBusy))
			pWait := median(a.values(r.lCell, totalWait))
			l := float64(r.col.depth)
			rest := r.pipelinedL - (pBusy+pWait)/l
			label := r.col.label
			if r.other != "" {
				label += " · " + r.other
			}
			fmt.Fprintf(md, "| %s | %s | %s | %s | %s | %s | %s | %.2f | %.2f | %.2f | %.2f |",
				label, secondsText(r.greedy), secondsText(gBusy), secondsText(r.pipelinedL), secondsText(pBusy), secondsText(pWait/l), secondsText(rest),
				r.greedy/gBusy, gBusy/pBusy, pBusy/(l*r.pipelinedL), r.efficiency)
			if fixed {
				fmt.Fprintf(md, " %s |", strings.Join(a.fixedCostCells(r.lCell), " | "))
			}
			md.WriteString("\n")
		}
		md.WriteString("\n")
	}
	a.fixedCosts(md)
	md.WriteString("Per RBM (its slave, or the greedy trainer): seconds training, waiting for input or credit, and the rest of the " +
		"pre-training time (first finished repeat of each cell).\n")
	png, err := a.grid(func(r *dbn.Result, title string) (*plot.Plot, error) {
		p := newPlot(title, "RBM", "seconds", true)
		var busy, wait, rest []float64
		var names []string
		for _, b := range r.RBMs {
			busy = append(busy, b.BusySeconds)
			wait = append(wait, b.WaitSeconds)
			rest = append(rest, math.Max(0, r.PretrainSeconds-b.BusySeconds-b.WaitSeconds))
			names = append(names, strconv.Itoa(b.Index))
		}
		if len(names) == 0 {
			return nil, nil
		}
		if err := stackedBars(p, [][]float64{busy, wait, rest}, []string{"training", "waiting", "rest"}, vg.Points(14)); err != nil {
			return nil, err
		}
		p.NominalX(names...)
		p.X.Min, p.X.Max = -0.6, float64(len(names))-0.4
		p.Legend.Top = true
		p.Y.Max *= 1.35 // room for the legend
		return p, nil
	})
	if png == nil && err == nil {
		md.WriteString("\n(No finished runs: no plot.)\n")
		return
	}
	add(plotBusy, "busy vs waiting seconds per slave", png, err)
}

func totalBusy(r *dbn.Result) (float64, bool) {
	s := 0.0
	for _, b := range r.RBMs {
		s += b.BusySeconds
	}
	return s, len(r.RBMs) > 0
}

func totalWait(r *dbn.Result) (float64, bool) {
	s := 0.0
	for _, b := range r.RBMs {
		s += b.WaitSeconds
	}
	return s, len(r.RBMs) > 0
}

// maxGrid bounds the panels of a grid plot in each direction.
const maxGrid = 8

// grid draws one panel per cell (rows = groups, columns = depths) from the
// first finished run of the cell; nil, nil when there is none.
func (a *analysis) grid(panel func(r *dbn.Result, title string) (*plot.Plot, error)) ([]byte, error) {
	var plots [][]*plot.Plot
	drawn := false
	for gi, g := range a.groups {
		if gi == maxGrid {
			break
		}
		var row []*plot.Plot
		for ci, c := range a.cols {
			if ci == maxGrid {
				break
			}
			runs := a.ok[cell{gi, ci}]
			if len(runs) == 0 {
				row = append(row, nil)
				continue
			}
			p, err := panel(runs[0].Result, g.label()+", "+c.label)
			if err != nil {
				return nil, err
			}
			drawn = drawn || p != nil
			row = append(row, p)
		}
		plots = append(plots, row)
	}
	if !drawn {
		return nil, nil
	}
	return renderGrid(plots, 9*vg.Centimeter, 7*vg.Centimeter)
}

func (a *analysis) accuracy(md *strings.Builder, add plotAdder) {
	has := false
	for _, rs := range a.ok {
		for _, r := range rs {
			has = has || r.Result.Finetune != nil
		}
	}
	if !has {
		return // no run fine-tuned: no Table 2
	}
	md.WriteString("\n## Accuracy after fine-tuning (Table 2)\n\n")
	md.WriteString("Median test accuracy (%) over the repeats; the paper's Table 2 reports sentence error rates on TIMIT " +
		"(greedy 22.81/19.92/18.35 %, pipelined 23.43/20.02/18.72 % at 4/5/6 hidden layers): the claim to check is no loss of accuracy.\n")
	a.table(md, "setting", func(c cell) string {
		vs := a.values(c, testAccuracy)
		for i := range vs {
			vs[i] *= 100
		}
		return medianText(vs, "%.2f")
	})
	p := newPlot("Test error after fine-tuning", "", "test error (%)", false)
	var groups [][]float64
	var names []string
	for gi, g := range a.groups {
		vs := make([]float64, len(a.cols))
		tuned := false
		for ci := range a.cols {
			if acc := a.values(cell{gi, ci}, testAccuracy); len(acc) > 0 {
				vs[ci] = 100 * (1 - median(acc))
				tuned = true
			}
		}
		if tuned {
			groups = append(groups, vs)
			names = append(names, g.label())
		}
	}
	width := vg.Points(math.Max(6, 60/float64(len(groups))))
	err := groupedBars(p, groups, names, width)
	var png []byte
	if err == nil {
		var labels []string
		for _, c := range a.cols {
			labels = append(labels, c.label)
		}
		p.NominalX(labels...)
		p.X.Min, p.X.Max = -0.75, float64(len(labels))-0.25
		p.Legend.Top = true
		p.Y.Max *= 1.3
		png, err = renderPNG(p, 16*vg.Centimeter, 10*vg.Centimeter)
	}
	add(plotAccuracy, "test error per setting", png, err)
}

func (a *analysis) recon(md *strings.Builder, add plotAdder) {
	if len(a.ok) == 0 {
		return
	}
	md.WriteString("\n## Reconstruction error\n\n")
	md.WriteString("Final reconstruction error, the mean over RBMs of each RBM's mean squared error at the end, measured on the " +
		"same input for every schedule (the first training examples passed up through the final RBMs below it); medians over repeats.\n")
	a.table(md, "setting", func(c cell) string { return medianText(a.values(c, meanFinalRecon), "%.5f") })
	epochs := 0
	for _, rs := range a.ok {
		for _, r := range rs {
			for _, b := range r.Result.RBMs {
				epochs = max(epochs, len(b.ReconError))
			}
		}
	}
	if epochs < 2 {
		md.WriteString("\n(One epoch: no reconstruction-error curves.)\n")
		return
	}
	md.WriteString("\nReconstruction error per epoch of each RBM (first finished repeat of each cell). In the pipelined schedule an " +
		"upper RBM's error is measured on input that moves while the RBMs below learn, so it may rise.\n")
	png, err := a.grid(func(r *dbn.Result, title string) (*plot.Plot, error) {
		p := newPlot(title, "epoch", "recon. error", true)
		p.X.Tick.Marker = integerTicks{}
		for i, b := range r.RBMs {
			xys := make(plotter.XYs, len(b.ReconError))
			for e, v := range b.ReconError {
				xys[e].X, xys[e].Y = float64(e+1), v
			}
			l, pts, err := plotter.NewLinePoints(xys)
			if err != nil {
				return nil, err
			}
			l.Color, pts.Color, pts.Shape = plotutil.Color(i), plotutil.Color(i), plotutil.Shape(i)
			p.Add(l, pts)
			p.Legend.Add(fmt.Sprintf("RBM %d", b.Index), l, pts)
		}
		p.Legend.Top = true
		p.Y.Min = 0
		p.Y.Max *= 1.25 // room for the legend
		return p, nil
	})
	add(plotRecon, "reconstruction error per epoch of each RBM", png, err)
}

func (a *analysis) runList(md *strings.Builder) {
	var bad []SweepRow
	for _, r := range a.rows {
		if r.Status != RunDone {
			bad = append(bad, r)
		}
	}
	if len(bad) == 0 {
		return
	}
	md.WriteString("\n## Runs without results\n\n| run | status | error |\n|---|---|---|\n")
	for _, r := range bad {
		fmt.Fprintf(md, "| %s | %s | %s |\n", r.Name, r.Status, strings.ReplaceAll(r.Err, "|", `\|`))
	}
}
