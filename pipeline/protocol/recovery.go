package protocol

import (
	"encoding/json"
	"fmt"
	"math"
	"time"

	"github.com/pipedbn/pipedbn/messages"
)

// Where an RBM (re)starts. Every restart of RBM_i, after the loss of its
// slave or of the master, begins at its keep point:
//
//	keep_L = the newest stored checkpoint of the top RBM (0: none yet)
//	keep_i = the newest stored checkpoint of RBM_i not after keep_{i+1}
//	         nor after floor_{i+1}
//
// where floor_{i+1} is how far the current slave of RBM_i+1 is known to
// have come: where it (re)started, or its latest checkpoint. RBM_i+1 needs
// RBM_i's windows from where it stands now, or, if it restarts, from its
// keep point; so RBM_i restarting at keep_i produces again every window
// RBM_i+1 can need (those it has already are dropped as duplicates, and
// they are the same: training from a checkpoint is deterministic). Below keep_i nothing is needed any
// more: the master deletes RBM_i's older checkpoints, and RBM_i's consumer
// tells its producer (Credit.Durable) to forget the windows before keep_i.
// A restart at the newest checkpoint of RBM_i instead could start after
// windows its consumer lost in flight, or after those a restart of the
// consumer needs again.
//
// With stage replicas the rule holds per seat, in global windows: replica
// a of RBM_i keeps no checkpoint after the last of its own windows that
// comes before the global window where any replica b of RBM_i+1 it feeds
// stands (b's keep point or floor, as b's own windows). The replicas of
// one RBM share their keep point: the newest window count all of them
// have a checkpoint of, under all their limits. Their checkpoints follow
// an average (SyncEvery divides CheckpointEvery), so a restart of all of
// them, after the master's own, needs no average it has lost; the master
// keeps the averages after the keep point for the restart of one.

// updateKeeps recomputes every seat's keep point, top down, and returns
// the seats whose keep point moved.
func (m *Master) updateKeeps() []*seat {
	var moved []*seat
	for i := m.L; i >= 1; i-- {
		limits := make([]int, len(m.seats[i]))
		for a := range limits {
			limits[a] = m.limit(Seat{i, a})
		}
		keep := 0
		for w := range m.seats[i][0].stored {
			// Replicas resume together after an average: where they all
			// stand at the same parameters.
			ok := w > keep && (len(m.seats[i]) == 1 || w%m.cfg.SyncEvery == 0)
			for a, s := range m.seats[i] {
				_, stored := s.stored[w]
				ok = ok && stored && (limits[a] < 0 || w <= limits[a])
			}
			if ok {
				keep = w
			}
		}
		for _, s := range m.seats[i] {
			if keep != s.keep {
				moved = append(moved, s)
				s.keep = keep
			}
		}
		if a := m.averages[i]; a != nil {
			// A replacement needs the averages from where it restarted.
			from := keep
			for _, s := range m.seats[i] {
				from = min(from, s.floor)
			}
			a.forget(from, m.cfg.SyncEvery)
		}
	}
	return moved
}

// limit returns the most own windows seat at may keep a checkpoint after:
// those before the earliest global window a consumer of its may need
// again; -1 for the top RBM, which has none.
func (m *Master) limit(at Seat) int {
	if at.RBM == m.L {
		return -1
	}
	from := m.replica(at)
	limit := math.MaxInt
	for _, c := range m.seats[at.RBM+1] {
		to := m.replica(c.at)
		if !Shares(from, to) {
			continue
		}
		g := to.Global(uint64(min(c.keep, c.floor)))
		limit = min(limit, int(LinkWindows(g, from, Alone)))
	}
	return limit
}

// latest returns the newest stored checkpoint of seat s, -1 if none.
func (s *seat) latest() int {
	latest := -1
	for w := range s.stored {
		latest = max(latest, w)
	}
	return latest
}

// collect deletes seat s's checkpoints before its keep point, unless its
// slave is lost: its replacement may be loading one of them.
func (m *Master) collect(s *seat) {
	if s.lost != nil {
		return
	}
	for w := range s.stored {
		if w < s.keep {
			delete(s.stored, w)
			m.store(StoreOp{Kind: Delete, Name: CheckpointName(s.at, w), Seat: s.at, Windows: w})
		}
	}
}

// Stored takes the news that op, a Put, is done: a stored checkpoint is
// acknowledged to its slave, and moves keep points.
func (m *Master) Stored(now time.Duration, op StoreOp) {
	cp, ok := op.Msg.(*messages.Checkpoint)
	s := m.seat(op.Seat)
	if op.Kind != Put || !ok || s == nil {
		return
	}
	s.stored[op.Windows] = cp.Batches
	moved := m.updateKeeps()
	if m.cfg.Observer.Checkpointed != nil {
		m.cfg.Observer.Checkpointed(s.at.RBM, StageStateOf(cp))
	}
	if m.phase == over {
		return
	}
	m.ack(s, op.Windows)
	m.collect(s)
	for _, t := range moved {
		if t != s {
			m.ack(t, t.latest())
			m.collect(t)
		}
	}
}

