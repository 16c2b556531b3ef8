package driver

import (
	"sync"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/pipedbn/pipedbn/messages"
)

// rejectWarnEvery is how often a stream of rejections is logged as a
// warning: the first at once, the rest as a count.
const rejectWarnEvery = 10 * time.Second

// RejectLog logs a transport's rejections of unreadable input: each at
// debug level, and at most one every rejectWarnEvery as a warning, with the
// count since the last, so that a flood of bad input is seen without
// flooding the log. It is safe for concurrent use.
type RejectLog struct {
	mu       sync.Mutex
	warned   time.Time
	unwarned int
}

// Log logs the rejection of what came on subject, for reason.
func (r *RejectLog) Log(log hclog.Logger, subject string, reason messages.RejectReason, err error) {
	log.Debug("dropped unreadable input", "subject", subject, "reason", reason, "error", err)
	r.mu.Lock()
	r.unwarned++
	n, warn := r.unwarned, time.Since(r.warned) >= rejectWarnEvery
	if warn {
		r.warned, r.unwarned = time.Now(), 0
	}
	r.mu.Unlock()
	if warn {
		log.Warn("dropped unreadable input", "subject", subject, "reason", reason, "error", err, "dropped_since_last_warning", n)
	}
}
