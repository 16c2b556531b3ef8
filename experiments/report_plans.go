package experiments

import (
	"cmp"
	"fmt"
	"math"
	"slices"
	"strings"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/vg"

	"github.com/pipedbn/pipedbn/dbn"
)

const plotPlans = "plans.png"

// plans writes, for every finished pipelined run that followed a plan of
// the planner (its local slaves laid out by cluster.plan), the plan beside
// what was measured: its seconds, its speed-up over the greedy run it is
// paired with, and its efficiency. The measured efficiency over the
// plan's is the measured speed-up over the predicted one, for both count
// the same machines.
func (a *analysis) plans(md *strings.Builder, add plotAdder) {
	var rows []string
	var points []planPoint
	for i := range a.rows {
		r := &a.rows[i]
		if r.Status != RunDone || r.Result == nil || r.Result.Plan == nil {
			continue
		}
		p := r.Result.Plan
		speedUp, efficiency, ofPlan := "–", "–", "–"
		if g := a.greedyPartner(r); g != nil && g.Status == RunDone && g.Result != nil && r.Result.PretrainSeconds > 0 {
			s := g.Result.PretrainSeconds / r.Result.PretrainSeconds
			speedUp = fmt.Sprintf("%.2f", s)
			if p.PredictedSpeedUp > 0 {
				efficiency = fmt.Sprintf("%.2f", s*p.PredictedEfficiency/p.PredictedSpeedUp)
				ofPlan = fmt.Sprintf("%.2f", s/p.PredictedSpeedUp)
				points = append(points, planPoint{strategy: p.Strategy, machines: math.Round(1e6*p.PredictedSpeedUp/p.PredictedEfficiency) / 1e6,
					predicted: p.PredictedSpeedUp, measured: s})
			}
		}
		measuredOverPredicted := "–"
		if p.PredictedSeconds > 0 {
			measuredOverPredicted = fmt.Sprintf("%.2f", r.Result.PretrainSeconds/p.PredictedSeconds)
		}
		// result.json files older than the plan's speed-up have none.
		predictedSpeedUp, predictedEfficiency := "–", "–"
		if p.PredictedSpeedUp > 0 {
			predictedSpeedUp, predictedEfficiency = fmt.Sprintf("%.2f", p.PredictedSpeedUp), fmt.Sprintf("%.2f", p.PredictedEfficiency)
		}
		rows = append(rows, fmt.Sprintf("| %s | %s | %.1f | %.1f | %s | %s | %s | %s | %s | %s |\n",
			r.Name, planText(p), p.PredictedSeconds, r.Result.PretrainSeconds, measuredOverPredicted,
			predictedSpeedUp, speedUp, predictedEfficiency, efficiency, ofPlan))
	}
	if len(rows) == 0 {
		return
	}
	md.WriteString("\n## Plans: predicted and measured\n\n")
	md.WriteString("Each pipelined run's plan (`cluster.plan`: stage groups of RBMs, `xR` for R stage replicas, each process's CPUs " +
		"in brackets) and the planner's prediction beside the measurement. Speed-up: over the greedy run it is paired with " +
		"(predicted: over greedy on the plan's fastest machine). Efficiency: speed-up over the capacity of all the plan's " +
		"machines, idle ones too, in fastest machines. Of plan: measured efficiency over predicted, which is the measured " +
		"speed-up over the predicted one.\n\n")
	md.WriteString("| run | plan | predicted (s) | measured (s) | measured / predicted | speed-up predicted | speed-up measured | " +
		"efficiency predicted | efficiency measured | of plan |\n|---|---|---:|---:|---:|---:|---:|---:|---:|---:|\n")
	for _, row := range rows {
		md.WriteString(row)
	}
	if machines := distinct(points); len(machines) > 1 {
		png, err := plansPlot(points)
		md.WriteString("\nIn `plans.png`: speed-up over greedy and efficiency against the plan's machines (in fastest " +
			"machines), as the planner predicted them and as measured (the mean of the repeats), per strategy; the dashed line is the ideal.\n")
		add(plotPlans, "speed-up and efficiency of the plans, predicted and measured, against their machines", png, err)
	}
}

