package driver

import (
	"errors"
	"fmt"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/pipedbn/pipedbn/pipeline/protocol"
)

// DefaultMasterGoneAfter is how long a slave goes on without its master:
// long enough for a NATS server to restart, or for a master killed in the
// middle of a run to be started again on the same output folder and resume
// it, and short enough that slaves whose master will never come back do not
// hold their machines for ever.
const DefaultMasterGoneAfter = 5 * time.Minute

// Presence is what a transport tells a slave of its master.
type Presence interface {
	// Connected reports whether the slave reaches its network.
	Connected() bool
	// Absent reports whether the newest of the slave's judged reports
	// says that nobody listens to them, and since when; known is false
	// while no report has been judged since the slave (re)connected.
	Absent(now time.Duration) (absent, known bool, since time.Duration)
	// Forget drops what the reports said: the connection is down, and on
	// another one the master may have come or gone.
	Forget()
}

// MasterWatch tells when a slave's master is gone: when the slave has had
// no connection to its network, or nothing listened to its status
// reports, for longer than after.
type MasterWatch struct {
	p     Presence
	where string // the network, as a log line names it
	after time.Duration
	// since is when the master was first missed; -1 while it is there.
	since time.Duration
	what  string
	log   hclog.Logger
	// gone is the master's loss, once Check has declared it.
	gone error
}

// NewMasterWatch watches p, the presence of a slave's master on the
// network where names ("NATS at nats://…").
func NewMasterWatch(p Presence, where string, after time.Duration, log hclog.Logger) *MasterWatch {
	return &MasterWatch{p: p, where: where, after: after, since: -1, log: log}
}

// Gone runs the watch at time now: it returns an error wrapping
// protocol.ErrMasterGone once the master has been missed for longer than after.
func (w *MasterWatch) Gone(now time.Duration) error {
	missed, since, what := false, now, ""
	if !w.p.Connected() {
		missed, what = true, "no connection to "+w.where
		w.p.Forget()
	} else {
		absent, known, at := w.p.Absent(now)
		if !known && w.since >= 0 {
			missed, what = true, w.what // reconnected: missed until a report tells
		}
		if absent {
			missed, since, what = true, at, "connected to "+w.where+", but no master listens to the slave's reports"
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

// Check is Gone as a Loop's Check: the first time the master is gone, it
// says so and interrupts the slave; the loss stays for Outcome.
func (w *MasterWatch) Check(now time.Duration) error {
	if w.gone != nil {
		return nil
	}
	if w.gone = w.Gone(now); w.gone != nil {
		w.log.Error("the master is gone; leaving", "error", w.gone)
	}
	return w.gone
}

// Outcome is how a slave's run that ended with err ends: with the master's
// loss where Check declared it, unless the run ended with another error
// (a finished slave ends with nil on an interrupt). A nil watch, a slave
// that does not watch, returns err.
func (w *MasterWatch) Outcome(err error) error {
	if w != nil && w.gone != nil && (err == nil || errors.Is(err, protocol.ErrMasterGone)) {
		return w.gone
	}
	return err
}
