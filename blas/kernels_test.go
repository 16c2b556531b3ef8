package blas

import (
	"math"
	"math/rand/v2"
	"testing"
)

// levels lists the kernel variants to run a test under: every C variant this
// CPU can run (capKernelLevel) in the default build, the Go one in purego.
var levels = []struct {
	name string
	cap  int
}{{"base", 0}, {"avx2", 1}, {"best", -1}}

func forEachLevel(t *testing.T, f func(t *testing.T)) {
	t.Helper()
	for _, l := range levels {
		t.Run(l.name, func(t *testing.T) {
			capKernelLevel(l.cap)
			defer capKernelLevel(-1)
			f(t)
		})
	}
}

func TestSigmoidAccuracy(t *testing.T) {
	t.Parallel()
	exact := func(x float32) float64 { return 1 / (1 + math.Exp(-float64(x))) }
	var worst, worstX float64
	check := func(x float32) {
		got := float64(sigmoid(x))
		if d := math.Abs(got - exact(x)); d > worst {
			worst, worstX = d, float64(x)
		}
	}
	for x := float32(-100); x <= 100; x += 1.0 / 1024 {
		check(x)
	}
	for _, x := range []float32{-math.MaxFloat32, -1e30, -1e6, -88.7, -87.5, -87, 0, 1e-30, 87, 88.5, 1e6, math.MaxFloat32} {
		check(x)
	}
	if worst > 1e-7 {
		t.Errorf("max |sigmoid(x) - exact| = %g at x = %g; want <= 1e-7", worst, worstX)
	}
	t.Logf("max abs error %g at %g", worst, worstX)

	for _, tc := range []struct {
		x    float32
		want float32
	}{
		{float32(math.Inf(1)), 1},
		{float32(math.Inf(-1)), 0},
		{0, 0.5},
	} {
		if got := sigmoid(tc.x); math.Abs(float64(got-tc.want)) > 1e-30 {
			t.Errorf("sigmoid(%g) = %g; want %g", tc.x, got, tc.want)
		}
	}
	if got := sigmoid(float32(math.NaN())); !math.IsNaN(float64(got)) {
		t.Errorf("sigmoid(NaN) = %g; want NaN", got)
	}
}

func randMat(rng *rand.Rand, n int, scale float32) []float32 {
	x := make([]float32, n)
	for i := range x {
		x[i] = float32(rng.NormFloat64()) * scale
	}
	return x
}

func clone(x []float32) []float32 { return append([]float32(nil), x...) }

func sameBits(t *testing.T, what string, got, want []float32) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%s: len = %d; want %d", what, len(got), len(want))
	}
	for i := range got {
		if math.Float32bits(got[i]) != math.Float32bits(want[i]) {
			t.Fatalf("%s[%d] = %g (%#x); want %g (%#x)", what, i, got[i], math.Float32bits(got[i]), want[i], math.Float32bits(want[i]))
		}
	}
}

// shapes include widths that are not multiples of 16 or of the 256-column
// sampling chunk, to cover the vector loops' tails.
var shapes = []struct{ rows, cols int }{{1, 1}, {3, 5}, {4, 16}, {7, 33}, {5, 300}, {2, 531}}

