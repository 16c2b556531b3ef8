package data

import (
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
)

// countingSet has N examples of Dim features, example i filled with i.
func countingSet(n, dim int) *Set {
	s := &Set{X: make([]float32, n*dim), Labels: make([]uint8, n), N: n, Dim: dim, Classes: n, Name: "count"}
	for i := range n {
		for j := range dim {
			s.X[i*dim+j] = float32(i)
		}
		s.Labels[i] = uint8(i)
	}
	return s
}

func TestLimit(t *testing.T) {
	t.Parallel()
	s := countingSet(5, 3)
	for _, tt := range []struct{ n, wantN int }{{0, 5}, {1, 1}, {3, 3}, {5, 5}, {9, 5}} {
		got := s.Limit(tt.n)
		if got.N != tt.wantN || len(got.X) != tt.wantN*3 || len(got.Labels) != tt.wantN || got.Dim != 3 || got.Classes != 5 || got.Name != "count" {
			t.Errorf("Limit(%d) = N %d len(X) %d len(Labels) %d; want N %d", tt.n, got.N, len(got.X), len(got.Labels), tt.wantN)
		}
	}
	v := s.Limit(2)
	v.X[0] = 42
	if s.X[0] != 42 {
		t.Error("Limit(2) copied X; want a view")
	}
	wantPanic(t, "Limit(-1)", "n must be >= 0", func() { s.Limit(-1) })
}

func TestSplit(t *testing.T) {
	t.Parallel()
	s := countingSet(5, 2)
	for _, n := range []int{0, 2, 5} {
		first, rest := s.Split(n)
		if first.N != n || rest.N != 5-n || len(first.X) != 2*n || len(rest.Labels) != 5-n {
			t.Errorf("Split(%d) = N %d and %d; want %d and %d", n, first.N, rest.N, n, 5-n)
		}
		if rest.N > 0 && (rest.Row(0)[0] != float32(n) || rest.Labels[0] != uint8(n)) {
			t.Errorf("Split(%d) rest starts with example %v label %d; want %d", n, rest.Row(0)[0], rest.Labels[0], n)
		}
	}
	first, rest := s.Split(2)
	if first.Name != "count[:2]" || rest.Name != "count[2:]" {
		t.Errorf("Split(2) names %q %q; want %q %q", first.Name, rest.Name, "count[:2]", "count[2:]")
	}
	_ = append(first.X, 99)
	_ = append(first.Labels, 99)
	if rest.X[0] != 2 || rest.Labels[0] != 2 {
		t.Error("appending to Split's first view overwrote rest")
	}
	wantPanic(t, "Split(6)", "want 0 <= n <= 5", func() { s.Split(6) })
	wantPanic(t, "Split(-1)", "want 0 <= n <= 5", func() { s.Split(-1) })
}

func TestPermutation(t *testing.T) {
	t.Parallel()
	perm := func(seed uint64, n int) []int {
		dst := make([]int, n+2)
		dst[n], dst[n+1] = -7, -7
		Permutation(rand.New(rand.NewPCG(seed, 0)), n, dst)
		if dst[n] != -7 || dst[n+1] != -7 {
			t.Errorf("Permutation(n=%d) wrote past dst[:n]", n)
		}
		return dst[:n]
	}
	a := perm(1, 100)
	if sorted := slices.Sorted(slices.Values(a)); !slices.Equal(sorted, countTo(100)) {
		t.Errorf("Permutation(100) = %v; want a permutation of 0..99", a)
	}
	if b := perm(1, 100); !slices.Equal(a, b) {
		t.Error("Permutation with the same seed differs; want the same")
	}
	if c := perm(2, 100); slices.Equal(a, c) {
		t.Error("Permutation with seeds 1 and 2 agree; want different orders")
	}
	if slices.Equal(a, countTo(100)) {
		t.Error("Permutation(100) is the identity")
	}
	if got := perm(1, 0); len(got) != 0 {
		t.Errorf("Permutation(0) = %v; want empty", got)
	}
	wantPanic(t, "Permutation into short dst", "dst of length 2", func() {
		Permutation(rand.New(rand.NewPCG(1, 0)), 3, make([]int, 2))
	})
}

func countTo(n int) []int {
	s := make([]int, n)
	for i := range s {
		s[i] = i
	}
	return s
}

func TestGather(t *testing.T) {
	t.Parallel()
	s := countingSet(6, 3)
	idx := []int{4, 0, 4, 5}
	dst := make([]float32, len(idx)*3+1)
	dst[len(dst)-1] = -1
	s.Gather(dst, idx)
	want := []float32{4, 4, 4, 0, 0, 0, 4, 4, 4, 5, 5, 5, -1}
	if !slices.Equal(dst, want) {
		t.Errorf("Gather(%v) = %v; want %v", idx, dst, want)
	}
	labels := make([]uint8, len(idx))
	s.GatherLabels(labels, idx)
	if !slices.Equal(labels, []uint8{4, 0, 4, 5}) {
		t.Errorf("GatherLabels(%v) = %v; want [4 0 4 5]", idx, labels)
	}
	wantPanic(t, "Gather into short dst", "dst of length 5, want 6", func() { s.Gather(make([]float32, 5), []int{0, 1}) })
	wantPanic(t, "Gather(6)", "index 6 out of range [0, 6)", func() { s.Gather(dst, []int{6}) })
	wantPanic(t, "GatherLabels(-1)", "index -1 out of range", func() { s.GatherLabels(labels, []int{-1}) })
	wantPanic(t, "GatherLabels into short dst", "dst of length 1", func() { s.GatherLabels(labels[:1], []int{0, 1}) })
}

func BenchmarkGather(b *testing.B) {
	s := Synthetic(1, 1000, 784, 10)
	idx := make([]int, s.N)
	Permutation(rand.New(rand.NewPCG(1, 0)), s.N, idx)
	dst := make([]float32, 256*s.Dim)
	b.SetBytes(int64(len(dst) * 4))
	for b.Loop() {
		s.Gather(dst, idx[:256])
	}
}

func wantPanic(t *testing.T, what, want string, f func()) {
	t.Helper()
	defer func() {
		t.Helper()
		r := recover()
		if r == nil {
			t.Errorf("%s did not panic; want a panic containing %q", what, want)
			return
		}
		if msg, ok := r.(string); !ok || !strings.Contains(msg, want) {
			t.Errorf("%s panicked with %v; want a message containing %q", what, r, want)
		}
	}()
	f()
}
