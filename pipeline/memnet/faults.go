package memnet

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"time"

	"github.com/pipedbn/pipedbn/messages"
	"github.com/pipedbn/pipedbn/pipeline/driver"
	"github.com/pipedbn/pipedbn/pipeline/protocol"
)

// FaultKind is a timed fault.
type FaultKind int

// The timed faults.
const (
	// Crash ends a slave's process: it loses everything it held. Its
	// supervisor starts a new process of the same name, which registers
	// again; the master hands it the RBM of the one that died.
	Crash FaultKind = iota + 1
	// Isolate drops every message to and from a node for a while.
	Isolate
	// Cut drops every message between two nodes for a while.
	Cut
	// BrokerRestart drops every message in flight and sent for a while,
	// and tells the master its connection is down meanwhile.
	BrokerRestart
	// MasterRestart ends the master's process; a new one starts after a
	// while and resumes the run from the store, as a new incarnation. The
	// slaves of the old one are stopped when they speak, and their
	// supervisors start them again.
	MasterRestart
)

var faultNames = [...]string{Crash: "crash", Isolate: "isolate", Cut: "cut", BrokerRestart: "broker-restart", MasterRestart: "master-restart"}

func (k FaultKind) String() string {
	if k >= Crash && k <= MasterRestart {
		return faultNames[k]
	}
	return fmt.Sprintf("FaultKind(%d)", int(k))
}

// Fault is a fault at a moment of a simulated run.
type Fault struct {
	At   time.Duration
	Kind FaultKind
	// Node (and Peer, for Cut) it hits.
	Node, Peer string
	// For is how long an isolation, cut or broker outage lasts.
	For time.Duration
}

func (f Fault) String() string {
	switch f.Kind {
	case Crash:
		return fmt.Sprintf("at %s crash %s", f.At, f.Node)
	case Isolate:
		return fmt.Sprintf("at %s isolate %s for %s", f.At, f.Node, f.For)
	case Cut:
		return fmt.Sprintf("at %s cut %s-%s for %s", f.At, f.Node, f.Peer, f.For)
	}
	return fmt.Sprintf("at %s %s for %s", f.At, f.Kind, f.For)
}

// Schedule is the faults of one simulated run: each message is dropped or
// duplicated with a probability and delayed at random (which reorders
// messages of different subjects, never those of one), and timed faults
// strike at given moments.
type Schedule struct {
	// Seed drives every random choice of the network.
	Seed uint64
	// Drop and Duplicate are the probabilities of each message.
	Drop, Duplicate float64
	// Delay bounds the random extra latency of a message.
	Delay  time.Duration
	Faults []Fault
}

func (s *Schedule) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "seed %d: drop %.3f, duplicate %.3f, delay up to %s", s.Seed, s.Drop, s.Duplicate, s.Delay)
	for _, f := range s.Faults {
		fmt.Fprintf(&b, "; %s", f)
	}
	return b.String()
}

// RandomSchedule draws the faults of a run of the given slaves that lasts
// about horizon without faults. Outages stay shorter than the join timeout
// t allows, so that every schedule it draws leaves the run able to
// complete.
func RandomSchedule(seed uint64, slaves []string, horizon time.Duration, t protocol.Timing) *Schedule {
	r := rand.New(rand.NewPCG(seed, 0x66617573))
	s := &Schedule{Seed: seed}
	if r.IntN(4) > 0 {
		s.Drop = r.Float64() * 0.05
	}
	if r.IntN(4) > 0 {
		s.Duplicate = r.Float64() * 0.05
	}
	s.Delay = time.Duration(r.Int64N(int64(20 * time.Millisecond)))
	nodes := append([]string{protocol.MasterName}, slaves...)
	outage := func() time.Duration {
		// From a hiccup to well past the time a slave is declared lost.
		return time.Duration(r.Int64N(int64(min(3*t.LostAfter, t.JoinTimeout/2))))
	}
	for range r.IntN(4) {
		f := Fault{At: time.Duration(r.Int64N(int64(horizon))), Kind: FaultKind(1 + r.IntN(5))}
		switch f.Kind {
		case Crash:
			f.Node = slaves[r.IntN(len(slaves))]
		case Isolate:
			f.Node, f.For = nodes[r.IntN(len(nodes))], outage()
		case Cut:
			i := r.IntN(len(nodes))
			j := (i + 1 + r.IntN(len(nodes)-1)) % len(nodes)
			f.Node, f.Peer, f.For = nodes[i], nodes[j], outage()
		case BrokerRestart:
			f.For = time.Duration(r.Int64N(int64(2 * t.LostAfter)))
		case MasterRestart:
			f.For = time.Duration(r.Int64N(int64(t.JoinTimeout / 2)))
		}
		s.Faults = append(s.Faults, f)
	}
	slices.SortStableFunc(s.Faults, func(a, b Fault) int { return int(a.At - b.At) })
	return s
}

