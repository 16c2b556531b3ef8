package natsnet

import (
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
)

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
	nc    *nats.Conn
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
	p := &probes{nc: nc, inbox: nats.NewInbox(), sent: map[uint64]time.Duration{}, heard: -1, nobody: -1, now: now}
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

// Connected reports whether the slave is connected to a NATS server
// (driver.Presence).
func (p *probes) Connected() bool { return p.nc.IsConnected() }

// Absent judges the probes older than probeGrace, and reports whether the
// newest judged says that nobody listens, and since when; known is false
// while no probe has been judged since the slave (re)connected
// (driver.Presence).
func (p *probes) Absent(now time.Duration) (absent, known bool, since time.Duration) {
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

// Forget drops the probes, answered or not, while the connection is down:
// the answers to those unanswered will never come, and on another
// connection the master may have come or gone (driver.Presence).
func (p *probes) Forget() {
	p.mu.Lock()
	defer p.mu.Unlock()
	clear(p.sent)
	p.heard, p.nobody = -1, -1
}

func (p *probes) close() { p.sub.Unsubscribe() }
