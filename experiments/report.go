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
	"sort"
	"strconv"
	"strings"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/plotutil"
	"gonum.org/v1/plot/vg"

	"github.com/pipedbn/pipedbn/config"
	"github.com/pipedbn/pipedbn/dbn"
	"github.com/pipedbn/pipedbn/internal/atomicfile"
)

// Setting is where and how a run pre-trained, in the terms of the paper's
// Table 3: its rows are greedy on one machine, pipelined on one machine and
// pipelined on L machines (one per RBM). One box emulates a machine with a
// CPU quota of cluster.cpus_per_worker CPUs.
type Setting int

const (
	// GreedyOneMachine is greedy pre-training capped at cpus_per_worker CPUs.
	GreedyOneMachine Setting = iota
	// PipelinedOneMachine is pipelined pre-training with all local slaves
	// in one group of cpus_per_worker CPUs (cluster.colocate).
	PipelinedOneMachine
	// PipelinedLMachines is pipelined pre-training with one slave per RBM,
	// each its own machine: a local slave in its own group of
	// cpus_per_worker CPUs, or a remote slave (cluster.slaves > 0).
	PipelinedLMachines
	// GreedyWholeBox is greedy pre-training without a CPU cap.
	GreedyWholeBox
	// PipelinedWholeBox is pipelined pre-training with uncapped local
	// slaves sharing this box.
	PipelinedWholeBox
	// PipelinedInProcess is pipelined pre-training inside the master
	// (cluster.transport memory), uncapped.
	PipelinedInProcess
)

func (s Setting) String() string {
	switch s {
	case GreedyOneMachine:
		return "greedy, 1 machine"
	case PipelinedOneMachine:
		return "pipelined, 1 machine"
	case PipelinedLMachines:
		return "pipelined, L machines"
	case GreedyWholeBox:
		return "greedy, whole box"
	case PipelinedWholeBox:
		return "pipelined, whole box"
	case PipelinedInProcess:
		return "pipelined, in-process"
	}
	return fmt.Sprintf("Setting(%d)", int(s))
}

// describe says how a setting is made, for the report.
func (s Setting) describe() string {
	switch s {
	case GreedyOneMachine:
		return "the greedy trainer (Algorithm 1) in one process capped at `cluster.cpus_per_worker` CPUs (a cgroup CPU quota)"
	case PipelinedOneMachine:
		return "one local slave process per RBM (Algorithm 2 over NATS), all of them in one CPU group of `cluster.cpus_per_worker` CPUs (`cluster.colocate: true`)"
	case PipelinedLMachines:
		return "one slave per RBM, each its own machine: a local slave process in its own CPU group of `cluster.cpus_per_worker` CPUs (or a remote slave)"
	case GreedyWholeBox:
		return "the greedy trainer with every CPU of this box (`cluster.cpus_per_worker: 0`)"
	case PipelinedWholeBox:
		return "one local slave per RBM, uncapped, sharing every CPU of this box"
	case PipelinedInProcess:
		return "all RBMs in the master process (`cluster.transport: memory`), uncapped"
	}
	return ""
}

// SettingOf classifies a run's configuration.
func SettingOf(c *config.Config) Setting {
	cl := c.Cluster
	switch {
	case c.Pretrain.Mode == config.Greedy && cl.CPUsPerWorker > 0:
		return GreedyOneMachine
	case c.Pretrain.Mode == config.Greedy:
		return GreedyWholeBox
	case cl.Transport == config.Memory:
		return PipelinedInProcess
	case cl.Slaves > 0:
		return PipelinedLMachines
	case cl.CPUsPerWorker == 0:
		return PipelinedWholeBox
	case cl.Colocate:
		return PipelinedOneMachine
	}
	return PipelinedLMachines
}

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
)

// structuralKeys define a run's setting and depth: the report lays them out
// as its rows and columns; any other swept key splits the rows further.
var structuralKeys = map[string]bool{
	"dbn.layers": true, "pretrain.mode": true, "cluster.colocate": true,
	"cluster.transport": true, "cluster.slaves": true,
}

// column is one DBN shape: a column of the report's tables.
type column struct {
	layers []int
	label  string
	depth  int // hidden layers L, the number of RBMs
}

// group is a row of the report's tables: a setting and the values of the
// other swept keys.
type group struct {
	setting Setting
	other   string
}

func (g group) label() string {
	if g.other == "" {
		return g.setting.String()
	}
	return g.setting.String() + " · " + g.other
}

type cell struct{ g, c int }

