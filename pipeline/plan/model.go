package plan

import (
	"errors"
	"fmt"
	"math"
	"time"

	"github.com/pipedbn/pipedbn/pipeline"
)

// UnitWork is the flop-equivalents of CD-1's element-wise work (sigmoids,
// sampling, the reconstruction error, the bias sums) per unit of the RBM and
// per sample. It is fitted to experiments/results/rbm_cd1_vs_gemm5: a full
// CD-1 step took 1.62 ms (784x500) and 2.11 ms (1024x1024) longer than its
// five GEMMs alone on a batch of 256, that is 4.9 and 4.0 ns per unit and
// sample, about 280 flops at the GEMMs' 62 GFLOP/s.
const UnitWork = 280

// Reference shape on which a slave measures its speed (see SpeedFromRate):
// RBM_1 of the quickstart DBN, in mini-batches of 256.
const (
	RefVisible = 784
	RefHidden  = 500
	RefBatch   = 256
)

// SampleWork returns the work of one sample of a CD-k step on a visible x
// hidden RBM, in flop-equivalents: the 3 + 2k GEMMs of rbm.Trainer.Step
// (v0·W, then k times hs·Wᵀ and vk·W, then the two gradient products
// v0ᵀ·h0 and vkᵀ·hk), each 2·visible·hidden flops per sample, plus
// UnitWork·k·(visible + hidden) for the element-wise work. For CD-1 that is
// 10·v·h + 280·(v + h): the quickstart DBN's RBMs cost 4.28, 2.78 and 10.70
// MFLOP per sample. What a step costs whatever its rows is StepRows'. It
// panics unless the sizes are positive and cdK >= 1.
func SampleWork(visible, hidden, cdK int) float64 {
	if visible < 1 || hidden < 1 || cdK < 1 {
		panic(fmt.Sprintf("plan: SampleWork(%d, %d, %d): want positive sizes and k", visible, hidden, cdK))
	}
	v, h, k := float64(visible), float64(hidden), float64(cdK)
	return 2*(3+2*k)*v*h + UnitWork*k*(v+h)
}

// StepRows is what a CD step costs beyond its samples' SampleWork, in
// samples: the weight update (visible·hidden values a step, not a sample)
// and the GEMMs' fixed costs. A stage replica, one of r, takes r steps a
// mini-batch of B rows (pipeline.StageConfig.Replicas), each sample then
// costing SampleWork·(1 + StepRows·r/B). Fitted on one thread to CD-1 on
// the quickstart DBN's shapes in mini-batches of 32, 64 and 128 against
// 256 (measured in experiments/results/README.md, "Stage replicas that take
// a step per sub-batch").
const StepRows = 8

// StepRowsFrom returns what a CD step costs beyond its samples, in
// samples, on the machine and RBM shape where a step of batch rows took
// full and one of small rows took sub (rbm.MeasureStepCost): the s of a
// step time c·(rows + s). It is 0 where the small step took less than
// its share of the full one, and at most MaxStepRows·batch where it took
// about as long (no measurable cost per sample).
func StepRowsFrom(full, sub time.Duration, batch, small int) float64 {
	limit := MaxStepRows * float64(batch)
	tf, ts, nf, ns := full.Seconds(), sub.Seconds(), float64(batch), float64(small)
	if !(tf > ts) || !(nf > ns) {
		return limit
	}
	return min(limit, max(0, (ts*nf-tf*ns)/(tf-ts)))
}

// MaxStepRows bounds StepRowsFrom, in mini-batches of the calibration.
const MaxStepRows = 4

// batchWork is the work of a sample of a CD-k step on a visible x hidden
// RBM taken in steps of rows rows.
func batchWork(visible, hidden, cdK int, rows float64) float64 {
	return SampleWork(visible, hidden, cdK) * (1 + StepRows/rows)
}

// SpeedFromRate returns a Machine's Speed from a calibration: a slave runs
// CD-k steps on one thread (blas.SetThreads(1)) for about a second on a
// visible x hidden RBM (RefVisible x RefHidden in mini-batches of RefBatch,
// or the shapes it is about to train) and measures samplesPerSecond. The
// result is in GFLOP/s as SampleWork and StepRows count work; it runs
// above the GEMM-only GFLOP/s that rbm's BenchmarkCD1 reports, which leaves
// the element-wise work and the weight updates out.
func SpeedFromRate(visible, hidden, cdK int, samplesPerSecond float64) float64 {
	return samplesPerSecond * batchWork(visible, hidden, cdK, RefBatch) / 1e9
}

