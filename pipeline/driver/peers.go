package driver

import (
	"sync"

	"github.com/pipedbn/pipedbn/messages"
	"github.com/pipedbn/pipedbn/pipeline/protocol"
)

// Peers are the nodes of one process that hand each other their link
// messages in memory: the slaves of a stage group, and the master when the
// group runs inside the master's process (its data windows to RBM_1 and
// their credits). The zero value is not ready: use NewPeers.
type Peers struct {
	mu    sync.RWMutex
	nodes map[string]chan<- Delivery
}

// NewPeers returns an empty set of peers.
func NewPeers() *Peers { return &Peers{nodes: map[string]chan<- Delivery{}} }

// Add makes the node name, which takes its deliveries from inbox, a peer.
func (p *Peers) Add(name string, inbox chan<- Delivery) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.nodes[name] = inbox
}

// Remove takes the node name, of inbox, out of the peers.
func (p *Peers) Remove(name string, inbox chan<- Delivery) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.nodes[name] == inbox {
		delete(p.nodes, name)
	}
}

// Hand delivers e, from the peer from, to its addressee's inbox in memory
// when e is a link message (a window, the end of a stream, a credit) to
// another peer, or a checkpoint to the master running the group, and the
// inbox has room; otherwise (a full inbox, a node elsewhere) it reports
// false and e goes through the transport. The message is shared, not copied: nothing changes a message
// once sent (the producer keeps it for resends as it is, and a checkpoint
// holds a snapshot of its stage), as in memnet.
//
// A checkpoint handed over is neither encoded by the slave nor decoded by
// the master: 3 to 8 MB for the quickstart DBN's RBMs, every C windows, on
// the CPUs that train.
func (p *Peers) Hand(from string, e protocol.Envelope) bool {
	switch e.Msg.(type) {
	case *messages.Chunk, *messages.EndOfStream, *messages.Credit:
	case *messages.Checkpoint:
		if e.To != protocol.MasterName {
			return false
		}
	default:
		return false
	}
	p.mu.RLock()
	to, ok := p.nodes[e.To]
	p.mu.RUnlock()
	if !ok || e.To == from {
		return false
	}
	select {
	case to <- Delivery{Env: protocol.Envelope{From: from, To: e.To, Msg: e.Msg}}:
		return true
	default:
		return false
	}
}