// analysis is a sweep's runs arranged as report tables.
type analysis struct {
	plan   *SweepPlan
	rows   []SweepRow
	cols   []column
	groups []group
	ok     map[cell][]*SweepRow // finished runs of each cell, by repeat
}

func analyse(plan *SweepPlan, rows []SweepRow) *analysis {
	a := &analysis{plan: plan, rows: rows, ok: map[cell][]*SweepRow{}}
	colOf := map[string]int{}
	groupOf := map[group]int{}
	var cells []cell
	for i := range rows {
		r := &rows[i]
		key := layersText(r.Config.DBN.Layers)
		ci, ok := colOf[key]
		if !ok {
			ci = len(a.cols)
			colOf[key] = ci
			a.cols = append(a.cols, column{layers: r.Config.DBN.Layers, depth: len(r.Config.DBN.Layers) - 1})
		}
		g := group{setting: SettingOf(r.Config), other: a.otherLabel(r)}
		gi, ok := groupOf[g]
		if !ok {
			gi = len(a.groups)
			groupOf[g] = gi
			a.groups = append(a.groups, g)
		}
		cells = append(cells, cell{gi, ci})
	}
	// Order columns by depth, then by shape; rows by setting, then as met.
	colOrder := make([]int, len(a.cols))
	for i := range colOrder {
		colOrder[i] = i
	}
	sort.SliceStable(colOrder, func(i, j int) bool {
		ci, cj := a.cols[colOrder[i]], a.cols[colOrder[j]]
		if ci.depth != cj.depth {
			return ci.depth < cj.depth
		}
		return slices.Compare(ci.layers, cj.layers) < 0
	})
	groupOrder := make([]int, len(a.groups))
	for i := range groupOrder {
		groupOrder[i] = i
	}
	sort.SliceStable(groupOrder, func(i, j int) bool {
		return a.groups[groupOrder[i]].setting < a.groups[groupOrder[j]].setting
	})
	newCol, newGroup := inverse(colOrder), inverse(groupOrder)
	cols, groups := make([]column, len(a.cols)), make([]group, len(a.groups))
	for old, nw := range newCol {
		cols[nw] = a.cols[old]
	}
	for old, nw := range newGroup {
		groups[nw] = a.groups[old]
	}
	a.cols, a.groups = cols, groups
	depths := map[int]int{}
	for _, c := range a.cols {
		depths[c.depth]++
	}
	for i := range a.cols {
		c := &a.cols[i]
		c.label = fmt.Sprintf("L=%d", c.depth)
		if depths[c.depth] > 1 {
			c.label += " " + slug(layersText(c.layers))
		}
	}
	for i := range rows {
		if rows[i].Status != RunDone || rows[i].Result == nil {
			continue
		}
		k := cell{newGroup[cells[i].g], newCol[cells[i].c]}
		a.ok[k] = append(a.ok[k], &rows[i])
	}
	return a
}

func inverse(order []int) []int {
	inv := make([]int, len(order))
	for nw, old := range order {
		inv[old] = nw
	}
	return inv
}

// otherLabel names the values of r's swept keys other than the structural
// ones: "pretrain.epochs=2, seed=3".
func (a *analysis) otherLabel(r *SweepRow) string {
	var parts []string
	for i, k := range a.plan.Keys {
		if structuralKeys[k] || i >= len(r.Values) || r.Values[i] == "" {
			continue
		}
		parts = append(parts, k+"="+r.Values[i])
	}
	return strings.Join(parts, ", ")
}

// values returns f of every finished run of a cell.
func (a *analysis) values(c cell, f func(*dbn.Result) (float64, bool)) []float64 {
	var vs []float64
	for _, r := range a.ok[c] {
		if v, ok := f(r.Result); ok {
			vs = append(vs, v)
		}
	}
	return vs
}

func pretrainSeconds(r *dbn.Result) (float64, bool) { return r.PretrainSeconds, true }

func testAccuracy(r *dbn.Result) (float64, bool) {
	if r.Finetune == nil {
		return 0, false
	}
	return r.Finetune.TestAccuracy, true
}

func meanFinalRecon(r *dbn.Result) (float64, bool) {
	if len(r.RBMs) == 0 {
		return 0, false
	}
	s := 0.0
	for _, b := range r.RBMs {
		s += b.FinalReconError
	}
	return s / float64(len(r.RBMs)), true
}

// secondsFormat keeps three significant digits for short times and one
// decimal for long ones.
func secondsFormat(vs []float64) string {
	switch m := median(vs); {
	case m < 1:
		return "%.3f"
	case m < 10:
		return "%.2f"
	}
	return "%.1f"
}

