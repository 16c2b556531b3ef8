package blas

import "fmt"

// The element-wise kernels of a CD-k step and of a fine-tuning step's
// backward pass on row-major float32 matrices. Each fuses what would
// otherwise be several passes over memory (bias add, logistic, sampling,
// column sums, reconstruction error, the logistic's derivative) into one,
// so that on one core a step costs little more than its GEMMs. The default
// build runs auto-vectorised C (AVX-512, AVX2 or baseline, chosen at run
// time); the purego build runs Go code that gives bit-identical results.

// SigmoidBias sets x[r,j] = sigmoid(x[r,j] + bias[j]) for the rows x cols
// matrix x and, when colSum is not nil, adds each column's new values to
// colSum[j]. The logistic is accurate to about 1e-7 absolute over all of
// float32 (see Sigmoid); NaN stays NaN.
func SigmoidBias(x []float32, rows, cols int, bias, colSum []float32) {
	checkMat("SigmoidBias", "x", x, rows, cols)
	checkVec("SigmoidBias", "bias", bias, cols)
	if colSum != nil {
		checkVec("SigmoidBias", "colSum", colSum, cols)
	}
	if rows == 0 || cols == 0 {
		return
	}
	sigmoidBias(x, rows, cols, bias, colSum)
}

// SigmoidBiasSample does what SigmoidBias does and also draws binary states:
// samples[r,j] = 1 if u < x[r,j] (the new probability) else 0, with u uniform
// from g. Each row steps g ceil(cols/16) times; the state of row r column j
// uses stream j%16.
func SigmoidBiasSample(x, samples []float32, rows, cols int, bias, colSum []float32, g *RNG) {
	checkMat("SigmoidBiasSample", "x", x, rows, cols)
	checkMat("SigmoidBiasSample", "samples", samples, rows, cols)
	checkVec("SigmoidBiasSample", "bias", bias, cols)
	if colSum != nil {
		checkVec("SigmoidBiasSample", "colSum", colSum, cols)
	}
	if rows == 0 || cols == 0 {
		return
	}
	sigmoidBiasSample(x, samples, rows, cols, bias, colSum, &g.s)
}

// Reconstruct finishes the negative visible phase of a CD step. For the rows
// x cols matrix x (the pre-activations h Wᵀ) it sets x[r,j] =
// sigmoid(x[r,j] + bias[j]) when logistic (Bernoulli units) or x[r,j] +
// bias[j] (unit-variance Gaussian means), adds v0[r,j] - x[r,j] to
// colDiff[j], and returns the sum of squared differences between v0 and the
// new x.
func Reconstruct(x, v0 []float32, rows, cols int, bias, colDiff []float32, logistic bool) float64 {
	checkMat("Reconstruct", "x", x, rows, cols)
	checkMat("Reconstruct", "v0", v0, rows, cols)
	checkVec("Reconstruct", "bias", bias, cols)
	checkVec("Reconstruct", "colDiff", colDiff, cols)
	if rows == 0 || cols == 0 {
		return 0
	}
	return reconstruct(x, v0, rows, cols, bias, colDiff, logistic)
}

// MomentumStep applies a momentum update whose gradient part is already in
// vel: vel[i] -= decay*w[i]; w[i] += vel[i]; and then leaves in vel[i] what
// the next update carries of it, carry*vel[i] (carry 1: vel[i] as it is),
// so that the next update's gradient GEMM adds to vel with beta 1 rather
// than scaling it in a pass of its own. It reports whether every new w[i]
// is finite, so a caller learns of divergence without another pass.
func MomentumStep(w, vel []float32, decay, carry float32) (finite bool) {
	if len(vel) < len(w) {
		panic(fmt.Sprintf("blas: MomentumStep: len(vel) = %d < len(w) = %d", len(vel), len(w)))
	}
	if len(w) == 0 {
		return true
	}
	return momentumStep(w, vel, decay, carry)
}

// MomentumCarry returns the carry MomentumStep is to leave after a step of
// momentum m: m, so that the buffer holds what the next step carries, or
// 1 for momentum 0, whose product would lose the velocity a later momentum
// needs.
func MomentumCarry(m float32) float32 {
	if m == 0 {
		return 1
	}
	return m
}

// MomentumBeta returns the beta with which a gradient GEMM adds to a
// momentum buffer for a step of momentum m, the buffer carrying momentum
// carried already (MomentumCarry's m; 0: it holds the velocity itself):
// 1 while the momentum holds, when GEMM makes no pass of its own over it.
func MomentumBeta(m, carried float32) float32 {
	if carried == 0 {
		return m
	}
	return m / carried
}

// SigmoidDelta passes back-propagated deltas through a sigmoid layer: for
// the rows x cols matrices delta (∂loss/∂h) and h (the layer's sigmoid
// outputs) it sets delta[r,j] = delta[r,j]·h[r,j](1-h[r,j]), ∂loss/∂(pre-
// activation), and, when colSum is not nil, adds each column's new values
// to colSum[j]: the bias gradient, without a pass of its own.
func SigmoidDelta(delta, h []float32, rows, cols int, colSum []float32) {
	checkMat("SigmoidDelta", "delta", delta, rows, cols)
	checkMat("SigmoidDelta", "h", h, rows, cols)
	if colSum != nil {
		checkVec("SigmoidDelta", "colSum", colSum, cols)
	}
	if rows == 0 || cols == 0 {
		return
	}
	sigmoidDelta(delta, h, rows, cols, colSum)
}

// Sigmoid returns 1/(1+exp(-x)) as the kernels compute it: within about 1e-7
// absolute of the exact value for every float32 x.
func Sigmoid(x float32) float32 { return sigmoid(x) }

func checkMat(fn, name string, x []float32, rows, cols int) {
	if rows < 0 || cols < 0 {
		panic(fmt.Sprintf("blas: %s: negative shape %d x %d", fn, rows, cols))
	}
	if len(x) < rows*cols {
		panic(fmt.Sprintf("blas: %s: len(%s) = %d < %d x %d", fn, name, len(x), rows, cols))
	}
}

func checkVec(fn, name string, x []float32, n int) {
	if len(x) < n {
		panic(fmt.Sprintf("blas: %s: len(%s) = %d < %d", fn, name, len(x), n))
	}
}
