package pipeline

import (
	"context"
	"math"
	"slices"
	"testing"

	"github.com/pipedbn/pipedbn/internal/narrow"
	"github.com/pipedbn/pipedbn/rbm"
)

// TestStageRoundsMiddleResult checks that a stage hands on its middle
// result rounded to its precision: the unrounded stage's values, each
// rounded to the nearest float16 or 8-bit fraction, with the window marked
// so; samples unrounded and marked Binary whatever the precision; and B_i
// in float32 always.
func TestStageRoundsMiddleResult(t *testing.T) {
	t.Parallel()
	x := examples(3, 10, 12)
	window := func(seq int) *Window {
		return &Window{Epoch: 0, Seq: seq, Rows: []int{6, 4}, X: x, Bias: make([]float32, 12)}
	}
	for _, middle := range []rbm.Middle{rbm.Probabilities, rbm.Samples} {
		ref := testConfigs([]int{12, 9}, 2, 6, 2)[0]
		ref.Index, ref.Middle = 2, middle
		plain := NewStage(ref)
		want := &Window{X: make([]float32, 10*9)}
		if err := plain.Train(window(0), want); err != nil {
			t.Fatal(err)
		}
		for _, p := range []Precision{Float32, Float16, Uint8} {
			cfg := ref
			cfg.MiddlePrecision = p
			st := NewStage(cfg)
			got := &Window{X: make([]float32, 10*9)}
			if err := st.Train(window(0), got); err != nil {
				t.Fatal(err)
			}
			wantP := p
			if middle == rbm.Samples {
				wantP = Binary
			}
			if got.Precision != wantP {
				t.Errorf("%v, %v: window precision %v; want %v", middle, p, got.Precision, wantP)
			}
			rounded := slices.Clone(want.X)
			wantP.Round(rounded)
			for i, v := range got.X {
				if math.Float32bits(v) != math.Float32bits(rounded[i]) {
					t.Fatalf("%v, %v: value %d = %g; want %g, the unrounded %g rounded", middle, p, i, v, rounded[i], want.X[i])
				}
			}
			if !slices.Equal(got.Bias, st.RBM().B) {
				t.Errorf("%v, %v: B_i %v; want the RBM's %v unrounded", middle, p, got.Bias, st.RBM().B)
			}
		}
	}
}

// TestPrecisionRounds checks Round on values of each kind: probabilities
// to the nearest float16 or multiple of 1/255, nothing for Float32 and
// Binary.
func TestPrecisionRounds(t *testing.T) {
	t.Parallel()
	in := []float32{0, 1, 0.1, 1.0 / 3, 0.5, 0.999, 1e-6}
	for _, tt := range []struct {
		p    Precision
		want []float32
	}{
		{Float32, in},
		{Binary, in},
		{Float16, []float32{0, 1, 0.099975586, 0.33325195, 0.5, 0.99902344, 1.013279e-06}},
		{Uint8, []float32{0, 1, 26.0 / 255, 85.0 / 255, 128.0 / 255, 1, 0}},
	} {
		got := slices.Clone(in)
		tt.p.Round(got)
		if !slices.Equal(got, tt.want) {
			t.Errorf("%v.Round(%v) = %v; want %v", tt.p, in, got, tt.want)
		}
	}
}

// TestFrozenForwardRounds checks that a stage outside its part of the
// settle phase (SettleAfter), which only forwards its middle result, rounds
// it as training does.
func TestFrozenForwardRounds(t *testing.T) {
	t.Parallel()
	const n, epochs, batch, k = 100, 2, 10, 2
	cfgs := testConfigs([]int{20, 16, 12, 8}, epochs, batch, k)
	PlanSettle(cfgs, n, 0.3, 0.2, SettleAfter)
	c := cfgs[1]
	c.MiddlePrecision = Uint8
	st := NewStage(c)
	out := &Window{X: make([]float32, 5*16)}
	in := &Window{Epoch: epochs, Seq: c.Settle.From + c.Settle.Train, Rows: []int{5}, X: examples(2, 5, 16), Bias: make([]float32, 16)}
	if err := st.Train(in, out); err != nil {
		t.Fatal(err)
	}
	if out.Precision != Uint8 {
		t.Errorf("frozen forward: precision %v; want uint8", out.Precision)
	}
	for i, v := range out.X[:5*12] {
		if narrow.FromUint8(narrow.Uint8(v)) != v {
			t.Fatalf("frozen forward: value %d = %g; want a multiple of 1/255", i, v)
		}
	}
}