// The exported kernels (C in the default build) against the Go references,
// bit for bit.
func TestKernelsMatchReference(t *testing.T) {
	forEachLevel(t, func(t *testing.T) {
		for _, sh := range shapes {
			rng := rand.New(rand.NewPCG(uint64(sh.rows), uint64(sh.cols)))
			n := sh.rows * sh.cols
			x := randMat(rng, n, 8)
			x[0] = 200 // saturation on both ends
			x[n-1] = -200
			bias := randMat(rng, sh.cols, 1)
			v0 := randMat(rng, n, 1)

			// SigmoidBias, with and without column sums.
			got, want := clone(x), clone(x)
			gotSum, wantSum := randMat(rng, sh.cols, 1), make([]float32, sh.cols)
			copy(wantSum, gotSum)
			SigmoidBias(got, sh.rows, sh.cols, bias, gotSum)
			refSigmoidBias(want, sh.rows, sh.cols, bias, wantSum)
			sameBits(t, "SigmoidBias x", got, want)
			sameBits(t, "SigmoidBias colSum", gotSum, wantSum)
			got = clone(x)
			SigmoidBias(got, sh.rows, sh.cols, bias, nil)
			sameBits(t, "SigmoidBias(nil colSum) x", got, want)

			// SigmoidBiasSample.
			for _, withSum := range []bool{true, false} {
				g1, g2 := NewRNG(7), NewRNG(7)
				got, want = clone(x), clone(x)
				gotS, wantS := make([]float32, n), make([]float32, n)
				var gs, ws []float32
				if withSum {
					gs, ws = make([]float32, sh.cols), make([]float32, sh.cols)
				}
				SigmoidBiasSample(got, gotS, sh.rows, sh.cols, bias, gs, g1)
				refSigmoidBiasSample(want, wantS, sh.rows, sh.cols, bias, ws, &g2.s)
				sameBits(t, "SigmoidBiasSample x", got, want)
				sameBits(t, "SigmoidBiasSample samples", gotS, wantS)
				sameBits(t, "SigmoidBiasSample colSum", gs, ws)
				if g1.s != g2.s {
					t.Fatalf("SigmoidBiasSample %dx%d: RNG states differ after the call", sh.rows, sh.cols)
				}
			}

			// Reconstruct, both unit types.
			for _, logistic := range []bool{true, false} {
				got, want = clone(x), clone(x)
				gd, wd := make([]float32, sh.cols), make([]float32, sh.cols)
				gotSSE := Reconstruct(got, v0, sh.rows, sh.cols, bias, gd, logistic)
				wantSSE := refReconstruct(want, v0, sh.rows, sh.cols, bias, wd, logistic)
				sameBits(t, "Reconstruct x", got, want)
				sameBits(t, "Reconstruct colDiff", gd, wd)
				if gotSSE != wantSSE {
					t.Fatalf("Reconstruct %dx%d logistic=%v: sse = %v; want %v", sh.rows, sh.cols, logistic, gotSSE, wantSSE)
				}
			}

			// MomentumStep.
			w, vel := randMat(rng, n, 1), randMat(rng, n, 0.1)
			gw, gv, ww, wv := clone(w), clone(vel), clone(w), clone(vel)
			gf := MomentumStep(gw, gv, 0.01, 0.9)
			wf := refMomentumStep(ww, wv, 0.01, 0.9)
			sameBits(t, "MomentumStep w", gw, ww)
			sameBits(t, "MomentumStep vel", gv, wv)
			if !gf || !wf {
				t.Fatalf("MomentumStep finite = %v (ref %v); want true", gf, wf)
			}

			// SigmoidDelta, with and without column sums; h holds
			// probabilities, 0 and 1 among them.
			h := clone(x)
			refSigmoidBias(h, sh.rows, sh.cols, bias, nil)
			h[0], h[n-1] = 1, 0
			gd, wd := clone(v0), clone(v0)
			gs, ws := randMat(rng, sh.cols, 1), make([]float32, sh.cols)
			copy(ws, gs)
			SigmoidDelta(gd, h, sh.rows, sh.cols, gs)
			refSigmoidDelta(wd, h, sh.rows, sh.cols, ws)
			sameBits(t, "SigmoidDelta delta", gd, wd)
			sameBits(t, "SigmoidDelta colSum", gs, ws)
			gd = clone(v0)
			SigmoidDelta(gd, h, sh.rows, sh.cols, nil)
			sameBits(t, "SigmoidDelta(nil colSum) delta", gd, wd)

			// Uniform.
			g1, g2 := NewRNG(uint64(n)), NewRNG(uint64(n))
			gu, wu := make([]float32, n), make([]float32, n)
			g1.Uniform(gu)
			refUniform(&g2.s, wu)
			sameBits(t, "Uniform", gu, wu)
		}
	})
}