// secondsText formats one time like secondsFormat.
func secondsText(v float64) string { return fmt.Sprintf(secondsFormat([]float64{v}), v) }

func median(vs []float64) float64 {
	if len(vs) == 0 {
		return math.NaN()
	}
	s := slices.Clone(vs)
	slices.Sort(s)
	n := len(s)
	if n%2 == 1 {
		return s[n/2]
	}
	return (s[n/2-1] + s[n/2]) / 2
}

// medianText is "12.3" for one value, "12.3 [11.9–12.8]" for several.
func medianText(vs []float64, format string) string {
	if len(vs) == 0 {
		return "–"
	}
	m := fmt.Sprintf(format, median(vs))
	lo, hi := fmt.Sprintf(format, slices.Min(vs)), fmt.Sprintf(format, slices.Max(vs))
	if len(vs) == 1 || lo == hi {
		return m
	}
	return fmt.Sprintf("%s [%s–%s]", m, lo, hi)
}

// findGroup returns the row of setting s with other-label other, or -1.
func (a *analysis) findGroup(s Setting, other string) int {
	for i, g := range a.groups {
		if g.setting == s && g.other == other {
			return i
		}
	}
	return -1
}

// others lists the distinct other-labels, in row order.
func (a *analysis) others() []string {
	var os []string
	for _, g := range a.groups {
		if !slices.Contains(os, g.other) {
			os = append(os, g.other)
		}
	}
	return os
}

// speedRow is one point of Fig. 6: a depth where both greedy on one machine
// and pipelined on L machines finished.
type speedRow struct {
	other                   string
	col                     column
	greedy, one, pipelinedL float64 // median seconds; one is NaN if absent
	speedup, efficiency     float64
	gCell, lCell            cell
}

func (a *analysis) speedRows() []speedRow {
	var out []speedRow
	for _, o := range a.others() {
		gi, li, oi := a.findGroup(GreedyOneMachine, o), a.findGroup(PipelinedLMachines, o), a.findGroup(PipelinedOneMachine, o)
		if gi < 0 || li < 0 {
			continue
		}
		for ci, c := range a.cols {
			g := a.values(cell{gi, ci}, pretrainSeconds)
			p := a.values(cell{li, ci}, pretrainSeconds)
			if len(g) == 0 || len(p) == 0 {
				continue
			}
			one := math.NaN()
			if oi >= 0 {
				one = median(a.values(cell{oi, ci}, pretrainSeconds))
			}
			s := median(g) / median(p)
			out = append(out, speedRow{other: o, col: c, greedy: median(g), one: one, pipelinedL: median(p),
				speedup: s, efficiency: s / float64(c.depth), gCell: cell{gi, ci}, lCell: cell{li, ci}})
		}
	}
	return out
}

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
	a.accuracy(&md, addPlot)
	a.recon(&md, addPlot)
	a.runList(&md)

	for _, name := range []string{plotTime, plotSpeedup, plotAccuracy, plotRecon, plotBusy, plotSim} {
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
		"parallel efficiency = speed-up / L, with L slaves (one per RBM). The paper's are from its Table 3.\n\n")
	md.WriteString("| L | greedy, 1 machine (s) | pipelined, 1 machine (s) | pipelined, L machines (s) | speed-up | efficiency | paper speed-up | paper efficiency |\n")
	md.WriteString("|---|---:|---:|---:|---:|---:|---:|---:|\n")
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
		fmt.Fprintf(md, "| %s | %s | %s | %s | %.2f | %.2f | %s | %s |\n", label, secondsText(r.greedy), one, secondsText(r.pipelinedL), r.speedup, r.efficiency, ps, pe)
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
			"Training times are summed over RBMs; medians over repeats.\n\n")
		md.WriteString("| L | greedy (s) | greedy training (s) | pipelined L machines (s) | pipelined training (s) | waiting per slave (s) | rest per slave (s) | greedy overhead | training speed ratio | busy share | efficiency |\n")
		md.WriteString("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n")
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
			fmt.Fprintf(md, "| %s | %s | %s | %s | %s | %s | %s | %.2f | %.2f | %.2f | %.2f |\n",
				label, secondsText(r.greedy), secondsText(gBusy), secondsText(r.pipelinedL), secondsText(pBusy), secondsText(pWait/l), secondsText(rest),
				r.greedy/gBusy, gBusy/pBusy, pBusy/(l*r.pipelinedL), r.efficiency)
		}
		md.WriteString("\n")
	}
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
