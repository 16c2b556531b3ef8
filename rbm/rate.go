package rbm

import (
	"math/rand/v2"
	"time"
)

// MeasureRate trains a fresh visible x hidden Bernoulli RBM with CD-cdK on
// random mini-batches of batch rows for about d (at least two steps, the
// first not timed) and returns the samples it trained per second: the
// calibration of a machine's speed for pipeline/plan (plan.SpeedFromRate).
// It uses the BLAS threads as they are set.
func MeasureRate(visible, hidden, batch, cdK int, d time.Duration) float64 {
	r := New(visible, hidden, Bernoulli, 1)
	t := NewTrainer(r, batch, cdK, 2)
	src := rand.New(rand.NewPCG(3, 4))
	v := make([]float32, batch*visible)
	for i := range v {
		v[i] = src.Float32()
	}
	p := Params{LearningRate: 0.01, Momentum: 0.5}
	step := func() {
		if _, err := t.Step(v, batch, p, nil, Probabilities); err != nil {
			panic("rbm: MeasureRate: " + err.Error()) // random input in [0, 1) cannot diverge in a few steps
		}
	}
	step() // warm: buffers, BLAS threads
	start := time.Now()
	steps := 0
	for steps < 1 || time.Since(start) < d {
		step()
		steps++
	}
	return float64(steps*batch) / time.Since(start).Seconds()
}
