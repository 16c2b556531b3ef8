package drivertest_test

import (
	"sync"
	"testing"
	"time"

	"github.com/pipedbn/pipedbn/pipeline/driver"
	"github.com/pipedbn/pipedbn/pipeline/driver/drivertest"
	"github.com/pipedbn/pipedbn/pipeline/protocol"
)

// hub is the least transport: a channel per node, which Send fills.
type hub struct {
	mu    sync.Mutex
	boxes map[string]chan driver.Delivery
}

type port struct{ h *hub }

func (p port) Send(_ string, e protocol.Envelope) {
	p.h.mu.Lock()
	box := p.h.boxes[e.To]
	p.h.mu.Unlock()
	if box != nil {
		box <- driver.Delivery{Env: e}
	}
}

func (port) Now() time.Duration { return 0 }

// hubNetwork is a hub per script; with peers, its nodes are the peers of
// one process too.
func hubNetwork(peers bool) drivertest.Network {
	return func(t *testing.T) drivertest.Net {
		h := &hub{boxes: map[string]chan driver.Delivery{}}
		var p *driver.Peers
		if peers {
			p = driver.NewPeers()
		}
		return drivertest.Net{Node: func(name string) drivertest.Node {
			box := make(chan driver.Delivery, 16)
			h.mu.Lock()
			h.boxes[name] = box
			h.mu.Unlock()
			if p != nil {
				p.Add(name, box)
			}
			return drivertest.Node{Transport: port{h}, Inbox: box, Peers: p}
		}}
	}
}

// The scripts pass over a transport that only moves envelopes: what they
// ask of a transport is no more than that.
func TestOutputContractOverAHub(t *testing.T) {
	drivertest.Run(t, hubNetwork(false))
}

// With the nodes of one process as peers (a stage group in the master's
// process), a window to a peer is handed over in memory, and the rest goes
// through the hub.
func TestOutputContractOverPeers(t *testing.T) {
	drivertest.Run(t, hubNetwork(true))
}