// Job is the pre-training to plan: the DBN's shapes and the pipelined
// schedule's window.
type Job struct {
	// Layers are the DBN's layer sizes L_0 (the data) to L_n (dbn.layers):
	// RBM_i joins Layers[i-1] and Layers[i], i = 1..n.
	Layers []int
	// BatchSize is the rows of a mini-batch (pretrain.batch_size).
	BatchSize int
	// K is the mini-batches per window (pretrain.k_batches): RBM_i sends
	// its middle result and B_i every K mini-batches.
	K int
	// CDK is the number of Gibbs steps of CD-k; 0 means 1.
	CDK int
	// Windows is W, the windows each RBM trains over all epochs. It only
	// scales the predicted totals (pipeline fill included), not the choice.
	Windows int
	// SyncEvery is S, the windows each replica of a stage group trains
	// between two averagings of the group's parameters; 0 means 1.
	SyncEvery int
	// StepRows[i] is what a CD step of RBM_{i+1} costs beyond its samples,
	// in samples, measured on its shape (StepRowsFrom); where it is
	// missing or 0, the constant StepRows. Stage replicas take a step per
	// sub-batch, so this is what replicating the RBM costs, and it depends
	// on the shape and the machine (measured in docs/results.md, "Stage
	// replicas", and experiments/results/machines8/).
	StepRows []float64
	// Data is what the data windows travel as (pipeline.ExactPrecision of
	// the data), Middle what the middle results do
	// (pipeline.StageConfig.OutPrecision); the zero value, float32.
	Data, Middle pipeline.Precision
}

// Validate reports every problem of j at once, each as "key = value: reason".
func (j Job) Validate() error {
	var errs []error
	if len(j.Layers) < 2 {
		errs = append(errs, fmt.Errorf("layers = %v: want at least 2 sizes (one RBM)", j.Layers))
	}
	for i, n := range j.Layers {
		if n < 1 {
			errs = append(errs, fmt.Errorf("layers[%d] = %d: want a positive size", i, n))
		}
	}
	positive := func(key string, v int) {
		if v < 1 {
			errs = append(errs, fmt.Errorf("%s = %d: want at least 1", key, v))
		}
	}
	positive("batch_size", j.BatchSize)
	positive("k", j.K)
	positive("windows", j.Windows)
	if j.CDK < 0 {
		errs = append(errs, fmt.Errorf("cd_k = %d: want 0 (meaning 1) or more", j.CDK))
	}
	if j.SyncEvery < 0 {
		errs = append(errs, fmt.Errorf("sync_every = %d: want 0 (meaning 1) or more", j.SyncEvery))
	}
	if len(j.StepRows) > max(0, len(j.Layers)-1) {
		errs = append(errs, fmt.Errorf("step_rows = %v: want at most one per RBM (%d)", j.StepRows, max(0, len(j.Layers)-1)))
	}
	for i, s := range j.StepRows {
		if !(s >= 0) || math.IsInf(s, 0) {
			errs = append(errs, fmt.Errorf("step_rows[%d] = %g: want 0 (meaning %d) or more", i, s, StepRows))
		}
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("plan: job: %w", err)
	}
	return nil
}

// rbms is L, the number of RBMs.
func (j Job) rbms() int { return len(j.Layers) - 1 }

// rows is the samples of one window.
func (j Job) rows() float64 { return float64(j.BatchSize * j.K) }

func (j Job) cdK() int { return max(1, j.CDK) }

func (j Job) syncEvery() float64 { return float64(max(1, j.SyncEvery)) }

// stepRows is what a step of RBM_{i+1} (0-based i) costs beyond its
// samples, in samples.
func (j Job) stepRows(i int) float64 {
	if i < len(j.StepRows) && j.StepRows[i] > 0 {
		return j.StepRows[i]
	}
	return StepRows
}

// inBytes is the size on the wire of a window RBM_{i+1} (0-based i)
// receives (pipeline.WireBytes): a data window at j.Data for RBM_1, else
// RBM_i's middle result at j.Middle and B_i.
func (j Job) inBytes(i int) float64 {
	if i == 0 {
		return float64(pipeline.WireBytes(j.BatchSize*j.K, j.Layers[0], false, j.Data))
	}
	return float64(pipeline.WireBytes(j.BatchSize*j.K, j.Layers[i], true, j.Middle))
}

// outBytes is the size of the window RBM_{i+1} (0-based i) sends; 0 for the
// top RBM.
func (j Job) outBytes(i int) float64 {
	if i == j.rbms()-1 {
		return 0
	}
	return j.inBytes(i + 1)
}

// paramBytes is the float32 size of RBM_{i+1}'s W, A and B: what replicas
// average.
func (j Job) paramBytes(i int) float64 {
	v, h := float64(j.Layers[i]), float64(j.Layers[i+1])
	return 4 * (v*h + v + h)
}

