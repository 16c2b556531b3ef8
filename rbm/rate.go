package rbm

import (
	"math"
	"math/rand/v2"
	"slices"
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

// StepCost is what CD steps of two sizes cost on this machine
// (MeasureStepCost).
type StepCost struct {
	// Full and Sub are the fastest step of the full and of the small
	// size by the wall clock: what a step takes where the process has
	// the CPUs it wants.
	Full, Sub time.Duration
	// FullCPU and SubCPU are the median CPU time the whole process spent
	// during a step of each size: the step's own, and what the Go
	// runtime's other threads spend while the step is in C, a larger
	// share of a small step than of a full one. Under a CPU quota every
	// thread's time counts, so this is what a capped step costs.
	FullCPU, SubCPU time.Duration
}

// MeasureStepCost times CD-cdK steps of a fresh visible x hidden Bernoulli
// RBM on random input, alternating steps of batch rows and of small rows
// for about d (at least three of each after an untimed one of each): what
// a step costs whatever its rows follows from the two sizes
// (plan.StepRowsFrom). Alternating makes the two see the same machine,
// whose speed drifts; the fastest step by the wall clock leaves out the
// ones another process interrupted, and the median by CPU time those
// the process's other work fell into. It uses the BLAS threads as they
// are set.
func MeasureStepCost(visible, hidden, batch, small, cdK int, d time.Duration) StepCost {
	step := calibrationSteps(visible, hidden, batch, cdK)
	var fullCPU, subCPU []time.Duration
	timed := func(rows int, cpus *[]time.Duration) time.Duration {
		start, cpu := time.Now(), processCPU()
		step(rows)
		wall := time.Since(start)
		*cpus = append(*cpus, processCPU()-cpu)
		return wall
	}
	step(batch) // warm: buffers, BLAS threads
	step(small)
	c := StepCost{Full: time.Duration(math.MaxInt64), Sub: time.Duration(math.MaxInt64)}
	start := time.Now()
	for n := 0; n < 3 || time.Since(start) < d; n++ {
		c.Full = min(c.Full, timed(batch, &fullCPU))
		c.Sub = min(c.Sub, timed(small, &subCPU))
	}
	c.FullCPU, c.SubCPU = median(fullCPU), median(subCPU)
	return c
}

// median returns the middle of ds (the upper one of an even count),
// which it sorts; 0 for none.
func median(ds []time.Duration) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	slices.Sort(ds)
	return ds[len(ds)/2]
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
