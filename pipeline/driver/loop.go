package driver

import (
	"context"
	"sync"
	"sync/atomic"
	"time"
)

// DefaultLinger is how long a finished master goes on storing what it
// asked to store (the last weights, a final checkpoint) before it leaves.
const DefaultLinger = 30 * time.Second

// Loop is what Run needs of a real-time transport besides the Transport.
type Loop struct {
	// Inbox delivers what arrives for the node; Peers of this process
	// deliver into it too.
	Inbox chan Delivery
	// Taken, if set, is told of every delivery the node took.
	Taken func(Delivery)
	// Connection, if set, says when a master's connection goes down
	// (false) and comes back (true).
	Connection <-chan bool
	// Check, if set, runs at every tick of a slave: an error interrupts
	// it (the transport lost its master).
	Check func(now time.Duration) error
	// Linger bounds how long a finished master waits for its store
	// operations; 0: DefaultLinger.
	Linger time.Duration
	// Turn, if set, is shared by the nodes of one stage group in this
	// process: one of them trains a window at a time, with all the
	// process's threads.
	Turn *sync.Mutex
	// AfterJob, if set, runs after every window a slave trained, on the
	// training's goroutine, with the moment it began.
	AfterJob func(began time.Time)
}

// Inbox is where a transport whose messages arrive on goroutines of its
// own (NATS subscriptions) hands them to a node's loop (Loop.Inbox and
// Loop.Taken): it counts the bytes it holds until the loop takes them.
type Inbox struct {
	// C delivers to the loop.
	C      chan Delivery
	closed chan struct{}
	queued atomic.Int64
}

// NewInbox returns an inbox that holds n deliveries before Deliver waits.
func NewInbox(n int) *Inbox {
	return &Inbox{C: make(chan Delivery, n), closed: make(chan struct{})}
}

// Deliver hands d to the loop: it waits for room, unless the inbox is
// closed (see Close).
func (in *Inbox) Deliver(d Delivery) {
	in.queued.Add(int64(d.Size))
	select {
	case in.C <- d:
	case <-in.closed:
		in.queued.Add(-int64(d.Size))
	}
}

// Take notes that the loop took d (a Loop's Taken).
func (in *Inbox) Take(d Delivery) { in.queued.Add(-int64(d.Size)) }

// Queued returns the bytes delivered and not yet taken.
func (in *Inbox) Queued() int { return int(in.queued.Load()) }

// Close makes Deliver drop, uncounted, what finds no room, rather than
// wait: the loop is over, or about to be, and takes nothing more.
func (in *Inbox) Close() { close(in.closed) }

// Run is the node's loop in real time, until its machine is over: what
// arrives in l.Inbox, ticks every Timing.Tick, the work it started, and
// ctx's end (an interrupt) in; out everything the machine asks for. A
// finished slave waits for the window it trains; a finished master for
// what it asked to store, at most l.Linger. It returns the machine's
// error, and stops the node.
func (n *Node) Run(ctx context.Context, l Loop) error {
	post := make(chan func(), 16)
	if n.cfg.Executor == nil {
		n.cfg.Executor = &async{post: post, life: n.life, turn: l.Turn, after: l.AfterJob}
	}
	if n.cfg.Peers != nil {
		n.cfg.Peers.Add(n.name, l.Inbox)
		defer n.cfg.Peers.Remove(n.name, l.Inbox)
	}
	defer n.Stop()
	if l.Linger <= 0 {
		l.Linger = DefaultLinger
	}
	tick := time.NewTicker(n.timing.Tick())
	defer tick.Stop()
	interrupt := ctx.Done()
	var linger <-chan time.Time
	n.Start()
	for {
		if err := n.Flush(); err != nil {
			n.Interrupt(err)
		}
		if over, err := n.over(post, &linger, l.Linger); over {
			return err
		}
		select {
		case d := <-l.Inbox:
			n.take(l, d)
		case f := <-post:
			f()
		case up := <-l.Connection:
			n.Connection(up)
		case <-tick.C:
			n.tick(l)
		case <-interrupt:
			interrupt = nil
			n.Interrupt(ctx.Err())
		case <-linger:
			n.log.Warn("checkpoints or weights still unstored; leaving", "waited", l.Linger, "store", n.store.store.Where())
			n.store.drop()
			n.store.busy = false
		}
	}
}

func (n *Node) take(l Loop, d Delivery) {
	if l.Taken != nil {
		l.Taken(d)
	}
	n.Deliver(d)
}

// tick takes what waits in the inbox first: what arrived while the loop
// was busy (a long window sent) was not silence. Then the clock judges.
func (n *Node) tick(l Loop) {
	for drained := false; !drained; {
		select {
		case d := <-l.Inbox:
			n.take(l, d)
		default:
			drained = true
		}
	}
	n.Tick()
	if l.Check != nil && n.slave != nil {
		if err := l.Check(n.Now()); err != nil {
			n.Interrupt(err)
		}
	}
}

// over reports whether Run is over: a slave once its machine is (after
// its window in training), a master once it is and its store is idle, or
// its linger ran out (starting the linger's timer the first time).
func (n *Node) over(post <-chan func(), linger *<-chan time.Time, d time.Duration) (bool, error) {
	done, err := n.Done()
	if !done {
		return false, nil
	}
	if n.slave != nil {
		for n.training {
			(<-post)()
		}
		return true, err
	}
	if n.store.idle() {
		return true, err
	}
	if *linger == nil {
		*linger = time.After(d)
	}
	return false, nil
}

// async runs work on goroutines and posts its end to the loop.
type async struct {
	post  chan<- func()
	life  context.Context
	turn  *sync.Mutex
	after func(time.Time)
}

func (a *async) Go(w Work, fn, done func()) {
	go func() {
		if w == TrainWork {
			a.train(fn)
		} else {
			fn()
		}
		select {
		case a.post <- done:
		case <-a.life.Done():
		}
	}()
}

func (a *async) train(fn func()) {
	if a.turn != nil {
		a.turn.Lock()
		defer a.turn.Unlock()
	}
	began := time.Now()
	fn()
	if a.after != nil {
		a.after(began)
	}
}

// Inline runs work at once, on the caller's goroutine: the loop's.
type Inline struct{}

// Go implements Executor.
func (Inline) Go(_ Work, fn, done func()) {
	fn()
	done()
}
