package rbm

import (
	"math"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/pipedbn/pipedbn/blas"
)

func TestUnits(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		in      string
		want    Units
		wantErr bool
	}{
		{"bernoulli", Bernoulli, false},
		{"gaussian", Gaussian, false},
		{" Gaussian ", Gaussian, false},
		{"BERNOULLI", Bernoulli, false},
		{"binary", 0, true},
		{"", 0, true},
	} {
		got, err := ParseUnits(tc.in)
		if (err != nil) != tc.wantErr || got != tc.want {
			t.Errorf("ParseUnits(%q) = %v, %v; want %v, error %v", tc.in, got, err, tc.want, tc.wantErr)
		}
		if err == nil {
			if back, _ := ParseUnits(got.String()); back != got {
				t.Errorf("ParseUnits(%v.String()) = %v; want %v", got, back, got)
			}
		}
	}
	if s := Units(7).String(); s != "Units(7)" {
		t.Errorf("Units(7).String() = %q; want %q", s, "Units(7)")
	}
}

func TestMiddle(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		in      string
		want    Middle
		wantErr bool
	}{
		{"probabilities", Probabilities, false},
		{"samples", Samples, false},
		{"Samples", Samples, false},
		{"probs", 0, true},
	} {
		got, err := ParseMiddle(tc.in)
		if (err != nil) != tc.wantErr || got != tc.want {
			t.Errorf("ParseMiddle(%q) = %v, %v; want %v, error %v", tc.in, got, err, tc.want, tc.wantErr)
		}
		if err == nil && got.String() != lower(tc.in) {
			t.Errorf("%v.String() = %q; want %q", got, got.String(), lower(tc.in))
		}
	}
	if s := Middle(-1).String(); s != "Middle(-1)" {
		t.Errorf("Middle(-1).String() = %q; want %q", s, "Middle(-1)")
	}
}

func lower(s string) string {
	b := []byte(s)
	for i, c := range b {
		if 'A' <= c && c <= 'Z' {
			b[i] = c + 'a' - 'A'
		}
	}
	return string(b)
}

func TestNew(t *testing.T) {
	t.Parallel()
	a, b, c := New(30, 40, Bernoulli, 5), New(30, 40, Bernoulli, 5), New(30, 40, Bernoulli, 6)
	if !equalBits(a.W, b.W) {
		t.Error("New with the same seed gave different weights")
	}
	if equalBits(a.W, c.W) {
		t.Error("New with seeds 5 and 6 gave the same weights")
	}
	var sum, sum2 float64
	for _, w := range a.W {
		sum += float64(w)
		sum2 += float64(w) * float64(w)
	}
	n := float64(len(a.W))
	if mean, sd := sum/n, math.Sqrt(sum2/n); math.Abs(mean) > 0.002 || math.Abs(sd-InitStd) > 0.001 {
		t.Errorf("New weights: mean %g, sd %g; want 0, %g", mean, sd, InitStd)
	}
	for _, x := range append(append([]float32(nil), a.A...), a.B...) {
		if x != 0 {
			t.Fatalf("New biases = %v, %v; want zeros", a.A, a.B)
		}
	}
	if len(a.A) != 30 || len(a.B) != 40 || a.Visible != 30 || a.Hidden != 40 || a.Units != Bernoulli {
		t.Errorf("New(30, 40) = %d x %d %v with len(A), len(B) = %d, %d", a.Visible, a.Hidden, a.Units, len(a.A), len(a.B))
	}
}

func TestCloneCopyFrom(t *testing.T) {
	t.Parallel()
	r := New(4, 3, Gaussian, 1)
	r.A[0], r.B[2] = 0.5, -0.25
	c := r.Clone()
	if !equalRBM(c, r) {
		t.Fatal("Clone differs from the original")
	}
	c.W[0]++
	c.A[0]++
	c.B[0]++
	if r.W[0] == c.W[0] || r.A[0] == c.A[0] || r.B[0] == c.B[0] {
		t.Fatal("Clone shares storage with the original")
	}
	d := New(4, 3, Bernoulli, 2)
	w := &d.W[0]
	d.CopyFrom(r)
	if !equalRBM(d, r) || &d.W[0] != w {
		t.Error("CopyFrom did not copy in place")
	}
	defer func() {
		if recover() == nil {
			t.Error("CopyFrom across shapes did not panic")
		}
	}()
	New(3, 4, Bernoulli, 1).CopyFrom(r)
}

