package driver

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/pipedbn/pipedbn/pipeline/protocol"
)

// Config is what a Node drives its machine with.
type Config struct {
	// Transport sends the machine's messages and keeps its time.
	Transport Transport
	// Executor runs the node's jobs, store operations and respawns; nil:
	// Run's own, on goroutines.
	Executor Executor
	// Peers, if set, are the nodes of this process: link messages to one
	// of them are handed over in memory before the transport is asked
	// (see Peers.Hand).
	Peers *Peers
	// Store keeps a master's checkpoints and weights; nil: a fresh
	// protocol.MemStore.
	Store protocol.Store
	// StoreRetry, if positive, is how long a master waits before it tries
	// again a checkpoint its store did not take; 0: a failed store aborts
	// the run.
	StoreRetry time.Duration
	// Respawn, if set, restarts the lost slave of RBM rbm, where the
	// transport runs its slaves; its ctx is done when the master takes the
	// lost slave back (Output.Back) or the node stops. An error aborts
	// the run.
	Respawn func(ctx context.Context, rbm int, lost string) error
	// Logger receives the node's log lines; nil discards them.
	Logger hclog.Logger
}

// Node runs one protocol machine: a master or a slave.
type Node struct {
	name   string
	run    string // the master's run; a slave's comes with its links
	master *protocol.Master
	slave  *protocol.Slave
	// ready is the machine's Ready (a script's, in tests).
	ready  func() protocol.Output
	timing protocol.Timing
	cfg    Config
	log    hclog.Logger
	life   context.Context
	end    context.CancelFunc
	// stopped: the process is gone, and what it started is ignored.
	stopped  bool
	training bool
	store    *storer
	// callOff holds, per RBM, the call-off of its slave's restart.
	callOff    map[int]context.CancelFunc
	recoveries []protocol.Recovery
}

func newNode(name string, t protocol.Timing, c Config) *Node {
	if c.Logger == nil {
		c.Logger = hclog.NewNullLogger()
	}
	n := &Node{name: name, timing: t, cfg: c, log: c.Logger, callOff: map[int]context.CancelFunc{}}
	n.life, n.end = context.WithCancel(context.Background())
	return n
}

// NewMaster returns a node running a master of cfg. It records every
// recovery (Recoveries) before cfg's Observer sees it.
func NewMaster(cfg protocol.MasterConfig, c Config) (*Node, error) {
	n := newNode(protocol.MasterName, cfg.Timing, c)
	if n.cfg.Store == nil {
		n.cfg.Store = protocol.NewMemStore()
	}
	n.store = &storer{store: n.cfg.Store, retry: n.cfg.StoreRetry, log: n.log}
	seen := cfg.Observer.Recovered
	cfg.Observer.Recovered = func(r protocol.Recovery) {
		n.recoveries = append(n.recoveries, r)
		if seen != nil {
			seen(r)
		}
	}
	m, err := protocol.NewMaster(cfg)
	if err != nil {
		return nil, err
	}
	n.master, n.run, n.ready = m, cfg.Run.ID, m.Ready
	return n, nil
}

// Script makes the node carry out what ready returns instead of its
// machine's Ready; nil gives the machine back. The contract's scripts
// (pipeline/driver/drivertest) emit one field of protocol.Output at a time
// with it, over a transport's nodes.
func (n *Node) Script(ready func() protocol.Output) {
	switch {
	case ready != nil:
		n.ready = ready
	case n.master != nil:
		n.ready = n.master.Ready
	default:
		n.ready = n.slave.Ready
	}
}

// Busy reports whether the node trains a window or has store operations
// waiting or under way.
func (n *Node) Busy() bool { return n.training || (n.store != nil && !n.store.idle()) }

// NewSlave returns a node running a slave of cfg.
func NewSlave(cfg protocol.SlaveConfig, c Config) (*Node, error) {
	n := newNode(cfg.Name, cfg.Timing, c)
	s, err := protocol.NewSlave(cfg)
	if err != nil {
		return nil, err
	}
	n.slave, n.ready = s, s.Ready
	return n, nil
}

// Outcome is the end of a master's Run that ended with err: the RBMs it
// trained, in order, or the error; an interrupt that ctx's end caused ends
// it with ctx's error. It logs the messages the master dropped, if any.
func (n *Node) Outcome(ctx context.Context, err error) ([]protocol.Trained, error) {
	if r := n.master.Rejections(); r.Total() > 0 {
		n.log.Warn("the master dropped messages", "rejected", r.String())
	}
	if err != nil {
		if errors.Is(err, protocol.ErrInterrupted) && ctx.Err() != nil {
			return nil, ctx.Err()
		}
		return nil, err
	}
	return n.master.Trained(), nil
}

// Master returns the node's master; nil on a slave.
func (n *Node) Master() *protocol.Master { return n.master }

