package messages

import (
	"fmt"
	"math"
	"strings"
)

// Kind identifies the type of a Message on the wire. The zero Kind is
// invalid, so an unset kind byte never decodes.
type Kind uint8

// The message kinds, each described, with the routes it travels, in
// kindInfo. Their numbers are part of the wire format: append new kinds at
// the end, never reorder, and never reuse a retired number.
const (
	KindRegister Kind = iota + 1
	KindAssign
	KindChunk
	kindRetired4 // end-of-epoch until format 2; Decode rejects it
	KindEndOfStream
	KindCredit
	KindStatus
	KindWeights
	KindError
	kindRetired10 // heartbeat until format 2; Decode rejects it
	KindStop
	KindCheckpoint
	KindCheckpointAck
	KindAdmission
	KindParams
	kindEnd // one past the last kind
)

// Route is a way messages travel between the master and the slaves; a set
// of them where a kind travels more than one. A transport may give each
// route its own channel (NATS: its own subjects) and accept on it the
// kinds KindsOn lists only.
type Route uint8

const (
	// Join is a slave's way to the master before it has a place in a run.
	Join Route = 1 << iota
	// Control is the master's way to one slave.
	Control
	// Report is a slave's way to the master within a run.
	Report
	// Downstream is a link's way from producer to consumer (the master
	// is RBM_1's producer): the windows.
	Downstream
	// Upstream is a link's way from consumer to producer: the credits.
	Upstream
	routeEnd
)

var routeNames = [...]string{"join", "control", "report", "downstream", "upstream"}

// String names the routes of r joined by "+", such as "control+report",
// or "none".
func (r Route) String() string {
	var names []string
	for i, n := range routeNames {
		if r&(1<<i) != 0 {
			names = append(names, n)
		}
	}
	if r >= routeEnd {
		names = append(names, fmt.Sprintf("Route(%#x)", uint8(r&^(routeEnd-1))))
	}
	if len(names) == 0 {
		return "none"
	}
	return strings.Join(names, "+")
}

// kindInfo is each kind in use: its name, the routes it travels and a new
// zero message of it. Retired kinds have none.
var kindInfo = [...]struct {
	name   string
	routes Route
	new    func() Message
}{
	KindRegister:      {"register", Join, func() Message { return new(Register) }},                 // a slave joins
	KindAssign:        {"assign", Control, func() Message { return new(Assign) }},                  // train RBM_i
	KindChunk:         {"chunk", Downstream, func() Message { return new(Chunk) }},                 // a window: middle result and B_i
	KindEndOfStream:   {"end-of-stream", Downstream, func() Message { return new(EndOfStream) }},   // no more windows
	KindCredit:        {"credit", Upstream, func() Message { return new(Credit) }},                 // flow control
	KindStatus:        {"status", Report, func() Message { return new(Status) }},                   // progress
	KindWeights:       {"weights", Report, func() Message { return new(Weights) }},                 // the trained RBM
	KindError:         {"error", Report, func() Message { return new(Error) }},                     // training failed or stopped
	KindStop:          {"stop", Control, func() Message { return new(Stop) }},                      // abandon the run
	KindCheckpoint:    {"checkpoint", Report | Control, func() Message { return new(Checkpoint) }}, // RBM_i's state, on to a replacement slave
	KindCheckpointAck: {"checkpoint-ack", Control, func() Message { return new(CheckpointAck) }},   // a checkpoint is stored
	KindAdmission:     {"admission", Control, func() Message { return new(Admission) }},            // the answer to a Register
	KindParams:        {"params", Report | Control, func() Message { return new(Params) }},         // a replica's parameters to average, and the mean back
}

// Kinds returns the kinds in use, in number order: not the retired ones.
func Kinds() []Kind {
	var ks []Kind
	for k := range kindEnd {
		if k.valid() {
			ks = append(ks, k)
		}
	}
	return ks
}

// KindsOn returns the kinds that travel route r (any of its routes, for a
// set), in number order.
func KindsOn(r Route) []Kind {
	var ks []Kind
	for _, k := range Kinds() {
		if k.Routes()&r != 0 {
			ks = append(ks, k)
		}
	}
	return ks
}

// Routes returns the routes messages of kind k travel; 0 for an unknown or
// retired kind.
func (k Kind) Routes() Route {
	if k.valid() {
		return kindInfo[k].routes
	}
	return 0
}

// String returns the kind's lower-case name, such as "chunk", or "Kind(N)"
// for an unknown or retired kind.
func (k Kind) String() string {
	if k.valid() {
		return kindInfo[k].name
	}
	return fmt.Sprintf("Kind(%d)", uint8(k))
}

func (k Kind) valid() bool { return k < kindEnd && kindInfo[k].name != "" }

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
	if k.valid() {
		return kindInfo[k].new()
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

// paramsShape checks the parameters a Params, Weights or Checkpoint
// carries, lengths w, a and b: RBM_i's W (visible x hidden), A (visible)
// and B (hidden); or, with hidden 0, a flat parameter vector of visible
// values in W with A and B empty: the network of data-parallel
// fine-tuning (finetune.Network.Params's layout).
func paramsShape(w, a, b, visible, hidden int) error {
	if hidden == 0 {
		if visible < 1 || w != visible || a != 0 || b != 0 {
			return shapeErr("w, a, b of %d, %d, %d values, want a flat vector of %d in w, a and b empty", w, a, b, visible)
		}
		return nil
	}
	if err := matrixShape("w", w, visible, hidden); err != nil {
		return err
	}
	if a != visible || b != hidden {
		return shapeErr("len(a), len(b) = %d, %d, want visible, hidden = %d, %d", a, b, visible, hidden)
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
