package experiments

import (
	"fmt"
	"strings"

	"github.com/pipedbn/pipedbn/dbn"
)

// plans writes, for every finished pipelined run that followed a plan of
// the planner (its local slaves laid out by cluster.plan), the plan beside
// what was measured: its seconds, its speed-up over the greedy run it is
// paired with, and its efficiency. The measured efficiency over the
// plan's is the measured speed-up over the predicted one, for both count
// the same machines.
func (a *analysis) plans(md *strings.Builder) {
	var rows []string
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
