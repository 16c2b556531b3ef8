package experiments

import (
	"math"

	"github.com/pipedbn/pipedbn/config"
	"github.com/pipedbn/pipedbn/dbn"
	"github.com/pipedbn/pipedbn/pipeline"
)

// The cluster simulator predicts pre-training times where one box cannot
// go: more machines than it has CPUs for, other machine speeds, real
// networks. It replays the pipelined schedule window by window (the paper's
// Fig. 5) from per-window compute times and message sizes measured on this
// box: RBM_i starts window w when it has finished window w-1, sent that
// window's middle result (after a credit: its consumer must have finished
// window w-credits) and received window w; a message occupies its link for
// bytes/bandwidth and arrives a latency later.

// SimStage is RBM_i in the simulator.
type SimStage struct {
	// Visible and Hidden are the RBM's sizes.
	Visible, Hidden int
	// Compute is the seconds one window of K mini-batches takes to train
	// on one machine.
	Compute float64
	// Transform is the seconds greedy pre-training takes to pass the whole
	// training set up through the trained RBM (not done for the top RBM).
	Transform float64
	// OutBytes is the size of one window's middle result and B_i; 0 for
	// the top RBM.
	OutBytes float64
}

// SimNetwork is the network between machines: every link has this
// bandwidth and latency, in both directions at once.
type SimNetwork struct {
	// Name labels the network in reports ("1 Gb/s").
	Name string
	// Bandwidth in bytes per second; 0 means unlimited.
	Bandwidth float64
	// Latency of one message in seconds.
	Latency float64
}

// SimJob is a pre-training to simulate.
type SimJob struct {
	Stages []SimStage
	// Windows each RBM trains, over all epochs.
	Windows int
	// Settle is the windows of the pipelined settle phase after them
	// (pipeline.Settle): RBM_i+1 trains the first i·F of them, F =
	// Settle/(L-1), and forwards the rest, frozen, as greedy's transform
	// does (Transform over the EpochWindows windows of an epoch).
	Settle int
	// EpochWindows is the windows of one epoch.
	EpochWindows int
	// InBytes is the size of one data window the master streams to RBM_1.
	InBytes float64
	// Credits bounds the windows in flight on each link (cluster.credits).
	Credits int
	// Overhead is the fixed seconds of a pipelined run beyond its pipeline:
	// starting and joining the slaves, collecting the weights.
	Overhead float64
	// ByteCost is the seconds a machine spends per byte of a window it
	// receives or sends (decoding, checksums, copies, the NATS protocol),
	// on top of training; a pipelined schedule pays it, greedy does not.
	ByteCost float64
}

// inBytes is the size of the windows RBM_i receives.
func (j SimJob) inBytes(i int) float64 {
	if i == 0 {
		return j.InBytes
	}
	return j.Stages[i-1].OutBytes
}

// windowCost is the seconds RBM_i's machine takes for window v in the
// pipelined schedule: training it, or in the settle phase past its part
// forwarding it, plus handling its messages.
func (j SimJob) windowCost(i, v int) float64 {
	return j.compute(i, v) + j.ByteCost*(j.inBytes(i)+j.Stages[i].OutBytes)
}

// compute is the seconds RBM_i spends on window v: Compute for a window it
// trains, its share of the transform for one it forwards, frozen.
func (j SimJob) compute(i, v int) float64 {
	s := j.Stages[i]
	if l := len(j.Stages); l < 2 || v < j.Windows+i*(j.Settle/(l-1)) || j.EpochWindows < 1 {
		return s.Compute
	}
	return s.Transform / float64(j.EpochWindows)
}

// SimResult is a simulated pipelined pre-training.
type SimResult struct {
	// Seconds of pre-training, Overhead included.
	Seconds float64
	// Busy is each RBM's seconds training; Wait the rest of the pipeline's
	// time (from the first data window to the end of the last RBM).
	Busy, Wait []float64
}

// Scale returns the job on machines speed times as fast.
func (j SimJob) Scale(speed float64) SimJob {
	out := j
	out.ByteCost /= speed
	out.Stages = append([]SimStage(nil), j.Stages...)
	for i := range out.Stages {
		out.Stages[i].Compute /= speed
		out.Stages[i].Transform /= speed
	}
	return out
}

// Greedy predicts greedy pre-training on one machine: every RBM's windows
// one after the other, and the transforms between them.
func (j SimJob) Greedy() float64 {
	t := 0.0
	for i, s := range j.Stages {
		t += s.Compute * float64(j.Windows)
		if i < len(j.Stages)-1 {
			t += s.Transform
		}
	}
	return t
}

