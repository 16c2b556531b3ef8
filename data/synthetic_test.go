package data

import (
	"slices"
	"testing"
)

func TestSyntheticShape(t *testing.T) {
	t.Parallel()
	train, test := SyntheticPair(7, 300, 100, 20, 5)
	for _, s := range []*Set{train, test} {
		if len(s.X) != s.N*20 || len(s.Labels) != s.N || s.Dim != 20 || s.Classes != 5 {
			t.Errorf("%s: N %d len(X) %d len(Labels) %d Dim %d Classes %d; want Dim 20 Classes 5", s.Name, s.N, len(s.X), len(s.Labels), s.Dim, s.Classes)
		}
		for i, x := range s.X {
			if !(x >= 0 && x <= 1) {
				t.Fatalf("%s: X[%d] = %v; want in [0,1]", s.Name, i, x)
			}
		}
		var seen [5]bool
		for i, l := range s.Labels {
			if l >= 5 {
				t.Fatalf("%s: label %d = %d; want < 5", s.Name, i, l)
			}
			seen[l] = true
		}
		if slices.Contains(seen[:], false) {
			t.Errorf("%s: classes seen %v; want all 5", s.Name, seen)
		}
	}
	if train.N != 300 || test.N != 100 {
		t.Errorf("SyntheticPair(300, 100) sizes %d, %d", train.N, test.N)
	}
}

func TestSyntheticDeterministic(t *testing.T) {
	t.Parallel()
	a, at := SyntheticPair(7, 50, 30, 16, 3)
	b, bt := SyntheticPair(7, 50, 30, 16, 3)
	if !slices.Equal(a.X, b.X) || !slices.Equal(a.Labels, b.Labels) || !slices.Equal(at.X, bt.X) || !slices.Equal(at.Labels, bt.Labels) {
		t.Error("SyntheticPair(7, ...) differs between calls; want the same sets")
	}
	if s := Synthetic(7, 50, 16, 3); !slices.Equal(s.X, a.X) || !slices.Equal(s.Labels, a.Labels) {
		t.Error("Synthetic(7, 50, ...) differs from SyntheticPair(7, 50, 30, ...)'s train set")
	}
	if other, _ := SyntheticPair(7, 50, 999, 16, 3); !slices.Equal(other.X, a.X) {
		t.Error("SyntheticPair's train set depends on nTest")
	}
	if c := Synthetic(8, 50, 16, 3); slices.Equal(c.X, a.X) {
		t.Error("Synthetic with seeds 7 and 8 agree; want different sets")
	}
	if slices.Equal(a.X[:16*30], at.X) {
		t.Error("SyntheticPair's test set repeats its train set")
	}
}

// TestSyntheticLearnable checks that a nearest-class-mean classifier fit on
// the train set classifies the test set far above chance.
func TestSyntheticLearnable(t *testing.T) {
	t.Parallel()
	const dim, classes = 64, 10
	train, test := SyntheticPair(1, 500, 500, dim, classes)
	means := make([]float64, classes*dim)
	count := make([]int, classes)
	for i := range train.N {
		c := int(train.Labels[i])
		count[c]++
		for j, x := range train.Row(i) {
			means[c*dim+j] += float64(x)
		}
	}
	for c := range classes {
		for j := range dim {
			means[c*dim+j] /= float64(max(count[c], 1))
		}
	}
	correct := 0
	for i := range test.N {
		best, bestD := -1, 0.0
		for c := range classes {
			d := 0.0
			for j, x := range test.Row(i) {
				e := float64(x) - means[c*dim+j]
				d += e * e
			}
			if best < 0 || d < bestD {
				best, bestD = c, d
			}
		}
		if best == int(test.Labels[i]) {
			correct++
		}
	}
	if acc := float64(correct) / float64(test.N); acc < 0.9 {
		t.Errorf("nearest-mean accuracy on Synthetic = %.3f; want >= 0.9 (chance 0.1)", acc)
	}
}

func TestSyntheticPanics(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		name            string
		n, dim, classes int
	}{
		{"negative n", -1, 4, 2},
		{"zero dim", 5, 0, 2},
		{"zero classes", 5, 4, 0},
		{"too many classes", 5, 4, 257},
	} {
		wantPanic(t, tt.name, "want n >= 0, dim >= 1, 1 <= classes <= 256", func() { Synthetic(1, tt.n, tt.dim, tt.classes) })
	}
	if s := Synthetic(1, 0, 4, 256); s.N != 0 || len(s.X) != 0 {
		t.Errorf("Synthetic(n=0) = %d examples; want 0", s.N)
	}
}
