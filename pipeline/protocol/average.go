package protocol

import (
	"fmt"
	"slices"
	"time"

	"github.com/pipedbn/pipedbn/messages"
	"github.com/pipedbn/pipedbn/pipeline"
)

// Averages: the replicas of an RBM train on different windows and meet at
// the master every SyncEvery of their windows. Replica k sends its
// parameters for round s (messages.Params) after its window s·SyncEvery,
// and once more, Final, after its last window; it trains on once the
// round's average comes back. The master averages round s once every
// replica sent its parameters for it, or already sent its final round
// before s (a replica with fewer windows ends sooner): the mean of those
// that came, in replica order, so that every replica gets the same bits.
// The RBM's weights are the mean of the last round.
//
// A replica that restarts from a checkpoint trains its windows again and
// sends its parameters for the rounds since: the master answers with the
// averages it keeps, the same a fresh computation would give, since
// training from a checkpoint is deterministic. It keeps every average after
// the replicas' keep point (see updateKeeps), where every restart begins.

// averaging is the master's side of one RBM's replicas' averages.
type averaging struct {
	round int                // the round being gathered, from 1
	in    []*messages.Params // this round's parameters, per replica
	final []int              // each replica's final round; 0 until it came
	kept  map[int]*messages.Params
	last  *messages.Params // the latest average
	sum   []float64        // mean's accumulator, kept across rounds: a fresh one each round was the largest allocation of an average
}

func newAveraging(replicas int) *averaging {
	return &averaging{round: 1, in: make([]*messages.Params, replicas), final: make([]int, replicas), kept: map[int]*messages.Params{}}
}

// over reports whether every replica's final round is averaged.
func (a *averaging) over() bool {
	return a.last != nil && !slices.ContainsFunc(a.final, func(f int) bool { return f == 0 || f > a.last.Round })
}

// average takes replica s's parameters p for a round: it answers with the
// round's average if it is kept, or gathers p.
func (m *Master) average(s *seat, p *messages.Params) {
	i, k := s.at.RBM, s.at.Replica
	a := m.averages[i]
	if p.Final {
		a.final[k] = p.Round
	}
	switch avg := a.kept[p.Round]; {
	case avg != nil:
		m.sendAverage(s, avg)
	case p.Round == a.round:
		a.in[k] = p
	default:
		m.log.Warn("parameters for a round not gathered", "slave", s.slave, "rbm", i, "replica", k, "round", p.Round, "gathering", a.round)
		return
	}
	m.gather(i)
}

// gather averages RBM i's round once it is complete: every replica sent
// its parameters for it, or its final round came before it.
func (m *Master) gather(i int) {
	a := m.averages[i]
	if !slices.ContainsFunc(a.in, func(p *messages.Params) bool { return p != nil }) {
		return
	}
	for r, in := range a.in {
		if in == nil && (a.final[r] == 0 || a.final[r] >= a.round) {
			return // replica r still trains towards this round
		}
	}
	avg := mean(a.in, &a.sum)
	avg.Round = a.round
	avg.Final = !slices.ContainsFunc(a.final, func(f int) bool { return f == 0 || f > a.round })
	a.kept[a.round], a.last = avg, avg
	if m.cfg.CheckpointEvery <= 0 {
		// No replica restarts from a checkpoint: only this round's
		// average may be asked for again, by a replica that lost it.
		a.forget(a.round*m.cfg.SyncEvery, m.cfg.SyncEvery)
	}
	for r, in := range a.in {
		if in != nil {
			m.sendAverage(m.seats[i][r], avg)
		}
	}
	a.round++
	clear(a.in)
	m.finished(i)
}

// sendAverage sends avg to the slave of seat s.
func (m *Master) sendAverage(s *seat, avg *messages.Params) {
	p := *avg
	p.Replica = s.at.Replica
	m.send(s.slave, &p)
}

