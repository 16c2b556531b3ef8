package rbm

import (
	"math"
	"math/rand/v2"
	"time"
)

// MeasureRate trains a fresh visible x hidden Bernoulli RBM with CD-cdK on
// random mini-batches of batch rows for about d (at least two steps, the
// first not timed) and returns the samples it trained per second: the
// calibration of a machine's speed for pipeline/plan (plan.SpeedFromRate).
// It uses the BLAS threads as they are set.
func MeasureRate(visible, hidden, batch, cdK int, d time.Duration) float64 {
	step := calibrationSteps(visible, hidden, batch, cdK)
	step(batch) // warm: buffers, BLAS threads
	start := time.Now()
	steps := 0
	for steps < 1 || time.Since(start) < d {
		step(batch)
		steps++
	}
	return float64(steps*batch) / time.Since(start).Seconds()
}

// MeasureStepCost times CD-cdK steps of a fresh visible x hidden Bernoulli
// RBM on random input, alternating steps of batch rows and of small rows
// for about d (at least three of each after an untimed one of each), and
// returns the fastest step of each size: what a step costs whatever its
// rows follows from the two (plan.StepRowsFrom). Alternating makes the two
// see the same machine, whose speed drifts; the fastest step leaves out the
// ones another process interrupted. It uses the BLAS threads as they are set.
func MeasureStepCost(visible, hidden, batch, small, cdK int, d time.Duration) (full, sub time.Duration) {
	step := calibrationSteps(visible, hidden, batch, cdK)
	timed := func(rows int) time.Duration {
		start := time.Now()
		step(rows)
		return time.Since(start)
	}
	step(batch) // warm: buffers, BLAS threads
	step(small)
	full, sub = time.Duration(math.MaxInt64), time.Duration(math.MaxInt64)
	start := time.Now()
	for n := 0; n < 3 || time.Since(start) < d; n++ {
		full = min(full, timed(batch))
		sub = min(sub, timed(small))
	}
	return full, sub
}

// calibrationSteps returns a function that takes one CD-cdK step of a fresh
// visible x hidden Bernoulli RBM on the first rows (at most batch) of a
// random mini-batch: the calibrations' work.
func calibrationSteps(visible, hidden, batch, cdK int) func(rows int) {
	t := NewTrainer(New(visible, hidden, Bernoulli, 1), batch, cdK, 2)
	src := rand.New(rand.NewPCG(3, 4))
	v := make([]float32, batch*visible)
	for i := range v {
		v[i] = src.Float32()
	}
	p := Params{LearningRate: 0.01, Momentum: 0.5}
	return func(rows int) {
		if _, err := t.Step(v, rows, p, nil, Probabilities); err != nil {
			panic("rbm: calibration: " + err.Error()) // random input in [0, 1) cannot diverge in a few steps
		}
	}
}
