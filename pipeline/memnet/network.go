// Package memnet runs pipedbn's protocol (pipeline/protocol) in one
// process: a master and its slaves as state machines on an in-memory
// network, with the same messages, checkpoints and recovery as over NATS.
// It has two clocks. Live, it runs in real time with every slave's training
// on a goroutine of its own: `cluster.transport: memory`. Simulated, time is
// logical and every fault NATS may show can be injected into it: dropped,
// duplicated and delayed messages (reordered across subjects, never within
// one), cut links, isolated nodes, crashed and restarted slaves, a broker
// restart. It was modelled on etcd raft's test network and hashicorp/raft's
// InmemTransport.
package memnet

import (
	"container/heap"
	"context"
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/pipedbn/pipedbn/pipeline/driver"
	"github.com/pipedbn/pipedbn/pipeline/protocol"
)

// event is something that happens at a moment of the network's time.
type event struct {
	at  time.Duration
	seq uint64 // ties broken by order of scheduling
	do  func()
}

type eventQueue []*event

func (q eventQueue) Len() int { return len(q) }
func (q eventQueue) Less(i, j int) bool {
	return q[i].at < q[j].at || (q[i].at == q[j].at && q[i].seq < q[j].seq)
}
func (q eventQueue) Swap(i, j int) { q[i], q[j] = q[j], q[i] }
func (q *eventQueue) Push(x any)   { *q = append(*q, x.(*event)) }
func (q *eventQueue) Pop() any {
	old := *q
	e := old[len(old)-1]
	*q = old[:len(old)-1]
	return e
}

// node is one process on the network: the master or a slave. A crash ends
// the process; a restart is a new process under the same name, with a new
// generation, so that late events of the old one are ignored.
type node struct {
	name  string
	gen   int
	alive bool
	drv   *driver.Node
	// inbox takes what reaches a node the network runs no process of: a
	// node of the driver's contract scripts (pipeline/driver/drivertest)
	// that reads its messages itself.
	inbox chan<- driver.Delivery
}

// Options configure a Network.
type Options struct {
	// Timing of the protocol.
	Timing protocol.Timing
	// Tick is the period at which every node's timers run. Default 10ms.
	Tick time.Duration
	// Simulated runs on logical time, with the training of every window
	// taking JobTime and every store operation StoreTime; otherwise the
	// network runs in real time and trains on goroutines.
	Simulated bool
	// JobTime and StoreTime, simulated; defaults 20ms and 5ms.
	JobTime, StoreTime time.Duration
	// Latency is the delivery time of a message, simulated; default 1ms.
	Latency time.Duration
	// Encode passes every message through the wire codec (a copy per
	// delivery, as over NATS).
	Encode bool
	// Limit bounds a simulated run's time: a run still going then has
	// stalled. Default 1h.
	Limit time.Duration
	// Faults are injected into a simulated network; nil: none.
	Faults *Schedule
	// Store keeps the checkpoints; nil: a fresh protocol.MemStore.
	Store protocol.Store
	// MaxRestarts bounds the restarts of one slave name. Default 3.
	MaxRestarts int
	// Logger receives the nodes' log lines; nil discards them.
	Logger hclog.Logger
	// Trace, if set, sees every message sent and what became of it.
	Trace func(format string, args ...any)
}

// Network is an in-memory network of one master and its slaves.
type Network struct {
	opt    Options
	log    hclog.Logger
	now    time.Duration
	seq    uint64
	queue  eventQueue
	nodes  map[string]*node
	master *node
	mcfg   protocol.MasterConfig
	store  protocol.Store
	rng    *rand.Rand

	// streams holds the delivery time of the last message of each stream
	// (see stream): delays never reorder one.
	streams  map[[3]string]time.Duration
	restarts map[string]int
	brokerUp bool
	err      error // of the network itself: a restart limit hit

	jobs    chan func() // live: the ends of finished jobs
	running int         // live: jobs on goroutines
	start   time.Time
	// recoveries are those of the masters before the current one.
	recoveries []protocol.Recovery
}

