package rbm

import (
	"errors"
	"math"
	"reflect"
	"strings"
	"testing"

	"github.com/pipedbn/pipedbn/blas"
)

// refTrainer is a naive float64 CD-k that draws its uniforms from a copy of
// a Trainer's generator, in the same order, so that it samples the same
// hidden states.
type refTrainer struct {
	v, h  int
	units Units
	k     int
	w     []float64
	a, b  []float64
	velW  []float64
	velA  []float64
	velB  []float64
	rng   blas.RNG
}

func newRefTrainer(r *RBM, k int, rng blas.RNG) *refTrainer {
	f := func(x []float32) []float64 {
		y := make([]float64, len(x))
		for i, v := range x {
			y[i] = float64(v)
		}
		return y
	}
	return &refTrainer{
		v: r.Visible, h: r.Hidden, units: r.Units, k: k,
		w: f(r.W), a: f(r.A), b: f(r.B),
		velW: make([]float64, len(r.W)), velA: make([]float64, r.Visible), velB: make([]float64, r.Hidden),
		rng: rng,
	}
}

// sample draws binary states from p row by row, stepping the generator as
// blas.SigmoidBiasSample does (ceil(h/16) steps a row). A uniform within
// 1e-5 of its probability could fall either side in float32, so the test
// fails rather than guess.
func (rt *refTrainer) sample(t *testing.T, p []float64, rows int) []float64 {
	t.Helper()
	s := make([]float64, len(p))
	u := make([]float32, (rt.h+15)/16*16)
	for n := 0; n < rows; n++ {
		rt.rng.Uniform(u)
		for j := 0; j < rt.h; j++ {
			pj := p[n*rt.h+j]
			if math.Abs(float64(u[j])-pj) < 1e-5 {
				t.Fatalf("reference: uniform %g too close to probability %g; pick another seed", u[j], pj)
			}
			if float64(u[j]) < pj {
				s[n*rt.h+j] = 1
			}
		}
	}
	return s
}

func (rt *refTrainer) hidden(v []float64, rows int) []float64 {
	p := make([]float64, rows*rt.h)
	for n := 0; n < rows; n++ {
		for j := 0; j < rt.h; j++ {
			x := rt.b[j]
			for i := 0; i < rt.v; i++ {
				x += v[n*rt.v+i] * rt.w[i*rt.h+j]
			}
			p[n*rt.h+j] = sigmoid64(x)
		}
	}
	return p
}

func (rt *refTrainer) visible(h []float64, rows int) []float64 {
	v := make([]float64, rows*rt.v)
	for n := 0; n < rows; n++ {
		for i := 0; i < rt.v; i++ {
			x := rt.a[i]
			for j := 0; j < rt.h; j++ {
				x += h[n*rt.h+j] * rt.w[i*rt.h+j]
			}
			if rt.units == Bernoulli {
				x = sigmoid64(x)
			}
			v[n*rt.v+i] = x
		}
	}
	return v
}

// step returns the reconstruction error and the middle result (h0, hs).
func (rt *refTrainer) step(t *testing.T, v0f []float32, rows int, p Params) (sse float64, h0, hs []float64) {
	t.Helper()
	v0 := make([]float64, rows*rt.v)
	for i := range v0 {
		v0[i] = float64(v0f[i])
	}
	h0 = rt.hidden(v0, rows)
	hs = rt.sample(t, h0, rows)
	chain := hs
	var vk, hk []float64
	for s := 0; s < rt.k; s++ {
		vk = rt.visible(chain, rows)
		if s == 0 {
			for i := range vk {
				d := v0[i] - vk[i]
				sse += d * d
			}
		}
		hk = rt.hidden(vk, rows)
		if s < rt.k-1 {
			chain = rt.sample(t, hk, rows)
		}
	}
	lr, m, wd := float64(p.LearningRate), float64(p.Momentum), float64(p.WeightDecay)
	nr := float64(rows)
	for i := 0; i < rt.v; i++ {
		for j := 0; j < rt.h; j++ {
			var g float64
			for n := 0; n < rows; n++ {
				g += v0[n*rt.v+i]*h0[n*rt.h+j] - vk[n*rt.v+i]*hk[n*rt.h+j]
			}
			ij := i*rt.h + j
			rt.velW[ij] = m*rt.velW[ij] + lr*(g/nr-wd*rt.w[ij])
			rt.w[ij] += rt.velW[ij]
		}
	}
	for i := 0; i < rt.v; i++ {
		var g float64
		for n := 0; n < rows; n++ {
			g += v0[n*rt.v+i] - vk[n*rt.v+i]
		}
		rt.velA[i] = m*rt.velA[i] + lr*g/nr
		rt.a[i] += rt.velA[i]
	}
	for j := 0; j < rt.h; j++ {
		var g float64
		for n := 0; n < rows; n++ {
			g += h0[n*rt.h+j] - hk[n*rt.h+j]
		}
		rt.velB[j] = m*rt.velB[j] + lr*g/nr
		rt.b[j] += rt.velB[j]
	}
	return sse, h0, hs
}

