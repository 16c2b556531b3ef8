package messages

import (
	"fmt"
	"math"
)

// Kind identifies the type of a Message on the wire. The zero Kind is
// invalid, so an unset kind byte never decodes.
type Kind uint8

// The message kinds. Their numbers are part of the wire format: append new
// kinds at the end, never reorder.
const (
	KindRegister      Kind = iota + 1 // slave -> master: a slave joins
	KindAssign                        // master -> slave: train RBM_i
	KindChunk                         // slave i -> slave i+1: middle result and B_i
	KindEndOfEpoch                    // slave i -> slave i+1: an epoch's windows are all sent
	KindEndOfStream                   // slave i -> slave i+1: no more windows
	KindCredit                        // slave i+1 -> slave i: flow control
	KindStatus                        // slave -> master: progress
	KindWeights                       // slave -> master: the trained RBM
	KindError                         // slave -> master: training failed
	KindHeartbeat                     // either way: liveness
	KindStop                          // master -> slaves: abandon the run
	KindCheckpoint                    // slave -> master -> replacement slave: RBM_i's state
	KindCheckpointAck                 // master -> slave: a checkpoint is stored
	kindEnd                           // one past the last valid kind
)

var kindNames = [...]string{
	KindRegister:      "register",
	KindAssign:        "assign",
	KindChunk:         "chunk",
	KindEndOfEpoch:    "end-of-epoch",
	KindEndOfStream:   "end-of-stream",
	KindCredit:        "credit",
	KindStatus:        "status",
	KindWeights:       "weights",
	KindError:         "error",
	KindHeartbeat:     "heartbeat",
	KindStop:          "stop",
	KindCheckpoint:    "checkpoint",
	KindCheckpointAck: "checkpoint-ack",
}

// String returns the kind's lower-case name, such as "chunk", or "Kind(N)"
// for an unknown kind.
func (k Kind) String() string {
	if k.valid() {
		return kindNames[k]
	}
	return fmt.Sprintf("Kind(%d)", uint8(k))
}

func (k Kind) valid() bool { return k >= KindRegister && k < kindEnd }

// State is what a slave is doing, as reported in Status.
type State uint8

// The slave states. Their numbers are part of the wire format.
const (
	StateIdle          State = iota // registered, no RBM assigned yet
	StateTraining                   // running CD-k on a mini-batch
	StateWaitingInput               // RBM_i, i > 1: waiting for a Chunk from slave i-1
	StateWaitingCredit              // waiting for Credit from slave i+1 before sending
	StateDone                       // all epochs trained, Weights sent
	StateFailed                     // gave up; an Error message says why
	stateEnd
)

var stateNames = [...]string{
	StateIdle:          "idle",
	StateTraining:      "training",
	StateWaitingInput:  "waiting-input",
	StateWaitingCredit: "waiting-credit",
	StateDone:          "done",
	StateFailed:        "failed",
}

// String returns the state's lower-case name, such as "waiting-input", or
// "State(N)" for an unknown state.
func (s State) String() string {
	if s < stateEnd {
		return stateNames[s]
	}
	return fmt.Sprintf("State(%d)", uint8(s))
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

// Message is one thing master and slaves say to each other: a pointer to one
// of the structs of this package (*Register, *Assign, *Chunk, ...). The
// interface is sealed: only this package's types implement it.
type Message interface {
	// Kind returns the message's kind; it is safe on a nil pointer.
	Kind() Kind

	// validate reports what makes the message inconsistent (wrapping
	// ErrShape or ErrInvalid), or nil.
	validate() error
	// encode appends the body to w.
	encode(w *writer)
	// decode reads the body from r; r records the first error.
	decode(r *reader)
}

// newMessage returns a zero message of kind k, or nil for an unknown kind.
func newMessage(k Kind) Message {
	switch k {
	case KindRegister:
		return new(Register)
	case KindAssign:
		return new(Assign)
	case KindChunk:
		return new(Chunk)
	case KindEndOfEpoch:
		return new(EndOfEpoch)
	case KindEndOfStream:
		return new(EndOfStream)
	case KindCredit:
		return new(Credit)
	case KindStatus:
		return new(Status)
	case KindWeights:
		return new(Weights)
	case KindError:
		return new(Error)
	case KindHeartbeat:
		return new(Heartbeat)
	case KindStop:
		return new(Stop)
	case KindCheckpoint:
		return new(Checkpoint)
	case KindCheckpointAck:
		return new(CheckpointAck)
	}
	return nil
}

// Register is sent by a slave when it joins the cluster.
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
}

