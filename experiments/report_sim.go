package experiments

import (
	"fmt"
	"math"
	"strings"

	"gonum.org/v1/plot/vg"
)

// Networks and machines the report predicts for.
var (
	// loopback is this box: NATS through the loopback interface.
	loopback = SimNetwork{Name: "loopback", Latency: 100e-6}
	// simNetworks are the networks of the predictions.
	simNetworks = []SimNetwork{
		{Name: "1 Gb/s", Bandwidth: 1e9 / 8, Latency: 100e-6},
		{Name: "10 Gb/s", Bandwidth: 10e9 / 8, Latency: 50e-6},
	}
)

// simPrediction is the job the report predicts for: the paper's Table 1 on
// the whole Fashion-MNIST training set.
const (
	simEpochs = 20
	simTrain  = 60000
	simBatch  = 256
	simUnits  = 1024
)

const plotSim = "simulated_efficiency.png"

// simValidation is the simulator against one measured depth.
type simValidation struct {
	row                       speedRow
	job                       SimJob // calibrated on the other depths
	fit                       SimJob // calibrated on this depth
	predL, predOne            float64
	errL, errOne, measuredOne float64
}

// validate predicts the pipelined runs of each depth from the *other*
// depths' runs (leave one depth out): the machine's compute rate (from
// their greedy runs), the overhead and the cost per byte of messages (from
// their pipelined runs) are medians over the other depths; the depth's own
// greedy run gives only the shape of the job (windows, sizes).
func (a *analysis) validate() []simValidation {
	var vs []simValidation
	for _, r := range a.speedRows() {
		g := a.ok[r.gCell][0]
		job := SimJobFromGreedy(g.Config, g.Result)
		vs = append(vs, simValidation{row: r, job: job, fit: job.Calibrate(r.pipelinedL, r.one), measuredOne: r.one})
	}
	for i := range vs {
		var over, cost, rate []float64
		for k, o := range vs {
			if k != i && o.row.other == vs[i].row.other {
				over, cost, rate = append(over, o.fit.Overhead), append(cost, o.fit.ByteCost), append(rate, o.fit.Rate())
			}
		}
		v := &vs[i]
		if len(over) > 0 {
			v.job = v.job.WithRate(median(rate))
			v.job.Overhead, v.job.ByteCost = median(over), median(cost)
		}
		v.predL = v.job.Pipelined(loopback).Seconds
		v.predOne = v.job.OneMachine()
		v.errL = v.predL/v.row.pipelinedL - 1
		v.errOne = v.predOne/v.measuredOne - 1
	}
	return vs
}