// New returns a network that will run the master cfg describes with slaves
// named slaves.
func New(cfg protocol.MasterConfig, slaves []string, opt Options) *Network {
	if opt.Tick <= 0 {
		opt.Tick = 10 * time.Millisecond
	}
	if opt.JobTime <= 0 {
		opt.JobTime = 20 * time.Millisecond
	}
	if opt.StoreTime <= 0 {
		opt.StoreTime = 5 * time.Millisecond
	}
	if opt.Latency <= 0 {
		opt.Latency = time.Millisecond
	}
	if opt.Limit <= 0 {
		opt.Limit = time.Hour
	}
	if opt.MaxRestarts <= 0 {
		opt.MaxRestarts = 3
	}
	if opt.Logger == nil {
		opt.Logger = hclog.NewNullLogger()
	}
	if opt.Store == nil {
		opt.Store = protocol.NewMemStore()
	}
	var seed uint64
	if opt.Faults != nil {
		seed = opt.Faults.Seed
	}
	n := &Network{
		opt: opt, log: opt.Logger, nodes: map[string]*node{}, mcfg: cfg, store: opt.Store,
		rng: rand.New(rand.NewPCG(seed, 0x6e6574)), streams: map[[3]string]time.Duration{},
		restarts: map[string]int{}, brokerUp: true, jobs: make(chan func(), len(slaves)+1),
	}
	n.mcfg.Timing = opt.Timing
	for _, s := range slaves {
		n.nodes[s] = &node{name: s}
	}
	return n
}

// at schedules do at time t.
func (n *Network) at(t time.Duration, do func()) {
	n.seq++
	heap.Push(&n.queue, &event{at: t, seq: n.seq, do: do})
}

func (n *Network) trace(format string, args ...any) {
	if n.opt.Trace != nil {
		n.opt.Trace("%8.3fs "+format, append([]any{n.now.Seconds()}, args...)...)
	}
}

// Run runs the master and the slaves until the master is done, and
// returns what it trained. In real time, cancelling ctx interrupts the
// master (the slaves leave checkpoints); simulated, it stops the network.
func (n *Network) Run(ctx context.Context) ([]protocol.Trained, error) {
	n.start = time.Now()
	if err := n.startMaster(nil); err != nil {
		return nil, err
	}
	for _, nd := range n.sorted()[1:] {
		n.startSlave(nd) // in name order: slave i registers i-th and trains RBM_i
	}
	if f := n.opt.Faults; f != nil && n.opt.Simulated {
		f.schedule(n)
	}
	n.at(n.opt.Tick, n.tick)
	interrupted := false
	for {
		if done, err := n.master.drv.Done(); done {
			n.drainJobs()
			if err != nil {
				return nil, err
			}
			return n.master.drv.Master().Trained(), nil
		}
		if n.err != nil {
			n.drainJobs()
			return nil, n.err
		}
		if ctx.Err() != nil && !interrupted {
			if n.opt.Simulated {
				return nil, ctx.Err()
			}
			interrupted = true
			n.now = n.clock()
			n.master.drv.Interrupt(nil)
			n.flush(n.master)
			continue
		}
		if err := n.step(ctx); err != nil {
			return nil, err
		}
	}
}

// clock returns the network's time now.
func (n *Network) clock() time.Duration {
	if n.opt.Simulated {
		return n.now
	}
	return time.Since(n.start)
}

// step runs the next event, waiting for it (or for a finished job) in real
// time.
func (n *Network) step(ctx context.Context) error {
	if len(n.queue) == 0 && n.running == 0 {
		return fmt.Errorf("memnet: nothing left to happen at %s", n.now)
	}
	if n.opt.Simulated && n.now > n.opt.Limit {
		return fmt.Errorf("memnet: the run stalled: not over after %s of simulated time", n.opt.Limit)
	}
	if !n.opt.Simulated {
		wait := time.Duration(0)
		if len(n.queue) > 0 {
			wait = n.queue[0].at - n.clock()
		}
		if wait > 0 || len(n.queue) == 0 {
			var timer <-chan time.Time
			if len(n.queue) > 0 {
				t := time.NewTimer(wait)
				defer t.Stop()
				timer = t.C
			}
			select {
			case done := <-n.jobs:
				n.running--
				n.now = n.clock()
				done()
				return nil
			case <-timer:
			case <-ctx.Done():
				return nil
			}
		}
	}
	e := heap.Pop(&n.queue).(*event)
	if n.opt.Simulated {
		n.now = e.at
	} else {
		n.now = n.clock()
	}
	e.do()
	return nil
}

// drainJobs waits for the training goroutines still running.
func (n *Network) drainJobs() {
	for ; n.running > 0; n.running-- {
		<-n.jobs
	}
}

// tick runs every live node's timers.
func (n *Network) tick() {
	for _, nd := range n.sorted() {
		if !nd.alive {
			continue
		}
		nd.drv.Tick()
		n.flush(nd)
	}
	n.at(n.now+n.opt.Tick, n.tick)
}

