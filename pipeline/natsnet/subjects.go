// Package natsnet carries pipedbn's protocol (pipeline/protocol) over NATS:
// it drives the master's and the slaves' state machines from NATS
// subscriptions, a clock and their training goroutines, keeps the
// checkpoints in a JetStream object store, and starts an embedded
// nats-server for the no-setup default. It is the only package that imports
// nats.go.
//
// Subjects are keyed by the identity of their publisher, so that a server
// can allow each participant to publish on its own subjects only, and the
// links' by their addressee too, so that each stage replica receives its
// own windows (and each replica of a producer its own credits) only:
//
//	pipedbn.register.<slave>                   slave -> master   Register
//	pipedbn.ctl.<slave>                        master -> slave   Admission, Assign, Checkpoint, CheckpointAck, Stop, Params
//	pipedbn.data.<run>.<producer>.<consumer>   producer -> consumer   Chunk, EndOfStream
//	pipedbn.credit.<run>.<consumer>.<producer> consumer -> producer   Credit
//	pipedbn.report.<run>.<slave>               slave -> master   Status, Checkpoint, Weights, Error, Params
//
// A registration's name must be the one its subject carries (the master
// refuses the rest, protocol.Master.Receive), so that on a secured server,
// where a slave's identity may publish on its own subjects alone, an
// identity can register under its own name only.
//
// The master is the producer of RBM_1's input, under the name "master".
// Every message travels in fragments of at most the server's maximum
// payload (messages.EncodeParts).
package natsnet

import (
	"slices"
	"strings"

	"github.com/pipedbn/pipedbn/messages"
	"github.com/pipedbn/pipedbn/pipeline/protocol"
)

// registerSubject is where slave announces itself.
func registerSubject(slave string) string { return "pipedbn.register." + slave }
func ctlSubject(slave string) string      { return "pipedbn.ctl." + slave }
func dataSubject(run, producer, consumer string) string {
	return "pipedbn.data." + run + "." + producer + "." + consumer
}
func creditSubject(run, consumer, producer string) string {
	return "pipedbn.credit." + run + "." + consumer + "." + producer
}
func reportSubject(run, slave string) string { return "pipedbn.report." + run + "." + slave }

// subjectOf is where an envelope of run goes.
func subjectOf(run string, e protocol.Envelope) string {
	switch e.Msg.(type) {
	case *messages.Register:
		return registerSubject(e.From)
	case *messages.Chunk, *messages.EndOfStream:
		return dataSubject(run, e.From, e.To)
	case *messages.Credit:
		return creditSubject(run, e.From, e.To)
	}
	if e.From == protocol.MasterName {
		return ctlSubject(e.To)
	}
	return reportSubject(run, e.From)
}

// family is a kind of subject: who may send what on it.
type family struct {
	name  string
	kinds []messages.Kind
}

var (
	registers = family{"register", []messages.Kind{messages.KindRegister}}
	controls  = family{"ctl", []messages.Kind{messages.KindAdmission, messages.KindAssign, messages.KindCheckpoint, messages.KindCheckpointAck, messages.KindStop, messages.KindParams}}
	windows   = family{"data", []messages.Kind{messages.KindChunk, messages.KindEndOfStream}}
	credits   = family{"credit", []messages.Kind{messages.KindCredit}}
	reports   = family{"report", []messages.Kind{messages.KindStatus, messages.KindCheckpoint, messages.KindWeights, messages.KindError, messages.KindParams}}
)

func (f family) allows(k messages.Kind) bool { return slices.Contains(f.kinds, k) }

// limits bounds the reassembly of what one sender may send on a subject of
// f, about RBMs of the given shapes (see messages.Limits).
func (f family) limits(shapes ...messages.Shape) messages.ReassemblerConfig {
	return messages.Limits(f.kinds, shapes...)
}

// sender names the sender of a message that arrived on subject: the token
// after the run's, the master on a control subject, the slave a
// registration subject names (not the name in the registration, which the
// master checks against it).
func (f family) sender(subject string) string {
	tokens := strings.Split(subject, ".")
	switch f.name {
	case "ctl":
		return protocol.MasterName
	case "register":
		if len(tokens) != 3 {
			return ""
		}
		return tokens[2]
	}
	if len(tokens) < 4 {
		return ""
	}
	return tokens[3]
}