// ack tells the slave of seat s that its checkpoint after windows windows
// is stored, and where its keep point is.
func (m *Master) ack(s *seat, windows int) {
	if s.lost != nil || !s.assigned {
		return
	}
	m.send(s.slave, &messages.CheckpointAck{
		RunID: m.cfg.Run.ID, Incarnation: m.cfg.Run.Incarnation, RBM: s.at.RBM, Replica: s.at.Replica,
		Windows: uint64(max(windows, 0)), Durable: uint64(s.keep),
	})
}

// Loaded takes a checkpoint the master asked the store for (op, a Get):
// where an RBM restarts.
func (m *Master) Loaded(now time.Duration, op StoreOp, cp *messages.Checkpoint, err error) {
	if m.phase == over {
		return
	}
	at := op.Seat
	s := m.seat(at)
	if s == nil {
		return
	}
	if err == nil {
		visible, hidden := m.cfg.Stages[at.RBM-1].ParamShape()
		err = cp.Check(m.cfg.Run.ID, at.RBM, at.Replica, visible, hidden)
	}
	if err == nil && cp.Windows != op.Windows {
		err = fmt.Errorf("it holds window %d", cp.Windows)
	}
	if err != nil {
		m.Abort(now, fmt.Errorf("%s: read its checkpoint at window %d: %w", m.where(at), op.Windows, err))
		return
	}
	// A checkpoint stored by an earlier incarnation restarts this one.
	cp.Incarnation = m.cfg.Run.Incarnation
	switch m.phase {
	case gathering:
		m.starts[at] = cp
		m.loading--
		m.log.Info("resuming", "rbm", at.RBM, "replica", at.Replica, "window", cp.Windows, "batches", cp.Batches)
		m.maybeRun(now)
	case running:
		if s.replacement != "" {
			m.takeOver(now, s, cp)
		}
	}
}

// watch declares a slave lost when it stays silent for LostAfter (it
// crashed, hangs, or lost its connection), and fails the run when a lost
// slave cannot be replaced: without checkpoints, or when no replacement
// joins within the join timeout.
func (m *Master) watch(now time.Duration) {
	t := m.cfg.Timing
	for _, s := range m.all() {
		switch {
		case s.lost != nil:
			if s.replacement == "" && now-s.lost.since > t.JoinTimeout {
				m.Abort(now, fmt.Errorf("%w: slave %s (%s) was lost %s ago and no replacement joined (cluster.join_timeout = %s)",
					ErrSlaveLost, s.lost.lost, m.where(s.at), (now-s.lost.since).Round(time.Second), t.JoinTimeout))
				return
			}
		case now-s.seen > t.LostAfter:
			if m.cfg.CheckpointEvery <= 0 {
				m.Abort(now, fmt.Errorf("%w: slave %s (%s) sent nothing for %s, and without checkpoints (reliability.checkpoint_every = 0) no replacement can take over",
					ErrSlaveLost, s.slave, m.where(s.at), (now-s.seen).Round(100*time.Millisecond)))
				return
			}
			m.lose(now, s, true)
		}
	}
}

// lose declares the slave of seat s lost: silent, or restarted (its new
// process registered).
func (m *Master) lose(now time.Duration, s *seat, silent bool) {
	i := s.at.RBM
	lostAt := s.batches
	if w := s.latest(); w >= 0 {
		lostAt = max(lostAt, s.stored[w])
	}
	quiet := now - s.seen
	s.floor = s.keep // its replacement starts at a keep point
	s.lost = &vacancy{lost: s.slave, since: now, silent: quiet, lostAtBatch: lostAt}
	if m.cfg.Observer.Lost != nil {
		m.cfg.Observer.Lost(i, s.slave, quiet)
	}
	if !silent {
		return
	}
	m.log.Warn("slave lost; waiting for a replacement", "slave", s.slave, "rbm", i, "silent", quiet.Round(100*time.Millisecond))
	// Where the driver runs it, a new process takes its place (the hung
	// one is ended); if it only hung and comes back before any
	// replacement, it goes on (takeBack), else it is stopped (reporter).
	m.out.Respawn = append(m.out.Respawn, Respawn{RBM: i, Slave: s.slave})
	m.takeSpare(now, s)
}

// takeBack returns seat s to its lost slave, which spoke again before any
// replacement came: nothing was handed over, so it goes on where it is.
func (m *Master) takeBack(now time.Duration, s *seat) {
	i := s.at.RBM
	v := s.lost
	s.lost, s.seen, s.gone = nil, now, false
	m.out.Back = append(m.out.Back, Respawn{RBM: i, Slave: v.lost})
	m.log.Warn("a lost slave came back before any replacement; it goes on", "slave", s.slave, "rbm", i, "was_silent", v.silent.Round(100*time.Millisecond))
	if m.cfg.Observer.Recovered != nil {
		m.cfg.Observer.Recovered(Recovery{
			RBM: i, Lost: v.lost, Replacement: v.lost, Silent: v.silent,
			LostAtBatch: v.lostAtBatch, ResumedAtBatch: s.batches, ResumedAtWindow: s.floor,
		})
	}
}

