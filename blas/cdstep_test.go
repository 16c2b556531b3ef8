package blas

import (
	"math"
	"math/rand/v2"
	"testing"
)

// cdCase builds a CDStep on random buffers: the same seed, the same step.
func cdCase(seed uint64, rows, batch, V, H, k int, logistic, samples, middle bool) *CDStep {
	src := rand.New(rand.NewPCG(seed, 1))
	vec := func(n int, scale float32) []float32 {
		x := make([]float32, n)
		for i := range x {
			x[i] = scale * (src.Float32() - 0.5)
		}
		return x
	}
	s := &CDStep{
		Rows: rows, Visible: V, Hidden: H, K: k, Logistic: logistic,
		V0: vec(batch*V, 2), W: vec(V*H, 0.2), A: vec(V, 0.1), B: vec(H, 0.1),
		H0: vec(batch*H, 1), HS: vec(batch*H, 1), VK: vec(batch*V, 1), HK: vec(batch*H, 1),
		SumH0: vec(H, 1), SumHk: vec(H, 1), DiffA: vec(V, 1),
		VelW: vec(V*H, 0.01), Scale: 0.1 / float32(rows), Beta: 1, Decay: 0.0002, Carry: 0.5,
		MiddleSamples: samples, RNG: new(RNG),
	}
	if middle {
		s.Middle = vec(batch*H, 1)
	}
	s.RNG.Seed(seed)
	return s
}

// A step in one call gives the bits of the same GEMMs and kernels called
// one by one, over several steps (the generator and the momentum carried),
// for short batches, CD-k, Gaussian visible units and each middle result.
func TestCDStepRunIsRunEach(t *testing.T) {
	for _, c := range []struct {
		rows, batch, V, H, k      int
		logistic, samples, middle bool
	}{
		{32, 32, 40, 24, 1, true, false, true},
		{7, 32, 40, 24, 1, true, true, true},
		{32, 32, 33, 17, 2, true, false, false},
		{16, 32, 40, 24, 3, false, true, true},
		{1, 4, 5, 3, 1, false, false, false},
	} {
		one := cdCase(9, c.rows, c.batch, c.V, c.H, c.k, c.logistic, c.samples, c.middle)
		each := cdCase(9, c.rows, c.batch, c.V, c.H, c.k, c.logistic, c.samples, c.middle)
		for step := range 3 {
			e1, f1 := one.Run()
			e2, f2 := each.runEach()
			if math.Float64bits(e1) != math.Float64bits(e2) || f1 != f2 {
				t.Fatalf("%+v step %d: Run = %v, %v; runEach = %v, %v", c, step, e1, f1, e2, f2)
			}
			for name, pair := range map[string][2][]float32{
				"W": {one.W, each.W}, "VelW": {one.VelW, each.VelW}, "H0": {one.H0, each.H0}, "HS": {one.HS, each.HS},
				"VK": {one.VK, each.VK}, "HK": {one.HK, each.HK}, "SumH0": {one.SumH0, each.SumH0},
				"SumHk": {one.SumHk, each.SumHk}, "DiffA": {one.DiffA, each.DiffA}, "Middle": {one.Middle, each.Middle},
			} {
				sameBits(t, name, pair[0], pair[1])
			}
			if one.RNG.s != each.RNG.s {
				t.Fatalf("%+v step %d: the generators differ", c, step)
			}
		}
	}
}

// A step that blows W up reports it, as MomentumStep does.
func TestCDStepRunReportsInfinity(t *testing.T) {
	s := cdCase(3, 8, 8, 6, 4, 1, true, false, false)
	s.Scale = float32(math.Inf(1))
	if _, finite := s.Run(); finite {
		t.Error("Run with an infinite rate reports W finite")
	}
}

// Run checks its buffers before it calls out.
func TestCDStepRunChecks(t *testing.T) {
	s := cdCase(3, 8, 8, 6, 4, 1, true, false, false)
	s.HK = s.HK[:10]
	defer func() {
		if recover() == nil {
			t.Error("Run with a short HK did not panic")
		}
	}()
	s.Run()
}
