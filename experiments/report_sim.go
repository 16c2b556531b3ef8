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

// simulate writes the cluster simulator's section: its predictions of the
// measured depths, each calibrated on the others, then its predictions for
// the paper's setting with a plot of the predicted efficiency.
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
	writeSimValidation(md, vs)
	ss := a.simPredictions(md, vs)
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

// writeSimValidation writes the rows of the simulator's table, measured
// against predicted for each depth, and the largest error.
func writeSimValidation(md *strings.Builder, vs []simValidation) {
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
}

// simPaper is the paper's setting, made from the deepest measured job:
// what each predicted job is built from.
type simPaper struct {
	base SimJob // the deepest measured job
	// rate, overhead and byteCost are the medians of the depths' fits.
	rate, overhead, byteCost float64
	visible                  int // the data's values per example
	windows, rows            int // per run, per window
	// transformScale is the whole training set over the measured runs'.
	transformScale float64
}

// job is the paper's setting with l hidden layers of simUnits units, on a
// machine factor times the emulated one.
func (sp simPaper) job(l int, factor float64) SimJob {
	layers := []int{sp.visible}
	for range l {
		layers = append(layers, simUnits)
	}
	job := sp.base.WithRate(sp.rate).Resize(layers)
	job.Windows = sp.windows
	job.setWindowRows(sp.rows)
	for i := range job.Stages {
		// Transforms pass the whole training set up: scale them to it.
		job.Stages[i].Transform *= sp.transformScale
	}
	job.ByteCost = sp.byteCost
	job = job.Scale(factor)
	job.Overhead = sp.overhead
	return job
}

// simSpeed is a machine of the predictions: factor times the emulated one.
type simSpeed struct {
	name   string
	factor float64
}

// simPredictions writes the predictions for the paper's setting, a table
// per machine speed, and returns their efficiencies as series, one per
// speed and network.
func (a *analysis) simPredictions(md *strings.Builder, vs []simValidation) []series {
	// The deepest measured job, resized to the paper's layers.
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
	run := a.ok[base.row.gCell][0]
	k := run.Config.Pretrain.KBatches
	sp := simPaper{base: base.job, rate: median(rate), overhead: median(over), byteCost: median(cost),
		visible: run.Result.Layers[0], windows: simEpochs * (((simTrain+simBatch-1)/simBatch + k - 1) / k), rows: k * simBatch,
		transformScale: float64(simTrain) / float64(run.Result.Data.Train)}
	machine := run.Config.Cluster.CPUsPerWorker
	speeds := []simSpeed{{fmt.Sprintf("the emulated machine (%g CPU)", machine), 1}}
	if machine > 0 && machine < 1 {
		speeds = append(speeds, simSpeed{"one core of this box", 1 / machine})
	}
	speeds = append(speeds, simSpeed{"a machine 100x the emulated one (GPU-class)", 100})
	fmt.Fprintf(md, "\nPredictions for the paper's setting: %d-unit hidden layers (RBM_1 %dx%d, the others %dx%d), %d epochs of the %d "+
		"Fashion-MNIST training images in mini-batches of %d, K = %d, credits %d, overhead %s s; compute scaled from the "+
		"measured RBMs by visible x hidden, message costs by machine speed. Efficiency = greedy time on 1 machine / (L x pipelined time on L machines).\n",
		simUnits, sp.visible, simUnits, simUnits, simUnits, simEpochs, simTrain, simBatch, k, base.job.Credits, secondsText(sp.overhead))
	var ss []series
	for si, speed := range speeds {
		ss = append(ss, sp.predictionTable(md, speed, si, machine)...)
	}
	return ss
}

// predictionTable writes the table of predictions on a machine of speed,
// the si-th of the report's speeds (machine: the emulated one's CPUs), and
// returns each network's efficiency by depth as a series.
func (sp simPaper) predictionTable(md *strings.Builder, speed simSpeed, si int, machine float64) []series {
	fmt.Fprintf(md, "\nOn %s:\n\n| L | greedy, 1 machine (s) |", speed.name)
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
		effs[ni] = series{name: fmt.Sprintf("%s, %s", shortSpeed(speed.factor, machine), n.Name), style: si*len(simNetworks) + ni}
	}
	for _, l := range []int{4, 5, 6, 7, 8, 10, 12, 14, 16} {
		job := sp.job(l, speed.factor)
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
	return effs
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