// The kernels' arithmetic against float64 formulas.
func TestKernelsValues(t *testing.T) {
	forEachLevel(t, func(t *testing.T) {
		const rows, cols = 3, 37
		rng := rand.New(rand.NewPCG(1, 2))
		x := randMat(rng, rows*cols, 4)
		bias := randMat(rng, cols, 1)
		v0 := randMat(rng, rows*cols, 1)
		sig := func(z float64) float64 { return 1 / (1 + math.Exp(-z)) }

		for _, logistic := range []bool{true, false} {
			got := clone(x)
			diff := make([]float32, cols)
			sse := Reconstruct(got, v0, rows, cols, bias, diff, logistic)
			var wantSSE float64
			wantDiff := make([]float64, cols)
			for r := 0; r < rows; r++ {
				for j := 0; j < cols; j++ {
					i := r*cols + j
					y := float64(x[i]) + float64(bias[j])
					if logistic {
						y = sig(y)
					}
					if math.Abs(float64(got[i])-y) > 1e-6*math.Max(1, math.Abs(y)) {
						t.Fatalf("Reconstruct(logistic=%v) x[%d] = %g; want %g", logistic, i, got[i], y)
					}
					d := float64(v0[i]) - y
					wantDiff[j] += d
					wantSSE += d * d
				}
			}
			for j := range diff {
				if math.Abs(float64(diff[j])-wantDiff[j]) > 1e-5 {
					t.Fatalf("Reconstruct(logistic=%v) colDiff[%d] = %g; want %g", logistic, j, diff[j], wantDiff[j])
				}
			}
			if math.Abs(sse-wantSSE) > 1e-5*wantSSE {
				t.Fatalf("Reconstruct(logistic=%v) sse = %g; want %g", logistic, sse, wantSSE)
			}
		}

		// SigmoidDelta: d·h(1-h) by row, and the column sums added to
		// what colSum held.
		d := []float32{2, -4, 1, 8, 0.5, -1}
		hs := []float32{0.5, 0.25, 1, 0, 0.75, 0.5}
		sum := []float32{1, 0, -1}
		SigmoidDelta(d, hs, 2, 3, sum)
		sameBits(t, "SigmoidDelta delta", d, []float32{0.5, -0.75, 0, 0, 0.09375, -0.25})
		sameBits(t, "SigmoidDelta colSum", sum, []float32{1.5, -0.65625, -1.25})

		w := []float32{1, -2, 3}
		vel := []float32{0.5, 0.25, -1}
		if !MomentumStep(w, vel, 0.5, 0.5) {
			t.Fatal("MomentumStep = false; want true")
		}
		wantVel := []float32{0, 0.625, -1.25} // 0.5 x the velocity {0, 1.25, -2.5}
		wantW := []float32{1, -0.75, 0.5}
		sameBits(t, "MomentumStep vel", vel, wantVel)
		sameBits(t, "MomentumStep w", w, wantW)

		for _, bad := range []float32{float32(math.NaN()), float32(math.Inf(1)), float32(math.Inf(-1))} {
			w := make([]float32, 50)
			vel := make([]float32, 50)
			vel[37] = bad
			if MomentumStep(w, vel, 0, 1) {
				t.Errorf("MomentumStep with vel = %g: finite = true; want false", bad)
			}
		}
		w = []float32{math.MaxFloat32}
		if MomentumStep(w, []float32{math.MaxFloat32}, 0, 1) {
			t.Error("MomentumStep overflowing to +Inf: finite = true; want false")
		}
	})
}

