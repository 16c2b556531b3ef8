package messages

import (
	"fmt"
	"math"
	"slices"

	"github.com/pipedbn/pipedbn/internal/sat"
)

// This file holds the master's side of the conversation with a slave: a
// slave joins (Register, Admission), gets its RBM (Assign), and may be told
// to abandon the run (Stop).

// Register is sent by a slave when it joins the cluster; the master answers
// with an Admission.
type Register struct {
	// Name identifies the slave; the master uses it in logs and results.
	Name string
	// Host is the machine the slave runs on.
	Host string
	// CPUs is the number of CPUs the slave may use.
	CPUs int
	// PID is the slave's process id.
	PID int
	// Protocol is the wire Version the slave speaks.
	Protocol uint16
	// Process is a number the slave process draws at its start: it tells
	// the process apart from an earlier one, or a duplicate, of its name
	// (both read the name's control subject).
	Process uint64
}

// Kind returns KindRegister.
func (*Register) Kind() Kind { return KindRegister }

func (m *Register) validate() error {
	return nonNegative("cpus", m.CPUs, "pid", m.PID)
}

func (m *Register) fields(c *coder) {
	c.str(&m.Name, "name")
	c.str(&m.Host, "host")
	c.int(&m.CPUs, "cpus")
	c.int(&m.PID, "pid")
	c.u16(&m.Protocol, "protocol")
	c.u64(&m.Process, "process")
}

// Outcome is the master's decision on a Register, as told in Admission. The
// zero Outcome is invalid, so an unset one never decodes.
type Outcome uint8

// The outcomes. Their numbers are part of the wire format.
const (
	// Admitted: the slave is in the run, or a spare that replaces a lost
	// slave when one is lost.
	Admitted Outcome = iota + 1
	// Full: the master needs no more slaves now.
	Full
	// Refused: the master will not take this slave; Admission.Reason says
	// why (a bad name, another protocol version...).
	Refused
	// InUse: another live process has this slave's name; Admission.Reason
	// names it. The slave may try again later (its namesake may be gone).
	InUse
	outcomeEnd
)

var outcomeNames = [...]string{
	Admitted: "admitted",
	Full:     "full",
	Refused:  "refused",
	InUse:    "in use",
}

// String returns the outcome's lower-case name, such as "admitted", or
// "Outcome(N)" for an invalid outcome.
func (o Outcome) String() string {
	if o >= Admitted && o < outcomeEnd {
		return outcomeNames[o]
	}
	return fmt.Sprintf("Outcome(%d)", uint8(o))
}

// Admission is the master's answer to a Register.
type Admission struct {
	// Slave is the Name of the Register it answers.
	Slave string
	// Outcome is what the master decided.
	Outcome Outcome
	// Reason says why, for a Refused slave; it may be empty otherwise.
	Reason string
	// Process is the Process of the Register it answers: only that
	// process of the name takes it.
	Process uint64
}

// Kind returns KindAdmission.
func (*Admission) Kind() Kind { return KindAdmission }

func (m *Admission) validate() error {
	if m.Outcome < Admitted || m.Outcome >= outcomeEnd {
		return invalid("outcome %v", m.Outcome)
	}
	return nil
}

func (m *Admission) fields(c *coder) {
	c.str(&m.Slave, "slave")
	c.u8((*uint8)(&m.Outcome), "outcome")
	c.str(&m.Reason, "reason")
	c.u64(&m.Process, "process")
}

// Values of Assign.Units.
const (
	UnitsBernoulli = "bernoulli" // binary visible units, inputs in [0,1]
	UnitsGaussian  = "gaussian"  // real-valued visible units with unit variance
)

// Values of Assign.Middle.
const (
	MiddleProbabilities = "probabilities" // stream P(h=1|v)
	MiddleSamples       = "samples"       // stream binary samples of h
)

// Schedule is a hyper-parameter that moves from Initial in the first epoch
// to Final in the last.
type Schedule struct {
	Initial, Final float64
}