// OneMachine predicts pipelined pre-training with every RBM on one machine:
// it is never idle once the pipeline runs, so the time is the work plus the
// overhead.
func (j SimJob) OneMachine() float64 {
	t := j.Overhead
	for i := range j.Stages {
		for v := range j.Windows + j.Settle {
			t += j.windowCost(i, v)
		}
	}
	return t
}

// Pipelined predicts pipelined pre-training with one machine per RBM.
func (j SimJob) Pipelined(net SimNetwork) SimResult {
	l, w := len(j.Stages), j.Windows+j.Settle
	credits := max(1, j.Credits)
	transfer := func(bytes float64) float64 {
		if net.Bandwidth <= 0 {
			return 0
		}
		return bytes / net.Bandwidth
	}
	// finish[i][v]: when RBM_i finished training window v; done[i][v]:
	// when it had also sent the window's middle result and so released the
	// window's buffer (a credit) and may start the next.
	finish, done := make([][]float64, l), make([][]float64, l)
	for i := range finish {
		finish[i], done[i] = make([]float64, w), make([]float64, w)
	}
	free := make([]float64, l)
	linkFree := make([]float64, l) // link i feeds RBM_i (link 0: from the master)
	feedFree := 0.0                // when the master may send its next window
	res := SimResult{Busy: make([]float64, l), Wait: make([]float64, l)}
	for v := 0; v < w; v++ {
		// The master sends data window v once RBM_1 has finished window
		// v-credits (the credit comes back a latency later).
		send := feedFree
		if v >= credits {
			send = math.Max(send, done[0][v-credits]+net.Latency)
		}
		start := math.Max(send, linkFree[0])
		linkFree[0] = start + transfer(j.InBytes)
		arrive := linkFree[0] + net.Latency
		feedFree = send
		for i, s := range j.Stages {
			begin := math.Max(free[i], arrive)
			finish[i][v] = begin + j.windowCost(i, v)
			res.Busy[i] += j.compute(i, v)
			free[i], done[i][v] = finish[i][v], finish[i][v]
			if i == l-1 {
				break
			}
			// Send the middle result once RBM_{i+1} has a free credit.
			out := finish[i][v]
			if v >= credits {
				out = math.Max(out, done[i+1][v-credits]+net.Latency)
			}
			free[i], done[i][v] = out, out
			start := math.Max(out, linkFree[i+1])
			linkFree[i+1] = start + transfer(s.OutBytes)
			arrive = linkFree[i+1] + net.Latency
		}
	}
	end := 0.0
	for i := range j.Stages {
		end = math.Max(end, finish[i][w-1])
	}
	res.Seconds = end + j.Overhead
	for i := range res.Wait {
		res.Wait[i] = end - res.Busy[i]
	}
	return res
}

// windowsOf returns the windows of an epoch of cfg on n examples, those
// each RBM trains in its epochs, and those of the pipelined settle phase
// after them.
func windowsOf(cfg *config.Config, n int) (epoch, epochs, settle int) {
	p := cfg.Pretrain
	stages := dbn.StageConfigs(cfg)
	dbn.PlanSettle(stages, cfg, n)
	epoch = pipeline.WindowsPerEpoch(n, p.BatchSize, p.KBatches)
	return epoch, p.Epochs * epoch, stages[0].Settle.Windows
}

// SimJobFromGreedy calibrates a job from a greedy run on one machine (its
// config and result): each RBM's compute per window is its training time
// over its windows, and the rest of the run, beyond training, is the
// transforms, shared out in proportion to the RBMs' sizes. Message sizes
// follow from the layer sizes (float32 middle results and biases).
func SimJobFromGreedy(cfg *config.Config, res *dbn.Result) SimJob {
	p := cfg.Pretrain
	epoch, trained, settle := windowsOf(cfg, res.Data.Train)
	j := SimJob{Windows: trained, Settle: settle, EpochWindows: epoch, Credits: cfg.Cluster.Credits}
	busy, size := 0.0, 0.0
	for i, b := range res.RBMs {
		busy += b.BusySeconds
		if i < len(res.RBMs)-1 {
			size += float64(b.Visible * b.Hidden)
		}
	}
	rest := math.Max(0, res.PretrainSeconds-busy)
	for i, b := range res.RBMs {
		s := SimStage{Visible: b.Visible, Hidden: b.Hidden, Compute: b.BusySeconds / float64(j.Windows)}
		if i < len(res.RBMs)-1 && size > 0 {
			s.Transform = rest * float64(b.Visible*b.Hidden) / size
		}
		j.Stages = append(j.Stages, s)
	}
	j.setWindowRows(pipeline.WindowRows(p.KBatches, p.BatchSize, res.Data.Train))
	return j
}