// schedule plants the timed faults in the network.
func (s *Schedule) schedule(n *Network) {
	for _, f := range s.Faults {
		switch f.Kind {
		case Crash:
			n.at(f.At, func() {
				if nd := n.nodes[f.Node]; nd != nil && nd.alive {
					n.respawn(nd.name)
				}
			})
		case MasterRestart:
			n.at(f.At, n.crashMaster)
			n.at(f.At+f.For, n.restartMaster)
		case BrokerRestart:
			n.at(f.At, func() {
				n.trace("broker down")
				n.master.drv.Connection(false)
				n.flush(n.master)
			})
			n.at(f.At+f.For, func() {
				n.trace("broker up")
				n.master.drv.Connection(true)
				n.flush(n.master)
			})
		}
	}
}

// severed reports whether a timed fault drops a message from one node to
// another that was in flight from sent until now.
func (s *Schedule) severed(from, to string, sent, now time.Duration) bool {
	for _, f := range s.Faults {
		if f.At > now || f.At+f.For < sent {
			continue
		}
		switch f.Kind {
		case BrokerRestart:
			return true
		case Isolate:
			if f.Node == from || f.Node == to {
				return true
			}
		case Cut:
			if (f.Node == from && f.Peer == to) || (f.Node == to && f.Peer == from) {
				return true
			}
		}
	}
	return false
}

// stream is the subject family a message travels on: NATS keeps the order
// of one publisher's messages on one subscription, not across them.
func stream(e protocol.Envelope) [3]string {
	class := "control"
	switch e.Msg.(type) {
	case *messages.Chunk, *messages.EndOfStream, *messages.Credit:
		class = "link"
	}
	return [3]string{e.From, e.To, class}
}

// send puts a message on the network: it arrives after the latency, unless
// a fault drops it; it may arrive twice.
func (n *Network) send(e protocol.Envelope) {
	var wire []byte
	if n.opt.Encode {
		b, err := messages.Encode(e.Msg)
		if err != nil {
			n.err = fmt.Errorf("memnet: %s: %w", e, err)
			return
		}
		wire = b
	}
	copies := 1
	if f := n.opt.Faults; f != nil && n.opt.Simulated {
		if n.rng.Float64() < f.Drop {
			n.trace("drop %s", e)
			return
		}
		if n.rng.Float64() < f.Duplicate {
			copies = 2
		}
	}
	sent := n.now
	for range copies {
		at := n.now
		if n.opt.Simulated {
			at += n.opt.Latency
			if f := n.opt.Faults; f != nil && f.Delay > 0 {
				at += time.Duration(n.rng.Int64N(int64(f.Delay)))
			}
			key := stream(e)
			at = max(at, n.streams[key])
			n.streams[key] = at
		}
		n.at(at, func() { n.deliver(e, wire, sent) })
	}
}

// deliver hands a message to its addressee, if it is alive and nothing cut
// it off meanwhile.
func (n *Network) deliver(e protocol.Envelope, wire []byte, sent time.Duration) {
	if f := n.opt.Faults; f != nil && f.severed(e.From, e.To, sent, n.now) {
		n.trace("lost %s", e)
		return
	}
	nd := n.nodes[e.To]
	if nd == nil || !nd.alive {
		n.trace("nobody for %s", e)
		return
	}
	if wire != nil {
		m, err := messages.Decode(wire)
		if err != nil {
			n.err = fmt.Errorf("memnet: %s: %w", e, err)
			return
		}
		e.Msg = m
	}
	n.trace("deliver %s", e)
	if nd.drv == nil {
		nd.inbox <- driver.Delivery{Env: e}
		return
	}
	nd.drv.Deliver(driver.Delivery{Env: e})
	n.flush(nd)
}

func sortedNames(m map[string]*node) []string {
	names := make([]string, 0, len(m))
	for name := range m {
		names = append(names, name)
	}
	slices.Sort(names)
	return names
}
