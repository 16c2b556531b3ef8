package experiments

import (
	"fmt"
	"math"
	"slices"
	"sort"
	"strings"

	"github.com/pipedbn/pipedbn/dbn"
)

// The report's analysis: a sweep's finished runs arranged as tables (rows:
// settings and the other swept values, columns: DBN shapes) and the
// statistics the report prints and plots from them.

// structuralKeys define a run's setting and depth: the report lays them out
// as its rows and columns; any other swept key splits the rows further.
var structuralKeys = map[string]bool{
	"dbn.layers": true, modeKey: true, "cluster.colocate": true,
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