func closeTo(t *testing.T, what string, got []float32, want []float64, tol float64) {
	t.Helper()
	for i := range want {
		if d := math.Abs(float64(got[i]) - want[i]); !(d <= tol*math.Max(1, math.Abs(want[i]))) {
			t.Fatalf("%s[%d] = %g; want %g", what, i, got[i], want[i])
		}
	}
}

// TestStepMatchesReference runs a few CD-k steps (with a changing momentum,
// weight decay, a short batch and an externally overwritten A) against the
// float64 reference drawing the same samples.
func TestStepMatchesReference(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name        string
		units       Units
		v, h, k     int
		batch, rows int
		seed        uint64
	}{
		{"bernoulli CD-1", Bernoulli, 5, 7, 1, 4, 4, 1},
		{"bernoulli CD-1 short batch", Bernoulli, 6, 19, 1, 8, 3, 2},
		{"bernoulli CD-3", Bernoulli, 9, 17, 3, 5, 5, 3},
		{"gaussian CD-1", Gaussian, 7, 5, 1, 3, 3, 4},
		{"gaussian CD-2 short batch", Gaussian, 4, 33, 2, 6, 2, 5},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			r := randomRBM(tc.v, tc.h, tc.units, tc.seed)
			for i := range r.W {
				r.W[i] *= 0.3
			}
			tr := NewTrainer(r, tc.batch, tc.k, tc.seed+100)
			ref := newRefTrainer(r, tc.k, tr.rng)
			// The momentum holds, rises, drops to 0 and comes back: the
			// trainer carries m·vel from step to step (velCarry).
			momenta := []float32{0.5, 0.5, 0.9, 0, 0.7}
			for step, m := range momenta {
				p := Params{LearningRate: 0.3, Momentum: m, WeightDecay: 0.01}
				v0 := randomData(tc.rows, tc.v, tc.units, tc.seed*10+uint64(step))
				if step == 2 {
					// The lower layer's B_{i-1} arrives: overwrite A.
					for i := range r.A {
						r.A[i] = float32(i)*0.25 - 0.5
						ref.a[i] = float64(r.A[i])
					}
				}
				kind := Probabilities
				if step == 1 {
					kind = Samples
				}
				middle := make([]float32, tc.rows*tc.h)
				sse, err := tr.Step(v0, tc.rows, p, middle, kind)
				if err != nil {
					t.Fatalf("step %d: %v", step, err)
				}
				wantSSE, h0, hs := ref.step(t, v0, tc.rows, p)
				if math.Abs(sse-wantSSE) > 1e-5*math.Max(1, wantSSE) {
					t.Fatalf("step %d: sse = %g; want %g", step, sse, wantSSE)
				}
				if kind == Samples {
					closeTo(t, "middle samples", middle, hs, 0)
				} else {
					closeTo(t, "middle probabilities", middle, h0, 1e-5)
				}
				closeTo(t, "W", r.W, ref.w, 1e-5)
				closeTo(t, "A", r.A, ref.a, 1e-5)
				closeTo(t, "B", r.B, ref.b, 1e-5)
			}
		})
	}
}

