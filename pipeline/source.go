package pipeline

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
)

// Source cuts a data matrix into windows of K mini-batches, shuffling the
// rows every epoch with its own seeded RNG.
type Source struct {
	x            []float32
	labels       []uint8 // nil: windows without labels
	exact        Precision
	n, dim       int
	batchSize, k int
	pcg          *rand.PCG
	rng          *rand.Rand
	perm         []int
	win          Window
	seq          int
	// The position of Next: the epoch and its first row not dealt yet.
	epoch, row int
	// shuffles[e] is the generator's state before Next shuffled epoch e;
	// again holds the order of epoch againEpoch, made anew by Again.
	shuffles   [][]byte
	again      []int
	againEpoch int
}

// NewSource returns a source over x, n rows of dim values, row-major.
func NewSource(x []float32, n, dim, batchSize, k int, seed uint64) *Source {
	pcg := rand.NewPCG(seed, 0x5eed5ca1ab1e)
	s := &Source{x: x, n: n, dim: dim, batchSize: batchSize, k: k,
		pcg: pcg, rng: rand.New(pcg), perm: make([]int, n), againEpoch: -1}
	// A window holds at most the epoch's rows, however many mini-batches
	// K asks for: the bound the memory estimate counts.
	s.win.X = make([]float32, 0, WindowRows(k, batchSize, n)*dim)
	return s
}

// WithLabels makes s deal each row's label, y[row] of n, with it
// (Window.Labels): the data windows of a supervised stage. It returns s.
func (s *Source) WithLabels(y []uint8) *Source {
	if len(y) != s.n {
		panic(fmt.Sprintf("pipeline: %d labels for a source of %d rows", len(y), s.n))
	}
	s.labels = y
	return s
}

// WithPrecision makes s's windows say that their values are exact in p
// (Window.Precision): a link carries them at p. p must be one every value
// of x is exact in (ExactPrecision). It returns s.
func (s *Source) WithPrecision(p Precision) *Source {
	s.exact = p
	return s
}

// BatchesPerEpoch is the number of mini-batches in one epoch: the last one
// may be short.
func BatchesPerEpoch(n, batchSize int) int { return (n + batchSize - 1) / batchSize }

// WindowsPerEpoch is the number of windows of K mini-batches in one epoch.
func WindowsPerEpoch(n, batchSize, k int) int {
	return (BatchesPerEpoch(n, batchSize) + k - 1) / k
}

// Epoch shuffles the rows and hands fn the windows of epoch e in order. The
// window passed to fn is reused: fn must not keep it.
func (s *Source) Epoch(ctx context.Context, e int, fn func(*Window) error) error {
	shuffle(s.rng, s.perm)
	for start := 0; start < s.n; {
		if err := ctx.Err(); err != nil {
			return err
		}
		w := &s.win
		w.Epoch, w.Seq, w.Bias, w.Precision = e, s.seq, nil, s.exact
		w.Rows, w.X, w.Labels = w.Rows[:0], w.X[:0], w.Labels[:0]
		for b := 0; b < s.k && start < s.n; b++ {
			rows := min(s.batchSize, s.n-start)
			for _, r := range s.perm[start : start+rows] {
				w.X = append(w.X, s.x[r*s.dim:(r+1)*s.dim]...)
				if s.labels != nil {
					w.Labels = append(w.Labels, s.labels[r])
				}
			}
			w.Rows = append(w.Rows, rows)
			start += rows
		}
		s.seq++
		if err := fn(w); err != nil {
			return err
		}
	}
	return nil
}

// NextOf deals the next window of the run of stage c: those of its Epochs,
// then the windows of its settle phase.
func (s *Source) NextOf(c StageConfig) (*Window, bool) {
	if c.Settle.Windows == 0 {
		return s.Next(c.Epochs)
	}
	if s.seq >= c.Settle.From+c.Settle.Windows {
		return nil, false
	}
	return s.Next(c.LastEpoch(s.n) + 1)
}

// Next deals the next window of the stream of epochs that Epoch deals one
// epoch at a time (the same windows, from the same shuffles), in a window
// of its own, or false after the last window of epoch epochs-1. Do not mix
// it with Epoch on one Source.
func (s *Source) Next(epochs int) (*Window, bool) {
	if s.epoch >= epochs || s.n == 0 {
		return nil, false
	}
	if s.row == 0 {
		state, _ := s.pcg.MarshalBinary() // never fails
		s.shuffles = append(s.shuffles, state)
		shuffle(s.rng, s.perm)
	}
	w := s.cut(s.perm, s.epoch, s.seq, s.row)
	s.row += w.TotalRows()
	s.seq++
	if s.row == s.n {
		s.epoch, s.row = s.epoch+1, 0
	}
	return w, true
}

// Again deals window seq of the stream Next deals anew, in a window of its
// own: the same rows, in the same order, as when Next dealt it. Call it
// only for a window Next dealt.
func (s *Source) Again(seq int) *Window {
	per := WindowsPerEpoch(s.n, s.batchSize, s.k)
	e := seq / per
	if e != s.againEpoch {
		pcg := &rand.PCG{}
		if err := pcg.UnmarshalBinary(s.shuffles[e]); err != nil {
			panic(fmt.Sprintf("pipeline: the shuffle of epoch %d: %v", e, err))
		}
		s.again = slices.Grow(s.again[:0], s.n)[:s.n]
		shuffle(rand.New(pcg), s.again)
		s.againEpoch = e
	}
	return s.cut(s.again, e, seq, (seq%per)*s.k*s.batchSize)
}

// shuffle sets perm to a random order of 0..len(perm)-1.
func shuffle(rng *rand.Rand, perm []int) {
	for i := range perm {
		perm[i] = i
	}
	rng.Shuffle(len(perm), func(i, j int) { perm[i], perm[j] = perm[j], perm[i] })
}

// cut returns window seq of epoch e, in the order perm, from row on: at
// most K mini-batches.
func (s *Source) cut(perm []int, e, seq, row int) *Window {
	rows := min(WindowRows(s.k, s.batchSize, s.n), s.n-row)
	w := &Window{Epoch: e, Seq: seq, X: make([]float32, 0, rows*s.dim), Precision: s.exact}
	for b := 0; b < s.k && row < s.n; b++ {
		r := min(s.batchSize, s.n-row)
		for _, i := range perm[row : row+r] {
			w.X = append(w.X, s.x[i*s.dim:(i+1)*s.dim]...)
			if s.labels != nil {
				w.Labels = append(w.Labels, s.labels[i])
			}
		}
		w.Rows = append(w.Rows, r)
		row += r
	}
	return w
}
