package natsnet

import (
	"errors"
	"math/rand/v2"
	"sync"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/nats-io/nats.go"

	"github.com/pipedbn/pipedbn/messages"
	"github.com/pipedbn/pipedbn/pipeline/driver"
	"github.com/pipedbn/pipedbn/pipeline/protocol"
)

// endpoint is one node's (the master's or a slave's) connection to the
// others: it publishes envelopes in fragments, and reassembles, decodes
// and checks what arrives on its subscriptions into its inbox, which the
// node's loop reads alone.
type endpoint struct {
	nc    *nats.Conn
	self  string
	log   hclog.Logger
	start time.Time
	in    *driver.Inbox // closed by close: subscriptions stop waiting for the loop

	nextID uint64 // of the next message's fragments; the loop's alone

	mu    sync.Mutex
	subs  map[string]*nats.Subscription    // every subscription, by subject
	res   map[string]*messages.Reassembler // each subscription's, by subject
	links map[string]bool                  // the subjects of links, which follow moves
	// shape is the RBM of the Assign that came on the slave's control
	// subject: it bounds what the slave's senders may send. The zero Shape
	// until one came (and on the master).
	shape messages.Shape

	rejects driver.RejectLog // what the subscriptions dropped, logged

	// probes, if set, go out with a slave's status reports (see probes).
	probes *probes
}

func newEndpoint(nc *nats.Conn, self string, log hclog.Logger) *endpoint {
	return &endpoint{
		nc: nc, self: self, log: log, start: time.Now(), in: driver.NewInbox(64),
		nextID: rand.Uint64(), subs: map[string]*nats.Subscription{}, res: map[string]*messages.Reassembler{}, links: map[string]bool{},
	}
}

// Now is the node's time: the state machines' clock.
func (ep *endpoint) Now() time.Duration { return time.Since(ep.start) }

// subscribe delivers what arrives on subject, of family f, to the inbox,
// reassembled within lim: what its senders may send (family.limits).
func (ep *endpoint) subscribe(subject string, f family, lim messages.ReassemblerConfig) error {
	ep.mu.Lock()
	defer ep.mu.Unlock()
	if ep.subs[subject] != nil {
		return nil
	}
	re := messages.NewReassembler(lim)
	sub, err := ep.nc.Subscribe(subject, func(msg *nats.Msg) { ep.receive(re, f, msg) })
	if err != nil {
		return err
	}
	ep.res[subject] = re
	// No client-side limit (nats.go's default, 64 MiB, is less than one long
	// window, and drops what exceeds it): reports carry checkpoints and
	// weights of several slaves at once, and the windows in flight are
	// bounded by credits (protocol.LinkCredits).
	if err := sub.SetPendingLimits(-1, -1); err != nil {
		return err
	}
	ep.subs[subject] = sub
	return nil
}

// Follow subscribes to exactly the subjects of a slave's links in run (its
// producers' windows and its consumers' credits), leaving its other
// subscriptions alone (driver.Linker).
func (ep *endpoint) Follow(run string, up, down []string) error {
	want := map[string]family{}
	for _, p := range up {
		if p != "" {
			want[dataSubject(run, p, ep.self)] = windows
		}
	}
	for _, c := range down {
		if c != "" {
			want[creditSubject(run, c, ep.self)] = credits
		}
	}
	ep.mu.Lock()
	for subject := range ep.links {
		if _, ok := want[subject]; !ok {
			ep.subs[subject].Unsubscribe()
			delete(ep.subs, subject)
			delete(ep.res, subject)
			delete(ep.links, subject)
		}
	}
	shape := ep.shape
	ep.mu.Unlock()
	for subject, f := range want {
		if err := ep.subscribe(subject, f, f.limits(shape)); err != nil {
			return err
		}
		ep.mu.Lock()
		ep.links[subject] = true
		ep.mu.Unlock()
	}
	return nil
}