// TestMiddleResult checks the middle result against HiddenProbs of the RBM as
// it was before the step.
func TestMiddleResult(t *testing.T) {
	t.Parallel()
	const v, h, rows = 20, 30, 10
	r := randomRBM(v, h, Bernoulli, 8)
	tr := NewTrainer(r, rows, 1, 9)
	p := Params{LearningRate: 0.1, Momentum: 0.5}
	data := randomData(rows, v, Bernoulli, 10)

	want := make([]float32, rows*h)
	r.HiddenProbs(want, data, rows)
	got := make([]float32, rows*h)
	if _, err := tr.Step(data, rows, p, got, Probabilities); err != nil {
		t.Fatal(err)
	}
	if !equalBits(got, want) {
		t.Errorf("middle probabilities = %v; want HiddenProbs before the step %v", got, want)
	}

	r.HiddenProbs(want, data, rows)
	if _, err := tr.Step(data, rows, p, got, Samples); err != nil {
		t.Fatal(err)
	}
	var ones int
	for i, s := range got {
		switch {
		case s == 1:
			ones++
		case s != 0:
			t.Fatalf("middle samples[%d] = %g; want 0 or 1", i, s)
		}
		if (want[i] == 0 && s == 1) || (want[i] == 1 && s == 0) {
			t.Errorf("middle samples[%d] = %g with probability %g", i, s, want[i])
		}
	}
	if ones == 0 || ones == len(got) {
		t.Errorf("middle samples: %d ones of %d; want a mix", ones, len(got))
	}
}

func TestDeterminism(t *testing.T) {
	t.Parallel()
	run := func(seed uint64) *RBM {
		r := New(12, 9, Bernoulli, 1)
		tr := NewTrainer(r, 8, 2, seed)
		data := randomData(20, 12, Bernoulli, 3)
		p := Params{LearningRate: 0.1, Momentum: 0.9, WeightDecay: 1e-3}
		for e := 0; e < 5; e++ {
			for b := 0; b < 20; b += 8 {
				rows := min(8, 20-b)
				if _, err := tr.Step(data[b*12:], rows, p, nil, Probabilities); err != nil {
					t.Fatal(err)
				}
			}
		}
		return r
	}
	a, b, c := run(42), run(42), run(43)
	if !equalRBM(a, b) {
		t.Error("two trainers with the same seed ended with different RBMs")
	}
	if equalBits(a.W, c.W) {
		t.Error("trainers with seeds 42 and 43 ended with the same W")
	}
}

// TestStateResumesExactly restores a trainer's State into a new trainer
// between two steps whose momentum differs, where the buffers carry the
// first momentum: both go on bit for bit alike.
func TestStateResumesExactly(t *testing.T) {
	t.Parallel()
	const v, h, rows = 13, 21, 6
	first := randomRBM(v, h, Bernoulli, 7)
	tr := NewTrainer(first, rows, 1, 8)
	step := func(tr *Trainer, n int, m float32) {
		t.Helper()
		p := Params{LearningRate: 0.2, Momentum: m, WeightDecay: 1e-3}
		if _, err := tr.Step(randomData(rows, v, Bernoulli, uint64(100+n)), rows, p, nil, Probabilities); err != nil {
			t.Fatal(err)
		}
	}
	step(tr, 0, 0.5)
	step(tr, 1, 0.5)
	st := tr.State()
	if st.VelWCarry != 0.5 {
		t.Fatalf("State().VelWCarry = %g after steps of momentum 0.5; want 0.5", st.VelWCarry)
	}
	resume := func(st TrainerState) *RBM {
		r := randomRBM(v, h, Bernoulli, 7)
		copy(r.W, first.W)
		copy(r.A, first.A)
		copy(r.B, first.B)
		tr := NewTrainer(r, rows, 1, 99)
		if err := tr.Restore(st); err != nil {
			t.Fatal(err)
		}
		step(tr, 2, 0.9)
		step(tr, 3, 0.9)
		return r
	}
	resumed := resume(st)
	lost := st
	lost.VelWCarry = 0 // read as the velocity itself
	forgot := resume(lost)
	step(tr, 2, 0.9)
	step(tr, 3, 0.9)
	if !equalRBM(resumed, first) {
		t.Error("a trainer restored from State went on unlike the one it was taken of")
	}
	if equalBits(forgot.W, first.W) {
		t.Error("a trainer restored without VelWCarry went on alike: the test does not see the carry")
	}
	bad := st
	bad.VelWCarry = float32(math.NaN())
	if err := NewTrainer(randomRBM(v, h, Bernoulli, 7), rows, 1, 1).Restore(bad); err == nil {
		t.Error("Restore of a NaN VelWCarry: no error")
	}
}

