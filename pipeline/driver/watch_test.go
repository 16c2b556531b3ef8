package driver

import (
	"errors"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/pipedbn/pipedbn/pipeline/protocol"
)

// presence is a Presence a test sets by hand.
type presence struct {
	connected, absent, known bool
	since                    time.Duration
	forgot                   int
}

func (p *presence) Connected() bool { return p.connected }
func (p *presence) Absent(time.Duration) (bool, bool, time.Duration) {
	return p.absent, p.known, p.since
}
func (p *presence) Forget() { p.forgot++ }

// A master missed, by a lost connection or by nobody listening, is gone
// only once missed for longer than after, and a master back in time resets
// the watch.
func TestMasterWatch(t *testing.T) {
	p := &presence{connected: true, known: true}
	w := NewMasterWatch(p, "NATS at nats://x", 10*time.Second, hclog.NewNullLogger())
	if err := w.Gone(0); err != nil {
		t.Fatalf("Gone with the master there = %v", err)
	}
	p.connected = false
	if err := w.Gone(time.Second); err != nil || p.forgot != 1 {
		t.Fatalf("Gone just after the connection was lost = %v, forgot %d; want nil, 1", err, p.forgot)
	}
	p.connected = true
	if err := w.Gone(5 * time.Second); err != nil {
		t.Fatalf("Gone with the master back = %v", err)
	}
	p.absent, p.since = true, 6*time.Second
	if err := w.Gone(15 * time.Second); err != nil {
		t.Fatalf("Gone 9s after nobody listened = %v; want nil", err)
	}
	err := w.Gone(17 * time.Second)
	if !errors.Is(err, protocol.ErrMasterGone) {
		t.Fatalf("Gone 11s after nobody listened = %v; want ErrMasterGone", err)
	}
}