// Assign is sent by the master to give RBM_i, and everything needed to train
// it, to a slave.
type Assign struct {
	// RunID names the run; every later message of the run carries it.
	RunID string
	// Incarnation numbers the run's incarnation: a resumed master starts a
	// new one, so that late messages of an earlier incarnation of the same
	// run can be told apart. Every message that carries a RunID carries it
	// too; any value is valid.
	Incarnation uint32
	// RBM is i, the 1-based index of RBM_i: visible layer L_(i-1), hidden
	// layer L_i. RBM_1 reads the data set, RBM_i for i > 1 reads the
	// chunks of slave i-1.
	RBM int
	// RBMs is the number of RBMs in the DBN; RBM_RBMs sends no chunks.
	RBMs int
	// Visible and Hidden are the sizes of L_(i-1) and L_i.
	Visible, Hidden int
	// Units is the kind of visible units: UnitsBernoulli or UnitsGaussian.
	Units string
	// Epochs is the number of passes over the data.
	Epochs int
	// BatchSize is the number of rows in a mini-batch.
	BatchSize int
	// K is the number of mini-batches in each window the slave sends on.
	K int
	// CDK is the number of Gibbs steps of contrastive divergence.
	CDK int
	// Middle is what the slave streams as its middle result:
	// MiddleProbabilities or MiddleSamples.
	Middle string
	// LearningRate and Momentum are the per-epoch schedules.
	LearningRate, Momentum Schedule
	// WeightDecay is the L2 penalty on the weights.
	WeightDecay float64
	// Seed seeds all of the slave's randomness.
	Seed uint64
	// BatchesPerEpoch is the number of mini-batches in one epoch.
	BatchesPerEpoch int
	// RowsPerEpoch is the number of rows (examples) in one epoch.
	RowsPerEpoch int
	// Upstream names the producers of the slave's input windows, the
	// replicas of the group below in order: the slaves of RBM_{i-1}, or
	// "master" for RBM_1, whose input is the data.
	Upstream []string
	// Downstream names the slaves of RBM_{i+1}, the replicas of the group
	// above in order; none for the top RBM.
	Downstream []string
	// Replica and Replicas are the slave's place in its stage group:
	// replica Replica of Replicas trains the windows g with g mod Replicas
	// = Replica (protocol.Replica). SyncEvery is how many of its windows
	// it trains between two averages of the replicas' parameters (see
	// Params); 0 without replicas.
	Replica, Replicas, SyncEvery int
	// Credits is the number of windows the slave may hold in flight on its
	// input link.
	Credits int
	// CheckpointEvery is C: the slave checkpoints after every C windows; 0
	// never.
	CheckpointEvery int
	// Resume says the slave replaces a lost one (or resumes an interrupted
	// run): it waits for a Checkpoint on its control subject before it
	// trains, or starts from the beginning if the Checkpoint has Windows 0.
	Resume bool
	// Process is the Process of the registration the assignment answers:
	// a new process of the slave's name that took over its control subject
	// does not take it up as its own.
	Process uint64
	// Settle is the settle phase after the epochs (pipeline.Settle): its
	// SettleWindows windows from window SettleFrom on after the epochs,
	// and the slave's settle windows: SettleTrain from window SettleStart
	// on, the learning rate restarting at SettleLearningRate. Windows and
	// Train 0: none.
	SettleFrom, SettleWindows, SettleStart, SettleTrain int
	SettleLearningRate                                  float64
	// LCopyOnce: the slave's visible biases take the B_{i-1} of its first
	// input window only (pretrain.l_copy first_window), not of every one.
	LCopyOnce bool
	// MiddleEncoding is what the slave rounds its middle result of
	// probabilities to, and sends it as (pretrain.middle_precision):
	// EncodingFloat32 (the zero value), EncodingFloat16 or EncodingUint8.
	// Samples, which are 0 or 1, travel as EncodingBits whatever it says.
	MiddleEncoding Encoding
	// Net, for the network of data-parallel fine-tuning rather than an
	// RBM, holds its layers' widths: the Visible inputs first, the Hidden
	// classes last; empty for an RBM. Its parameters travel as a flat
	// vector (Hidden 0 in Params, Weights and Checkpoint), and its data
	// windows carry labels. Dropout, InputDropout, MaxNorm and
	// LabelSmoothing are its regularisers (finetune.Config's); RateRule
	// ("constant", "linear" or "sqrt"; "" is constant) scales its learning
	// rate with the replicas, reached over each replica's first
	// WarmupWindows windows (finetune.LRRule); BlockMomentum, in [0, 1),
	// is the momentum of the replicas' steps from one average to the next
	// (finetune.Parallel.BlockMomentum; 0: none).
	Net                                            []int
	Dropout, InputDropout, MaxNorm, LabelSmoothing float64
	RateRule                                       string
	WarmupWindows                                  int
	BlockMomentum                                  float64
}