// Kind returns KindRegister.
func (*Register) Kind() Kind { return KindRegister }

func (m *Register) validate() error {
	return nonNegative("cpus", m.CPUs, "pid", m.PID)
}

func (m *Register) encode(w *writer) {
	w.str(m.Name)
	w.str(m.Host)
	w.int(m.CPUs)
	w.int(m.PID)
	w.u16(m.Protocol)
}

func (m *Register) decode(r *reader) {
	m.Name = r.str("name")
	m.Host = r.str("host")
	m.CPUs = r.int("cpus")
	m.PID = r.int("pid")
	m.Protocol = r.u16("protocol")
}

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
	// Upstream names the producer of the slave's input windows: the slave
	// of RBM_{i-1}, or "master" for RBM_1, whose input is the data.
	Upstream string
	// Downstream names the slave of RBM_{i+1}; empty for the top RBM.
	Downstream string
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
	if m.BatchSize < 1 || m.K < 1 || m.CDK < 1 {
		return invalid("batch size %d, k %d, cd-k %d: want all >= 1", m.BatchSize, m.K, m.CDK)
	}
	if m.Upstream == "" || (m.Downstream == "") != (m.RBM == m.RBMs) {
		return invalid("upstream %q, downstream %q for rbm %d of %d: want an upstream, and a downstream below the top", m.Upstream, m.Downstream, m.RBM, m.RBMs)
	}
	if m.Credits < 1 {
		return invalid("credits %d: want >= 1", m.Credits)
	}
	return nonNegative("checkpoint every", m.CheckpointEvery, "epochs", m.Epochs, "batches per epoch", m.BatchesPerEpoch, "rows per epoch", m.RowsPerEpoch)
}

func (m *Assign) encode(w *writer) {
	w.str(m.RunID)
	w.int(m.RBM)
	w.int(m.RBMs)
	w.int(m.Visible)
	w.int(m.Hidden)
	w.str(m.Units)
	w.int(m.Epochs)
	w.int(m.BatchSize)
	w.int(m.K)
	w.int(m.CDK)
	w.str(m.Middle)
	w.f64(m.LearningRate.Initial)
	w.f64(m.LearningRate.Final)
	w.f64(m.Momentum.Initial)
	w.f64(m.Momentum.Final)
	w.f64(m.WeightDecay)
	w.u64(m.Seed)
	w.int(m.BatchesPerEpoch)
	w.int(m.RowsPerEpoch)
	w.str(m.Upstream)
	w.str(m.Downstream)
	w.int(m.Credits)
	w.int(m.CheckpointEvery)
	w.bool(m.Resume)
}

func (m *Assign) decode(r *reader) {
	m.RunID = r.str("run id")
	m.RBM = r.int("rbm")
	m.RBMs = r.int("rbms")
	m.Visible = r.int("visible")
	m.Hidden = r.int("hidden")
	m.Units = r.str("units")
	m.Epochs = r.int("epochs")
	m.BatchSize = r.int("batch size")
	m.K = r.int("k")
	m.CDK = r.int("cd-k")
	m.Middle = r.str("middle")
	m.LearningRate.Initial = r.f64("learning rate initial")
	m.LearningRate.Final = r.f64("learning rate final")
	m.Momentum.Initial = r.f64("momentum initial")
	m.Momentum.Final = r.f64("momentum final")
	m.WeightDecay = r.f64("weight decay")
	m.Seed = r.u64("seed")
	m.BatchesPerEpoch = r.int("batches per epoch")
	m.RowsPerEpoch = r.int("rows per epoch")
	m.Upstream = r.str("upstream")
	m.Downstream = r.str("downstream")
	m.Credits = r.int("credits")
	m.CheckpointEvery = r.int("checkpoint every")
	m.Resume = r.bool("resume")
}