// TestPipelinedRoundsTheLinks checks that Pipelined, the reference the
// transports are tested against, trains the RBMs above the first on
// rounded middle results: RBM_1 as without rounding, RBM_2 and RBM_3 not.
func TestPipelinedRoundsTheLinks(t *testing.T) {
	t.Parallel()
	const n = 120
	layers := []int{20, 16, 12, 8}
	x := examples(5, n, layers[0])
	base, err := Pipelined(x, n, testConfigs(layers, 2, 10, 2), 7)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range []Precision{Float16, Uint8} {
		cfgs := testConfigs(layers, 2, 10, 2)
		for i := range cfgs {
			cfgs[i].MiddlePrecision = p
		}
		got, err := Pipelined(x, n, cfgs, 7)
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(got[0].RBM().W, base[0].RBM().W) {
			t.Errorf("%v: RBM_1 differs from the unrounded run's; want it the same, trained on the data", p)
		}
		for i := 1; i < len(layers)-1; i++ {
			if slices.Equal(got[i].RBM().W, base[i].RBM().W) {
				t.Errorf("%v: RBM_%d is the unrounded run's; want it trained on rounded middle results", p, i+1)
			}
		}
	}
}

func TestPrecisionText(t *testing.T) {
	t.Parallel()
	for _, p := range []Precision{Float32, Float16, Uint8} {
		b, err := p.MarshalText()
		if err != nil {
			t.Fatal(err)
		}
		var got Precision
		if err := got.UnmarshalText(b); err != nil || got != p {
			t.Errorf("UnmarshalText(%q) = %v, %v; want %v", b, got, err, p)
		}
	}
	var p Precision
	for _, bad := range []string{"binary", "float64", "", "Float16"} {
		if err := p.UnmarshalText([]byte(bad)); err == nil {
			t.Errorf("UnmarshalText(%q) = nil error; want one", bad)
		}
	}
	if got := Precision(9).String(); got != "Precision(9)" {
		t.Errorf("Precision(9).String() = %q", got)
	}
}

// ExactPrecision finds the narrowest precision that holds every value: bits
// for 0 and 1, bytes for pixels scaled as the data package does, halves,
// else float32; a Source's windows say it.
func TestExactPrecision(t *testing.T) {
	pixels := make([]float32, 256)
	for i := range pixels {
		pixels[i] = float32(i) / 255
	}
	for _, tc := range []struct {
		x    []float32
		want Precision
	}{
		{[]float32{0, 1, 1, 0}, Binary},
		{nil, Binary},
		{pixels, Uint8},
		{append([]float32{0.5}, pixels...), Float32},
		{[]float32{0, 1, 0.5, 0.25}, Float16},
		{[]float32{1, 0.25, -2, 1024}, Float16},
		{[]float32{0, 1, float32(math.Copysign(0, -1))}, Float16},
		{[]float32{0, 1, 0.1}, Float32},
		{append(pixels, float32(math.Copysign(0, -1))), Float32},
		{append(pixels, float32(math.NaN())), Float32},
	} {
		if got := ExactPrecision(tc.x); got != tc.want {
			t.Errorf("ExactPrecision(%v...) = %v; want %v", tc.x[:min(len(tc.x), 3)], got, tc.want)
		}
	}
	src := NewSource(pixels, 64, 4, 2, 3, 1).WithPrecision(Uint8)
	w, _ := src.Next(1)
	if w.Precision != Uint8 || src.Again(0).Precision != Uint8 {
		t.Errorf("a source WithPrecision(Uint8) deals windows of precision %v, again %v", w.Precision, src.Again(0).Precision)
	}
	src.Epoch(context.Background(), 0, func(w *Window) error {
		if w.Precision != Uint8 {
			t.Errorf("Epoch's window: precision %v; want uint8", w.Precision)
		}
		return nil
	})
}