// replace hands seat s, whose slave was lost, to the slave name: once its
// keep point is loaded, name resumes from it.
func (m *Master) replace(now time.Duration, s *seat, name string) {
	s.replacement, s.floor = name, s.keep
	if s.keep == 0 {
		m.takeOver(now, s, nil)
		return
	}
	m.store(StoreOp{Kind: Get, Name: CheckpointName(s.at, s.keep), Seat: s.at, Windows: s.keep})
}

// takeOver assigns seat s to its replacement, to resume from cp (nil: from
// the beginning), and relinks its neighbours to it.
func (m *Master) takeOver(now time.Duration, s *seat, cp *messages.Checkpoint) {
	i := s.at.RBM
	v := s.lost
	name := s.replacement
	s.slave, s.replacement, s.lost, s.seen, s.gone = name, "", nil, now, false
	for _, j := range m.joined {
		if j.name == name {
			s.process = j // the latest registration of the name
		}
	}
	m.assign(s, true, cp)
	if name != v.lost {
		if i == 1 {
			m.feed.Relink(s.at.Replica, name)
		}
		for _, j := range []int{i - 1, i + 1} {
			if j < 1 || j > m.L {
				continue
			}
			for _, n := range m.seats[j] {
				if n.lost == nil {
					m.relink(n)
				}
			}
		}
	}
	rec := Recovery{
		RBM: i, Lost: v.lost, Replacement: name, Silent: v.silent, LostAtBatch: v.lostAtBatch,
		ResumedAtWindow: cp.GetWindows(),
	}
	if cp != nil {
		rec.ResumedAtBatch = cp.Batches
	}
	rec.Redone = rec.LostAtBatch - rec.ResumedAtBatch
	s.batches = rec.ResumedAtBatch
	m.log.Warn("replacement resumes", "rbm", i, "lost", v.lost, "slave", name, "window", rec.ResumedAtWindow, "redone_batches", rec.Redone)
	if m.cfg.Observer.Recovered != nil {
		m.cfg.Observer.Recovered(rec)
	}
}

// Recovery describes a lost slave and its replacement. It is written in a
// run's results (JSON, see MarshalJSON).
type Recovery struct {
	RBM               int
	Lost, Replacement string
	// Silent is how long the lost slave had said nothing when it was
	// declared lost.
	Silent time.Duration
	// LostAtBatch is the last mini-batch count the lost slave reported;
	// ResumedAtBatch and ResumedAtWindow are those of the checkpoint the
	// replacement resumed from. Redone = LostAtBatch - ResumedAtBatch, at
	// least: the lost slave may have trained more since its last report.
	LostAtBatch, ResumedAtBatch, ResumedAtWindow, Redone int
}

// recoveryJSON is a Recovery as results hold it: Silent in seconds.
type recoveryJSON struct {
	RBM             int     `json:"rbm"`
	Lost            string  `json:"lost"`
	Replacement     string  `json:"replacement"`
	SilentSeconds   float64 `json:"silent_seconds"`
	ResumedAtWindow int     `json:"resumed_at_window"`
	ResumedAtBatch  int     `json:"resumed_at_batch"`
	LostAtBatch     int     `json:"lost_at_batch"`
	RedoneBatches   int     `json:"redone_batches"`
}

// MarshalJSON writes r as results hold it: rbm, lost, replacement,
// silent_seconds, resumed_at_window, resumed_at_batch, lost_at_batch and
// redone_batches.
func (r Recovery) MarshalJSON() ([]byte, error) {
	return json.Marshal(recoveryJSON{
		RBM: r.RBM, Lost: r.Lost, Replacement: r.Replacement, SilentSeconds: r.Silent.Seconds(),
		ResumedAtWindow: r.ResumedAtWindow, ResumedAtBatch: r.ResumedAtBatch, LostAtBatch: r.LostAtBatch, RedoneBatches: r.Redone,
	})
}

// UnmarshalJSON reads what MarshalJSON writes.
func (r *Recovery) UnmarshalJSON(b []byte) error {
	var j recoveryJSON
	if err := json.Unmarshal(b, &j); err != nil {
		return err
	}
	*r = Recovery{
		RBM: j.RBM, Lost: j.Lost, Replacement: j.Replacement, Silent: time.Duration(j.SilentSeconds * float64(time.Second)),
		ResumedAtWindow: j.ResumedAtWindow, ResumedAtBatch: j.ResumedAtBatch, LostAtBatch: j.LostAtBatch, Redone: j.RedoneBatches,
	}
	return nil
}