// NetParams returns the length of the flat parameter vector of a network
// whose layers have the widths sizes (Assign.Net), saturating at
// math.MaxInt64.
func NetParams(sizes []int) int64 {
	var n int64
	for i := 1; i < len(sizes); i++ {
		n = sat.Add(n, sat.Mul(nonNeg(sizes[i-1])+1, nonNeg(sizes[i])))
	}
	return n
}

// Kind returns KindAssign.
func (*Assign) Kind() Kind { return KindAssign }

func (m *Assign) validate() error {
	if m.RBM < 1 || m.RBM > m.RBMs {
		return invalid("rbm %d of %d: want 1 <= rbm <= rbms", m.RBM, m.RBMs)
	}
	if m.Visible < 1 || m.Hidden < 1 {
		return shapeErr("visible x hidden = %d x %d: want both >= 1", m.Visible, m.Hidden)
	}
	if m.Units != UnitsBernoulli && m.Units != UnitsGaussian {
		return invalid("units %q: want %q or %q", m.Units, UnitsBernoulli, UnitsGaussian)
	}
	if m.Middle != MiddleProbabilities && m.Middle != MiddleSamples {
		return invalid("middle %q: want %q or %q", m.Middle, MiddleProbabilities, MiddleSamples)
	}
	if m.MiddleEncoding != EncodingFloat32 && m.MiddleEncoding != EncodingFloat16 && m.MiddleEncoding != EncodingUint8 {
		return invalid("middle encoding %v: want float32, float16 or uint8", m.MiddleEncoding)
	}
	if m.BatchSize < 1 || m.K < 1 || m.CDK < 1 {
		return invalid("batch size %d, k %d, cd-k %d: want all >= 1", m.BatchSize, m.K, m.CDK)
	}
	if len(m.Upstream) == 0 || (len(m.Downstream) == 0) != (m.RBM == m.RBMs) || slices.Contains(m.Upstream, "") || slices.Contains(m.Downstream, "") {
		return invalid("upstream %q, downstream %q for rbm %d of %d: want upstreams, and downstreams below the top, all named", m.Upstream, m.Downstream, m.RBM, m.RBMs)
	}
	if m.Replicas < 1 || m.Replica < 0 || m.Replica >= m.Replicas || m.SyncEvery < 0 || (m.Replicas > 1) != (m.SyncEvery > 0) {
		return invalid("replica %d of %d, sync every %d: want 0 <= replica < replicas, and sync every >= 1 exactly with replicas", m.Replica, m.Replicas, m.SyncEvery)
	}
	if m.Credits < 1 {
		return invalid("credits %d: want >= 1", m.Credits)
	}
	if m.SettleWindows > 0 && (m.SettleStart < m.SettleFrom || m.SettleStart+m.SettleTrain > m.SettleFrom+m.SettleWindows) {
		return invalid("settle: trains windows %d to %d of the phase's %d to %d", m.SettleStart, m.SettleStart+m.SettleTrain-1, m.SettleFrom, m.SettleFrom+m.SettleWindows-1)
	}
	if err := m.validateNet(); err != nil {
		return err
	}
	return nonNegative("checkpoint every", m.CheckpointEvery, "epochs", m.Epochs, "batches per epoch", m.BatchesPerEpoch, "rows per epoch", m.RowsPerEpoch,
		"settle from", m.SettleFrom, "settle windows", m.SettleWindows, "settle start", m.SettleStart, "settle train", m.SettleTrain,
		"warmup windows", m.WarmupWindows)
}