// receive reassembles a fragment, and hands a complete message of a kind
// its subject may carry to the inbox. On a window subject, what cannot be
// read is handed on as a rejection, for the slave's counts.
func (ep *endpoint) receive(re *messages.Reassembler, f family, msg *nats.Msg) {
	// The subject names the sender where a subscription has several (a
	// wildcard): each sender's incomplete messages are held apart.
	m, size, err := re.AddMessageFrom(msg.Subject, msg.Data)
	if m == nil && err == nil {
		// A part of a message, or a duplicate. A window's part says that
		// the window is on its way.
		if f.name == windows.name {
			ep.in.Deliver(driver.Delivery{Arriving: true, Link: true})
		}
		return
	}
	if err == nil && !f.allows(m.Kind()) {
		err = errors.New("a " + m.Kind().String() + " on a " + f.name + " subject")
		ep.reject(f, msg.Subject, messages.RejectForeign, err)
		return
	}
	if err != nil {
		ep.reject(f, msg.Subject, messages.ReasonOf(err), err)
		return
	}
	if a, ok := m.(*messages.Assign); ok && f.name == controls.name {
		ep.assigned(re, a)
	}
	ep.in.Deliver(driver.Delivery{Env: protocol.Envelope{From: f.sender(msg.Subject), To: ep.self, Msg: m}, Size: size})
}

// assigned raises the limits of the slave's control subject, and of the
// links it subscribes to from now on, to what the RBM of a, its Assign,
// makes its senders send: its checkpoint and its replicas' average on
// control, its windows on links. It runs in the control subscription's
// callback, before a is handed on, so that the Checkpoint the master sends
// a replacement right after its Assign finds them raised.
func (ep *endpoint) assigned(re *messages.Reassembler, a *messages.Assign) {
	shape := a.Shape()
	ep.mu.Lock()
	ep.shape = shape
	ep.mu.Unlock()
	re.SetLimits(controls.limits(shape))
}

// reject hands the loop a rejection and logs it (driver.RejectLog).
func (ep *endpoint) reject(f family, subject string, reason messages.RejectReason, err error) {
	ep.rejects.Log(ep.log, subject, reason, err)
	ep.in.Deliver(driver.Delivery{Rejected: true, Reason: reason, Link: f.name == windows.name})
}

// reassembly returns what the reassemblers of ep's subscriptions hold of
// incomplete messages, summed: Reserved now and the sum of their Peaks.
func (ep *endpoint) reassembly() messages.ReassemblerStats {
	ep.mu.Lock()
	defer ep.mu.Unlock()
	var t messages.ReassemblerStats
	for _, re := range ep.res {
		t.Add(re.Stats())
	}
	return t
}

// pending returns the bytes received and not yet taken by the loop.
func (ep *endpoint) pending() int {
	n := ep.in.Queued()
	ep.mu.Lock()
	defer ep.mu.Unlock()
	for _, s := range ep.subs {
		if _, b, err := s.Pending(); err == nil {
			n += b
		}
	}
	return n
}

// Send publishes e, of run, in fragments (driver.Transport). A message
// that cannot go out now (the connection is down) is dropped: the protocol
// sends again what matters.
func (ep *endpoint) Send(run string, e protocol.Envelope) {
	subject := subjectOf(run, e)
	maxPart := int(ep.nc.MaxPayload())
	if maxPart <= messages.FragmentHeaderSize {
		maxPart = 1 << 20
	}
	ep.nextID++
	var reply string
	var probe uint64
	if _, status := e.Msg.(*messages.Status); status && ep.probes != nil {
		reply, probe = ep.probes.reply()
	}
	// Publish copies each part into the connection's write buffer before
	// it returns, so EncodeEach may reuse the part's memory for the next.
	var pubErr error
	err := messages.EncodeEach(e.Msg, maxPart, ep.nextID, func(p []byte) error {
		if reply != "" {
			pubErr = ep.nc.PublishRequest(subject, reply, p)
		} else {
			pubErr = ep.nc.Publish(subject, p)
		}
		return pubErr
	})
	if (pubErr != nil || err != nil) && reply != "" {
		ep.probes.unsent(probe)
	}
	switch {
	case pubErr != nil:
		if !disconnected(ep.nc, pubErr) {
			ep.log.Warn("cannot publish", "subject", subject, "error", pubErr)
		}
	case err != nil:
		ep.log.Error("cannot encode a message", "message", e.String(), "error", err)
	}
}

// disconnected reports whether err is the connection being down.
func disconnected(nc *nats.Conn, err error) bool {
	return errors.Is(err, nats.ErrConnectionClosed) || errors.Is(err, nats.ErrConnectionReconnecting) ||
		errors.Is(err, nats.ErrReconnectBufExceeded) || !nc.IsConnected()
}

// close ends every subscription.
func (ep *endpoint) close() {
	ep.in.Close()
	ep.mu.Lock()
	defer ep.mu.Unlock()
	for subject, s := range ep.subs {
		s.Unsubscribe()
		delete(ep.subs, subject)
	}
}