func equalBits(a, b []float32) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if math.Float32bits(a[i]) != math.Float32bits(b[i]) {
			return false
		}
	}
	return true
}

func equalRBM(a, b *RBM) bool {
	return a.Visible == b.Visible && a.Hidden == b.Hidden && a.Units == b.Units &&
		equalBits(a.W, b.W) && equalBits(a.A, b.A) && equalBits(a.B, b.B)
}

func sigmoid64(x float64) float64 { return 1 / (1 + math.Exp(-x)) }

// randomRBM returns an RBM with weights and biases large enough to make the
// probabilities spread over (0, 1).
func randomRBM(visible, hidden int, units Units, seed uint64) *RBM {
	r := New(visible, hidden, units, seed)
	rng := rand.New(rand.NewPCG(seed, 99))
	for i := range r.W {
		r.W[i] = float32(rng.NormFloat64())
	}
	for i := range r.A {
		r.A[i] = float32(rng.NormFloat64())
	}
	for i := range r.B {
		r.B[i] = float32(rng.NormFloat64())
	}
	return r
}

// randomData returns rows x cols values: binary with P(1) = 0.4 for
// Bernoulli units, standard normal for Gaussian ones.
func randomData(rows, cols int, units Units, seed uint64) []float32 {
	rng := rand.New(rand.NewPCG(seed, 7))
	x := make([]float32, rows*cols)
	for i := range x {
		if units == Gaussian {
			x[i] = float32(rng.NormFloat64())
		} else if rng.Float64() < 0.4 {
			x[i] = 1
		}
	}
	return x
}

func TestHiddenProbs(t *testing.T) {
	t.Parallel()
	for _, sh := range []struct{ v, h, rows int }{{1, 1, 1}, {5, 7, 3}, {20, 33, 4}} {
		r := randomRBM(sh.v, sh.h, Bernoulli, 3)
		v := randomData(sh.rows, sh.v, Gaussian, 4)
		dst := make([]float32, sh.rows*sh.h)
		r.HiddenProbs(dst, v, sh.rows)
		for n := 0; n < sh.rows; n++ {
			for j := 0; j < sh.h; j++ {
				x := float64(r.B[j])
				for i := 0; i < sh.v; i++ {
					x += float64(v[n*sh.v+i]) * float64(r.W[i*sh.h+j])
				}
				if got, want := float64(dst[n*sh.h+j]), sigmoid64(x); math.Abs(got-want) > 1e-6 {
					t.Errorf("%dx%d HiddenProbs[%d,%d] = %g; want %g", sh.v, sh.h, n, j, got, want)
				}
			}
		}
	}
}

// freeEnergyBrute sums exp(-E(v,h)) over every hidden state h.
func freeEnergyBrute(r *RBM, v []float32) float64 {
	var terms []float64
	for h := 0; h < 1<<r.Hidden; h++ {
		var negE float64
		for i := 0; i < r.Visible; i++ {
			if r.Units == Gaussian {
				d := float64(v[i]) - float64(r.A[i])
				negE -= d * d / 2
			} else {
				negE += float64(r.A[i]) * float64(v[i])
			}
			for j := 0; j < r.Hidden; j++ {
				if h>>j&1 == 1 {
					negE += float64(v[i]) * float64(r.W[i*r.Hidden+j])
				}
			}
		}
		for j := 0; j < r.Hidden; j++ {
			if h>>j&1 == 1 {
				negE += float64(r.B[j])
			}
		}
		terms = append(terms, negE)
	}
	mx := math.Inf(-1)
	for _, x := range terms {
		mx = math.Max(mx, x)
	}
	var s float64
	for _, x := range terms {
		s += math.Exp(x - mx)
	}
	return -(mx + math.Log(s))
}

func TestFreeEnergy(t *testing.T) {
	t.Parallel()
	for _, units := range []Units{Bernoulli, Gaussian} {
		r := randomRBM(4, 5, units, 11)
		const rows = 3
		v := randomData(rows, 4, units, 12)
		var want float64
		for n := 0; n < rows; n++ {
			want += freeEnergyBrute(r, v[n*4:(n+1)*4])
		}
		want /= rows
		if got := r.FreeEnergy(v, rows); math.Abs(got-want) > 1e-4*math.Max(1, math.Abs(want)) {
			t.Errorf("%v FreeEnergy = %g; want %g", units, got, want)
		}
	}
	if got := New(2, 2, Bernoulli, 1).FreeEnergy(nil, 0); got != 0 {
		t.Errorf("FreeEnergy of no rows = %g; want 0", got)
	}
}