// Chunk is one window of the middle result: the hidden activations RBM_i
// computed for up to K consecutive mini-batches, with the hidden biases B_i
// it had after training on them. Slave i+1 sets the biases of its L_i-copy
// to Bias and trains on the rows, mini-batch by mini-batch.
type Chunk struct {
	// RunID names the run.
	RunID string
	// RBM is i, the index of the producer RBM_i.
	RBM int
	// Epoch is the producer's epoch these rows belong to.
	Epoch int
	// Seq numbers the producer's windows from 0 over the whole run (it does
	// not restart each epoch), so that Credit can refer to them.
	Seq uint64
	// FirstBatch is the index, within the epoch, of the window's first
	// mini-batch.
	FirstBatch int
	// Rows and Cols are the shape of Data; Cols is the producer's hidden
	// size.
	Rows, Cols int
	// Data holds the Rows x Cols middle result, row-major.
	Data []float32
	// BatchRows holds the row count of each mini-batch in the window, in
	// order; its length is the number of mini-batches and its sum is Rows.
	// Only the epoch's last mini-batch may be short.
	BatchRows []int
	// Bias is B_i, the producer's hidden biases, of length Cols.
	Bias []float32
}

// Kind returns KindChunk.
func (*Chunk) Kind() Kind { return KindChunk }

func (m *Chunk) validate() error {
	if m.RBM < 0 {
		return invalid("rbm %d: want >= 0 (0: the master's data)", m.RBM)
	}
	if err := nonNegative("epoch", m.Epoch, "first batch", m.FirstBatch); err != nil {
		return err
	}
	if err := matrixShape("data", len(m.Data), m.Rows, m.Cols); err != nil {
		return err
	}
	if len(m.Bias) != m.Cols && !(m.RBM == 0 && len(m.Bias) == 0) {
		return shapeErr("bias has %d values, want cols = %d", len(m.Bias), m.Cols)
	}
	if len(m.BatchRows) == 0 {
		return shapeErr("no mini-batches")
	}
	sum := 0
	for j, n := range m.BatchRows {
		// n <= Rows keeps the sum from overflowing.
		if n < 1 || n > m.Rows {
			return shapeErr("mini-batch %d has %d rows, want 1..%d", j, n, m.Rows)
		}
		if sum += n; sum > m.Rows {
			break
		}
	}
	if sum != m.Rows {
		return shapeErr("mini-batch rows sum to %d or more, want rows = %d", sum, m.Rows)
	}
	return nil
}

// Check reports whether c is a consistent window that a receiver expecting
// chunks of run runID from RBM_producer, with cols columns, may train on. It
// returns an error wrapping ErrMismatch for a wrong run or producer, ErrShape
// for a wrong shape, and ErrShape or ErrInvalid if c is inconsistent in
// itself. A receiver counts and drops such chunks rather than applying them.
func (m *Chunk) Check(runID string, producer int, cols int) error {
	if m == nil {
		return invalid("nil chunk")
	}
	if m.RunID != runID {
		return fmt.Errorf("chunk %d: run %q, want %q: %w", m.Seq, m.RunID, runID, ErrMismatch)
	}
	if m.RBM != producer {
		return fmt.Errorf("chunk %d: from rbm %d, want %d: %w", m.Seq, m.RBM, producer, ErrMismatch)
	}
	if m.Cols != cols {
		return fmt.Errorf("chunk %d: %d cols, want %d: %w", m.Seq, m.Cols, cols, ErrShape)
	}
	if err := m.validate(); err != nil {
		return fmt.Errorf("chunk %d: %w", m.Seq, err)
	}
	return nil
}

// Batch returns the rows of the window's j-th mini-batch, a view into Data.
// It panics if j is out of range or m is inconsistent; call Check first.
func (m *Chunk) Batch(j int) []float32 {
	lo := 0
	for _, n := range m.BatchRows[:j] {
		lo += n
	}
	return m.Data[lo*m.Cols : (lo+m.BatchRows[j])*m.Cols]
}