func TestDivergence(t *testing.T) {
	t.Parallel()
	nan := float32(math.NaN())
	for _, tc := range []struct {
		name   string
		p      Params
		poison func(v []float32)
	}{
		{"huge learning rate", Params{LearningRate: 1e38, Momentum: 0.9}, func([]float32) {}},
		{"NaN input", Params{LearningRate: 0.1}, func(v []float32) { v[3] = nan }},
		{"Inf input", Params{LearningRate: 0.1}, func(v []float32) { v[0] = float32(math.Inf(1)) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			for _, units := range []Units{Bernoulli, Gaussian} {
				r := New(10, 6, units, 1)
				tr := NewTrainer(r, 5, 1, 2)
				data := randomData(5, 10, units, 3)
				good := Params{LearningRate: 0.05, Momentum: 0.5}
				step := func(v []float32, p Params) error {
					_, err := tr.Step(v, 5, p, nil, Probabilities)
					return err
				}
				for i := 0; i < 3; i++ {
					if err := step(data, good); err != nil {
						t.Fatal(err)
					}
				}
				tr.Commit()
				committed := r.Clone()
				if err := step(data, good); err != nil { // uncommitted progress, to be lost
					t.Fatal(err)
				}
				bad := append([]float32(nil), data...)
				tc.poison(bad)
				p := good
				if tc.p.LearningRate > 1 {
					p = tc.p
				}
				// A huge learning rate may take a few steps to overflow:
				// W grows by up to ε per step while the data stay bounded.
				var err error
				for i := 0; i < 50 && err == nil; i++ {
					err = step(bad, p)
				}
				if !errors.Is(err, ErrDiverged) {
					t.Fatalf("%v: Step = %v; want an error wrapping ErrDiverged", units, err)
				}
				if !equalRBM(r, committed) {
					t.Fatalf("%v: after divergence the RBM is not the committed one", units)
				}
				// Training goes on from the committed state.
				if err := step(data, good); err != nil {
					t.Fatalf("%v: step after divergence: %v", units, err)
				}
			}
		})
	}
	// Divergence before any Commit goes back to the initial state.
	r := New(4, 3, Bernoulli, 1)
	initial := r.Clone()
	tr := NewTrainer(r, 2, 1, 1)
	if _, err := tr.Step([]float32{1, 0, 1, 0, 0, 1, 0, nan}, 2, Params{LearningRate: 0.1}, nil, Samples); !errors.Is(err, ErrDiverged) {
		t.Fatalf("Step on NaN = %v; want ErrDiverged", err)
	}
	if !equalRBM(r, initial) {
		t.Error("divergence before any Commit did not restore the initial state")
	}
}

