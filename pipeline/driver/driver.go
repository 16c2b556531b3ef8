// Package driver runs a protocol machine (protocol.Master, protocol.Slave)
// over any transport, as etcd's raft applications drive a RawNode: feed it
// inputs (messages delivered, ticks of the transport's clock, trained
// windows, finished store operations), call Ready, and carry out every
// field of the Output it returns (send the messages, train the window,
// store, load or delete checkpoints one at a time, restart lost slaves or
// call their restart off). The transports (pipeline/natsnet over NATS,
// pipeline/memnet in memory) only move envelopes and keep time: a Node
// does the rest, the same for all of them, and records the run's
// recoveries.
//
// A Node is not safe for concurrent use: one loop owns it. Node.Run is the
// real-time loop of one process (NATS); memnet calls a Node's inputs from
// its event queue instead, with an Executor of its own.
package driver

import (
	"time"

	"github.com/pipedbn/pipedbn/messages"
	"github.com/pipedbn/pipedbn/pipeline/protocol"
)

// Transport is what a Node needs of the network its machine speaks on.
type Transport interface {
	// Send sends e, of the run named run, to its addressee. A message that
	// cannot go out now is dropped: the protocol sends again what matters.
	Send(run string, e protocol.Envelope)
	// Now is the node's clock, the machines' time.
	Now() time.Duration
}

// Linker is a Transport that must be told a slave's neighbours: after
// every output, Follow gets the producers (up) and the consumers (down) of
// the slave's links in run, "" where it has none, and takes their messages
// from then on, and no others'.
type Linker interface {
	Follow(run string, up, down []string) error
}

// Work is a kind of work an Executor runs off the node's loop.
type Work int

// The kinds of work.
const (
	// TrainWork trains a window (Output.Job).
	TrainWork Work = iota
	// StoreWork stores, loads or deletes a checkpoint (Output.Store).
	StoreWork
	// RespawnWork restarts a lost slave (Output.Respawn).
	RespawnWork
)

// Executor runs a node's slow work: it calls fn, off the loop or at a
// later moment of a simulated clock, and then done on the node's loop.
// done is called at most once; not at all when the node stops first.
type Executor interface {
	Go(w Work, fn, done func())
}

// Delivery is what a transport hands a node: a message, the rejection of
// input it could not read, or news that a window is on its way.
type Delivery struct {
	Env protocol.Envelope
	// Rejected input, for the reason Reason; Link: it came on a link (a
	// window subject), and counts against the slave's input link.
	Rejected bool
	Reason   messages.RejectReason
	Link     bool
	// Arriving: a part of a window came, not the whole yet.
	Arriving bool
	// Size is the bytes the transport holds for it until it is taken.
	Size int
}
