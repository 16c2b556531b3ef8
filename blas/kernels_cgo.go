//go:build !purego

package blas

/*
#cgo CFLAGS: -O3
#include <stdint.h>

// Defined in kernels.c. Declared here rather than in a header: cgo's own
// preprocessing of this preamble looks for quoted includes outside the
// package directory first (a stray kernels.h in /tmp broke the build).
void pd_uniform(uint32_t *state, float *dst, long n);
void pd_logistic_bias(float *x, long rows, long cols, const float *bias, float *colsum);
void pd_logistic_bias_sample(float *x, float *smp, long rows, long cols,
		const float *bias, float *colsum, uint32_t *state);
double pd_reconstruct(float *x, const float *v0, long rows, long cols,
		const float *bias, float *coldiff, int logistic);
int pd_momentum_step(float *w, float *vel, long n, float decay, float carry);
void pd_sigmoid_delta(float *d, const float *h, long rows, long cols, float *colsum);
const char *pd_kernel_level(void);
double pd_cd_step(long rows, long V, long H, long k, int logistic,
		const float *v0, float *w, const float *a, const float *b,
		float *h0, float *hs, float *vk, float *hk,
		float *sumh0, float *sumhk, float *diffa,
		float *velw, float scale, float beta, float decay, float carry,
		float *middle, int middle_samples, uint32_t *state, int *finite);
void pd_cap_level(int l);
*/
import "C"

import "unsafe"

func fptr(x []float32) *C.float {
	if x == nil {
		return nil
	}
	return (*C.float)(unsafe.Pointer(&x[0]))
}

// KernelLevel reports which variant of the element-wise kernels runs on this
// CPU: "avx512", "avx2" or "base" for the C kernels, "go" in the purego build.
func KernelLevel() string { return C.GoString(C.pd_kernel_level()) }

func uniform(s *[4 * rngLanes]uint32, dst []float32) {
	C.pd_uniform((*C.uint32_t)(&s[0]), fptr(dst), C.long(len(dst)))
}

func sigmoidBias(x []float32, rows, cols int, bias, colSum []float32) {
	C.pd_logistic_bias(fptr(x), C.long(rows), C.long(cols), fptr(bias), fptr(colSum))
}

func sigmoidBiasSample(x, smp []float32, rows, cols int, bias, colSum []float32, s *[4 * rngLanes]uint32) {
	C.pd_logistic_bias_sample(fptr(x), fptr(smp), C.long(rows), C.long(cols), fptr(bias), fptr(colSum), (*C.uint32_t)(&s[0]))
}

func reconstruct(x, v0 []float32, rows, cols int, bias, colDiff []float32, logistic bool) float64 {
	l := C.int(0)
	if logistic {
		l = 1
	}
	return float64(C.pd_reconstruct(fptr(x), fptr(v0), C.long(rows), C.long(cols), fptr(bias), fptr(colDiff), l))
}

func momentumStep(w, vel []float32, decay, carry float32) bool {
	return C.pd_momentum_step(fptr(w), fptr(vel), C.long(len(w)), C.float(decay), C.float(carry)) == 0
}

func sigmoidDelta(delta, h []float32, rows, cols int, colSum []float32) {
	C.pd_sigmoid_delta(fptr(delta), fptr(h), C.long(rows), C.long(cols), fptr(colSum))
}

// capKernelLevel makes the kernels use at most variant l (0 base, 1 AVX2,
// 2 AVX-512; -1 removes the cap). Tests use it to cover every variant.
func capKernelLevel(l int) { C.pd_cap_level(C.int(l)) }

// run is runEach in one call out of Go.
func (s *CDStep) run() (sse float64, finite bool) {
	var logistic, samples C.int
	if s.Logistic {
		logistic = 1
	}
	if s.MiddleSamples {
		samples = 1
	}
	e := C.pd_cd_step(C.long(s.Rows), C.long(s.Visible), C.long(s.Hidden), C.long(s.K), logistic,
		fptr(s.V0), fptr(s.W), fptr(s.A), fptr(s.B),
		fptr(s.H0), fptr(s.HS), fptr(s.VK), fptr(s.HK),
		fptr(s.SumH0), fptr(s.SumHk), fptr(s.DiffA),
		fptr(s.VelW), C.float(s.Scale), C.float(s.Beta), C.float(s.Decay), C.float(s.Carry),
		fptr(s.Middle), samples, (*C.uint32_t)(&s.RNG.s[0]), (*C.int)(unsafe.Pointer(&s.finite)))
	return float64(e), s.finite != 0
}
