package finetune

import (
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"testing"
)

// randomLayers returns hidden layers of the given sizes with weights and
// biases uniform in [-scale, scale): stand-ins for pre-trained RBMs.
func randomLayers(seed uint64, sizes []int, scale float64) []Layer {
	rng := rand.New(rand.NewPCG(seed, 99))
	u := func() float32 { return float32((2*rng.Float64() - 1) * scale) }
	layers := make([]Layer, len(sizes)-1)
	for i := range layers {
		l := Layer{In: sizes[i], Out: sizes[i+1], W: make([]float32, sizes[i]*sizes[i+1]), B: make([]float32, sizes[i+1])}
		for j := range l.W {
			l.W[j] = u()
		}
		for j := range l.B {
			l.B[j] = u()
		}
		layers[i] = l
	}
	return layers
}

// randomInputs returns rows x dim values uniform in [0, 1).
func randomInputs(seed uint64, rows, dim int) []float32 {
	rng := rand.New(rand.NewPCG(seed, 98))
	x := make([]float32, rows*dim)
	for i := range x {
		x[i] = rng.Float32()
	}
	return x
}

// refForward computes, in float64 and naively, what NumPy would from the
// network's arrays: sigmoid(x @ W + b) per hidden layer, then the logits
// h @ Wout + bout, for one input row.
func refForward(n *Network, x []float32) (hidden [][]float64, logits []float64) {
	in := make([]float64, len(x))
	for i, v := range x {
		in[i] = float64(v)
	}
	affine := func(l *Layer, in []float64) []float64 {
		out := make([]float64, l.Out)
		for j := range out {
			s := float64(l.B[j])
			for k, v := range in {
				s += v * float64(l.W[k*l.Out+j])
			}
			out[j] = s
		}
		return out
	}
	for i := range n.Hidden {
		h := affine(&n.Hidden[i], in)
		for j, v := range h {
			h[j] = 1 / (1 + math.Exp(-v))
		}
		hidden = append(hidden, h)
		in = h
	}
	return hidden, affine(&n.Out, in)
}

// diffNetworks describes the first difference between a and b, or returns
// "" if their shapes and every weight and bias are equal.
func diffNetworks(a, b *Network) string {
	if len(a.Hidden) != len(b.Hidden) {
		return fmt.Sprintf("%d hidden layers vs %d", len(a.Hidden), len(b.Hidden))
	}
	for i := 0; i <= len(a.Hidden); i++ {
		la, lb := a.layer(i), b.layer(i)
		if la.In != lb.In || la.Out != lb.Out || len(la.W) != len(lb.W) || len(la.B) != len(lb.B) {
			return fmt.Sprintf("layer %d: shape %dx%d vs %dx%d", i, la.In, la.Out, lb.In, lb.Out)
		}
		for j := range la.W {
			if la.W[j] != lb.W[j] {
				return fmt.Sprintf("layer %d: W[%d] = %v vs %v", i, j, la.W[j], lb.W[j])
			}
		}
		for j := range la.B {
			if la.B[j] != lb.B[j] {
				return fmt.Sprintf("layer %d: B[%d] = %v vs %v", i, j, la.B[j], lb.B[j])
			}
		}
	}
	return ""
}

func TestFromPretrained(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		sizes   []int
		classes int
	}{
		{"one layer", []int{7, 5}, 3},
		{"three layers", []int{20, 16, 9, 12}, 4},
		{"wide", []int{3, 300}, 2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			layers := randomLayers(1, tt.sizes, 2)
			orig := make([]Layer, len(layers))
			for i := range layers {
				orig[i] = layers[i].clone()
			}
			n := FromPretrained(layers, tt.classes, 7)
			// The network owns copies: changing the RBMs' arrays afterwards
			// must not reach it.
			for i := range layers {
				layers[i].W[0]++
				layers[i].B[0]++
			}
			for i := range orig {
				h := &n.Hidden[i]
				if h.In != orig[i].In || h.Out != orig[i].Out {
					t.Fatalf("Hidden[%d] is %dx%d; want %dx%d", i, h.In, h.Out, orig[i].In, orig[i].Out)
				}
				for j := range h.W {
					if h.W[j] != orig[i].W[j] {
						t.Fatalf("Hidden[%d].W[%d] = %v; want %v", i, j, h.W[j], orig[i].W[j])
					}
				}
				for j := range h.B {
					if h.B[j] != orig[i].B[j] {
						t.Fatalf("Hidden[%d].B[%d] = %v; want %v", i, j, h.B[j], orig[i].B[j])
					}
				}
			}
			if got := n.Sizes(); fmt.Sprint(got) != fmt.Sprint(tt.sizes) {
				t.Errorf("Sizes() = %v; want %v", got, tt.sizes)
			}
			if n.Classes() != tt.classes || n.Out.In != tt.sizes[len(tt.sizes)-1] {
				t.Errorf("output layer %dx%d; want %dx%d", n.Out.In, n.Out.Out, tt.sizes[len(tt.sizes)-1], tt.classes)
			}
			// Every layer's forward pass is sigmoid(x @ W + b) on the
			// arrays as stored, and the logits h @ Wout + bout.
			const rows = 5
			x := randomInputs(2, rows, tt.sizes[0])
			a := newActivations(n, rows)
			n.forward(a, x, rows)
			for r := range rows {
				hidden, logits := refForward(n, x[r*tt.sizes[0]:(r+1)*tt.sizes[0]])
				for i, h := range hidden {
					got := a.hidden[i][r*len(h) : (r+1)*len(h)]
					for j := range h {
						// float32 sums of up to 300 terms of size <= 2, and
						// blas.Sigmoid's 1e-7: 1e-5 is ample, and far below
						// what a wrong weight or bias would cause.
						if math.Abs(float64(got[j])-h[j]) > 1e-5 {
							t.Fatalf("row %d: layer %d unit %d = %v; want sigmoid(x@W+b) = %v", r, i+1, j, got[j], h[j])
						}
					}
				}
				got := a.logits[r*tt.classes : (r+1)*tt.classes]
				for j := range logits {
					if math.Abs(float64(got[j])-logits[j]) > 1e-5 {
						t.Fatalf("row %d: logit %d = %v; want %v", r, j, got[j], logits[j])
					}
				}
			}
		})
	}
}

