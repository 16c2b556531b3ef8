//go:build !purego

// Element-wise kernels of the CD-k and fine-tuning steps in plain C that gcc auto-vectorises.
// The bodies live in kernels_impl.h and are compiled three times, for
// baseline x86-64 (or whatever the target is), AVX2 and AVX-512; each entry
// point dispatches on the running CPU. The constants and the order of every
// floating-point operation match kernels_ref.go exactly, so the C and Go
// kernels give bit-identical results (fp-contract is off below). The
// prototypes of the pd_* entry points live in kernels_cgo.go's preamble.

// No FMA contraction: the Go twins round every product (see kernels_ref.go).
// no-trapping-math changes no value, only lets gcc if-convert (and so
// vectorise) the clamps and selects, whose comparisons could raise FP flags.
#pragma GCC optimize("fp-contract=off", "no-trapping-math")

#include <stdint.h>
#include <string.h>

#define LANES 16
#define CHUNK 256

#define EXP_LO (-88.0f)
#define EXP_HI 87.0f
#define LOG2E 1.44269504088896341f
#define ROUND_MAGIC 12582912.0f
#define ROUND_MAGIC_BITS 0x4B400000u
#define LN2_HI 0.693359375f
#define LN2_LO (-2.12194440e-4f)
#define EXP_P0 1.9875691500e-4f
#define EXP_P1 1.3981999507e-3f
#define EXP_P2 8.3334519073e-3f
#define EXP_P3 4.1665795894e-2f
#define EXP_P4 1.6666665459e-1f
#define EXP_P5 5.0000001201e-1f

#define KN(name) name##_base
#include "kernels_impl.h"
#undef KN

#if defined(__x86_64__) && defined(__GNUC__)

#pragma GCC push_options
#pragma GCC target("avx2")
#define KN(name) name##_avx2
#include "kernels_impl.h"
#undef KN
#pragma GCC pop_options

#pragma GCC push_options
#pragma GCC target("avx512f,avx512vl,avx512bw,avx512dq,prefer-vector-width=512")
#define KN(name) name##_avx512
#include "kernels_impl.h"
#undef KN
#pragma GCC pop_options

static int detect(void) {
	if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
			__builtin_cpu_supports("avx512dq") && __builtin_cpu_supports("avx512vl")) {
		return 2;
	}
	return __builtin_cpu_supports("avx2") ? 1 : 0;
}
#else
static int detect(void) { return 0; }
#define uniform_avx2 uniform_base
#define uniform_avx512 uniform_base
#define logistic_bias_avx2 logistic_bias_base
#define logistic_bias_avx512 logistic_bias_base
#define logistic_bias_sample_avx2 logistic_bias_sample_base
#define logistic_bias_sample_avx512 logistic_bias_sample_base
#define reconstruct_avx2 reconstruct_base
#define reconstruct_avx512 reconstruct_base
#define momentum_step_avx2 momentum_step_base
#define momentum_step_avx512 momentum_step_base
#define sigmoid_delta_avx2 sigmoid_delta_base
#define sigmoid_delta_avx512 sigmoid_delta_base
#endif

// cap_level lets tests run the narrower variants on a wide CPU; -1 is none.
static int cap_level = -1;

static int level(void) {
	int l = detect();
	int c = __atomic_load_n(&cap_level, __ATOMIC_RELAXED);
	return c >= 0 && c < l ? c : l;
}

void pd_cap_level(int l) { __atomic_store_n(&cap_level, l, __ATOMIC_RELAXED); }

// PICK calls the variant of fn for the running CPU.
#define PICK(fn, args)                 \
	switch (level()) {                 \
	case 2:                            \
		return fn##_avx512 args;       \
	case 1:                            \
		return fn##_avx2 args;         \
	default:                           \
		return fn##_base args;         \
	}

void pd_uniform(uint32_t *state, float *dst, long n) {
	PICK(uniform, (state, dst, n))
}

void pd_logistic_bias(float *x, long rows, long cols, const float *bias, float *colsum) {
	PICK(logistic_bias, (x, rows, cols, bias, colsum))
}

void pd_logistic_bias_sample(float *x, float *smp, long rows, long cols,
		const float *bias, float *colsum, uint32_t *state) {
	PICK(logistic_bias_sample, (x, smp, rows, cols, bias, colsum, state))
}

double pd_reconstruct(float *x, const float *v0, long rows, long cols,
		const float *bias, float *coldiff, int logistic) {
	PICK(reconstruct, (x, v0, rows, cols, bias, coldiff, logistic))
}

int pd_momentum_step(float *w, float *vel, long n, float decay, float carry) {
	PICK(momentum_step, (w, vel, n, decay, carry))
}

void pd_sigmoid_delta(float *d, const float *h, long rows, long cols, float *colsum) {
	PICK(sigmoid_delta, (d, h, rows, cols, colsum))
}

const char *pd_kernel_level(void) {
	static const char *names[] = {"base", "avx2", "avx512"};
	return names[level()];
}

// OpenBLAS's CBLAS GEMM, declared here rather than through cblas.h, whose
// place differs between systems; its enums are ints.
void cblas_sgemm(int order, int transa, int transb, int m, int n, int k,
		float alpha, const float *a, int lda, const float *b, int ldb,
		float beta, float *c, int ldc);

enum { ROW_MAJOR = 101, NO_TRANS = 111, TRANS = 112 };

// pd_cd_step is blas.CDStep's runEach in one call: the same GEMMs and
// kernels in the same order, so the same bits.
double pd_cd_step(long rows, long V, long H, long k, int logistic,
		const float *v0, float *w, const float *a, const float *b,
		float *h0, float *hs, float *vk, float *hk,
		float *sumh0, float *sumhk, float *diffa,
		float *velw, float scale, float beta, float decay, float carry,
		float *middle, int middle_samples, uint32_t *state, int *finite) {
	memset(sumh0, 0, H * sizeof(float));
	memset(sumhk, 0, H * sizeof(float));
	cblas_sgemm(ROW_MAJOR, NO_TRANS, NO_TRANS, rows, H, V, 1, v0, V, w, H, 0, h0, H);
	pd_logistic_bias_sample(h0, hs, rows, H, b, sumh0, state);
	if (middle) {
		memcpy(middle, middle_samples ? hs : h0, rows * H * sizeof(float));
	}
	double sse = 0;
	for (long step = 0; step < k; step++) {
		cblas_sgemm(ROW_MAJOR, NO_TRANS, TRANS, rows, V, H, 1, hs, H, w, H, 0, vk, V);
		memset(diffa, 0, V * sizeof(float));
		double e = pd_reconstruct(vk, v0, rows, V, a, diffa, logistic);
		if (step == 0) {
			sse = e;
		}
		cblas_sgemm(ROW_MAJOR, NO_TRANS, NO_TRANS, rows, H, V, 1, vk, V, w, H, 0, hk, H);
		if (step < k - 1) {
			pd_logistic_bias_sample(hk, hs, rows, H, b, 0, state);
		} else {
			pd_logistic_bias(hk, rows, H, b, sumhk);
		}
	}
	cblas_sgemm(ROW_MAJOR, TRANS, NO_TRANS, V, H, rows, scale, v0, V, h0, H, beta, velw, H);
	cblas_sgemm(ROW_MAJOR, TRANS, NO_TRANS, V, H, rows, -scale, vk, V, hk, H, 1, velw, H);
	*finite = pd_momentum_step(w, velw, V * H, decay, carry) == 0;
	return sse;
}
