package protocol

import (
	"fmt"
	"slices"

	"github.com/pipedbn/pipedbn/messages"
)

// Milestone is a moment of a pipelined run that the master sees from the
// messages it deals and receives, and that bounds a phase of the run
// (result.json's pretrain_phases). The master has no clock: the Observer
// that sees a milestone reads the time.
type Milestone int

// The milestones, in the order a run of more windows than RBMs passes
// them. A run of few windows may see RBM_1 trained before the top RBM
// trained its first window; each is seen when it happens.
const (
	// FirstDealt: RBM_1's first data window is sent. Every slave is
	// assigned and RBM_1's link is open: the pipeline starts to fill.
	FirstDealt Milestone = iota
	// Filled: the top RBM, RBM_L, reported its first window trained
	// (of replicas: any replica): every RBM of the pipeline trains.
	Filled
	// BottomTrained: RBM_1 reported its last window trained (every
	// replica): the pipeline drains.
	BottomTrained
	// AllTrained: every RBM reported its last window trained; what is left
	// is collecting the weights and stopping the slaves.
	AllTrained
	milestoneEnd
)

var milestoneNames = [...]string{"first window dealt", "filled", "bottom trained", "all trained"}

func (ms Milestone) String() string {
	if ms < 0 || ms >= milestoneEnd {
		return fmt.Sprintf("Milestone(%d)", int(ms))
	}
	return milestoneNames[ms]
}

// pass tells the Observer of milestone ms, once. The milestones a later
// one implies (the top RBM trained a window, so data was dealt) are passed
// first where the master missed them: a resumed run, whose RBMs may be
// trained already, passes each all the same.
func (m *Master) pass(ms Milestone) {
	if m.passed[ms] {
		return
	}
	switch ms {
	case Filled, BottomTrained:
		m.pass(FirstDealt)
	case AllTrained:
		m.pass(Filled)
		m.pass(BottomTrained)
	}
	m.passed[ms] = true
	if f := m.cfg.Observer.Passed; f != nil {
		f(ms)
	}
}

// sawStatus passes the milestones a slave's report shows: the top RBM's
// first window trained since its slave's assignment, an RBM done.
func (m *Master) sawStatus(s *seat, msg *messages.Status) {
	if s.at.RBM == m.L && msg.Batches > s.base {
		m.pass(Filled)
	}
	if msg.State == messages.StateDone {
		s.done = true
		m.sawTrained()
	}
}

// sawTrained passes BottomTrained and AllTrained once their RBMs are
// trained: each replica reported done, or the RBM's weights are in.
func (m *Master) sawTrained() {
	trained := func(i int) bool {
		return m.weights[i] != nil || !slices.ContainsFunc(m.seats[i], func(s *seat) bool { return !s.done && s.weights == nil })
	}
	if trained(m.L) {
		m.pass(Filled)
	}
	if trained(1) {
		m.pass(BottomTrained)
	}
	for i := 1; i <= m.L; i++ {
		if !trained(i) {
			return
		}
	}
	m.pass(AllTrained)
}

// batchesOf is the mini-batches checkpoint c holds trained; 0 for none.
func batchesOf(c *messages.Checkpoint) int {
	if c == nil {
		return 0
	}
	return c.Batches
}