// TestOverwriteA checks that visible biases written between steps are the
// ones the next step uses, as when an L_{i-1}-copy receives B_{i-1}.
func TestOverwriteA(t *testing.T) {
	t.Parallel()
	data := randomData(6, 8, Bernoulli, 1)
	p := Params{LearningRate: 0.1, Momentum: 0.5}
	// Trainer 1 trains, then has A overwritten; trainer 2 gets the same A
	// from the start of that step through a fresh copy of the RBM state.
	r1 := New(8, 5, Bernoulli, 1)
	t1 := NewTrainer(r1, 6, 1, 2)
	r2 := New(8, 5, Bernoulli, 1)
	t2 := NewTrainer(r2, 6, 1, 2)
	for _, tr := range []*Trainer{t1, t2} {
		if _, err := tr.Step(data, 6, p, nil, Probabilities); err != nil {
			t.Fatal(err)
		}
	}
	for i := range r1.A {
		r1.A[i] = 2 // a strongly different B_{i-1}
	}
	sse1, _ := t1.Step(data, 6, p, nil, Probabilities)
	sse2, _ := t2.Step(data, 6, p, nil, Probabilities)
	if sse1 == sse2 || equalBits(r1.W, r2.W) {
		t.Fatal("overwriting A between steps changed nothing")
	}
	// The reconstruction of step 2 used A = 2 everywhere: with the same
	// samples (same seed) the reference says what it must be.
	r3 := New(8, 5, Bernoulli, 1)
	t3 := NewTrainer(r3, 6, 1, 2)
	t3.Step(data, 6, p, nil, Probabilities)
	for i := range r3.A {
		r3.A[i] = 2
	}
	sse3, _ := t3.Step(data, 6, p, nil, Probabilities)
	if sse3 != sse1 || !equalRBM(r3, r1) {
		t.Errorf("overwritten A: sse %g, want %g; or RBMs differ", sse3, sse1)
	}
}

func TestStepAllocs(t *testing.T) {
	const v, h, batch = 30, 20, 16
	for _, tc := range []struct {
		name   string
		units  Units
		k      int
		rows   int
		middle bool
		kind   Middle
	}{
		{"bernoulli full batch", Bernoulli, 1, batch, false, Probabilities},
		{"bernoulli short batch probabilities", Bernoulli, 1, 5, true, Probabilities},
		{"gaussian CD-2 samples", Gaussian, 2, batch, true, Samples},
	} {
		r := New(v, h, tc.units, 1)
		tr := NewTrainer(r, batch, tc.k, 1)
		data := randomData(tc.rows, v, tc.units, 2)
		var middle []float32
		if tc.middle {
			middle = make([]float32, tc.rows*h)
		}
		p := Params{LearningRate: 0.01, Momentum: 0.5, WeightDecay: 1e-4}
		allocs := testing.AllocsPerRun(20, func() {
			if _, err := tr.Step(data, tc.rows, p, middle, tc.kind); err != nil {
				t.Fatal(err)
			}
		})
		if allocs != 0 {
			t.Errorf("%s: Step allocates %v times a call; want 0", tc.name, allocs)
		}
	}
}

// barsAndStripes returns the 30 distinct 4x4 bars-and-stripes images.
func barsAndStripes() [][]float32 {
	seen := map[[16]float32]bool{}
	var out [][]float32
	for mask := 0; mask < 16; mask++ {
		for _, vertical := range []bool{false, true} {
			var img [16]float32
			for y := 0; y < 4; y++ {
				for x := 0; x < 4; x++ {
					line := y
					if vertical {
						line = x
					}
					if mask>>line&1 == 1 {
						img[y*4+x] = 1
					}
				}
			}
			if !seen[img] {
				seen[img] = true
				out = append(out, img[:])
			}
		}
	}
	return out
}

// gaussianPrototypes returns n noisy copies of 4 fixed ±1.5 prototypes of
// dimension 16, about unit variance per component.
func gaussianPrototypes(n int) [][]float32 {
	noise := randomData(n, 16, Gaussian, 77)
	protos := randomData(4, 16, Bernoulli, 78)
	out := make([][]float32, n)
	for i := range out {
		out[i] = make([]float32, 16)
		for j := range out[i] {
			out[i][j] = (protos[(i%4)*16+j]*2-1)*1.5*0.9 + 0.4*noise[i*16+j]
		}
	}
	return out
}