// Machine is a slave as the planner sees it.
type Machine struct {
	// Name identifies the slave (its registered name); names are unique.
	Name string
	// CPUs is the CPUs the slave trains with; it may be fractional (an
	// emulated machine capped by cluster.cpus_per_worker). Must be positive.
	CPUs float64
	// Speed is the slave's CD work rate per CPU on one thread, in GFLOP/s
	// as SampleWork counts work (see SpeedFromRate). Must be positive.
	Speed float64
}

// Network is the network between slaves, with the meaning of
// experiments.SimNetwork: every link has this bandwidth and latency, in
// both directions at once.
type Network struct {
	// Bandwidth in bytes per second; 0 means unlimited.
	Bandwidth float64
	// Latency of one message in seconds.
	Latency float64
}

// Cluster is the machines to plan for and what moving bytes costs.
type Cluster struct {
	Machines []Machine
	Network  Network
	// ByteWork is the work a slave spends per byte of a message it sends
	// or receives (encoding, checksums, copies, the NATS protocol), in the
	// unit of SampleWork, on one thread: a machine of Speed s GFLOP/s with
	// c CPUs spends ByteWork/(s·1e9·min(c, 1)) seconds per byte, which is
	// experiments.SimJob.ByteCost on that machine. The table3 report's
	// 14-16 ms per MB on a 0.225-CPU machine of about 60 GFLOP/s is about
	// 200. 0 means bytes cost no CPU.
	ByteWork float64
	// ThreadLoss is the share of a CPU's speed lost for each CPU beyond the
	// first that trains one group (BLAS threads share caches and memory
	// bandwidth): c CPUs train at c/(1 + ThreadLoss·(c-1)) times one CPU's
	// speed. 0 means perfect scaling.
	ThreadLoss float64
	// QuotaLoss is the share of its speed a machine of less than one CPU
	// loses to its CPU quota (a cgroup stops it for the rest of every
	// period, and it resumes on a colder cache): c < 1 CPUs train, and
	// handle bytes, at c/(1 + QuotaLoss) times one CPU's speed. 0 means
	// none.
	QuotaLoss float64
}

// Validate reports every problem of c at once, each as "key = value: reason".
func (c Cluster) Validate() error {
	var errs []error
	if len(c.Machines) == 0 {
		errs = append(errs, errors.New("machines = []: want at least one machine"))
	}
	seen := make(map[string]int)
	for k, m := range c.Machines {
		switch prev, dup := seen[m.Name]; {
		case m.Name == "":
			errs = append(errs, fmt.Errorf("machines[%d].name = \"\": want a name", k))
		case dup:
			errs = append(errs, fmt.Errorf("machines[%d].name = %q: also machines[%d]'s", k, m.Name, prev))
		default:
			seen[m.Name] = k
		}
		if !(m.CPUs > 0) || math.IsInf(m.CPUs, 0) {
			errs = append(errs, fmt.Errorf("machines[%d].cpus = %g: want a positive number", k, m.CPUs))
		}
		if !(m.Speed > 0) || math.IsInf(m.Speed, 0) {
			errs = append(errs, fmt.Errorf("machines[%d].speed = %g: want a positive GFLOP/s", k, m.Speed))
		}
	}
	nonNegative := func(key string, v float64) {
		if !(v >= 0) || math.IsInf(v, 0) {
			errs = append(errs, fmt.Errorf("%s = %g: want 0 or more", key, v))
		}
	}
	nonNegative("network.bandwidth", c.Network.Bandwidth)
	nonNegative("network.latency", c.Network.Latency)
	nonNegative("byte_work", c.ByteWork)
	nonNegative("thread_loss", c.ThreadLoss)
	nonNegative("quota_loss", c.QuotaLoss)
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("plan: cluster: %w", err)
	}
	return nil
}

// Cost is a stage group's predicted seconds per window of the pipeline: the
// time between two windows leaving the group, each component already
// divided among its r replicas, which train every r-th window.
type Cost struct {
	// Compute is training the group's RBMs on one window, on its slowest
	// replica, over r.
	Compute float64
	// Messages is handling the window's bytes: receiving its input, sending
	// its middle result and B_i (ByteWork), over r.
	Messages float64
	// Sync is averaging the group's parameters among its replicas (through
	// the master, see doc.go) once every S windows of a replica, over S·r.
	Sync float64
	// Link is the busier direction of a replica's link carrying its windows:
	// bytes/bandwidth over r. It overlaps with the rest.
	Link float64
	// Window is max(Compute + Messages + Sync, Link): the group's seconds
	// per window.
	Window float64
	// Transit is the seconds one window spends reaching and crossing the
	// group (latency, transfer, its slowest replica's compute and
	// messages): the group's share of the pipeline's fill.
	Transit float64
}

