//go:build !purego

// Kernel bodies, included once per instruction-set level by kernels.c with
// KN(name) expanding to a level-specific name. Every loop is written so that
// gcc vectorises it without reassociating floating-point operations (no
// -ffast-math; fp-contract is off in kernels.c): the results are bit-identical
// to the Go reference kernels in kernels_ref.go, whatever the vector width.
// Reductions keep 16 explicit lanes for the same reason.

static inline float KN(sigmoid)(float x) {
	// exp(-x) by Cephes' expf reduction and polynomial. The clamp keeps
	// 2^n finite (it underflows to 0 at the low end, where sigmoid is 1 in
	// float32 anyway) and lets NaN through, as comparisons with NaN are
	// false, so a NaN pre-activation yields a NaN probability.
	float y = -x;
	y = y < EXP_LO ? EXP_LO : y;
	y = y > EXP_HI ? EXP_HI : y;
	float t = y * LOG2E;
	t = t + ROUND_MAGIC;
	float n = t - ROUND_MAGIC;
	uint32_t tb;
	memcpy(&tb, &t, 4);
	uint32_t sb = (tb - ROUND_MAGIC_BITS + 127u) << 23;
	float scale;
	memcpy(&scale, &sb, 4);
	float r = y - n * LN2_HI;
	r = r - n * LN2_LO;
	float z = r * r;
	float p = EXP_P0 * r + EXP_P1;
	p = p * r + EXP_P2;
	p = p * r + EXP_P3;
	p = p * r + EXP_P4;
	p = p * r + EXP_P5;
	p = p * z + r;
	p = p + 1.0f;
	float e = p * scale;
	return 1.0f / (1.0f + e);
}

// uniform16 advances the 16 xoshiro128+ lanes of s once and writes one
// uniform [0,1) float32 per lane to u.
static inline void KN(uniform16)(uint32_t *restrict s, float *restrict u) {
	for (int l = 0; l < LANES; l++) {
		uint32_t s0 = s[l], s1 = s[LANES + l], s2 = s[2 * LANES + l], s3 = s[3 * LANES + l];
		uint32_t res = s0 + s3;
		uint32_t t = s1 << 9;
		s2 ^= s0;
		s3 ^= s1;
		s1 ^= s2;
		s0 ^= s3;
		s2 ^= t;
		s3 = (s3 << 11) | (s3 >> 21);
		s[l] = s0;
		s[LANES + l] = s1;
		s[2 * LANES + l] = s2;
		s[3 * LANES + l] = s3;
		u[l] = (float)(int32_t)(res >> 8) * 0x1p-24f;
	}
}

static void KN(uniform)(uint32_t *restrict state, float *restrict dst, long n) {
	uint32_t s[4 * LANES];
	float u[LANES];
	memcpy(s, state, sizeof s);
	long i = 0;
	for (; i + LANES <= n; i += LANES) {
		KN(uniform16)(s, dst + i);
	}
	if (i < n) {
		KN(uniform16)(s, u);
		for (long l = 0; i + l < n; l++) {
			dst[i + l] = u[l];
		}
	}
	memcpy(state, s, sizeof s);
}

static void KN(logistic_bias)(float *restrict x, long rows, long cols,
		const float *restrict bias, float *restrict colsum) {
	for (long r = 0; r < rows; r++) {
		float *restrict xr = x + r * cols;
		if (colsum) {
			for (long j = 0; j < cols; j++) {
				float p = KN(sigmoid)(xr[j] + bias[j]);
				xr[j] = p;
				colsum[j] += p;
			}
		} else {
			for (long j = 0; j < cols; j++) {
				xr[j] = KN(sigmoid)(xr[j] + bias[j]);
			}
		}
	}
}

static void KN(logistic_bias_sample)(float *restrict x, float *restrict smp,
		long rows, long cols, const float *restrict bias,
		float *restrict colsum, uint32_t *restrict state) {
	uint32_t s[4 * LANES];
	float u[CHUNK];
	memcpy(s, state, sizeof s);
	for (long r = 0; r < rows; r++) {
		float *restrict xr = x + r * cols;
		float *restrict sr = smp + r * cols;
		for (long c0 = 0; c0 < cols; c0 += CHUNK) {
			long len = cols - c0 < CHUNK ? cols - c0 : CHUNK;
			for (long b = 0; b < len; b += LANES) {
				KN(uniform16)(s, u + b);
			}
			float *restrict xc = xr + c0;
			float *restrict sc = sr + c0;
			const float *restrict bc = bias + c0;
			if (colsum) {
				float *restrict cc = colsum + c0;
				for (long j = 0; j < len; j++) {
					float p = KN(sigmoid)(xc[j] + bc[j]);
					xc[j] = p;
					sc[j] = u[j] < p ? 1.0f : 0.0f;
					cc[j] += p;
				}
			} else {
				for (long j = 0; j < len; j++) {
					float p = KN(sigmoid)(xc[j] + bc[j]);
					xc[j] = p;
					sc[j] = u[j] < p ? 1.0f : 0.0f;
				}
			}
		}
	}
	memcpy(state, s, sizeof s);
}

static double KN(reconstruct)(float *restrict x, const float *restrict v0,
		long rows, long cols, const float *restrict bias,
		float *restrict coldiff, int logistic) {
	double sse = 0;
	for (long r = 0; r < rows; r++) {
		float *restrict xr = x + r * cols;
		const float *restrict vr = v0 + r * cols;
		if (logistic) {
			for (long j = 0; j < cols; j++) {
				xr[j] = KN(sigmoid)(xr[j] + bias[j]);
			}
		} else {
			for (long j = 0; j < cols; j++) {
				xr[j] = xr[j] + bias[j];
			}
		}
		float acc[LANES] = {0};
		long j = 0;
		for (; j + LANES <= cols; j += LANES) {
			for (int l = 0; l < LANES; l++) {
				float d = vr[j + l] - xr[j + l];
				coldiff[j + l] += d;
				acc[l] += d * d;
			}
		}
		for (int l = 0; j + l < cols; l++) {
			float d = vr[j + l] - xr[j + l];
			coldiff[j + l] += d;
			acc[l] += d * d;
		}
		double rs = 0;
		for (int l = 0; l < LANES; l++) {
			rs += acc[l];
		}
		sse += rs;
	}
	return sse;
}

static int KN(momentum_step)(float *restrict w, float *restrict vel, long n, float decay, float carry) {
	uint32_t bad = 0;
	for (long i = 0; i < n; i++) {
		float v = vel[i] - decay * w[i];
		float nw = w[i] + v;
		vel[i] = carry * v;
		w[i] = nw;
		uint32_t b;
		memcpy(&b, &nw, 4);
		bad |= (b & 0x7f800000u) == 0x7f800000u;
	}
	return bad != 0;
}

static void KN(sigmoid_delta)(float *restrict d, const float *restrict h,
		long rows, long cols, float *restrict colsum) {
	for (long r = 0; r < rows; r++) {
		float *restrict dr = d + r * cols;
		const float *restrict hr = h + r * cols;
		if (colsum) {
			for (long j = 0; j < cols; j++) {
				float v = dr[j] * (hr[j] * (1.0f - hr[j]));
				dr[j] = v;
				colsum[j] += v;
			}
		} else {
			for (long j = 0; j < cols; j++) {
				dr[j] = dr[j] * (hr[j] * (1.0f - hr[j]));
			}
		}
	}
}
