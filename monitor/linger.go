package monitor

import "time"

// A status page polls /api/status every second: one that polled within
// openPage is open.
const openPage = 3 * time.Second

// lingerLimit bounds Linger's wait.
const lingerLimit = 2 * time.Second

// notePoll records a poll of /api/status.
func (r *Run) notePoll() {
	r.mu.Lock()
	r.lastPoll = r.now()
	r.mu.Unlock()
}

// Linger waits, 2 s at most, for an open status page to fetch the run's
// final state (its phase, fine-tuning's outcome), which the master's exit
// would otherwise take away before the page's next poll: it returns once
// a poll came after the run ended, at once if no page polled in the last
// 3 s or the run has not ended.
func (r *Run) Linger() {
	if r == nil {
		return
	}
	deadline := time.Now().Add(lingerLimit)
	for {
		r.mu.Lock()
		open := !r.lastPoll.IsZero() && r.now().Sub(r.lastPoll) < openPage
		fetched := r.ended.IsZero() || r.lastPoll.After(r.ended)
		r.mu.Unlock()
		if !open || fetched || time.Now().After(deadline) {
			return
		}
		time.Sleep(20 * time.Millisecond)
	}
}
