package messages

import (
	"fmt"
	"math"
)

// This file holds what a slave reports to the master: progress (Status),
// the result (Weights), failure or a stop on request (Error), and its state
// for a replacement (Checkpoint, answered by CheckpointAck).

// State is what a slave is doing, as reported in Status.
type State uint8

// The slave states. Their numbers are part of the wire format.
const (
	StateIdle           State = iota // registered, no RBM assigned yet
	StateTraining                    // running CD-k on a mini-batch
	StateWaitingInput                // RBM_i, i > 1: waiting for a Chunk from slave i-1
	StateWaitingCredit               // waiting for Credit from slave i+1 before sending
	StateDone                        // all epochs trained, Weights sent
	StateFailed                      // gave up; an Error message says why
	StateWaitingAverage              // a stage replica: waiting for the replicas' average (Params)
	stateEnd
)

var stateNames = [...]string{
	StateIdle:           "idle",
	StateTraining:       "training",
	StateWaitingInput:   "waiting-input",
	StateWaitingCredit:  "waiting-credit",
	StateDone:           "done",
	StateFailed:         "failed",
	StateWaitingAverage: "waiting-average",
}

// String returns the state's lower-case name, such as "waiting-input", or
// "State(N)" for an unknown state.
func (s State) String() string {
	if s < stateEnd {
		return stateNames[s]
	}
	return fmt.Sprintf("State(%d)", uint8(s))
}

// Status is a slave's progress report to the master.
type Status struct {
	// RunID names the run; empty before the slave is assigned.
	RunID string
	// Incarnation is the run's incarnation, as in Assign.
	Incarnation uint32
	// RBM is the index of the slave's RBM, 0 before it is assigned, and
	// Replica its place among the RBM's replicas.
	RBM, Replica int
	// Slave is the slave's name.
	Slave string
	// Process is the slave process's Process, as in Register.
	Process uint64
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
	// BytesIn and BytesOut are the bytes of the windows the slave took
	// from below and sent above so far, each chunk at its length in the
	// wire format (Chunk.EncodedSize; no transport's framing): every window
	// once, however many times it travelled (sent again, received twice).
	// They count from the slave's start: a replacement counts the windows
	// from the checkpoint it resumed at.
	BytesIn, BytesOut uint64
	// Rejected counts, by reason, what the slave's input link dropped so
	// far.
	Rejected Rejections
	// Upstream and Downstream name the neighbours the slave links to now,
	// as in Assign, so that the master sees a relink that did not arrive.
	Upstream, Downstream []string
}

// Kind returns KindStatus.
func (*Status) Kind() Kind { return KindStatus }

func (m *Status) validate() error {
	if m.State >= stateEnd {
		return invalid("state %v", m.State)
	}
	return nonNegative("rbm", m.RBM, "replica", m.Replica, "epoch", m.Epoch, "batches", m.Batches)
}

func (m *Status) fields(c *coder) {
	c.run(&m.RunID, &m.Incarnation)
	c.int(&m.RBM, "rbm")
	c.int(&m.Replica, "replica")
	c.str(&m.Slave, "slave")
	c.u64(&m.Process, "process")
	c.u8((*uint8)(&m.State), "state")
	c.int(&m.Epoch, "epoch")
	c.int(&m.Batches, "batches")
	c.f64(&m.ReconError, "recon error")
	c.f64s(&m.ReconErrors, "recon errors")
	c.f64(&m.BusySeconds, "busy seconds")
	c.f64(&m.WaitSeconds, "wait seconds")
	c.u64(&m.BytesIn, "bytes in")
	c.u64(&m.BytesOut, "bytes out")
	c.strs(&m.Upstream, "upstream")
	c.strs(&m.Downstream, "downstream")
	// Last, so that a list of another length changes nothing before it.
	c.rejections(&m.Rejected, "rejected")
}