// Slave returns the node's slave; nil on a master.
func (n *Node) Slave() *protocol.Slave { return n.slave }

// Name is the node's name on the wire.
func (n *Node) Name() string { return n.name }

// Recoveries returns the lost slaves a master replaced, in order.
func (n *Node) Recoveries() []protocol.Recovery { return n.recoveries }

// Now is the node's time.
func (n *Node) Now() time.Duration { return n.cfg.Transport.Now() }

// Done reports whether the machine is over, and its error.
func (n *Node) Done() (bool, error) {
	if n.master != nil {
		return n.master.Done()
	}
	return n.slave.Done()
}

// Stop ends the node's process: what it started (jobs, store operations,
// restarts) is called off or ignored.
func (n *Node) Stop() {
	n.stopped = true
	n.end()
}

// Start starts the machine.
func (n *Node) Start() {
	if n.master != nil {
		n.master.Start(n.Now())
	} else {
		n.slave.Start(n.Now())
	}
}

// Deliver hands the machine what the transport delivered.
func (n *Node) Deliver(d Delivery) {
	now := n.Now()
	switch {
	case n.master != nil && d.Arriving:
		// The master consumes no windows.
	case n.master != nil && d.Rejected:
		n.master.Rejected(d.Reason)
	case n.master != nil:
		n.master.Receive(now, d.Env)
	case d.Arriving:
		n.slave.Arriving(now)
	case d.Rejected && d.Link:
		n.slave.Rejected(d.Reason)
	case d.Rejected:
		// Unreadable control or credit input: the transport logged it,
		// and it counts against no input link.
	default:
		n.slave.Receive(now, d.Env)
	}
}

// Tick runs the machine's timers.
func (n *Node) Tick() {
	if n.master != nil {
		n.master.Tick(n.Now())
	} else {
		n.slave.Tick(n.Now())
	}
}

// Interrupt asks the machine to stop, leaving checkpoints; a slave gives
// reason as its cause.
func (n *Node) Interrupt(reason error) {
	if n.master != nil {
		n.master.Interrupt(n.Now())
	} else {
		n.slave.Interrupt(n.Now(), reason)
	}
}

// Connection tells a master that its connection to the network went down
// or came back up. Going down also ends the store operation under way: the
// acks of what it sent are lost with the server, and it tries again.
func (n *Node) Connection(up bool) {
	if n.master == nil {
		return
	}
	if !up {
		n.store.connectionLost()
	}
	n.master.Connection(n.Now(), up)
}

// Flush carries out what the machine asks for after its inputs: every
// field of protocol.Output, and, on a slave, the links to follow. The
// error is the transport's, following links.
func (n *Node) Flush() error {
	if n.stopped {
		return nil
	}
	out := n.ready()
	if n.master != nil {
		n.send(n.run, out.Messages)
		n.storeOps(out.Store)
		n.respawn(out.Respawn)
		n.back(out.Back)
		return nil
	}
	run, up, down := n.slave.Links()
	n.send(run.ID, out.Messages)
	n.train(out.Job)
	if l, ok := n.cfg.Transport.(Linker); ok {
		return l.Follow(run.ID, up, down)
	}
	return nil
}

func (n *Node) send(run string, es []protocol.Envelope) {
	for _, e := range es {
		if n.cfg.Peers != nil && n.cfg.Peers.Hand(n.name, e) {
			continue
		}
		n.cfg.Transport.Send(run, e)
	}
}

// train runs a slave's window: at most one at a time.
func (n *Node) train(job *protocol.Job) {
	if job == nil {
		return
	}
	n.training = true
	var err error
	n.cfg.Executor.Go(TrainWork, func() { err = job.Run() }, func() {
		n.training = false
		if !n.stopped {
			n.slave.Trained(n.Now(), err)
		}
	})
}

// respawn restarts lost slaves, calling off an earlier restart of the same
// RBM's.
func (n *Node) respawn(rs []protocol.Respawn) {
	for _, r := range rs {
		if n.cfg.Respawn == nil {
			continue // a replacement must register
		}
		if c := n.callOff[r.RBM]; c != nil {
			c()
		}
		wanted, c := context.WithCancel(n.life)
		n.callOff[r.RBM] = c
		var err error
		n.cfg.Executor.Go(RespawnWork, func() { err = n.cfg.Respawn(wanted, r.RBM, r.Slave) }, func() {
			if err != nil && !n.stopped {
				n.master.Abort(n.Now(), fmt.Errorf("restart the slave of rbm %d: %w", r.RBM, err))
			}
		})
	}
}

// back calls off the restarts of lost slaves that spoke again.
func (n *Node) back(rs []protocol.Respawn) {
	for _, r := range rs {
		if c := n.callOff[r.RBM]; c != nil {
			c()
			delete(n.callOff, r.RBM)
		}
	}
}