func (m *Chunk) encode(w *writer) {
	w.str(m.RunID)
	w.int(m.RBM)
	w.int(m.Epoch)
	w.u64(m.Seq)
	w.int(m.FirstBatch)
	w.int(m.Rows)
	w.int(m.Cols)
	w.ints(m.BatchRows)
	w.f32s(m.Bias)
	w.f32s(m.Data)
}

func (m *Chunk) decode(r *reader) {
	m.RunID = r.str("run id")
	m.RBM = r.int("rbm")
	m.Epoch = r.int("epoch")
	m.Seq = r.u64("seq")
	m.FirstBatch = r.int("first batch")
	m.Rows = r.int("rows")
	m.Cols = r.int("cols")
	m.BatchRows = r.ints("batch rows")
	m.Bias = r.f32s("bias")
	m.Data = r.f32s("data")
}

// EndOfEpoch is sent by the producer RBM_i after the last window of an
// epoch.
type EndOfEpoch struct {
	// RunID names the run.
	RunID string
	// RBM is i, the index of the producer.
	RBM int
	// Epoch is the epoch that ended.
	Epoch int
	// Windows is the number of windows sent so far in the run, so the
	// consumer can tell whether it missed any.
	Windows uint64
}

// Kind returns KindEndOfEpoch.
func (*EndOfEpoch) Kind() Kind { return KindEndOfEpoch }

func (m *EndOfEpoch) validate() error  { return endValidate(m.RBM, m.Epoch) }
func (m *EndOfEpoch) encode(w *writer) { endEncode(w, m.RunID, m.RBM, m.Epoch, m.Windows) }
func (m *EndOfEpoch) decode(r *reader) { endDecode(r, &m.RunID, &m.RBM, &m.Epoch, &m.Windows) }

// EndOfStream is sent by the producer RBM_i after its last window of the
// run; no chunk follows it.
type EndOfStream struct {
	// RunID names the run.
	RunID string
	// RBM is i, the index of the producer.
	RBM int
	// Epoch is the producer's last epoch.
	Epoch int
	// Windows is the total number of windows sent in the run.
	Windows uint64
}

// Kind returns KindEndOfStream.
func (*EndOfStream) Kind() Kind { return KindEndOfStream }

func (m *EndOfStream) validate() error  { return endValidate(m.RBM, m.Epoch) }
func (m *EndOfStream) encode(w *writer) { endEncode(w, m.RunID, m.RBM, m.Epoch, m.Windows) }
func (m *EndOfStream) decode(r *reader) { endDecode(r, &m.RunID, &m.RBM, &m.Epoch, &m.Windows) }

func endValidate(rbm, epoch int) error {
	if rbm < 0 {
		return invalid("rbm %d: want >= 0 (0: the master's data)", rbm)
	}
	return nonNegative("epoch", epoch)
}

func endEncode(w *writer, runID string, rbm, epoch int, windows uint64) {
	w.str(runID)
	w.int(rbm)
	w.int(epoch)
	w.u64(windows)
}

func endDecode(r *reader, runID *string, rbm, epoch *int, windows *uint64) {
	*runID = r.str("run id")
	*rbm = r.int("rbm")
	*epoch = r.int("epoch")
	*windows = r.u64("windows")
}

// Credit is sent by the consumer RBM_(i+1) to the producer RBM_i to grant it
// more windows: the producer may send every window with Seq < UpTo. Credits
// are cumulative, so a lost or reordered Credit is repaired by the next one.
type Credit struct {
	// RunID names the run.
	RunID string
	// RBM is i, the index of the producer the credit is for.
	RBM int
	// UpTo is one past the highest Seq the producer may send.
	UpTo uint64
	// Next is the Seq of the window the consumer waits for.
	Next uint64
	// Durable says the consumer's checkpoint covers every window with Seq
	// < Durable: the producer need not keep them for a replay any more.
	Durable uint64
	// Resend asks the producer to send again the windows it still keeps
	// from Seq Next on: the consumer is new, or saw a gap or silence.
	Resend bool
}