// planPoint is one pipelined run's plan: its strategy, the capacity of its
// machines, and its speed-up, predicted and measured.
type planPoint struct {
	strategy                      string
	machines, predicted, measured float64
}

// distinct returns the machine counts of points, sorted, each once.
func distinct(points []planPoint) []float64 {
	var ms []float64
	for _, p := range points {
		ms = append(ms, p.machines)
	}
	slices.Sort(ms)
	return slices.Compact(ms)
}

// plansPlot draws two panels: speed-up and efficiency against machines,
// one predicted and one measured line per strategy (the mean of the runs
// of a strategy on as many machines), and the ideal.
func plansPlot(points []planPoint) ([]byte, error) {
	slices.SortStableFunc(points, func(a, b planPoint) int {
		return cmp.Or(strings.Compare(a.strategy, b.strategy), cmp.Compare(a.machines, b.machines))
	})
	speed := newPlot("speed-up over greedy", "machines", "speed-up", true)
	eff := newPlot("efficiency", "machines", "speed-up / machines", true)
	ms := distinct(points)
	ideal := series{name: "ideal", xs: ms, ys: ms, dashed: true}
	var ss, es []series
	for k, group := range byStrategy(points) {
		pred := series{name: group[0].strategy + ", predicted", style: 2 * k}
		meas := series{name: group[0].strategy + ", measured", style: 2*k + 1}
		for j := 0; j < len(group); {
			m, n, sum := group[j].machines, 0, 0.0
			for ; j < len(group) && group[j].machines == m; j++ {
				sum += group[j].measured
				n++
			}
			pred.xs, pred.ys = append(pred.xs, m), append(pred.ys, group[j-1].predicted)
			meas.xs, meas.ys = append(meas.xs, m), append(meas.ys, sum/float64(n))
		}
		ss = append(ss, pred, meas)
		es = append(es, perMachine(pred), perMachine(meas))
	}
	if err := addSeries(speed, append(ss, ideal)); err != nil {
		return nil, err
	}
	one := series{name: "ideal", xs: ms, ys: slices.Repeat([]float64{1}, len(ms)), dashed: true}
	if err := addSeries(eff, append(es, one)); err != nil {
		return nil, err
	}
	for _, p := range []*plot.Plot{speed, eff} {
		p.X.Tick.Marker = integerTicks{}
		p.Legend.Left = true
		padX(p)
	}
	speed.Legend.Top = true // efficiency falls from the top left
	eff.Y.Min, eff.Y.Max = 0, 1.05
	return renderGrid([][]*plot.Plot{{speed, eff}}, 10*vg.Centimeter, 8*vg.Centimeter)
}

// byStrategy splits points, sorted by strategy, into the runs of one
// strategy each.
func byStrategy(points []planPoint) [][]planPoint {
	var groups [][]planPoint
	for i, p := range points {
		if i == 0 || p.strategy != points[i-1].strategy {
			groups = append(groups, nil)
		}
		groups[len(groups)-1] = append(groups[len(groups)-1], p)
	}
	return groups
}

// perMachine is s divided by its machines: speed-up turned efficiency.
func perMachine(s series) series {
	out := s
	out.ys = make([]float64, len(s.ys))
	for i := range s.ys {
		out.ys[i] = s.ys[i] / s.xs[i]
	}
	return out
}

// planText renders a plan's groups as "1 [0.45] · 2 [0.225] · 3x2 [0.45, 0.45]".
func planText(p *dbn.PlanResult) string {
	var parts []string
	for _, g := range p.Groups {
		text := fmt.Sprint(g.RBMs[0])
		if n := len(g.RBMs); n > 1 {
			text += fmt.Sprintf("-%d", g.RBMs[n-1])
		}
		if g.Replicas > 1 {
			text += fmt.Sprintf("x%d", g.Replicas)
		}
		var cpus []string
		for _, c := range g.CPUs {
			if c > 0 {
				cpus = append(cpus, fmt.Sprintf("%g", c))
			}
		}
		if len(cpus) > 0 {
			text += " [" + strings.Join(cpus, ", ") + "]"
		}
		parts = append(parts, text)
	}
	return strings.Join(parts, " · ")
}
