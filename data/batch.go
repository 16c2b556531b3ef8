package data

import (
	"fmt"
	"math/rand/v2"
)

// Limit returns a view of the first n examples of s, sharing its memory;
// n == 0 or n >= s.N means all of them (0 = no limit, as in LoadIDX). It
// panics if n < 0.
func (s *Set) Limit(n int) *Set {
	if n < 0 {
		panic(fmt.Sprintf("data: Limit(%d) of %q: n must be >= 0", n, s.Name))
	}
	if n == 0 || n >= s.N {
		n = s.N
	}
	v := s.view(0, n)
	v.Name = s.Name
	return v
}

// Split carves s into views of its first n examples and the remaining
// s.N-n, sharing its memory, e.g. a validation split. Each view's capacity
// ends with it, so appending to first cannot overwrite rest. It panics
// unless 0 <= n <= s.N.
func (s *Set) Split(n int) (first, rest *Set) {
	if n < 0 || n > s.N {
		panic(fmt.Sprintf("data: Split(%d) of %q with %d examples: want 0 <= n <= %d", n, s.Name, s.N, s.N))
	}
	first, rest = s.view(0, n), s.view(n, s.N)
	first.Name = fmt.Sprintf("%s[:%d]", s.Name, n)
	rest.Name = fmt.Sprintf("%s[%d:]", s.Name, n)
	return first, rest
}

// view returns examples [lo, hi) of s with capacities capped at hi.
func (s *Set) view(lo, hi int) *Set {
	v := &Set{
		X:       s.X[lo*s.Dim : hi*s.Dim : hi*s.Dim],
		N:       hi - lo,
		Dim:     s.Dim,
		Classes: s.Classes,
	}
	if s.Labels != nil { // an unlabelled set (pre-training only) has none
		v.Labels = s.Labels[lo:hi:hi]
	}
	return v
}

// Permutation fills dst[:n] with a random permutation of 0..n-1 drawn from
// rng, for visiting a set in a new order each epoch. It panics if
// len(dst) < n.
func Permutation(rng *rand.Rand, n int, dst []int) {
	if n < 0 || len(dst) < n {
		panic(fmt.Sprintf("data: Permutation(n=%d) into dst of length %d", n, len(dst)))
	}
	dst = dst[:n]
	for i := range dst {
		dst[i] = i
	}
	rng.Shuffle(n, func(i, j int) { dst[i], dst[j] = dst[j], dst[i] })
}

// Gather copies the examples listed in idx, in that order, into dst as
// len(idx) contiguous rows of s.Dim features: a mini-batch. It panics if dst
// is shorter than len(idx)*s.Dim or an index is out of range.
func (s *Set) Gather(dst []float32, idx []int) {
	if len(dst) < len(idx)*s.Dim {
		panic(fmt.Sprintf("data: Gather of %d rows of %d into dst of length %d, want %d", len(idx), s.Dim, len(dst), len(idx)*s.Dim))
	}
	for k, i := range idx {
		if i < 0 || i >= s.N {
			panic(fmt.Sprintf("data: Gather: index %d out of range [0, %d) of %q", i, s.N, s.Name))
		}
		copy(dst[k*s.Dim:(k+1)*s.Dim], s.Row(i))
	}
}

// GatherLabels copies the labels of the examples listed in idx, in that
// order, into dst: the labels matching a Gather. It panics if dst is
// shorter than idx or an index is out of range.
func (s *Set) GatherLabels(dst []uint8, idx []int) {
	if len(dst) < len(idx) {
		panic(fmt.Sprintf("data: GatherLabels of %d labels into dst of length %d", len(idx), len(dst)))
	}
	for k, i := range idx {
		if i < 0 || i >= s.N {
			panic(fmt.Sprintf("data: GatherLabels: index %d out of range [0, %d) of %q", i, s.N, s.Name))
		}
		dst[k] = s.Labels[i]
	}
}
