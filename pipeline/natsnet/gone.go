package natsnet

import (
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/nats-io/nats.go"

	"github.com/pipedbn/pipedbn/pipeline/protocol"
)

// DefaultMasterGoneAfter is how long a slave goes on without its master
// (SlaveOptions.MasterGoneAfter): long enough for a NATS server to restart,
// or for a master killed in the middle of a run to be started again on the
// same output folder and resume it, and short enough that slaves whose
// master will never come back do not hold their machines for ever.
const DefaultMasterGoneAfter = 5 * time.Minute

// probeGrace is how long a status report may wait for the server's
// no-responders answer before the slave takes it as heard: the answer comes
// from the server the slave is connected to, within a round trip.
const probeGrace = 2 * time.Second

// probes tell whether anything listens to a slave's status reports. Each
// report goes out with a reply subject of the slave's own; a server that
// finds no subscription for a message answers its reply subject with a
// no-responders status (NATS 2.2 and later, to clients that ask for it, as
// nats.go does). Only the master subscribes to reports, so a report left
// unanswered says that the master is there and one answered says it is not,
// whether it was killed or its run is over.
type probes struct {
	inbox string // the reply subjects' prefix
	sub   *nats.Subscription

	mu   sync.Mutex
	next uint64
	sent map[uint64]time.Duration // unanswered probes, by their send time
	// heard is the send time of the newest probe judged heard; nobody
	// that of the newest answered by no-responders, and nobodySince that
	// of the first of those after heard.
	heard, nobody, nobodySince time.Duration
	now                        func() time.Duration
}

// newProbes subscribes to the no-responders answers of nc's probes.
func newProbes(nc *nats.Conn, now func() time.Duration) (*probes, error) {
	p := &probes{inbox: nats.NewInbox(), sent: map[uint64]time.Duration{}, heard: -1, nobody: -1, now: now}
	sub, err := nc.Subscribe(p.inbox+".*", p.answered)
	if err != nil {
		return nil, fmt.Errorf("status probes: %w", err)
	}
	p.sub = sub
	return p, nil
}

// reply returns the reply subject of a new probe, sent now, and its id.
func (p *probes) reply() (string, uint64) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.next++
	p.sent[p.next] = p.now()
	return p.inbox + "." + strconv.FormatUint(p.next, 10), p.next
}

// unsent drops probe id, whose report could not be published: its silence
// says nothing.
func (p *probes) unsent(id uint64) {
	p.mu.Lock()
	defer p.mu.Unlock()
	delete(p.sent, id)
}

// answered takes the server's answer to a probe: the only answer a report
// gets.
func (p *probes) answered(msg *nats.Msg) {
	if len(msg.Data) != 0 || msg.Header.Get("Status") != "503" {
		return
	}
	id, err := strconv.ParseUint(msg.Subject[strings.LastIndexByte(msg.Subject, '.')+1:], 10, 64)
	if err != nil {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	at, ok := p.sent[id]
	if !ok {
		return
	}
	delete(p.sent, id)
	if at > p.nobody {
		if p.nobody <= p.heard {
			p.nobodySince = at
		}
		p.nobody = at
	}
}

// absent judges the probes older than probeGrace, and reports whether the
// newest judged says that nobody listens, and since when; known is false
// while no probe has been judged since the slave (re)connected.
func (p *probes) absent(now time.Duration) (absent, known bool, since time.Duration) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for id, at := range p.sent {
		if now-at >= probeGrace {
			delete(p.sent, id)
			p.heard = max(p.heard, at)
		}
	}
	return p.nobody > p.heard, p.nobody >= 0 || p.heard >= 0, p.nobodySince
}

// forget drops the probes, answered or not, while the connection is down:
// the answers to those unanswered will never come, and on another
// connection the master may have come or gone.
func (p *probes) forget() {
	p.mu.Lock()
	defer p.mu.Unlock()
	clear(p.sent)
	p.heard, p.nobody = -1, -1
}

func (p *probes) close() { p.sub.Unsubscribe() }

// masterWatch tells when a slave's master is gone: when the slave has had
// no connection to the NATS server, or nothing listened to its status
// reports, for longer than after.
type masterWatch struct {
	nc     *nats.Conn
	probes *probes // nil: the slave's reports are not probed
	after  time.Duration
	// since is when the master was first missed; -1 while it is there.
	since time.Duration
	what  string
	log   hclog.Logger
}

func newMasterWatch(nc *nats.Conn, p *probes, after time.Duration, log hclog.Logger) *masterWatch {
	return &masterWatch{nc: nc, probes: p, after: after, since: -1, log: log}
}

// gone runs the watch at time now: it returns an error wrapping
// protocol.ErrMasterGone once the master has been missed for longer than after.
func (w *masterWatch) gone(now time.Duration, url string) error {
	missed, since, what := false, now, ""
	if !w.nc.IsConnected() {
		missed, what = true, "no connection to NATS at "+url
		if w.probes != nil {
			w.probes.forget()
		}
	} else if w.probes != nil {
		absent, known, at := w.probes.absent(now)
		if !known && w.since >= 0 {
			missed, what = true, w.what // reconnected: missed until a report tells
		}
		if absent {
			missed, since, what = true, at, "connected to NATS at "+url+", but no master listens to the slave's reports"
		}
	}
	switch {
	case !missed && w.since >= 0:
		w.log.Info("the master is back", "missed_for", (now - w.since).Round(time.Second))
		w.since = -1
		return nil
	case !missed:
		return nil
	case w.since < 0:
		w.since = since
		w.log.Warn("the master is missing; the slave leaves unless it comes back", "why", what, "within", w.after)
	}
	w.what = what
	if now-w.since < w.after {
		return nil
	}
	return fmt.Errorf("%w: %s for %s (--master-gone-after %s)", protocol.ErrMasterGone, w.what, (now - w.since).Round(time.Second), w.after)
}
