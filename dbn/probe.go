package dbn

import (
	"math"
	"sync"
	"time"

	"github.com/pipedbn/pipedbn/pipeline"
	"github.com/pipedbn/pipedbn/rbm"
)

// The probe (pretrain.probe.rows > 0) diagnoses how the schedules learn over
// wall time: it keeps snapshots of every RBM's parameters as pre-training
// goes (greedy: after any window; pipelined: the checkpoints the master
// stores) and, once pre-training ended, measures each snapshot on a fixed
// probe set, the first rows of the training set:
//   - its reconstruction error on the common input of final_recon_error
//     (the probe rows passed up through the final RBMs below), so that a
//     snapshot compares with the end and with the other schedule;
//   - for every RBM but the top, the drift of its middle results: how far
//     what it sent up at that time (the probe rows passed through the RBMs
//     below as they were then, and through the snapshot) is from what it
//     sends at the end. The RBM above trains on that moving input.

// probePoints bounds the snapshots kept per RBM: when full, every other one
// is dropped and they are taken half as often, so that they cover the
// whole run evenly.
const probePoints = 32

// ProbePoint is one snapshot of an RBM, measured on the probe set.
type ProbePoint struct {
	// Seconds of pre-training when the snapshot was taken, and the RBM's
	// mini-batches trained by then.
	Seconds float64 `json:"seconds"`
	Batches int     `json:"batches"`
	// ReconError is the snapshot's mean squared reconstruction error on
	// the probe rows passed up through the final RBMs below.
	ReconError float64 `json:"recon_error"`
	// Drift is the root mean square distance of the snapshot's middle
	// results from the final ones (absent for the top RBM, which sends
	// none).
	Drift *float64 `json:"drift,omitempty"`
}

type snapshot struct {
	at      time.Duration
	batches int
	w, a, b []float32
}

// probe keeps the snapshots of a run's RBMs. A nil *probe keeps nothing.
type probe struct {
	rows  int
	start time.Time
	total []int // mini-batches each RBM trains in all

	mu    sync.Mutex
	snaps [][]snapshot
	gap   []time.Duration // the least time between two snapshots of an RBM
	done  []time.Duration // when each RBM trained its last mini-batch; 0: not yet
}

// newProbe returns a probe of rows rows over the stages, or nil for rows 0.
func newProbe(rows int, cfgs []pipeline.StageConfig, n int) *probe {
	if rows <= 0 {
		return nil
	}
	p := &probe{rows: min(rows, n), start: time.Now(), snaps: make([][]snapshot, len(cfgs)),
		gap: make([]time.Duration, len(cfgs)), done: make([]time.Duration, len(cfgs))}
	for _, c := range cfgs {
		p.total = append(p.total, c.Batches(n))
	}
	return p
}

// started restarts the probe's clock: pre-training starts now.
func (p *probe) started() {
	if p != nil {
		p.start = time.Now()
	}
}

// due says whether RBM rbm (1-based) takes a snapshot now.
func (p *probe) due(rbm int, now time.Duration) bool {
	s := p.snaps[rbm-1]
	return len(s) == 0 || now-s[len(s)-1].at >= p.gap[rbm-1]
}

// add keeps a snapshot of RBM rbm after batches mini-batches if one is due;
// copy says whether w, a and b must be copied (they are the trainer's).
func (p *probe) add(rbm, batches int, w, a, b []float32, copyParams bool) {
	if p == nil || rbm < 1 || rbm > len(p.snaps) {
		return
	}
	now := time.Since(p.start)
	p.mu.Lock()
	defer p.mu.Unlock()
	i := rbm - 1
	if !p.due(rbm, now) || len(p.snaps[i]) > 0 && p.snaps[i][len(p.snaps[i])-1].batches >= batches {
		return // not due, or nothing trained since: a stage that forwards checkpoints too
	}
	if copyParams {
		w, a, b = append([]float32(nil), w...), append([]float32(nil), a...), append([]float32(nil), b...)
	}
	if len(p.snaps[i]) == probePoints {
		kept := p.snaps[i][:0]
		for k := 0; k < probePoints; k += 2 {
			kept = append(kept, p.snaps[i][k])
		}
		clear(p.snaps[i][len(kept):probePoints])
		p.snaps[i] = kept
		p.gap[i] = (kept[len(kept)-1].at - kept[0].at) / time.Duration(len(kept)-1)
	}
	p.snaps[i] = append(p.snaps[i], snapshot{at: now, batches: batches, w: w, a: a, b: b})
}

