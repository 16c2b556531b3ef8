package memnet

import (
	"context"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/pipedbn/pipedbn/pipeline/driver"
	"github.com/pipedbn/pipedbn/pipeline/protocol"
)

// driverConfig is the driver configuration of a process of node nd: the
// network is its transport and its executor.
func (n *Network) driverConfig(nd *node, log hclog.Logger) driver.Config {
	return driver.Config{
		Transport: transport{n}, Executor: &executor{n: n, nd: nd}, Store: n.store, Logger: log,
		// The network restarts the lost process at once, and ignores a
		// call-off: the process it crashed cannot speak again.
		Respawn: func(_ context.Context, _ int, lost string) error {
			n.respawn(lost)
			return nil
		},
	}
}

// transport sends on the network and keeps its time.
type transport struct{ n *Network }

func (t transport) Send(_ string, e protocol.Envelope) { t.n.send(e) }
func (t transport) Now() time.Duration                 { return t.n.now }

// executor runs the work of one process of node nd (the process whose
// driver is nd.drv when the work begins). Simulated, a window takes
// JobTime and a store operation StoreTime of the network's time; live, a
// window trains on a goroutine of its own and a store operation at once.
// A respawn happens at once.
type executor struct {
	n  *Network
	nd *node
}

func (x *executor) Go(w driver.Work, fn, done func()) {
	n, nd := x.n, x.nd
	drv := nd.drv
	end := func() {
		done()
		if nd.drv == drv {
			n.flush(nd)
		}
	}
	switch {
	case w == driver.TrainWork && n.opt.Simulated:
		n.at(n.now+n.opt.JobTime, func() { fn(); end() })
	case w == driver.TrainWork:
		n.running++
		go func() { fn(); n.jobs <- end }()
	case w == driver.StoreWork && n.opt.Simulated:
		n.at(n.now+n.opt.StoreTime, func() { fn(); end() })
	default:
		fn()
		end()
	}
}
