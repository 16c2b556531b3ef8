package protocol

import (
	"fmt"
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

// updateKeeps recomputes every RBM's keep point, top down, and returns the
// RBMs whose keep point moved.
func (m *Master) updateKeeps() []int {
	var moved []int
	limit := -1 // no limit for the top RBM
	for i := m.L; i >= 1; i-- {
		s := m.seats[i]
		keep := 0
		for w := range s.stored {
			if (limit < 0 || w <= limit) && w > keep {
				keep = w
			}
		}
		if keep != s.keep {
			moved = append(moved, i)
			s.keep = keep
		}
		limit = min(keep, s.floor)
	}
	return moved
}

// latest returns the newest stored checkpoint of seat s, -1 if none.
func (s *seat) latest() int {
	latest := -1
	for w := range s.stored {
		latest = max(latest, w)
	}
	return latest
}

// collect deletes RBM i's checkpoints before its keep point, unless its
// slave is lost: its replacement may be loading one of them.
func (m *Master) collect(i int) {
	s := m.seats[i]
	if s.lost != nil {
		return
	}
	for w := range s.stored {
		if w < s.keep {
			delete(s.stored, w)
			m.store(StoreOp{Kind: Delete, Name: CheckpointName(i, w), RBM: i, Windows: w})
		}
	}
}

// Stored takes the news that op, a Put, is done: a stored checkpoint is
// acknowledged to its slave, and moves keep points.
func (m *Master) Stored(now time.Duration, op StoreOp) {
	cp, ok := op.Msg.(*messages.Checkpoint)
	if op.Kind != Put || !ok {
		return
	}
	i := op.RBM
	s := m.seats[i]
	s.stored[op.Windows] = cp.Batches
	moved := m.updateKeeps()
	if m.cfg.Observer.Checkpointed != nil {
		m.cfg.Observer.Checkpointed(i, StageStateOf(cp))
	}
	if m.phase == over {
		return
	}
	m.ack(i, op.Windows)
	m.collect(i)
	for _, j := range moved {
		if j != i {
			m.ack(j, m.seats[j].latest())
			m.collect(j)
		}
	}
}

// ack tells the slave of RBM i that its checkpoint after windows windows
// is stored, and where its keep point is.
func (m *Master) ack(i, windows int) {
	s := m.seats[i]
	if s.lost != nil || !s.assigned {
		return
	}
	m.send(s.slave, &messages.CheckpointAck{
		RunID: m.cfg.Run.ID, Incarnation: m.cfg.Run.Incarnation, RBM: i,
		Windows: uint64(max(windows, 0)), Durable: uint64(s.keep),
	})
}

// Loaded takes a checkpoint the master asked the store for (op, a Get):
// where an RBM restarts.
func (m *Master) Loaded(now time.Duration, op StoreOp, cp *messages.Checkpoint, err error) {
	if m.phase == over {
		return
	}
	i := op.RBM
	if err == nil {
		st := m.cfg.Stages[i-1]
		err = cp.Check(m.cfg.Run.ID, i, st.Visible, st.Hidden)
	}
	if err == nil && cp.Windows != op.Windows {
		err = fmt.Errorf("it holds window %d", cp.Windows)
	}
	if err != nil {
		m.Abort(now, fmt.Errorf("rbm %d: read its checkpoint at window %d: %w", i, op.Windows, err))
		return
	}
	// A checkpoint stored by an earlier incarnation restarts this one.
	cp.Incarnation = m.cfg.Run.Incarnation
	switch m.phase {
	case gathering:
		m.starts[i] = cp
		m.loading--
		m.log.Info("resuming", "rbm", i, "window", cp.Windows, "batches", cp.Batches)
		m.maybeRun(now)
	case running:
		if s := m.seats[i]; s.replacement != "" {
			m.takeOver(now, i, cp)
		}
	}
}

// watch declares a slave lost when it stays silent for LostAfter (it
// crashed, hangs, or lost its connection), and fails the run when a lost
// slave cannot be replaced: without checkpoints, or when no replacement
// joins within the join timeout.
func (m *Master) watch(now time.Duration) {
	t := m.cfg.Timing
	for i := 1; i <= m.L; i++ {
		s := m.seats[i]
		switch {
		case s.lost != nil:
			if s.replacement == "" && now-s.lost.since > t.JoinTimeout {
				m.Abort(now, fmt.Errorf("%w: slave %s (rbm %d) was lost %s ago and no replacement joined (cluster.join_timeout = %s)",
					ErrSlaveLost, s.lost.lost, i, (now-s.lost.since).Round(time.Second), t.JoinTimeout))
				return
			}
		case now-s.seen > t.LostAfter:
			if m.cfg.CheckpointEvery <= 0 {
				m.Abort(now, fmt.Errorf("%w: slave %s (rbm %d) sent nothing for %s, and without checkpoints (reliability.checkpoint_every = 0) no replacement can take over",
					ErrSlaveLost, s.slave, i, (now-s.seen).Round(100*time.Millisecond)))
				return
			}
			m.lose(now, i, true)
		}
	}
}

// lose declares the slave of RBM i lost: silent, or restarted (its new
// process registered).
func (m *Master) lose(now time.Duration, i int, silent bool) {
	s := m.seats[i]
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
	m.takeSpare(now, i)
}

// takeBack returns RBM i to its lost slave, which spoke again before any
// replacement came: nothing was handed over, so it goes on where it is.
func (m *Master) takeBack(now time.Duration, i int) {
	s := m.seats[i]
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

// replace hands RBM i, whose slave was lost, to the slave name: once its
// keep point is loaded, name resumes from it.
func (m *Master) replace(now time.Duration, i int, name string) {
	s := m.seats[i]
	s.replacement, s.floor = name, s.keep
	if s.keep == 0 {
		m.takeOver(now, i, nil)
		return
	}
	m.store(StoreOp{Kind: Get, Name: CheckpointName(i, s.keep), RBM: i, Windows: s.keep})
}

// takeOver assigns RBM i to its replacement, to resume from cp (nil: from
// the beginning), and relinks its neighbours to it.
func (m *Master) takeOver(now time.Duration, i int, cp *messages.Checkpoint) {
	s := m.seats[i]
	v := s.lost
	name := s.replacement
	s.slave, s.replacement, s.lost, s.seen, s.gone = name, "", nil, now, false
	for _, j := range m.joined {
		if j.name == name {
			s.process = j // the latest registration of the name
		}
	}
	m.assign(i, true, cp)
	if name != v.lost {
		if i == 1 {
			m.feed.Relink(0, name)
		}
		for _, j := range []int{i - 1, i + 1} {
			if j >= 1 && j <= m.L && m.seats[j].lost == nil {
				m.relink(j)
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