// window notes when an RBM trained its last mini-batch: the time of its
// final parameters.
func (p *probe) window(s pipeline.Stats) {
	if p == nil || s.Index < 1 || s.Index > len(p.done) || s.Batches < p.total[s.Index-1] {
		return
	}
	p.mu.Lock()
	if p.done[s.Index-1] == 0 {
		p.done[s.Index-1] = time.Since(p.start)
	}
	p.mu.Unlock()
}

// trained is the greedy trainer's Trained hook.
func (p *probe) trained(s pipeline.Stats, r *rbm.RBM) {
	p.add(s.Index, s.Batches, r.W, r.A, r.B, true)
}

// checkpointed is the master's Checkpointed hook: a checkpoint's parameters
// are its own.
func (p *probe) checkpointed(i int, st pipeline.StageState) {
	p.add(i, st.Stats.Batches, st.W, st.A, st.B, false)
}

// measure measures every snapshot, and the final RBMs as the last point of
// each, on the first rows of x; nil for a nil probe.
func (p *probe) measure(rbms []*rbm.RBM, x []float32) [][]ProbePoint {
	if p == nil {
		return nil
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	end := time.Since(p.start)
	n := p.rows
	// in[i] is RBM_i's final input, the probe rows through the final RBMs
	// below; in[len(rbms)] the top's final output.
	in := [][]float32{x[:n*rbms[0].Visible]}
	for _, r := range rbms {
		next := make([]float32, n*r.Hidden)
		r.HiddenProbs(next, in[len(in)-1], n)
		in = append(in, next)
	}
	// series[i] is RBM_i's snapshots, then its final parameters.
	series := make([][]snapshot, len(rbms))
	for i, r := range rbms {
		done := p.done[i]
		if done == 0 {
			done = end
		}
		s := p.snaps[i]
		for len(s) > 0 && s[len(s)-1].batches >= p.total[i] {
			s = s[:len(s)-1] // the final parameters are added below
		}
		if len(s) > 0 {
			// A checkpoint may reach the master after the RBM's last report.
			done = max(done, s[len(s)-1].at)
		}
		series[i] = append(s[:len(s):len(s)], snapshot{at: done, batches: p.total[i], w: r.W, a: r.A, b: r.B})
	}
	points := make([][]ProbePoint, len(rbms))
	for i, r := range rbms {
		for _, s := range series[i] {
			snap := at(r, s)
			pt := ProbePoint{Seconds: s.at.Seconds(), Batches: s.batches, ReconError: ReconError(snap, in[i], n)}
			if math.IsNaN(pt.ReconError) {
				continue // a snapshot that diverged: nothing to draw
			}
			if i+1 < len(rbms) {
				// What RBM_i sent up then: the probe rows through the RBMs
				// below as they were at that time, and through this one.
				v := in[0]
				for j := 0; j <= i; j++ {
					rj := snap
					if j < i {
						rj = at(rbms[j], asOf(series[j], s.at))
					}
					h := make([]float32, n*rj.Hidden)
					rj.HiddenProbs(h, v, n)
					v = h
				}
				if d := rms(v, in[i+1]); !math.IsNaN(d) {
					pt.Drift = &d
				}
			}
			points[i] = append(points[i], pt)
		}
	}
	return points
}

// at returns r with the parameters of snapshot s.
func at(r *rbm.RBM, s snapshot) *rbm.RBM {
	c := *r
	c.W, c.A, c.B = s.w, s.a, s.b
	return &c
}

// asOf returns the latest snapshot of a series taken at or before t, or
// the first one.
func asOf(series []snapshot, t time.Duration) snapshot {
	k := 0
	for i, s := range series {
		if s.at <= t {
			k = i
		}
	}
	return series[k]
}

// rms is the root mean square difference of a and b.
func rms(a, b []float32) float64 {
	s := 0.0
	for i := range a {
		d := float64(a[i] - b[i])
		s += d * d
	}
	return math.Sqrt(s / float64(len(a)))
}