// Weights is a slave's trained RBM_i, sent to the master after the last
// epoch, with the statistics that go into the run's result.
type Weights struct {
	// RunID names the run.
	RunID string
	// Incarnation is the run's incarnation, as in Assign.
	Incarnation uint32
	// RBM is i, the index of the RBM, and Replica the slave's place among
	// its replicas.
	RBM, Replica int
	// Visible and Hidden are the sizes of L_(i-1) and L_i; Hidden 0: W
	// holds the flat parameter vector of Visible values of the network of
	// data-parallel fine-tuning, and A and B are empty.
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
	// BytesIn and BytesOut are the bytes of every window the slave took
	// from below and sent above, as in Status: its last window included.
	// The master sums those of a stage group's replicas.
	BytesIn, BytesOut uint64
}

// Kind returns KindWeights.
func (*Weights) Kind() Kind { return KindWeights }

func (m *Weights) validate() error {
	if m.RBM < 1 {
		return invalid("rbm %d: want >= 1", m.RBM)
	}
	if err := paramsShape(len(m.W), len(m.A), len(m.B), m.Visible, m.Hidden); err != nil {
		return err
	}
	return nonNegative("replica", m.Replica, "batches", m.Batches)
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

func (m *Weights) fields(c *coder) {
	c.run(&m.RunID, &m.Incarnation)
	c.int(&m.RBM, "rbm")
	c.int(&m.Replica, "replica")
	c.int(&m.Visible, "visible")
	c.int(&m.Hidden, "hidden")
	c.f32s(&m.W, "w")
	c.f32s(&m.A, "a")
	c.f32s(&m.B, "b")
	c.f64s(&m.ReconErrors, "recon errors")
	c.int(&m.Batches, "batches")
	c.f64(&m.BusySeconds, "busy seconds")
	c.f64(&m.WaitSeconds, "wait seconds")
	c.u64(&m.BytesIn, "bytes in")
	c.u64(&m.BytesOut, "bytes out")
}

// Error reports that a slave failed, or stopped on request. It is a
// message, not a Go error.
type Error struct {
	// RunID names the run.
	RunID string
	// Incarnation is the run's incarnation, as in Assign.
	Incarnation uint32
	// RBM is the index of the failed slave's RBM, 0 if none was assigned,
	// and Replica its place among the RBM's replicas.
	RBM, Replica int
	// Text says what went wrong, or why the slave stopped.
	Text string
	// Stopped says the slave did not fail but stopped on request (a signal,
	// or the master's Stop), after leaving a checkpoint when it could: to
	// the master it is a lost slave to replace, not a failed run.
	Stopped bool
}

// Kind returns KindError.
func (*Error) Kind() Kind { return KindError }

func (m *Error) validate() error { return nonNegative("rbm", m.RBM, "replica", m.Replica) }

func (m *Error) fields(c *coder) {
	c.run(&m.RunID, &m.Incarnation)
	c.int(&m.RBM, "rbm")
	c.int(&m.Replica, "replica")
	c.str(&m.Text, "text")
	c.bool(&m.Stopped, "stopped")
}

// Checkpoint is RBM_i's training state after a window: its parameters,
// momentum, sampling generator and statistics, and its stream position. A
// slave sends one to the master every C windows; the master stores it and
// hands it to the slave that replaces a lost one, which resumes exactly
// there.
type Checkpoint struct {
	// RunID names the run.
	RunID string
	// Incarnation is the run's incarnation, as in Assign.
	Incarnation uint32
	// RBM is i, Replica the slave's place among its replicas; Visible and
	// Hidden the sizes of L_(i-1) and L_i (Hidden 0: a flat parameter
	// vector of Visible values in W, as in Weights).
	RBM, Replica, Visible, Hidden int
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
	// VelWCarry is the momentum VelW already carries (0: none; see
	// rbm.TrainerState).
	VelWCarry float64
	// RNG is the sampling generator's state, 64 words.
	RNG []uint32
	// BlockStep, for a network whose replicas average with block momentum
	// (Assign.BlockMomentum), is the step from the average before the
	// last to the last, as long as W; empty otherwise.
	BlockStep []float32
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
	if err := paramsShape(len(m.W), len(m.A), len(m.B), m.Visible, m.Hidden); err != nil {
		return err
	}
	if len(m.VelW) != len(m.W) || len(m.VelA) != len(m.A) || len(m.VelB) != len(m.B) {
		return shapeErr("vel_w, vel_a, vel_b of %d, %d, %d values for w, a, b of %d, %d, %d", len(m.VelW), len(m.VelA), len(m.VelB), len(m.W), len(m.A), len(m.B))
	}
	if c := m.VelWCarry; math.IsNaN(c) || math.Abs(c) > math.MaxFloat32 {
		return invalid("vel w carry %g: want a finite float32", c)
	}
	if len(m.BlockStep) != 0 && len(m.BlockStep) != len(m.W) {
		return shapeErr("block step of %d values for w of %d", len(m.BlockStep), len(m.W))
	}
	if len(m.RNG) != CheckpointRNGWords {
		return shapeErr("rng of %d words, want %d", len(m.RNG), CheckpointRNGWords)
	}
	return nonNegative("replica", m.Replica, "windows", m.Windows, "epoch", m.Epoch, "batches", m.Batches, "rows", m.Rows)
}

// Check reports whether c is a consistent checkpoint of replica replica of
// RBM_rbm of run runID with the given shape; errors wrap ErrMismatch or
// ErrShape.
func (m *Checkpoint) Check(runID string, rbm, replica, visible, hidden int) error {
	if m.RunID != runID || m.RBM != rbm || m.Replica != replica {
		return fmt.Errorf("checkpoint of run %q rbm %d replica %d, want %q rbm %d replica %d: %w", m.RunID, m.RBM, m.Replica, runID, rbm, replica, ErrMismatch)
	}
	if m.Windows > 0 && (m.Visible != visible || m.Hidden != hidden) {
		return fmt.Errorf("checkpoint of rbm %d: %d x %d, want %d x %d: %w", m.RBM, m.Visible, m.Hidden, visible, hidden, ErrShape)
	}
	return m.validate()
}

func (m *Checkpoint) fields(c *coder) {
	c.run(&m.RunID, &m.Incarnation)
	c.int(&m.RBM, "rbm")
	c.int(&m.Replica, "replica")
	c.int(&m.Visible, "visible")
	c.int(&m.Hidden, "hidden")
	c.int(&m.Windows, "windows")
	c.int(&m.Epoch, "epoch")
	c.f64(&m.EpochSSE, "epoch sse")
	c.f64(&m.EpochElems, "epoch elems")
	c.bool(&m.EpochEnded, "epoch ended")
	c.int(&m.Batches, "batches")
	c.int(&m.Rows, "rows")
	c.f64s(&m.ReconErrors, "recon errors")
	c.f64(&m.ReconError, "recon error")
	c.f64(&m.BusySeconds, "busy seconds")
	c.f64(&m.WaitInputSeconds, "wait input seconds")
	c.f64(&m.WaitCreditSeconds, "wait credit seconds")
	c.f32s(&m.W, "w")
	c.f32s(&m.A, "a")
	c.f32s(&m.B, "b")
	c.f32s(&m.VelW, "vel w")
	c.f32s(&m.VelA, "vel a")
	c.f32s(&m.VelB, "vel b")
	c.f64(&m.VelWCarry, "vel w carry")
	c.u32s(&m.RNG, "rng")
	c.f32s(&m.BlockStep, "block step")
}

// CheckpointAck tells a slave that the master stored its checkpoint at
// Windows, and that no restart of its RBM will start before Durable: its
// producer need no longer keep the windows before Durable.
type CheckpointAck struct {
	// RunID names the run.
	RunID string
	// Incarnation is the run's incarnation, as in Assign.
	Incarnation uint32
	// RBM is i, and Replica the slave's place among its replicas.
	RBM, Replica int
	// Windows is the stored checkpoint's stream position.
	Windows uint64
	// Durable is the RBM's keep point: every restart of it starts at a
	// checkpoint at or after Durable windows.
	Durable uint64
}

// Kind returns KindCheckpointAck.
func (*CheckpointAck) Kind() Kind { return KindCheckpointAck }

func (m *CheckpointAck) validate() error {
	if m.RBM < 1 {
		return invalid("rbm %d: want >= 1", m.RBM)
	}
	return nonNegative("replica", m.Replica)
}

func (m *CheckpointAck) fields(c *coder) {
	c.run(&m.RunID, &m.Incarnation)
	c.int(&m.RBM, "rbm")
	c.int(&m.Replica, "replica")
	c.u64(&m.Windows, "windows")
	c.u64(&m.Durable, "durable")
}
