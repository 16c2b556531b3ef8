package experiments

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/vg"
)

// The report's section for a sweep of pretrain.mode and one numeric key
// besides (the K study's pretrain.k_batches): per value of the key,
// pipelined pre-training time against greedy's and each RBM's final
// reconstruction error against greedy's, in a table and a plot.

const plotAxis = "against_key.png"

// axisPoint is one value of the swept key: the means over its finished
// pairs.
type axisPoint struct {
	x                 string
	value             float64
	pairs             int
	pipelined, greedy float64   // pre-training seconds
	ratios            []float64 // final_recon_error pipelined / greedy, per RBM
	accP, accG        []float64 // fine-tuned test accuracy, when fine-tuned
}

// axisKey returns the key a sweep varies besides the mode, if it varies
// exactly one and all its values are numbers.
func (a *analysis) axisKey() (int, bool) {
	if len(a.plan.Keys) != 2 || !slices.Contains(a.plan.Keys, modeKey) {
		return 0, false
	}
	k := 0
	if a.plan.Keys[0] == modeKey {
		k = 1
	}
	for _, r := range a.rows {
		if v := r.Values[k]; v != "" {
			if _, err := strconv.ParseFloat(v, 64); err != nil {
				return 0, false
			}
		}
	}
	return k, true
}

func (a *analysis) axisPoints(k int) []axisPoint {
	var pts []axisPoint
	var finished []pair
	for _, g := range a.pairGroups() {
		finished = append(finished, g.finished...)
	}
	for _, pr := range finished {
		p, g := pr.pipelined, pr.greedy
		if len(g.Result.RBMs) != len(p.Result.RBMs) {
			continue
		}
		x := p.Values[k]
		j := slices.IndexFunc(pts, func(q axisPoint) bool { return q.x == x })
		if j < 0 {
			v, _ := strconv.ParseFloat(x, 64)
			pts = append(pts, axisPoint{x: x, value: v, ratios: make([]float64, len(p.Result.RBMs))})
			j = len(pts) - 1
		}
		q := &pts[j]
		q.pairs++
		q.pipelined += p.Result.PretrainSeconds
		q.greedy += g.Result.PretrainSeconds
		for r, b := range p.Result.RBMs {
			if ge := g.Result.RBMs[r].FinalReconError; ge > 0 {
				q.ratios[r] += b.FinalReconError / ge
			}
		}
		if p.Result.Finetune != nil && g.Result.Finetune != nil {
			q.accP = append(q.accP, p.Result.Finetune.TestAccuracy)
			q.accG = append(q.accG, g.Result.Finetune.TestAccuracy)
		}
	}
	for i := range pts {
		q := &pts[i]
		n := float64(q.pairs)
		q.pipelined /= n
		q.greedy /= n
		for r := range q.ratios {
			q.ratios[r] /= n
		}
	}
	slices.SortFunc(pts, func(p, q axisPoint) int {
		switch {
		case p.value < q.value:
			return -1
		case p.value > q.value:
			return 1
		}
		return 0
	})
	return pts
}

func (a *analysis) axis(md *strings.Builder, add plotAdder) {
	k, ok := a.axisKey()
	if !ok {
		return
	}
	pts := a.axisPoints(k)
	if len(pts) < 2 {
		return
	}
	key := a.plan.Keys[k]
	rbms := len(pts[0].ratios)
	fmt.Fprintf(md, "\n## Pipelined against greedy, by `%s`\n\n", key)
	md.WriteString("Per value, the means over its finished pairs (each pipelined run and the greedy run it is compared with): " +
		"pre-training seconds and their ratio (the speed-up), and each RBM's `final_recon_error` pipelined / greedy (1.05 or less: within 5% of greedy's).\n\n")
	fmt.Fprintf(md, "| `%s` | pairs | pipelined s | greedy s | speed-up |", key)
	for r := 1; r <= rbms; r++ {
		fmt.Fprintf(md, " RBM_%d / greedy |", r)
	}
	md.WriteString(" test accuracy pipelined − greedy (points) |\n|---:|---:|---:|---:|---:|" + strings.Repeat("---:|", rbms) + "---:|\n")
	for _, q := range pts {
		fmt.Fprintf(md, "| %s | %d | %.1f | %.1f | %.2f |", q.x, q.pairs, q.pipelined, q.greedy, q.greedy/q.pipelined)
		for _, r := range q.ratios {
			fmt.Fprintf(md, " %.3f |", r)
		}
		if len(q.accP) > 0 {
			d := 0.0
			for i := range q.accP {
				d += q.accP[i] - q.accG[i]
			}
			fmt.Fprintf(md, " %+.2f |\n", 100*d/float64(len(q.accP)))
		} else {
			md.WriteString(" |\n")
		}
	}
	png, err := axisPlot(key, pts)
	add(plotAxis, "pre-training time and reconstruction error ratio against "+key, png, err)
}

// axisPlot draws the seconds (pipelined, and greedy dashed) and the error
// ratios per RBM against the key, on a log axis where its values span two
// decades or more.
func axisPlot(key string, pts []axisPoint) ([]byte, error) {
	secs := newPlot("Pre-training time", key, "seconds", true)
	ratio := newPlot("Final recon. error, pipelined / greedy", key, "ratio", true)
	var xs, ps, gs []float64
	for _, q := range pts {
		xs, ps, gs = append(xs, q.value), append(ps, q.pipelined), append(gs, q.greedy)
	}
	if err := addSeries(secs, []series{{name: "pipelined", xs: xs, ys: ps}, {name: "greedy", xs: xs, ys: gs, dashed: true}}); err != nil {
		return nil, err
	}
	ss := []series{{name: "1.05", xs: []float64{xs[0], xs[len(xs)-1]}, ys: []float64{1.05, 1.05}, dashed: true}}
	for r := range pts[0].ratios {
		s := series{name: fmt.Sprintf("RBM_%d", r+1), style: r}
		for _, q := range pts {
			s.xs, s.ys = append(s.xs, q.value), append(s.ys, q.ratios[r])
		}
		ss = append(ss, s)
	}
	if err := addSeries(ratio, ss); err != nil {
		return nil, err
	}
	for _, p := range []*plot.Plot{secs, ratio} {
		if xs[0] > 0 && xs[len(xs)-1] >= 100*xs[0] {
			p.X.Scale, p.X.Tick.Marker = plot.LogScale{}, logTicks125{}
		}
		p.Legend.Top = true
	}
	secs.Y.Min = 0
	secs.Y.Max *= 1.3
	span := ratio.Y.Max - ratio.Y.Min
	ratio.Y.Min, ratio.Y.Max = ratio.Y.Min-0.1*span, ratio.Y.Max+0.5*span // room for the legend
	return renderGrid([][]*plot.Plot{{secs, ratio}}, 11*vg.Centimeter, 8*vg.Centimeter)
}