// Kind returns KindCredit.
func (*Credit) Kind() Kind { return KindCredit }

func (m *Credit) validate() error {
	if m.RBM < 0 {
		return invalid("rbm %d: want >= 0 (0: the master's data)", m.RBM)
	}
	if m.Durable > m.Next {
		return invalid("durable %d beyond next %d", m.Durable, m.Next)
	}
	return nil
}

func (m *Credit) encode(w *writer) {
	w.str(m.RunID)
	w.int(m.RBM)
	w.u64(m.UpTo)
	w.u64(m.Next)
	w.u64(m.Durable)
	w.bool(m.Resend)
}

func (m *Credit) decode(r *reader) {
	m.RunID = r.str("run id")
	m.RBM = r.int("rbm")
	m.UpTo = r.u64("up to")
	m.Next = r.u64("next")
	m.Durable = r.u64("durable")
	m.Resend = r.bool("resend")
}

// Status is a slave's progress report to the master.
type Status struct {
	// RunID names the run; empty before the slave is assigned.
	RunID string
	// RBM is the index of the slave's RBM, 0 before it is assigned.
	RBM int
	// Slave is the slave's name.
	Slave string
	// State is what the slave is doing.
	State State
	// Epoch is the current epoch.
	Epoch int
	// Batches is the number of mini-batches trained so far, all epochs.
	Batches int
	// ReconError is the latest mean squared reconstruction error.
	ReconError float64
	// ReconErrors holds the mean reconstruction error of each finished
	// epoch.
	ReconErrors []float64
	// BusySeconds is the time spent training, WaitSeconds the time spent
	// waiting for input or credit.
	BusySeconds, WaitSeconds float64
	// BytesIn and BytesOut count the chunk bytes received and sent.
	BytesIn, BytesOut uint64
}

// Kind returns KindStatus.
func (*Status) Kind() Kind { return KindStatus }

func (m *Status) validate() error {
	if m.State >= stateEnd {
		return invalid("state %v", m.State)
	}
	return nonNegative("rbm", m.RBM, "epoch", m.Epoch, "batches", m.Batches)
}

func (m *Status) encode(w *writer) {
	w.str(m.RunID)
	w.int(m.RBM)
	w.str(m.Slave)
	w.u8(uint8(m.State))
	w.int(m.Epoch)
	w.int(m.Batches)
	w.f64(m.ReconError)
	w.f64s(m.ReconErrors)
	w.f64(m.BusySeconds)
	w.f64(m.WaitSeconds)
	w.u64(m.BytesIn)
	w.u64(m.BytesOut)
}

func (m *Status) decode(r *reader) {
	m.RunID = r.str("run id")
	m.RBM = r.int("rbm")
	m.Slave = r.str("slave")
	m.State = State(r.u8("state"))
	m.Epoch = r.int("epoch")
	m.Batches = r.int("batches")
	m.ReconError = r.f64("recon error")
	m.ReconErrors = r.f64s("recon errors")
	m.BusySeconds = r.f64("busy seconds")
	m.WaitSeconds = r.f64("wait seconds")
	m.BytesIn = r.u64("bytes in")
	m.BytesOut = r.u64("bytes out")
}

// Weights is a slave's trained RBM_i, sent to the master after the last
// epoch, with the statistics that go into the run's result.
type Weights struct {
	// RunID names the run.
	RunID string
	// RBM is i, the index of the RBM.
	RBM int
	// Visible and Hidden are the sizes of L_(i-1) and L_i.
	Visible, Hidden int
	// W holds the Visible x Hidden weights, row-major.
	W []float32
	// A holds the Visible visible biases, B the Hidden hidden biases.
	A, B []float32
	// ReconErrors holds the mean reconstruction error of each epoch.
	ReconErrors []float64
	// Batches is the number of mini-batches trained, all epochs.
	Batches int
	// BusySeconds is the time spent training, WaitSeconds the time spent
	// waiting for input or credit.
	BusySeconds, WaitSeconds float64
	// BytesIn and BytesOut count the chunk bytes received and sent.
	BytesIn, BytesOut uint64
}

// Kind returns KindWeights.
func (*Weights) Kind() Kind { return KindWeights }

