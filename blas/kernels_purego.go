//go:build purego

package blas

// KernelLevel reports which variant of the element-wise kernels runs on this
// CPU: "avx512", "avx2" or "base" for the C kernels, "go" in the purego build.
func KernelLevel() string { return "go" }

func uniform(s *[4 * rngLanes]uint32, dst []float32) { refUniform(s, dst) }

func sigmoidBias(x []float32, rows, cols int, bias, colSum []float32) {
	refSigmoidBias(x, rows, cols, bias, colSum)
}

func sigmoidBiasSample(x, smp []float32, rows, cols int, bias, colSum []float32, s *[4 * rngLanes]uint32) {
	refSigmoidBiasSample(x, smp, rows, cols, bias, colSum, s)
}

func reconstruct(x, v0 []float32, rows, cols int, bias, colDiff []float32, logistic bool) float64 {
	return refReconstruct(x, v0, rows, cols, bias, colDiff, logistic)
}

func momentumStep(w, vel []float32, decay, carry float32) bool {
	return refMomentumStep(w, vel, decay, carry)
}

func sigmoidDelta(delta, h []float32, rows, cols int, colSum []float32) {
	refSigmoidDelta(delta, h, rows, cols, colSum)
}

// capKernelLevel is a no-op in the purego build: there is one variant.
func capKernelLevel(l int) {}

func (s *CDStep) run() (sse float64, finite bool) { return s.runEach() }
