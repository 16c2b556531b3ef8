package blas

import "fmt"

// CDStep is the arithmetic of one CD-k step of a Visible x Hidden RBM on
// the first Rows rows of V0, as rbm.Trainer.Step takes it, with every
// buffer the step writes; Run takes it in one call into the BLAS library
// rather than one per GEMM and kernel. Each call out of Go costs the Go
// runtime's scheduler work on another thread while the call lasts, which
// a CPU quota takes from the step (experiments/results/cgo_calls/).
type CDStep struct {
	Rows, Visible, Hidden int
	// K is the Gibbs steps of CD-k, at least 1.
	K int
	// Logistic: Bernoulli visible units, whose reconstruction is a sigmoid.
	Logistic bool
	// V0 is the mini-batch (Rows x Visible); W (Visible x Hidden), A and B
	// the RBM's weights and biases.
	V0, W, A, B []float32
	// H0, HS and HK (Rows x Hidden) and VK (Rows x Visible) are the
	// chain's states; SumH0 and SumHk the column sums of H0 and the last
	// HK, DiffA the column sums of V0 - V1: the bias gradients. Run
	// overwrites them all.
	H0, HS, VK, HK      []float32
	SumH0, SumHk, DiffA []float32
	// VelW is the momentum buffer, to which the gradient GEMMs add with
	// Scale (the learning rate over the rows) and Beta (MomentumBeta);
	// MomentumStep then applies Decay and leaves Carry (MomentumCarry).
	VelW                      []float32
	Scale, Beta, Decay, Carry float32
	// Middle, if not nil (Rows x Hidden), receives H0, or HS of the
	// positive phase when MiddleSamples.
	Middle        []float32
	MiddleSamples bool
	RNG           *RNG

	// finite is where the call out of Go reports W finite (1) or not: a
	// field, so that a CDStep kept by its caller allocates nothing.
	finite int32
}

// Run takes the step: the positive phase, K steps of the Gibbs chain, the
// two gradient GEMMs into VelW and MomentumStep on W. It returns the
// squared error of the first reconstruction and whether W stayed finite;
// the biases are the caller's to update from SumH0, SumHk and DiffA. The
// result is bit-identical to the same GEMMs and kernels called one by one.
func (s *CDStep) Run() (sse float64, finite bool) {
	s.check()
	return s.run()
}

// runEach takes the step one GEMM and kernel at a time.
func (s *CDStep) runEach() (sse float64, finite bool) {
	rows, V, H := s.Rows, s.Visible, s.Hidden
	v0, h0, hs, vk, hk := s.V0[:rows*V], s.H0[:rows*H], s.HS[:rows*H], s.VK[:rows*V], s.HK[:rows*H]
	clear(s.SumH0[:H])
	clear(s.SumHk[:H])
	Gemm(false, false, rows, H, V, 1, v0, V, s.W, H, 0, h0, H)
	SigmoidBiasSample(h0, hs, rows, H, s.B, s.SumH0, s.RNG)
	if s.Middle != nil {
		if s.MiddleSamples {
			copy(s.Middle, hs)
		} else {
			copy(s.Middle, h0)
		}
	}
	for step := 0; step < s.K; step++ {
		Gemm(false, true, rows, V, H, 1, hs, H, s.W, H, 0, vk, V)
		clear(s.DiffA[:V])
		e := Reconstruct(vk, v0, rows, V, s.A, s.DiffA, s.Logistic)
		if step == 0 {
			sse = e
		}
		Gemm(false, false, rows, H, V, 1, vk, V, s.W, H, 0, hk, H)
		if step < s.K-1 {
			SigmoidBiasSample(hk, hs, rows, H, s.B, nil, s.RNG)
		} else {
			SigmoidBias(hk, rows, H, s.B, s.SumHk)
		}
	}
	Gemm(true, false, V, H, rows, s.Scale, v0, V, h0, H, s.Beta, s.VelW, H)
	Gemm(true, false, V, H, rows, -s.Scale, vk, V, hk, H, 1, s.VelW, H)
	return sse, MomentumStep(s.W[:V*H], s.VelW[:V*H], s.Decay, s.Carry)
}

// check panics unless every buffer holds what the step reads and writes.
func (s *CDStep) check() {
	rows, V, H := s.Rows, s.Visible, s.Hidden
	if rows < 1 || V < 1 || H < 1 || s.K < 1 || s.RNG == nil {
		panic(fmt.Sprintf("blas: CDStep: %d rows of %dx%d, k %d, rng %v; want positive sizes and k and an RNG", rows, V, H, s.K, s.RNG != nil))
	}
	checkMat("CDStep", "V0", s.V0, rows, V)
	checkMat("CDStep", "W", s.W, V, H)
	checkMat("CDStep", "VelW", s.VelW, V, H)
	checkMat("CDStep", "VK", s.VK, rows, V)
	checkMat("CDStep", "H0", s.H0, rows, H)
	checkMat("CDStep", "HS", s.HS, rows, H)
	checkMat("CDStep", "HK", s.HK, rows, H)
	if s.Middle != nil {
		checkMat("CDStep", "Middle", s.Middle, rows, H)
	}
	checkVec("CDStep", "A", s.A, V)
	checkVec("CDStep", "DiffA", s.DiffA, V)
	checkVec("CDStep", "B", s.B, H)
	checkVec("CDStep", "SumH0", s.SumH0, H)
	checkVec("CDStep", "SumHk", s.SumHk, H)
}