func (m *Weights) validate() error {
	if m.RBM < 1 {
		return invalid("rbm %d: want >= 1", m.RBM)
	}
	if err := matrixShape("w", len(m.W), m.Visible, m.Hidden); err != nil {
		return err
	}
	if len(m.A) != m.Visible || len(m.B) != m.Hidden {
		return shapeErr("len(a), len(b) = %d, %d, want visible, hidden = %d, %d", len(m.A), len(m.B), m.Visible, m.Hidden)
	}
	return nonNegative("batches", m.Batches)
}

// Check reports whether w is a consistent RBM_rbm of run runID with the
// given shape. It returns an error wrapping ErrMismatch for a wrong run or
// RBM and ErrShape for a wrong shape.
func (m *Weights) Check(runID string, rbm, visible, hidden int) error {
	if m == nil {
		return invalid("nil weights")
	}
	if m.RunID != runID {
		return fmt.Errorf("weights of rbm %d: run %q, want %q: %w", m.RBM, m.RunID, runID, ErrMismatch)
	}
	if m.RBM != rbm {
		return fmt.Errorf("weights: rbm %d, want %d: %w", m.RBM, rbm, ErrMismatch)
	}
	if m.Visible != visible || m.Hidden != hidden {
		return fmt.Errorf("weights of rbm %d: %d x %d, want %d x %d: %w", m.RBM, m.Visible, m.Hidden, visible, hidden, ErrShape)
	}
	if err := m.validate(); err != nil {
		return fmt.Errorf("weights of rbm %d: %w", m.RBM, err)
	}
	return nil
}

func (m *Weights) encode(w *writer) {
	w.str(m.RunID)
	w.int(m.RBM)
	w.int(m.Visible)
	w.int(m.Hidden)
	w.f32s(m.W)
	w.f32s(m.A)
	w.f32s(m.B)
	w.f64s(m.ReconErrors)
	w.int(m.Batches)
	w.f64(m.BusySeconds)
	w.f64(m.WaitSeconds)
	w.u64(m.BytesIn)
	w.u64(m.BytesOut)
}

func (m *Weights) decode(r *reader) {
	m.RunID = r.str("run id")
	m.RBM = r.int("rbm")
	m.Visible = r.int("visible")
	m.Hidden = r.int("hidden")
	m.W = r.f32s("w")
	m.A = r.f32s("a")
	m.B = r.f32s("b")
	m.ReconErrors = r.f64s("recon errors")
	m.Batches = r.int("batches")
	m.BusySeconds = r.f64("busy seconds")
	m.WaitSeconds = r.f64("wait seconds")
	m.BytesIn = r.u64("bytes in")
	m.BytesOut = r.u64("bytes out")
}

// Error reports that a slave failed. It is a message, not a Go error.
type Error struct {
	// RunID names the run.
	RunID string
	// RBM is the index of the failed slave's RBM, 0 if none was assigned.
	RBM int
	// Text says what went wrong.
	Text string
}

// Kind returns KindError.
func (*Error) Kind() Kind { return KindError }

func (m *Error) validate() error { return nonNegative("rbm", m.RBM) }

func (m *Error) encode(w *writer) {
	w.str(m.RunID)
	w.int(m.RBM)
	w.str(m.Text)
}

func (m *Error) decode(r *reader) {
	m.RunID = r.str("run id")
	m.RBM = r.int("rbm")
	m.Text = r.str("text")
}

// Heartbeat tells the other side that its sender is alive.
type Heartbeat struct {
	// RunID names the run; empty outside a run.
	RunID string
	// Name is the sender's name.
	Name string
	// UnixNano is the sender's clock when it sent the heartbeat.
	UnixNano int64
}

// Kind returns KindHeartbeat.
func (*Heartbeat) Kind() Kind { return KindHeartbeat }

func (m *Heartbeat) validate() error { return nil }

func (m *Heartbeat) encode(w *writer) {
	w.str(m.RunID)
	w.str(m.Name)
	w.u64(uint64(m.UnixNano))
}