// model holds what the search evaluates again and again: prefix sums of the
// job and the machines' rates.
type model struct {
	job Job
	cl  Cluster
	// maxReplicas caps a group's replicas (Options.MaxReplicas); 0: none.
	// topOnly allows replicas to the top RBM alone.
	maxReplicas int
	topOnly     bool
	// work[i]: flop-equivalents of the samples of one window of RBMs
	// 0..i-1, steps aside; steps[i]: of a step of each of them (stepRows
	// samples); params[i]: their parameter bytes.
	work, steps, params []float64
	// capacity[k]: machine k's training rate in flop-equivalents per
	// second; handle[k]: its bytes handling rate in ByteWork per second.
	capacity, handle []float64
}

// newModel validates job and cl and precomputes their model.
func newModel(job Job, cl Cluster) (*model, error) {
	if err := errors.Join(job.Validate(), cl.Validate()); err != nil {
		return nil, err
	}
	m := &model{job: job, cl: cl}
	l := job.rbms()
	m.work, m.steps, m.params = make([]float64, l+1), make([]float64, l+1), make([]float64, l+1)
	for i := range l {
		w := SampleWork(job.Layers[i], job.Layers[i+1], job.cdK())
		m.work[i+1] = m.work[i] + job.rows()*w
		m.steps[i+1] = m.steps[i] + job.stepRows(i)*w
		m.params[i+1] = m.params[i] + job.paramBytes(i)
	}
	for _, mc := range cl.Machines {
		eff, quota := 1.0, 1.0
		switch {
		case mc.CPUs > 1:
			eff = 1 / (1 + cl.ThreadLoss*(mc.CPUs-1))
		case mc.CPUs < 1:
			eff = 1 / (1 + cl.QuotaLoss)
			quota = eff
		}
		m.capacity = append(m.capacity, mc.Speed*1e9*mc.CPUs*eff)
		m.handle = append(m.handle, mc.Speed*1e9*min(mc.CPUs, 1)*quota)
	}
	return m, nil
}

// transfer is the seconds bytes occupy a link.
func (m *model) transfer(bytes float64) float64 {
	if m.cl.Network.Bandwidth <= 0 {
		return 0
	}
	return bytes / m.cl.Network.Bandwidth
}

// cost predicts the group of RBMs i..j-1 (0-based) replicated on machines
// ms (indices into the cluster).
func (m *model) cost(i, j int, ms []int) Cost {
	r := float64(len(ms))
	work := m.groupWork(i, j, len(ms))
	in, out := m.job.inBytes(i), m.job.outBytes(j-1)
	// Averages through the master: each replica sends its parameters and
	// receives their mean, one message each way, and the master's link
	// carries the r of them each way.
	var params, syncWire float64
	if r > 1 {
		params = m.params[j] - m.params[i]
		syncWire = m.transfer(r*params) + 2*m.cl.Network.Latency
	}
	var c Cost
	slowest := -1.0
	for _, k := range ms {
		compute := work / m.capacity[k]
		messages := (in + out) * m.cl.ByteWork / m.handle[k]
		sync := (syncWire + 2*params*m.cl.ByteWork/m.handle[k]) / m.job.syncEvery()
		if cycle := compute + messages + sync; cycle > slowest {
			slowest = cycle
			c = Cost{Compute: compute / r, Messages: messages / r, Sync: sync / r,
				Transit: m.cl.Network.Latency + m.transfer(in) + compute + messages}
		}
	}
	c.Link = m.transfer(max(in, out)) / r
	c.Window = max(c.Compute+c.Messages+c.Sync, c.Link)
	return c
}

// groupWork is the flop-equivalents of a window of RBMs i..j-1 (0-based)
// on one of r replicas: its samples, and K steps a mini-batch for each of
// the r (at most one a row), each StepRows samples more.
func (m *model) groupWork(i, j, r int) float64 {
	steps := float64(m.job.K * min(r, m.job.BatchSize))
	return m.work[j] - m.work[i] + steps*(m.steps[j]-m.steps[i])
}

// masterLink is the seconds per window the master's link needs to stream
// every data window to the groups of RBM_1.
func (m *model) masterLink() float64 { return m.transfer(m.job.inBytes(0)) }

// replicasAllowed reports whether the group of RBMs i..j-1 (0-based) may
// have r replicas.
func (m *model) replicasAllowed(i, j, r int) bool {
	if r == 1 {
		return true
	}
	top := i == m.job.rbms()-1 && j == m.job.rbms()
	return (m.maxReplicas == 0 || r <= m.maxReplicas) && (!m.topOnly || top)
}