func (a *analysis) simulate(md *strings.Builder, add plotAdder) {
	vs := a.validate()
	if len(vs) == 0 {
		return
	}
	md.WriteString("\n## Cluster simulator\n\n")
	md.WriteString("The simulator (`experiments/sim.go`) replays the pipelined schedule window by window: RBM_i trains window w " +
		"once it has finished window w-1, sent that window's middle result (after a credit: the next RBM must have released " +
		"window w-credits) and received window w; a message takes bytes / bandwidth on its link plus the latency, and each " +
		"machine spends a cost per byte on the messages it receives and sends. Three constants of the emulated machine are " +
		"measured: its compute rate at CD-1 (training seconds per window per visible x hidden unit, from the greedy runs), the " +
		"fixed overhead of a pipelined run (starting and joining the slaves, collecting weights) and the cost per message byte " +
		"(both fitted to the pipelined runs on L machines and on 1 machine). Each depth is predicted with the medians of the " +
		"*other* depths' constants (leave one depth out), so no depth is predicted from itself. Network: this box's loopback " +
		"(latency 100 µs, bandwidth unlimited).\n\n")
	md.WriteString("| L | pipelined, L machines: measured (s) | predicted (s) | error | pipelined, 1 machine: measured (s) | predicted (s) | error | overhead (s) | µs per MB of messages |\n")
	md.WriteString("|---|---:|---:|---:|---:|---:|---:|---:|---:|\n")
	worst := 0.0
	pct := func(e float64) string {
		if math.IsNaN(e) {
			return "–"
		}
		return fmt.Sprintf("%+.1f %%", 100*e)
	}
	for _, v := range vs {
		label := v.row.col.label
		if v.row.other != "" {
			label += " · " + v.row.other
		}
		one := "–"
		if !math.IsNaN(v.measuredOne) {
			one = secondsText(v.measuredOne)
			worst = math.Max(worst, math.Abs(v.errOne))
		}
		worst = math.Max(worst, math.Abs(v.errL))
		fmt.Fprintf(md, "| %s | %s | %s | %s | %s | %s | %s | %s | %.0f |\n", label, secondsText(v.row.pipelinedL), secondsText(v.predL), pct(v.errL),
			one, secondsText(v.predOne), pct(v.errOne), secondsText(v.job.Overhead), v.job.ByteCost*1e12)
	}
	fmt.Fprintf(md, "\nLargest error: %.1f %%.", 100*worst)
	if len(vs) < 2 {
		md.WriteString(" (One depth only: no other depth to calibrate on, so the overhead and the message cost are 0.)")
	}
	md.WriteString("\n")

	// Predictions: the deepest measured job, resized to the paper's layers.
	base := vs[len(vs)-1]
	for _, v := range vs {
		if len(v.job.Stages) > len(base.job.Stages) {
			base = v
		}
	}
	var over, cost, rate []float64
	for _, v := range vs {
		over, cost, rate = append(over, v.fit.Overhead), append(cost, v.fit.ByteCost), append(rate, v.fit.Rate())
	}
	overhead, byteCost := median(over), median(cost)
	gc := base.row.gCell
	cfg := a.ok[gc][0].Config
	k := cfg.Pretrain.KBatches
	windows := simEpochs * (((simTrain+simBatch-1)/simBatch + k - 1) / k)
	rows := k * simBatch
	machine := cfg.Cluster.CPUsPerWorker
	type speed struct {
		name   string
		factor float64
	}
	speeds := []speed{{fmt.Sprintf("the emulated machine (%g CPU)", machine), 1}}
	if machine > 0 && machine < 1 {
		speeds = append(speeds, speed{"one core of this box", 1 / machine})
	}
	speeds = append(speeds, speed{"a machine 100x the emulated one (GPU-class)", 100})
	fmt.Fprintf(md, "\nPredictions for the paper's setting: %d-unit hidden layers (RBM_1 %dx%d, the others %dx%d), %d epochs of the %d "+
		"Fashion-MNIST training images in mini-batches of %d, K = %d, credits %d, overhead %s s; compute scaled from the "+
		"measured RBMs by visible x hidden, message costs by machine speed. Efficiency = greedy time on 1 machine / (L x pipelined time on L machines).\n",
		simUnits, a.ok[gc][0].Result.Layers[0], simUnits, simUnits, simUnits, simEpochs, simTrain, simBatch, k, base.job.Credits, secondsText(overhead))
	depths := []int{4, 5, 6, 7, 8, 10, 12, 14, 16}
	var ss []series
	for si, sp := range speeds {
		fmt.Fprintf(md, "\nOn %s:\n\n| L | greedy, 1 machine (s) |", sp.name)
		for _, n := range simNetworks {
			fmt.Fprintf(md, " pipelined, %s (s) | efficiency |", n.Name)
		}
		md.WriteString("\n|---|---:|")
		for range simNetworks {
			md.WriteString("---:|---:|")
		}
		md.WriteString("\n")
		effs := make([]series, len(simNetworks))
		for ni, n := range simNetworks {
			effs[ni] = series{name: fmt.Sprintf("%s, %s", shortSpeed(sp.factor, machine), n.Name), style: si*len(simNetworks) + ni}
		}
		for _, l := range depths {
			layers := []int{a.ok[gc][0].Result.Layers[0]}
			for range l {
				layers = append(layers, simUnits)
			}
			job := base.job.WithRate(median(rate)).Resize(layers)
			job.Windows = windows
			job.setWindowRows(rows)
			for i := range job.Stages {
				// Transforms pass the whole training set up: scale them to it.
				job.Stages[i].Transform *= float64(simTrain) / float64(a.ok[gc][0].Result.Data.Train)
			}
			job.ByteCost = byteCost
			job = job.Scale(sp.factor)
			job.Overhead = overhead
			g := job.Greedy()
			fmt.Fprintf(md, "| %d | %s |", l, secondsText(g))
			for ni, n := range simNetworks {
				p := job.Pipelined(n).Seconds
				e := g / (float64(l) * p)
				fmt.Fprintf(md, " %s | %.2f |", secondsText(p), e)
				effs[ni].xs = append(effs[ni].xs, float64(l))
				effs[ni].ys = append(effs[ni].ys, e)
			}
			md.WriteString("\n")
		}
		ss = append(ss, effs...)
	}
	p := newPlot("Predicted parallel efficiency (1024-unit layers)", "hidden layers L = slaves", "efficiency", false)
	p.X.Tick.Marker = integerTicks{}
	err := addSeries(p, ss)
	var png []byte
	if err == nil {
		p.Legend.Top, p.Legend.Left = false, true
		p.Y.Min, p.Y.Max = 0, 1.05
		padX(p)
		png, err = renderPNG(p, 16*vg.Centimeter, 10*vg.Centimeter)
	}
	add(plotSim, "predicted parallel efficiency vs hidden layers", png, err)
}

func shortSpeed(f, machine float64) string {
	switch {
	case f == 1:
		return fmt.Sprintf("%g CPU", machine)
	case f == 100:
		return "100x"
	}
	return "1 core"
}