func (m *Heartbeat) decode(r *reader) {
	m.RunID = r.str("run id")
	m.Name = r.str("name")
	m.UnixNano = int64(r.u64("unix nano"))
}

// Stop tells the slaves to abandon a run.
type Stop struct {
	// RunID names the run.
	RunID string
	// Reason says why, for logs.
	Reason string
}

// Kind returns KindStop.
func (*Stop) Kind() Kind { return KindStop }

func (m *Stop) validate() error { return nil }

func (m *Stop) encode(w *writer) {
	w.str(m.RunID)
	w.str(m.Reason)
}

func (m *Stop) decode(r *reader) {
	m.RunID = r.str("run id")
	m.Reason = r.str("reason")
}

// Checkpoint is RBM_i's training state after a window: its parameters,
// momentum, sampling generator and statistics, and its stream position. A
// slave sends one to the master every C windows; the master stores it and
// hands it to the slave that replaces a lost one, which resumes exactly
// there.
type Checkpoint struct {
	// RunID names the run.
	RunID string
	// RBM is i; Visible and Hidden the sizes of L_(i-1) and L_i.
	RBM, Visible, Hidden int
	// Windows is the number of input windows trained: the stream position
	// training resumes at. Windows 0 means "start from the beginning".
	Windows int
	// Epoch is the epoch being trained; EpochSSE and EpochElems the
	// reconstruction error summed over it so far; EpochEnded whether it was
	// closed already.
	Epoch                int
	EpochSSE, EpochElems float64
	EpochEnded           bool
	// Batches and Rows trained; ReconErrors of the finished epochs and
	// ReconError of the last window.
	Batches, Rows int
	ReconErrors   []float64
	ReconError    float64
	// BusySeconds, WaitInputSeconds and WaitCreditSeconds so far.
	BusySeconds, WaitInputSeconds, WaitCreditSeconds float64
	// W (Visible x Hidden), A and B are the RBM; VelW, VelA and VelB its
	// momentum buffers.
	W, A, B, VelW, VelA, VelB []float32
	// RNG is the sampling generator's state, 64 words.
	RNG []uint32
}

// GetWindows returns c.Windows, or 0 for a nil checkpoint.
func (m *Checkpoint) GetWindows() int {
	if m == nil {
		return 0
	}
	return m.Windows
}

// CheckpointRNGWords is the length of Checkpoint.RNG.
const CheckpointRNGWords = 64

// Kind returns KindCheckpoint.
func (*Checkpoint) Kind() Kind { return KindCheckpoint }

func (m *Checkpoint) validate() error {
	if m.RBM < 1 {
		return invalid("rbm %d: want >= 1", m.RBM)
	}
	if m.Windows == 0 && len(m.W) == 0 {
		return nil // start from the beginning
	}
	if err := matrixShape("w", len(m.W), m.Visible, m.Hidden); err != nil {
		return err
	}
	if len(m.VelW) != len(m.W) || len(m.A) != m.Visible || len(m.VelA) != m.Visible || len(m.B) != m.Hidden || len(m.VelB) != m.Hidden {
		return shapeErr("a, b, vel_w, vel_a, vel_b of %d, %d, %d, %d, %d values for %d x %d", len(m.A), len(m.B), len(m.VelW), len(m.VelA), len(m.VelB), m.Visible, m.Hidden)
	}
	if len(m.RNG) != CheckpointRNGWords {
		return shapeErr("rng of %d words, want %d", len(m.RNG), CheckpointRNGWords)
	}
	return nonNegative("windows", m.Windows, "epoch", m.Epoch, "batches", m.Batches, "rows", m.Rows)
}

// Check reports whether c is a consistent checkpoint of RBM_rbm of run
// runID with the given shape; errors wrap ErrMismatch or ErrShape.
func (m *Checkpoint) Check(runID string, rbm, visible, hidden int) error {
	if m.RunID != runID || m.RBM != rbm {
		return fmt.Errorf("checkpoint of run %q rbm %d, want %q rbm %d: %w", m.RunID, m.RBM, runID, rbm, ErrMismatch)
	}
	if m.Windows > 0 && (m.Visible != visible || m.Hidden != hidden) {
		return fmt.Errorf("checkpoint of rbm %d: %d x %d, want %d x %d: %w", m.RBM, m.Visible, m.Hidden, visible, hidden, ErrShape)
	}
	return m.validate()
}