// TestLearning trains on small synthetic sets and checks that the
// reconstruction error falls.
func TestLearning(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name   string
		units  Units
		data   [][]float32
		hidden int
		lr     float32
		epochs int
		ratio  float64 // final/first epoch error must be below this
	}{
		{"bernoulli bars and stripes", Bernoulli, barsAndStripes(), 16, 0.1, 300, 0.5},
		{"gaussian prototypes", Gaussian, gaussianPrototypes(64), 8, 0.01, 100, 0.5},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			const batch = 10
			v := len(tc.data[0])
			flat := make([]float32, 0, len(tc.data)*v)
			for _, x := range tc.data {
				flat = append(flat, x...)
			}
			r := New(v, tc.hidden, tc.units, 1)
			tr := NewTrainer(r, batch, 1, 2)
			var first, last float64
			for e := 0; e < tc.epochs; e++ {
				p := Params{
					LearningRate: float32(Schedule(float64(tc.lr), float64(tc.lr)/5, e, tc.epochs)),
					Momentum:     float32(Schedule(0.5, 0.9, e, tc.epochs)),
					WeightDecay:  1e-4,
				}
				var sse float64
				for b := 0; b < len(tc.data); b += batch {
					rows := min(batch, len(tc.data)-b)
					s, err := tr.Step(flat[b*v:], rows, p, nil, Probabilities)
					if err != nil {
						t.Fatalf("epoch %d: %v", e, err)
					}
					sse += s
				}
				tr.Commit()
				mse := sse / float64(len(flat))
				if e == 0 {
					first = mse
				}
				last = mse
			}
			t.Logf("mean squared reconstruction error %.4f -> %.4f", first, last)
			if !(last < tc.ratio*first) {
				t.Errorf("reconstruction error %g after %d epochs, %g after the first; want below %g of it", last, tc.epochs, first, tc.ratio)
			}
		})
	}
}

// SampleHidden gives what a Step's Samples middle result would, to the bit,
// draws what a CD-1 Step draws, and learns nothing.
func TestSampleHidden(t *testing.T) {
	t.Parallel()
	const v, h, rows = 20, 30, 10
	data := randomData(rows, v, Bernoulli, 10)
	stepped := NewTrainer(randomRBM(v, h, Bernoulli, 8), rows, 1, 9)
	sampled := NewTrainer(randomRBM(v, h, Bernoulli, 8), rows, 1, 9)
	w := append([]float32(nil), sampled.RBM().W...)
	for round := range 3 {
		want := make([]float32, (rows-1)*h)
		if _, err := stepped.Step(data, rows-1, Params{}, want, Samples); err != nil {
			t.Fatal(err)
		}
		got := make([]float32, (rows-1)*h)
		sampled.SampleHidden(got, data, rows-1)
		if !equalBits(got, want) {
			t.Fatalf("round %d: SampleHidden differs from a Step's samples", round)
		}
	}
	if !equalBits(sampled.RBM().W, w) || sampled.State().RNG != stepped.State().RNG {
		t.Error("SampleHidden changed W, or drew other than CD-1's Step")
	}
}

// TestTrainerValues checks TrainerValues against the float32 buffers
// NewTrainer allocates, so that memory estimates follow a Trainer that
// gains or loses a buffer.
func TestTrainerValues(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ v, h, batch int }{{784, 500, 256}, {3, 7, 1}, {50, 2, 9}} {
		tr := NewTrainer(New(tc.v, tc.h, Bernoulli, 1), tc.batch, 1, 1)
		var kept, scratch int64
		fields := reflect.ValueOf(tr).Elem()
		for i := range fields.NumField() {
			f := fields.Field(i)
			if f.Type() != reflect.TypeFor[[]float32]() {
				continue
			}
			name := fields.Type().Field(i).Name
			if strings.HasPrefix(name, "vel") || strings.HasPrefix(name, "good") {
				kept += int64(f.Len())
			} else {
				scratch += int64(f.Len())
			}
		}
		gotKept, gotScratch := TrainerValues(tc.v, tc.h, tc.batch)
		if gotKept != kept || gotScratch != scratch {
			t.Errorf("TrainerValues(%d, %d, %d) = %d, %d; NewTrainer allocates %d, %d",
				tc.v, tc.h, tc.batch, gotKept, gotScratch, kept, scratch)
		}
	}
	if k, s := TrainerValues(math.MaxInt, math.MaxInt, math.MaxInt); k != math.MaxInt64 || s != math.MaxInt64 {
		t.Errorf("TrainerValues of an absurd shape = %d, %d; want both math.MaxInt64", k, s)
	}
}