// sorted returns the nodes in a fixed order: the master, then the slaves
// by name, so that a simulated run is the same every time.
func (n *Network) sorted() []*node {
	out := make([]*node, 0, len(n.nodes))
	out = append(out, n.master)
	for _, name := range sortedNames(n.nodes) {
		if nd := n.nodes[name]; nd != n.master {
			out = append(out, nd)
		}
	}
	return out
}

func (n *Network) startMaster(stored *protocol.Stored) error {
	cfg := n.mcfg
	cfg.Stored = stored
	cfg.Logger = n.log.Named("master")
	nd := n.nodes[protocol.MasterName]
	if nd == nil {
		nd = &node{name: protocol.MasterName}
		n.nodes[nd.name] = nd
	}
	m, err := driver.NewMaster(cfg, n.driverConfig(nd, cfg.Logger))
	if err != nil {
		return err
	}
	nd.gen++
	nd.alive, nd.drv = true, m
	n.master = nd
	m.Start()
	n.flush(nd)
	return nil
}

func (n *Network) startSlave(nd *node) {
	nd.gen++
	log := n.log.Named("slave." + nd.name)
	s, err := driver.NewSlave(protocol.SlaveConfig{
		Name: nd.name, Host: "memnet", CPUs: 1, PID: nd.gen, Timing: n.opt.Timing, Logger: log,
	}, n.driverConfig(nd, log))
	if err != nil {
		n.err = err
		return
	}
	nd.alive, nd.drv = true, s
	n.trace("start %s (generation %d)", nd.name, nd.gen)
	s.Start()
	n.flush(nd)
}

// crashMaster ends the master's process: it loses everything but what it
// stored.
func (n *Network) crashMaster() {
	if !n.master.alive {
		return
	}
	n.trace("crash %s", n.master.name)
	n.recoveries = append(n.recoveries, n.master.drv.Recoveries()...)
	n.master.drv.Stop()
	n.master.alive = false
	n.master.gen++
}

// restartMaster starts a new master process that resumes the run from the
// store, as the next incarnation.
func (n *Network) restartMaster() {
	if n.master.alive {
		return
	}
	stored, err := protocol.ReadStored(context.Background(), n.store, n.mcfg.Run.ID, n.mcfg.Stages)
	if err == nil {
		n.mcfg.Run.Incarnation++
		n.trace("restart %s (incarnation %d)", n.master.name, n.mcfg.Run.Incarnation)
		err = n.startMaster(stored)
	}
	if err != nil {
		n.err = fmt.Errorf("memnet: restart the master: %w", err)
	}
}

// crash ends a node's process: it loses everything it held.
func (n *Network) crash(nd *node) {
	if !nd.alive {
		return
	}
	n.trace("crash %s", nd.name)
	nd.drv.Stop()
	nd.alive = false
	nd.gen++
}

// respawn replaces the slave name with a new process of the same name, as
// the master does with its local slaves: one it declared lost, or one that
// died.
func (n *Network) respawn(name string) {
	nd := n.nodes[name]
	if nd == nil {
		return
	}
	n.restarts[name]++
	if n.restarts[name] > n.opt.MaxRestarts {
		n.err = fmt.Errorf("slave %s was lost %d times", name, n.restarts[name])
		return
	}
	n.crash(nd)
	n.at(n.now+n.opt.Tick, func() {
		if !nd.alive {
			n.startSlave(nd)
		}
	})
}

// flush carries out what a node asks for after an input (driver.Node.Flush);
// a slave whose machine is over exits.
func (n *Network) flush(nd *node) {
	if !nd.alive {
		return
	}
	nd.drv.Flush()
	if nd.drv.Slave() == nil || !nd.alive {
		return
	}
	if done, err := nd.drv.Done(); done {
		n.exited(nd, err)
	}
}

// exited handles a slave process that ended: its supervisor starts it
// again to register with the master, as `slave --serve` does. One the
// master did not need stands by so; one stopped by a restarted master
// comes back to it.
func (n *Network) exited(nd *node, err error) {
	n.trace("%s exited: %v", nd.name, err)
	nd.drv.Stop()
	nd.alive = false
	nd.gen++
	if err != nil || nd.drv.Slave().Assigned() != nil {
		n.at(n.now+n.opt.Timing.RegisterEvery, func() {
			if !nd.alive {
				n.startSlave(nd)
			}
		})
	}
}

// Recoveries returns the lost slaves the masters of the run replaced.
func (n *Network) Recoveries() []protocol.Recovery {
	out := append([]protocol.Recovery{}, n.recoveries...)
	if n.master != nil && n.master.alive {
		out = append(out, n.master.drv.Recoveries()...)
	}
	return out
}
