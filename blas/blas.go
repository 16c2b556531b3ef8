// Package blas is pipedbn's float32 linear-algebra back end: row-major GEMM
// through OpenBLAS (cgo, gonum.org/v1/netlib) by default, or gonum's pure-Go
// BLAS when built with the purego tag.
//
// It also holds the fused element-wise kernels of a contrastive-divergence
// step (SigmoidBias, SigmoidBiasSample, Reconstruct, MomentumStep), of a
// fine-tuning step's backward pass (SigmoidDelta) and the vectorisable RNG
// they sample with: auto-vectorised C in the default build,
// bit-identical Go with the purego tag.
//
// All matrices are row-major float32 slices. Like gonum, the caller supplies
// every destination, so hot loops allocate nothing; a shape mismatch is a
// programmer error and panics.
package blas

import gblas "gonum.org/v1/gonum/blas"

// Gemm computes C = alpha*op(A)*op(B) + beta*C, where op(X) is X or its
// transpose (tA, tB), op(A) is m x k, op(B) is k x n and C is m x n. lda, ldb
// and ldc are the row strides of A, B and C as stored.
func Gemm(tA, tB bool, m, n, k int, alpha float32, a []float32, lda int, b []float32, ldb int, beta float32, c []float32, ldc int) {
	if m == 0 || n == 0 {
		return
	}
	impl.Sgemm(trans(tA), trans(tB), m, n, k, alpha, a, lda, b, ldb, beta, c, ldc)
}

// Name reports which implementation this binary was built with: "openblas"
// or "gonum".
func Name() string { return implName }

func trans(t bool) gblas.Transpose {
	if t {
		return gblas.Trans
	}
	return gblas.NoTrans
}