func TestSampleFrequencies(t *testing.T) {
	forEachLevel(t, func(t *testing.T) {
		// Every column has its own probability; 4000 rows give each column
		// a binomial count whose sd is at most sqrt(4000)/2 ≈ 32.
		const rows, cols = 4000, 21
		bias := make([]float32, cols)
		want := make([]float64, cols)
		for j := range bias {
			bias[j] = float32(j-10) / 3
			want[j] = 1 / (1 + math.Exp(-float64(bias[j])))
		}
		x := make([]float32, rows*cols)
		s := make([]float32, rows*cols)
		sum := make([]float32, cols)
		SigmoidBiasSample(x, s, rows, cols, bias, sum, NewRNG(42))
		count := make([]float64, cols)
		for i, v := range s {
			switch v {
			case 0:
			case 1:
				count[i%cols]++
			default:
				t.Fatalf("samples[%d] = %g; want 0 or 1", i, v)
			}
		}
		for j := range count {
			if d := math.Abs(count[j] - rows*want[j]); d > 5*math.Sqrt(rows*want[j]*(1-want[j]))+1 {
				t.Errorf("column %d: %v ones in %d rows; want about %.1f", j, count[j], rows, rows*want[j])
			}
			if math.Abs(float64(sum[j])-rows*want[j]) > 1e-3*rows {
				t.Errorf("colSum[%d] = %g; want %g", j, sum[j], rows*want[j])
			}
		}
	})
}

func TestRNG(t *testing.T) {
	t.Parallel()
	a, b := NewRNG(1), NewRNG(1)
	u, v := make([]float32, 1000), make([]float32, 1000)
	a.Uniform(u)
	b.Uniform(v)
	sameBits(t, "same seed", u, v)
	NewRNG(2).Uniform(v)
	same := 0
	for i := range u {
		if u[i] == v[i] {
			same++
		}
	}
	if same > 5 {
		t.Errorf("seeds 1 and 2 agree on %d of %d values; want streams that differ", same, len(u))
	}

	// Moments and bucket counts of 2^20 draws.
	const n = 1 << 20
	x := make([]float32, n)
	NewRNG(3).Uniform(x)
	var sum, sum2 float64
	var buckets [16]int
	for _, f := range x {
		if f < 0 || f >= 1 {
			t.Fatalf("Uniform value %g outside [0, 1)", f)
		}
		sum += float64(f)
		sum2 += float64(f) * float64(f)
		buckets[int(f*16)]++
	}
	if mean := sum / n; math.Abs(mean-0.5) > 0.002 {
		t.Errorf("mean = %g; want 0.5", mean)
	}
	if m2 := sum2 / n; math.Abs(m2-1.0/3) > 0.002 {
		t.Errorf("E[u^2] = %g; want 1/3", m2)
	}
	for i, c := range buckets {
		if d := math.Abs(float64(c) - n/16); d > 5*math.Sqrt(n/16) {
			t.Errorf("bucket %d holds %d of %d; want about %d", i, c, n, n/16)
		}
	}
}

func TestKernelShapePanics(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		f    func()
	}{
		{"SigmoidBias short x", func() { SigmoidBias(make([]float32, 5), 2, 3, make([]float32, 3), nil) }},
		{"SigmoidBias short bias", func() { SigmoidBias(make([]float32, 6), 2, 3, make([]float32, 2), nil) }},
		{"SigmoidBiasSample short samples", func() {
			SigmoidBiasSample(make([]float32, 6), make([]float32, 5), 2, 3, make([]float32, 3), nil, NewRNG(1))
		}},
		{"Reconstruct short colDiff", func() {
			Reconstruct(make([]float32, 6), make([]float32, 6), 2, 3, make([]float32, 3), make([]float32, 2), true)
		}},
		{"MomentumStep short vel", func() { MomentumStep(make([]float32, 3), make([]float32, 2), 0, 1) }},
		{"SigmoidDelta short h", func() { SigmoidDelta(make([]float32, 6), make([]float32, 5), 2, 3, nil) }},
		{"SigmoidDelta short colSum", func() {
			SigmoidDelta(make([]float32, 6), make([]float32, 6), 2, 3, make([]float32, 2))
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			defer func() {
				if recover() == nil {
					t.Errorf("%s did not panic", tc.name)
				}
			}()
			tc.f()
		})
	}
}