func TestSchedule(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		initial, final float64
		epoch, epochs  int
		want           float64
	}{
		{0.015, 0.002, 0, 20, 0.015},
		{0.015, 0.002, 19, 20, 0.002},
		{0.015, 0.002, 10, 21, 0.0085},
		{0.5, 0.9, 1, 5, 0.6},
		{0.5, 0.9, -3, 5, 0.5},
		{0.5, 0.9, 9, 5, 0.9},
		{0.5, 0.9, 0, 1, 0.5},
		{0.5, 0.9, 3, 0, 0.5},
	} {
		if got := Schedule(tc.initial, tc.final, tc.epoch, tc.epochs); math.Abs(got-tc.want) > 1e-15 {
			t.Errorf("Schedule(%g, %g, %d, %d) = %g; want %g", tc.initial, tc.final, tc.epoch, tc.epochs, got, tc.want)
		}
	}
}

func TestRBMShapePanics(t *testing.T) {
	t.Parallel()
	r := New(3, 2, Bernoulli, 1)
	tr := NewTrainer(r, 4, 1, 1)
	for _, tc := range []struct {
		name string
		f    func()
	}{
		{"New zero hidden", func() { New(3, 0, Bernoulli, 1) }},
		{"New bad units", func() { New(3, 2, Units(9), 1) }},
		{"NewTrainer zero batch", func() { NewTrainer(r, 0, 1, 1) }},
		{"NewTrainer zero k", func() { NewTrainer(r, 4, 0, 1) }},
		{"HiddenProbs short dst", func() { r.HiddenProbs(make([]float32, 3), make([]float32, 6), 2) }},
		{"Step too many rows", func() { tr.Step(make([]float32, 15), 5, Params{}, nil, Probabilities) }},
		{"Step no rows", func() { tr.Step(nil, 0, Params{}, nil, Probabilities) }},
		{"Step short v0", func() { tr.Step(make([]float32, 5), 2, Params{}, nil, Probabilities) }},
		{"Step short middle", func() { tr.Step(make([]float32, 6), 2, Params{}, make([]float32, 3), Samples) }},
		{"Step invalid middle kind", func() { tr.Step(make([]float32, 6), 2, Params{}, make([]float32, 4), Middle(5)) }},
		{"Step resized A", func() {
			r2 := New(3, 2, Bernoulli, 1)
			t2 := NewTrainer(r2, 4, 1, 1)
			r2.A = r2.A[:2]
			t2.Step(make([]float32, 6), 2, Params{}, nil, Probabilities)
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

// MeasureRate counts samples per second of real steps: positive, and a
// shape with 4 times the work trains markedly fewer samples a second.
func TestMeasureRate(t *testing.T) {
	small := MeasureRate(64, 64, 32, 1, 50*time.Millisecond)
	big := MeasureRate(256, 256, 32, 1, 50*time.Millisecond)
	if !(small > 0) || !(big > 0) || !(big < small) {
		t.Errorf("MeasureRate: 64x64 %.0f, 256x256 %.0f samples/s; want both > 0, the larger slower", small, big)
	}
}

// MeasureStepCost times real steps of both sizes: positive, and a step of
// an eighth of the rows markedly faster than a full one, by the wall clock
// and by the process's CPU time.
func TestMeasureStepCost(t *testing.T) {
	// The fastest step of each size leaves out those another process
	// interrupted, but on a busy machine (the race detector's suite runs
	// packages side by side) a short measurement may catch no quiet step
	// of the small size: measure again, longer, before failing. One BLAS
	// thread, as the planner measures: a second one waits for a core there.
	threads := blas.Threads()
	blas.SetThreads(1)
	defer blas.SetThreads(threads)
	var c StepCost
	for d := 20 * time.Millisecond; d <= 320*time.Millisecond; d *= 4 {
		c = MeasureStepCost(256, 256, 256, 32, 1, d)
		if c.Sub > 0 && c.Full > 2*c.Sub && c.SubCPU > 0 && c.FullCPU > 2*c.SubCPU {
			return
		}
	}
	t.Errorf("MeasureStepCost(256x256, 256 rows against 32) = %+v; want all > 0, each full step over twice the small one", c)
}