func TestRandom(t *testing.T) {
	t.Parallel()
	tests := []struct {
		sizes   []int
		classes int
	}{
		{[]int{10}, 3},
		{[]int{10, 8}, 2},
		{[]int{784, 500, 500, 2000}, 10},
	}
	for _, tt := range tests {
		t.Run(fmt.Sprint(tt.sizes), func(t *testing.T) {
			t.Parallel()
			n := Random(tt.sizes, tt.classes, 3)
			if got := n.Sizes(); fmt.Sprint(got) != fmt.Sprint(tt.sizes) {
				t.Fatalf("Sizes() = %v; want %v", got, tt.sizes)
			}
			if d := diffNetworks(n, Random(tt.sizes, tt.classes, 3)); d != "" {
				t.Errorf("Random is not deterministic: %s", d)
			}
			if d := diffNetworks(n, Random(tt.sizes, tt.classes, 4)); d == "" {
				t.Errorf("Random(seed 3) == Random(seed 4)")
			}
			for i, l := range n.Hidden {
				r := 4 * math.Sqrt(6/float64(l.In+l.Out))
				lo, hi := math.Inf(1), math.Inf(-1)
				for _, w := range l.W {
					lo, hi = min(lo, float64(w)), max(hi, float64(w))
				}
				// Glorot-uniform: inside (-r, r) and, with thousands of
				// draws, reaching close to both ends.
				if lo < -r || hi > r || lo > -0.9*r || hi < 0.9*r {
					t.Errorf("Hidden[%d].W spans [%.3f, %.3f]; want about [-%.3f, %.3f]", i, lo, hi, r, r)
				}
			}
			if len(tt.sizes) > 1 {
				// The output layer matches FromPretrained's for the seed.
				p := FromPretrained(n.Hidden, tt.classes, 3)
				if d := diffNetworks(n, p); d != "" {
					t.Errorf("Random vs FromPretrained of its layers: %s", d)
				}
			}
		})
	}
}

func TestNetworkPanics(t *testing.T) {
	t.Parallel()
	good := randomLayers(1, []int{4, 3, 2}, 1)
	tests := []struct {
		name string
		f    func()
		want string
	}{
		{"no layers", func() { FromPretrained(nil, 2, 1) }, "no layers"},
		{"short W", func() {
			l := good[0].clone()
			l.W = l.W[:5]
			FromPretrained([]Layer{l}, 2, 1)
		}, "len(W) = 5"},
		{"short B", func() {
			l := good[0].clone()
			l.B = l.B[:1]
			FromPretrained([]Layer{l}, 2, 1)
		}, "len(B) = 1"},
		{"no chain", func() { FromPretrained([]Layer{good[1], good[0]}, 2, 1) }, "hidden layer 2 has 4 inputs"},
		{"zero classes", func() { FromPretrained(good, 0, 1) }, "classes = 0"},
		{"Random zero size", func() { Random([]int{4, 0}, 2, 1) }, "sizes[1] = 0"},
		{"Predict short x", func() { Random([]int{4}, 2, 1).Predict(make([]int, 3), make([]float32, 11), 3) }, "Predict of 3 rows"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			defer func() {
				r := recover()
				if r == nil || !strings.Contains(fmt.Sprint(r), tt.want) {
					t.Errorf("panic = %v; want one containing %q", r, tt.want)
				}
			}()
			tt.f()
		})
	}
}

func TestPredict(t *testing.T) {
	t.Parallel()
	// More rows than one evaluation batch, and not a multiple of it.
	for _, rows := range []int{1, 7, EvalBatch, 2*EvalBatch + 3} {
		t.Run(fmt.Sprint(rows), func(t *testing.T) {
			t.Parallel()
			n := FromPretrained(randomLayers(5, []int{12, 9}, 1), 5, 1)
			for j := range n.Out.W {
				n.Out.W[j] *= 100 // spread the logits so ties are unlikely
			}
			x := randomInputs(6, rows, 12)
			got := make([]int, rows)
			n.Predict(got, x, rows)
			for r := range rows {
				_, logits := refForward(n, x[r*12:(r+1)*12])
				want := 0
				for j, v := range logits {
					if v > logits[want] {
						want = j
					}
				}
				if got[r] != want {
					t.Fatalf("Predict: row %d = %d; want %d (logits %v)", r, got[r], want, logits)
				}
			}
		})
	}
}
