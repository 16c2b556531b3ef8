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

// Check interrupts a slave once, when its master is gone, and Outcome then
// ends the run with the loss, unless the run failed otherwise; a slave that
// does not watch (a nil watch) ends as its run did.
func TestMasterWatchCheck(t *testing.T) {
	p := &presence{connected: false}
	w := NewMasterWatch(p, "NATS at nats://x", time.Second, hclog.NewNullLogger())
	if err := w.Check(0); err != nil {
		t.Fatalf("Check at once = %v", err)
	}
	gone := w.Check(2 * time.Second)
	if !errors.Is(gone, protocol.ErrMasterGone) {
		t.Fatalf("Check after 2s = %v; want ErrMasterGone", gone)
	}
	if err := w.Check(3 * time.Second); err != nil {
		t.Errorf("Check again = %v; want nil: the slave is interrupted once", err)
	}
	if err := w.Outcome(nil); err != gone {
		t.Errorf("Outcome(nil) = %v; want the loss", err)
	}
	other := errors.New("boom")
	if err := w.Outcome(other); err != other {
		t.Errorf("Outcome(boom) = %v; want boom", err)
	}
	var none *MasterWatch
	if err := none.Outcome(other); err != other {
		t.Errorf("nil watch: Outcome(boom) = %v; want boom", err)
	}
}
