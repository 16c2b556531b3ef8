package messages

import (
	"fmt"
	"math"
)

// Kind identifies the type of a Message on the wire. The zero Kind is
// invalid, so an unset kind byte never decodes.
type Kind uint8

// The message kinds. Their numbers are part of the wire format: append new
// kinds at the end, never reorder, and never reuse a retired number.
const (
	KindRegister      Kind = iota + 1 // slave -> master: a slave joins
	KindAssign                        // master -> slave: train RBM_i
	KindChunk                         // slave i -> slave i+1: middle result and B_i
	kindRetired4                      // end-of-epoch until format 2; Decode rejects it
	KindEndOfStream                   // slave i -> slave i+1: no more windows
	KindCredit                        // slave i+1 -> slave i: flow control
	KindStatus                        // slave -> master: progress
	KindWeights                       // slave -> master: the trained RBM
	KindError                         // slave -> master: training failed or stopped
	kindRetired10                     // heartbeat until format 2; Decode rejects it
	KindStop                          // master -> slaves: abandon the run
	KindCheckpoint                    // slave -> master -> replacement slave: RBM_i's state
	KindCheckpointAck                 // master -> slave: a checkpoint is stored
	KindAdmission                     // master -> slave: the answer to a Register
	KindParams                        // replica -> master -> replicas: parameters to average
	kindEnd                           // one past the last kind
)

// kindNames names the kinds in use; retired kinds have none.
var kindNames = [...]string{
	KindRegister:      "register",
	KindAssign:        "assign",
	KindChunk:         "chunk",
	KindEndOfStream:   "end-of-stream",
	KindCredit:        "credit",
	KindStatus:        "status",
	KindWeights:       "weights",
	KindError:         "error",
	KindStop:          "stop",
	KindCheckpoint:    "checkpoint",
	KindCheckpointAck: "checkpoint-ack",
	KindAdmission:     "admission",
	KindParams:        "params",
}

// String returns the kind's lower-case name, such as "chunk", or "Kind(N)"
// for an unknown or retired kind.
func (k Kind) String() string {
	if k.valid() {
		return kindNames[k]
	}
	return fmt.Sprintf("Kind(%d)", uint8(k))
}

func (k Kind) valid() bool { return k < kindEnd && kindNames[k] != "" }

// Message is one thing master and slaves say to each other: a pointer to one
// of the structs of this package (*Register, *Assign, *Chunk, ...). The
// interface is sealed: only this package's types implement it.
type Message interface {
	// Kind returns the message's kind; it is safe on a nil pointer.
	Kind() Kind

	// validate reports what makes the message inconsistent (wrapping
	// ErrShape or ErrInvalid), or nil.
	validate() error
	// fields lists the body's fields, in wire order, to c, which writes
	// or reads them.
	fields(c *coder)
}

// newMessage returns a zero message of kind k, or nil for an unknown or
// retired kind.
func newMessage(k Kind) Message {
	switch k {
	case KindRegister:
		return new(Register)
	case KindAssign:
		return new(Assign)
	case KindChunk:
		return new(Chunk)
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
	case KindStop:
		return new(Stop)
	case KindCheckpoint:
		return new(Checkpoint)
	case KindCheckpointAck:
		return new(CheckpointAck)
	case KindAdmission:
		return new(Admission)
	case KindParams:
		return new(Params)
	}
	return nil
}

// run codes the fields that open every message of a run: its RunID and
// Incarnation.
func (c *coder) run(runID *string, incarnation *uint32) {
	c.str(runID, "run id")
	c.u32(incarnation, "incarnation")
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