// validateNet checks the fields of a network's assignment (Net).
func (m *Assign) validateNet() error {
	if len(m.Net) == 0 {
		return nil
	}
	n := m.Net
	if len(n) < 2 || n[0] != m.Visible || n[len(n)-1] != m.Hidden || slices.Min(n) < 1 {
		return shapeErr("net %v for %d inputs and %d classes: want the inputs first, the classes last, widths >= 1", n, m.Visible, m.Hidden)
	}
	for _, p := range []struct {
		name string
		v    float64
	}{{"dropout", m.Dropout}, {"input dropout", m.InputDropout}, {"label smoothing", m.LabelSmoothing}, {"block momentum", m.BlockMomentum}} {
		if !(p.v >= 0 && p.v < 1) {
			return invalid("%s %g: want a probability in [0, 1)", p.name, p.v)
		}
	}
	if !(m.MaxNorm >= 0) || math.IsInf(m.MaxNorm, 0) {
		return invalid("max norm %g: want a finite number >= 0", m.MaxNorm)
	}
	if !slices.Contains([]string{"", "constant", "linear", "sqrt"}, m.RateRule) {
		return invalid("rate rule %q: want constant, linear or sqrt", m.RateRule)
	}
	return nil
}

func (m *Assign) fields(c *coder) {
	c.run(&m.RunID, &m.Incarnation)
	c.int(&m.RBM, "rbm")
	c.int(&m.RBMs, "rbms")
	c.int(&m.Visible, "visible")
	c.int(&m.Hidden, "hidden")
	c.str(&m.Units, "units")
	c.int(&m.Epochs, "epochs")
	c.int(&m.BatchSize, "batch size")
	c.int(&m.K, "k")
	c.int(&m.CDK, "cd-k")
	c.str(&m.Middle, "middle")
	c.f64(&m.LearningRate.Initial, "learning rate initial")
	c.f64(&m.LearningRate.Final, "learning rate final")
	c.f64(&m.Momentum.Initial, "momentum initial")
	c.f64(&m.Momentum.Final, "momentum final")
	c.f64(&m.WeightDecay, "weight decay")
	c.u64(&m.Seed, "seed")
	c.int(&m.BatchesPerEpoch, "batches per epoch")
	c.int(&m.RowsPerEpoch, "rows per epoch")
	c.strs(&m.Upstream, "upstream")
	c.strs(&m.Downstream, "downstream")
	c.int(&m.Replica, "replica")
	c.int(&m.Replicas, "replicas")
	c.int(&m.SyncEvery, "sync every")
	c.int(&m.Credits, "credits")
	c.int(&m.CheckpointEvery, "checkpoint every")
	c.bool(&m.Resume, "resume")
	c.u64(&m.Process, "process")
	c.int(&m.SettleFrom, "settle from")
	c.int(&m.SettleWindows, "settle windows")
	c.int(&m.SettleStart, "settle start")
	c.int(&m.SettleTrain, "settle train")
	c.f64(&m.SettleLearningRate, "settle learning rate")
	c.bool(&m.LCopyOnce, "l copy once")
	c.ints(&m.Net, "net")
	c.f64(&m.Dropout, "dropout")
	c.f64(&m.InputDropout, "input dropout")
	c.f64(&m.MaxNorm, "max norm")
	c.f64(&m.LabelSmoothing, "label smoothing")
	c.str(&m.RateRule, "rate rule")
	c.int(&m.WarmupWindows, "warmup windows")
	c.u8((*uint8)(&m.MiddleEncoding), "middle encoding")
	c.f64(&m.BlockMomentum, "block momentum")
}

// Stop tells the slaves to abandon a run.
type Stop struct {
	// RunID names the run.
	RunID string
	// Incarnation is the run's incarnation, as in Assign.
	Incarnation uint32
	// Reason says why, for logs.
	Reason string
	// Process, if not 0, is the one process of the slave's name the stop
	// is for (as in Register); 0 stops every process of the name.
	Process uint64
}

// Kind returns KindStop.
func (*Stop) Kind() Kind { return KindStop }

func (m *Stop) validate() error { return nil }

func (m *Stop) fields(c *coder) {
	c.run(&m.RunID, &m.Incarnation)
	c.str(&m.Reason, "reason")
	c.u64(&m.Process, "process")
}