func (m *Checkpoint) encode(w *writer) {
	w.str(m.RunID)
	w.int(m.RBM)
	w.int(m.Visible)
	w.int(m.Hidden)
	w.int(m.Windows)
	w.int(m.Epoch)
	w.f64(m.EpochSSE)
	w.f64(m.EpochElems)
	w.bool(m.EpochEnded)
	w.int(m.Batches)
	w.int(m.Rows)
	w.f64s(m.ReconErrors)
	w.f64(m.ReconError)
	w.f64(m.BusySeconds)
	w.f64(m.WaitInputSeconds)
	w.f64(m.WaitCreditSeconds)
	w.f32s(m.W)
	w.f32s(m.A)
	w.f32s(m.B)
	w.f32s(m.VelW)
	w.f32s(m.VelA)
	w.f32s(m.VelB)
	w.u32s(m.RNG)
}

func (m *Checkpoint) decode(r *reader) {
	m.RunID = r.str("run id")
	m.RBM = r.int("rbm")
	m.Visible = r.int("visible")
	m.Hidden = r.int("hidden")
	m.Windows = r.int("windows")
	m.Epoch = r.int("epoch")
	m.EpochSSE = r.f64("epoch sse")
	m.EpochElems = r.f64("epoch elems")
	m.EpochEnded = r.bool("epoch ended")
	m.Batches = r.int("batches")
	m.Rows = r.int("rows")
	m.ReconErrors = r.f64s("recon errors")
	m.ReconError = r.f64("recon error")
	m.BusySeconds = r.f64("busy seconds")
	m.WaitInputSeconds = r.f64("wait input seconds")
	m.WaitCreditSeconds = r.f64("wait credit seconds")
	m.W = r.f32s("w")
	m.A = r.f32s("a")
	m.B = r.f32s("b")
	m.VelW = r.f32s("vel w")
	m.VelA = r.f32s("vel a")
	m.VelB = r.f32s("vel b")
	m.RNG = r.u32s("rng")
}

// CheckpointAck tells a slave that the master stored its checkpoint at
// Windows: the slave's producer need no longer keep the windows before it.
type CheckpointAck struct {
	// RunID names the run.
	RunID string
	// RBM is i.
	RBM int
	// Windows is the stored checkpoint's stream position.
	Windows uint64
}

// Kind returns KindCheckpointAck.
func (*CheckpointAck) Kind() Kind { return KindCheckpointAck }

func (m *CheckpointAck) validate() error {
	if m.RBM < 1 {
		return invalid("rbm %d: want >= 1", m.RBM)
	}
	return nil
}

func (m *CheckpointAck) encode(w *writer) {
	w.str(m.RunID)
	w.int(m.RBM)
	w.u64(m.Windows)
}

func (m *CheckpointAck) decode(r *reader) {
	m.RunID = r.str("run id")
	m.RBM = r.int("rbm")
	m.Windows = r.u64("windows")
}

// matrixShape checks that an array of n values holds a rows x cols matrix,
// both dimensions at least 1, without overflowing rows*cols.
func matrixShape(name string, n, rows, cols int) error {
	if rows < 1 || cols < 1 || rows > math.MaxInt/cols || n != rows*cols {
		return shapeErr("%s has %d values, want %d x %d", name, n, rows, cols)
	}
	return nil
}

// nonNegative takes name, value pairs and reports the first negative value.
func nonNegative(pairs ...any) error {
	for i := 0; i+1 < len(pairs); i += 2 {
		if v := pairs[i+1].(int); v < 0 {
			return invalid("%s %d: want >= 0", pairs[i], v)
		}
	}
	return nil
}

func shapeErr(format string, args ...any) error {
	return fmt.Errorf(format+": %w", append(args, ErrShape)...)
}

func invalid(format string, args ...any) error {
	return fmt.Errorf(format+": %w", append(args, ErrInvalid)...)
}
