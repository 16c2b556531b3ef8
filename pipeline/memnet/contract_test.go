package memnet

import (
	"context"
	"testing"
	"time"

	"github.com/pipedbn/pipedbn/pipeline/driver"
	"github.com/pipedbn/pipedbn/pipeline/driver/drivertest"
	"github.com/pipedbn/pipedbn/pipeline/protocol"
)

// contractNetwork is memnet as the driver's contract sees it: per script,
// a network with no processes of its own, whose nodes the scripts make
// over its transport and executor. The network delivers to a node a script
// drives, and carries out what it asks for after its work, from its event
// queue, as to its own processes; Settle runs the queue (and, live, the
// training goroutines) until nothing is left to happen.
func contractNetwork(simulated bool) drivertest.Network {
	return func(t *testing.T) drivertest.Net {
		n := New(protocol.MasterConfig{}, nil, Options{Simulated: simulated, Timing: protocol.DefaultTiming(time.Minute, time.Second)})
		n.start = time.Now()
		return drivertest.Net{
			Node: func(name string) drivertest.Node {
				inbox := make(chan driver.Delivery, 16)
				nd := &node{name: name, alive: true, inbox: inbox}
				n.nodes[name] = nd
				c := n.driverConfig(nd, n.log)
				return drivertest.Node{Transport: c.Transport, Executor: c.Executor, Inbox: inbox, Drive: func(d *driver.Node) { nd.drv = d }}
			},
			Settle: func() {
				for len(n.queue) > 0 || n.running > 0 {
					if err := n.step(context.Background()); err != nil {
						t.Fatal(err)
					}
				}
				if n.err != nil {
					t.Fatal(n.err)
				}
			},
		}
	}
}

// The driver's contract (drivertest) holds over memnet, simulated and
// live: its transport delivers a master's message to its slave, and its
// executor runs a window, a store operation and a respawn, and then what
// the node asks for after them.
func TestOutputContract(t *testing.T) {
	t.Run("simulated", func(t *testing.T) { drivertest.Run(t, contractNetwork(true)) })
	t.Run("live", func(t *testing.T) { drivertest.Run(t, contractNetwork(false)) })
}