// mean returns the mean of the parameters in ps that are not nil, each
// weighted by the windows its replica trained since the last average (all
// alike when none did), summed in replica order in float64 in *sum, which
// it grows as needed and leaves for the next call.
func mean(ps []*messages.Params, sum *[]float64) *messages.Params {
	var first *messages.Params
	weights := make([]float64, len(ps))
	total := 0.0
	for k, p := range ps {
		if p != nil {
			first = p
			weights[k] = float64(p.Windows)
			total += weights[k]
		}
	}
	if total == 0 { // none trained since: all alike
		for k, p := range ps {
			if p != nil {
				weights[k] = 1
				total++
			}
		}
	}
	avg := &messages.Params{
		RunID: first.RunID, Incarnation: first.Incarnation, RBM: first.RBM, Visible: first.Visible, Hidden: first.Hidden,
	}
	avg.W = weighted(ps, weights, total, sum, func(p *messages.Params) []float32 { return p.W })
	avg.A = weighted(ps, weights, total, sum, func(p *messages.Params) []float32 { return p.A })
	avg.B = weighted(ps, weights, total, sum, func(p *messages.Params) []float32 { return p.B })
	return avg
}

func weighted(ps []*messages.Params, weights []float64, total float64, scratch *[]float64, field func(*messages.Params) []float32) []float32 {
	var sum []float64
	for k, p := range ps {
		if p == nil || weights[k] == 0 {
			continue
		}
		v := field(p)
		if sum == nil {
			if cap(*scratch) < len(v) {
				*scratch = make([]float64, len(v))
			}
			sum = (*scratch)[:len(v)]
			clear(sum)
		}
		for j, x := range v {
			sum[j] += weights[k] * float64(x)
		}
	}
	out := make([]float32, len(sum))
	for j, x := range sum {
		out[j] = float32(x / total)
	}
	return out
}

// forget drops the averages no replica needs: those up to the round of
// from, the earliest window any of them may restart or stand at.
func (a *averaging) forget(from, syncEvery int) {
	for r := range a.kept {
		if r <= from/syncEvery && a.kept[r] != a.last {
			delete(a.kept, r)
		}
	}
}

// weights returns the RBM's weights: the last average, with the
// statistics of its replicas' final reports (seats): mini-batches and
// bytes summed, the longest busy and waiting times, the first replica's
// reconstruction errors.
func (a *averaging) weights(seats []*seat) *messages.Weights {
	first := seats[0].weights
	w := &messages.Weights{
		RunID: first.RunID, Incarnation: first.Incarnation, RBM: first.RBM, Visible: first.Visible, Hidden: first.Hidden,
		W: a.last.W, A: a.last.A, B: a.last.B, ReconErrors: first.ReconErrors,
	}
	for _, s := range seats {
		r := s.weights
		w.Batches += r.Batches
		w.BytesIn += r.BytesIn
		w.BytesOut += r.BytesOut
		w.BusySeconds = max(w.BusySeconds, r.BusySeconds)
		w.WaitSeconds = max(w.WaitSeconds, r.WaitSeconds)
	}
	return w
}

// sync sends the replica's parameters for the next average to the master,
// final after its last window, and waits for the average.
func (s *Slave) sync(now time.Duration, final bool) {
	a := s.assign
	w, pa, pb := s.stage.Params()
	visible, hidden := s.stage.Config().ParamShape()
	s.syncing = &messages.Params{
		RunID: s.run.ID, Incarnation: s.run.Incarnation, RBM: a.RBM, Replica: a.Replica, Round: s.synced + 1, Final: final,
		Windows: max(0, s.stage.Windows()-s.synced*a.SyncEvery), Visible: visible, Hidden: hidden,
		W: slices.Clone(w), A: slices.Clone(pa), B: slices.Clone(pb),
	}
	s.syncSent = now
	s.send(MasterName, s.syncing)
	if s.state != pipeline.WaitingAverage {
		s.setState(now, pipeline.WaitingAverage)
	}
}

// averaged takes the replicas' average the slave waits for: its RBM takes
// its parameters, and training goes on, or, after the final one, ends.
func (s *Slave) averaged(now time.Duration, p *messages.Params) {
	want := s.syncing
	if want == nil || (s.phase != training && s.phase != draining) || p.RunID != s.run.ID || p.Incarnation != s.run.Incarnation ||
		p.RBM != want.RBM || p.Replica != want.Replica || p.Round != want.Round {
		return
	}
	if visible, hidden := s.stage.Config().ParamShape(); p.Visible != visible || p.Hidden != hidden {
		s.fail(fmt.Errorf("the replicas' average %d: %d x %d parameters, want %d x %d", p.Round, p.Visible, p.Hidden, visible, hidden))
		return
	}
	s.stage.SetParams(p.W, p.A, p.B)
	s.synced, s.syncing = p.Round, nil
	if want.Final {
		s.finish(now)
		return
	}
	s.maybeCheckpoint()
	s.setState(now, pipeline.WaitingInput)
	s.pump(now)
}
