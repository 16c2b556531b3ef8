package dbn

import (
	"sync"
	"time"

	"github.com/pipedbn/pipedbn/monitor"
	"github.com/pipedbn/pipedbn/pipeline"
	"github.com/pipedbn/pipedbn/pipeline/protocol"
)

// The phases of a pipelined pre-training run, in order, as the master's
// clock sees them (docs/results-schema.md, pretrain_phases). Each begins
// where the one before ended; together they are pretrain_seconds.
const (
	// phaseCalibration: from pre-training's start until the local slaves
	// are planned, the master's CD-1 speed measured for it.
	phaseCalibration = iota
	// phaseStart: until RBM_1's first window is sent: the NATS server and
	// the slave processes started, the slaves registered and assigned,
	// RBM_1's link open (protocol.FirstDealt).
	phaseStart
	// phaseFill: until the top RBM trained its first window
	// (protocol.Filled).
	phaseFill
	// phaseSteady: every RBM trains, until RBM_1 trained its last window
	// (protocol.BottomTrained).
	phaseSteady
	// phaseDrain: until every RBM trained its last window
	// (protocol.AllTrained).
	phaseDrain
	// phaseCollect: until pre-training ends: the weights in, the slaves
	// stopped, the server shut down, the checkpoints deleted.
	phaseCollect
	phaseCount
)

var phaseNames = [phaseCount]string{"calibration", "start", "fill", "steady", "drain", "collect"}

// Phase is one phase of pre-training in result.json.
type Phase struct {
	Name    string  `json:"name"`
	Seconds float64 `json:"seconds"`
}

// phaseClock times the phases of a pipelined run's pre-training: each
// ends at its milestone, or where the phase before it ended if that was
// later (RBM_1 may be trained before the top RBM trained a window, in a
// run of fewer windows than RBMs: no steady phase then). It tells the
// monitor of every phase the run enters. A nil *phaseClock times nothing:
// greedy runs have no phases.
type phaseClock struct {
	now   func() time.Time
	mon   *monitor.Run
	start time.Time

	mu   sync.Mutex
	ends [phaseCount]time.Time // when each phase's milestone came; zero: not yet
	in   int                   // the phase the run is in: every one before it ended
}

// newPhaseClock starts timing the phases of a pre-training that started at
// start, in its first phase.
func newPhaseClock(start time.Time, mon *monitor.Run) *phaseClock {
	c := &phaseClock{now: time.Now, mon: mon, start: start}
	mon.EnterPretrainPhase(phaseNames[0])
	return c
}

// end says phase k's milestone came now.
func (c *phaseClock) end(k int) {
	if c == nil {
		return
	}
	c.endAt(k, c.now())
}

// endAt says phase k's milestone came at t; the run enters each phase
// whose predecessors all ended.
func (c *phaseClock) endAt(k int, t time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.ends[k].IsZero() {
		return
	}
	c.ends[k] = t
	for c.in < phaseCount-1 && !c.ends[c.in].IsZero() {
		c.in++
		c.mon.EnterPretrainPhase(phaseNames[c.in])
	}
}

// passed is the master's Observer.Passed: a milestone ends its phase.
func (c *phaseClock) passed(ms protocol.Milestone) {
	switch ms {
	case protocol.FirstDealt:
		c.end(phaseStart)
	case protocol.Filled:
		c.end(phaseFill)
	case protocol.BottomTrained:
		c.end(phaseSteady)
	case protocol.AllTrained:
		c.end(phaseDrain)
	}
}

// observer is the master's Observer.Passed of a run timed by c, nil for
// none.
func (c *phaseClock) observer() func(protocol.Milestone) {
	if c == nil {
		return nil
	}
	return c.passed
}

// phases returns the phases of a pre-training that ended at end, and tells
// the monitor. A milestone never seen (the weights of every RBM stored
// when a run resumed) ends its phase where the phase before it ended.
func (c *phaseClock) phases(end time.Time) []Phase {
	if c == nil {
		return nil
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	var ps []Phase
	var mps []monitor.PretrainPhase
	from := c.start
	for k, at := range c.ends {
		to := from
		if at.After(from) {
			to = at
		}
		if to.After(end) || k == phaseCollect {
			to = end
		}
		p := Phase{Name: phaseNames[k], Seconds: to.Sub(from).Seconds()}
		ps = append(ps, p)
		mps = append(mps, monitor.PretrainPhase{Name: p.Name, Seconds: p.Seconds})
		from = to
	}
	c.mon.PretrainPhases(mps)
	return ps
}

// PhaseSeconds returns the seconds of the phase of pre-training name
// (calibration, start, fill, steady, drain, collect); false for a greedy
// run, or a result written before pretrain_phases.
func (res *Result) PhaseSeconds(name string) (float64, bool) {
	for _, p := range res.PretrainPhases {
		if p.Name == name {
			return p.Seconds, true
		}
	}
	return 0, false
}

// Overhead returns overhead_seconds; false where the result has none: a
// greedy or resumed run, or a result written before the field.
func (res *Result) Overhead() (float64, bool) {
	return res.OverheadSeconds, res.Windows > 0 && !res.Resumed
}

// pipelineWindows is W, the windows every RBM of a pipelined run trains:
// its epochs' and its settle phase's.
func pipelineWindows(st pipeline.StageConfig, examples int) int {
	return st.Epochs*pipeline.WindowsPerEpoch(examples, st.BatchSize, st.K) + st.Settle.Windows
}

// recordOverhead sets the windows of a pipelined run whose stages are
// like st, on examples rows, the time of its bottleneck per window, and
// its pre-training's time beyond W such windows: the fixed costs its
// phases account for, and what the pipeline loses filling, draining and
// waiting. The bottleneck is the stage group of the plan with the most
// busy seconds per window (plan.groups[].measured_busy_seconds), or
// without a plan the RBM with the most. A resumed run has no overhead:
// its RBMs' busy seconds count from the first start, its pre-training's
// seconds from the last.
func (res *Result) recordOverhead(st pipeline.StageConfig, examples int) {
	if res.PretrainPhases == nil {
		return
	}
	w := pipelineWindows(st, examples)
	var b float64
	if res.Plan != nil {
		for _, g := range res.Plan.Groups {
			b = max(b, g.MeasuredBusySeconds)
		}
	} else if w > 0 {
		for _, r := range res.RBMs {
			b = max(b, r.BusySeconds/float64(w))
		}
	}
	res.Windows, res.BottleneckWindowSeconds = w, b
	if !res.Resumed {
		res.OverheadSeconds = res.PretrainSeconds - float64(w)*b
	}
}