// setWindowRows sizes j's messages for windows of rows rows
// (pipeline.WindowBytes): the data windows of RBM_1's width the master
// streams, and each stage's middle results and B_i but the top's.
func (j *SimJob) setWindowRows(rows int) {
	if len(j.Stages) == 0 {
		return
	}
	j.InBytes = float64(pipeline.WindowBytes(rows, j.Stages[0].Visible, false))
	for i := range j.Stages {
		j.Stages[i].OutBytes = 0
		if i < len(j.Stages)-1 {
			j.Stages[i].OutBytes = float64(pipeline.WindowBytes(rows, j.Stages[i].Hidden, true))
		}
	}
}

// windowRows is the rows of j's windows, as setWindowRows sized them.
func (j SimJob) windowRows() int {
	return int(math.Round(j.InBytes / float64(pipeline.WindowBytes(1, j.Stages[0].Visible, false))))
}

// Resize returns a job for the DBN layers from a measured one: compute and
// transform times scale with each RBM's visible x hidden (the GEMMs of CD-1),
// taken from the measured RBM of the closest size; message sizes with the
// hidden layer.
func (j SimJob) Resize(layers []int) SimJob {
	out := j
	out.Stages = nil
	for i := 1; i < len(layers); i++ {
		v, h := layers[i-1], layers[i]
		ref := j.Stages[min(i-1, len(j.Stages)-1)]
		if i > 1 && len(j.Stages) > 1 {
			// Upper RBMs scale from the measured upper RBMs' mean.
			ref = meanStage(j.Stages[1:])
		}
		f := float64(v*h) / float64(ref.Visible*ref.Hidden)
		s := SimStage{Visible: v, Hidden: h, Compute: ref.Compute * f}
		if i < len(layers)-1 {
			s.Transform = meanTransform(j.Stages) * float64(v*h)
		}
		out.Stages = append(out.Stages, s)
	}
	out.setWindowRows(j.windowRows())
	return out
}

// meanStage averages the compute time per visible x hidden unit of stages,
// as a stage of their mean size.
func meanStage(ss []SimStage) SimStage {
	var c, vh float64
	for _, s := range ss {
		c += s.Compute
		vh += float64(s.Visible * s.Hidden)
	}
	n := float64(len(ss))
	side := int(math.Round(math.Sqrt(vh / n)))
	return SimStage{Visible: side, Hidden: side, Compute: c / n * float64(side*side) / (vh / n)}
}

// meanTransform is the transform seconds per visible x hidden unit.
func meanTransform(ss []SimStage) float64 {
	var t, vh float64
	for _, s := range ss[:len(ss)-1] {
		t += s.Transform
		vh += float64(s.Visible * s.Hidden)
	}
	if vh == 0 {
		return 0
	}
	return t / vh
}

// Calibrate fits the job's Overhead and ByteCost to a measured pipelined run
// on L machines (tL seconds) and, if t1 is not NaN, one on one machine (t1
// seconds) of the same DBN: the first is mostly pipeline plus overhead, the
// second work plus message handling plus overhead.
func (j SimJob) Calibrate(tL, t1 float64) SimJob {
	j.Overhead, j.ByteCost = 0, 0
	work, bytes := 0.0, 0.0
	for i, s := range j.Stages {
		for v := range j.Windows + j.Settle {
			work += j.compute(i, v)
		}
		bytes += (j.inBytes(i) + s.OutBytes) * float64(j.Windows+j.Settle)
	}
	for range 20 {
		noOverhead := j
		noOverhead.Overhead = 0
		j.Overhead = math.Max(0, tL-noOverhead.Pipelined(SimNetwork{}).Seconds)
		if math.IsNaN(t1) || bytes == 0 {
			break
		}
		j.ByteCost = math.Max(0, (t1-j.Overhead-work)/bytes)
	}
	return j
}

// Rate is the job's compute seconds per window per visible x hidden unit,
// over all its RBMs: the machine's speed at CD-1.
func (j SimJob) Rate() float64 {
	var c, vh float64
	for _, s := range j.Stages {
		c += s.Compute
		vh += float64(s.Visible * s.Hidden)
	}
	return c / vh
}

// WithRate returns the job with every RBM's compute per window set from
// rate (see Rate) and its size.
func (j SimJob) WithRate(rate float64) SimJob {
	out := j
	out.Stages = append([]SimStage(nil), j.Stages...)
	for i := range out.Stages {
		out.Stages[i].Compute = rate * float64(out.Stages[i].Visible*out.Stages[i].Hidden)
	}
	return out
}
