package protocol

import (
	"fmt"
	"strings"
	"time"

	"github.com/pipedbn/pipedbn/messages"
	"github.com/pipedbn/pipedbn/pipeline"
)

// Seat names a place in the run: replica Replica of RBM_RBM (0 for an RBM
// without replicas).
type Seat struct{ RBM, Replica int }

func (at Seat) String() string { return fmt.Sprintf("rbm %d replica %d", at.RBM, at.Replica) }

// seat is a place in the run: who trains it, what the master last heard,
// and what the store holds of it.
type seat struct {
	at       Seat
	slave    string
	assigned bool   // the slave was sent its assignment
	process  joined // the slave's registration
	// confirmed says the slave reported since its assignment; until then
	// a repeated registration gets the assignment again, with from.
	confirmed bool
	from      *messages.Checkpoint
	seen      time.Duration    // the last word of the slave
	batches   int              // the mini-batches it last reported
	status    *messages.Status // its last report
	lost      *vacancy         // the slave was lost; a replacement is awaited
	// replacement names the slave that takes over from a lost one while
	// its checkpoint loads.
	replacement string
	stored      map[int]int
	keep        int // the oldest checkpoint kept: every (re)start begins here
	// floor is a lower bound of the windows the current slave has taken
	// from its producer: where it (re)started, or its latest checkpoint.
	floor   int
	weights *messages.Weights // the slave's final report
	gone    bool              // it left on request while the master stops
	// base is the mini-batches the slave was assigned from (its
	// checkpoint's); done says it reported its last window trained.
	base int
	done bool
}

// vacancy is an RBM whose slave was lost.
type vacancy struct {
	lost        string
	since       time.Duration
	silent      time.Duration
	lostAtBatch int
}

// seat returns the seat at, nil if the run has none there.
func (m *Master) seat(at Seat) *seat {
	if at.RBM < 1 || at.RBM > m.L || at.Replica < 0 || at.Replica >= len(m.seats[at.RBM]) {
		return nil
	}
	return m.seats[at.RBM][at.Replica]
}

// each calls f for every seat, in the order of RBMs and replicas.
func (m *Master) each(f func(s *seat)) {
	for _, ss := range m.seats[1:] {
		for _, s := range ss {
			f(s)
		}
	}
}

// all returns every seat, in the order of RBMs and replicas.
func (m *Master) all() []*seat {
	var out []*seat
	m.each(func(s *seat) { out = append(out, s) })
	return out
}

// replica returns the place of seat at among its RBM's replicas.
func (m *Master) replica(at Seat) Replica { return Replica{at.Replica, len(m.seats[at.RBM])} }

// where names a seat for people: "rbm 2", or "rbm 2 replica 1" for an
// RBM with replicas.
func (m *Master) where(at Seat) string {
	if len(m.seats[at.RBM]) > 1 {
		return at.String()
	}
	return fmt.Sprintf("rbm %d", at.RBM)
}

// neighbours returns the names of the producers and consumers of seat at:
// the replicas of the RBMs below and above, in order.
func (m *Master) neighbours(at Seat) (up, down []string) {
	up = []string{MasterName}
	if i := at.RBM; i > 1 {
		up = m.names(i - 1)
	}
	if i := at.RBM; i < m.L {
		down = m.names(i + 1)
	}
	return up, down
}

// names returns the slaves of RBM i's replicas, in order.
func (m *Master) names(i int) []string {
	names := make([]string, len(m.seats[i]))
	for k, s := range m.seats[i] {
		names[k] = s.slave
	}
	return names
}

// rejections returns the inputs the seat's slave last reported dropped.
func (s *seat) rejections() messages.Rejections {
	if s.status == nil {
		return messages.Rejections{}
	}
	return s.status.Rejected
}

// progress returns RBM_i's progress as its slaves last reported it, and
// the epochs it finished. Of replicas, which train every r-th window: one
// RBM training their windows, as Trained reports it at the end (their
// mini-batches and rows summed, the epoch those make, the longest busy
// and waiting times, the first replica's reconstruction errors, training
// while any replica trains), and the epochs every replica finished.
func (m *Master) progress(i int) (pipeline.Stats, int) {
	st := m.cfg.Stages[i-1]
	seats := m.seats[i]
	stats := pipeline.Stats{Index: i, Worker: strings.Join(m.names(i), "+")}
	epochs := -1
	for k, s := range seats {
		msg := s.status
		if msg == nil {
			epochs = 0
			continue
		}
		if k == 0 || stats.Recon == nil {
			stats.Recon, stats.LastRecon, stats.State = msg.ReconErrors, msg.ReconError, LocalState(msg.State)
		}
		if LocalState(msg.State) == pipeline.Training {
			stats.State = pipeline.Training
		}
		stats.Epoch = msg.Epoch
		stats.Batches += msg.Batches
		stats.Busy = max(stats.Busy, Seconds(msg.BusySeconds))
		stats.WaitInput = max(stats.WaitInput, Seconds(msg.WaitSeconds))
		stats.Rejected += msg.Rejected.Total()
		if epochs < 0 || len(msg.ReconErrors) < epochs {
			epochs = len(msg.ReconErrors)
		}
	}
	stats.Rows = stats.Batches * st.BatchSize
	if len(seats) > 1 {
		stats.Epoch = min(stats.Batches/pipeline.BatchesPerEpoch(m.cfg.N, st.BatchSize), st.Epochs)
	}
	return stats, max(epochs, 0)
}

// slaveStats is slave's report msg on RBM i as that slave's statistics
// alone, where progress joins the RBM's replicas; a slave reports its
// waits together, as waits for input.
func (m *Master) slaveStats(i int, slave string, msg *messages.Status) pipeline.Stats {
	return pipeline.Stats{
		Index: i, Epoch: msg.Epoch, Batches: msg.Batches, Rows: msg.Batches * m.cfg.Stages[i-1].BatchSize,
		Recon: msg.ReconErrors, LastRecon: msg.ReconError, Busy: Seconds(msg.BusySeconds), WaitInput: Seconds(msg.WaitSeconds),
		State: LocalState(msg.State), Worker: slave, Rejected: msg.Rejected.Total(),
	}
}
