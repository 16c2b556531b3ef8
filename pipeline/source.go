package pipeline

import (
	"context"
	"math/rand/v2"
)

// Source cuts a data matrix into windows of K mini-batches, shuffling the
// rows every epoch with its own seeded RNG.
type Source struct {
	x            []float32
	n, dim       int
	batchSize, k int
	rng          *rand.Rand
	perm         []int
	win          Window
	seq          int
	// The position of Next: the epoch and its first row not dealt yet.
	epoch, row int
}

// NewSource returns a source over x, n rows of dim values, row-major.
func NewSource(x []float32, n, dim, batchSize, k int, seed uint64) *Source {
	s := &Source{x: x, n: n, dim: dim, batchSize: batchSize, k: k,
		rng: rand.New(rand.NewPCG(seed, 0x5eed5ca1ab1e)), perm: make([]int, n)}
	s.win.X = make([]float32, 0, batchSize*k*dim)
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
	for i := range s.perm {
		s.perm[i] = i
	}
	s.rng.Shuffle(len(s.perm), func(i, j int) { s.perm[i], s.perm[j] = s.perm[j], s.perm[i] })
	for start := 0; start < s.n; {
		if err := ctx.Err(); err != nil {
			return err
		}
		w := &s.win
		w.Epoch, w.Seq, w.Bias = e, s.seq, nil
		w.Rows, w.X = w.Rows[:0], w.X[:0]
		for b := 0; b < s.k && start < s.n; b++ {
			rows := min(s.batchSize, s.n-start)
			for _, r := range s.perm[start : start+rows] {
				w.X = append(w.X, s.x[r*s.dim:(r+1)*s.dim]...)
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
		for i := range s.perm {
			s.perm[i] = i
		}
		s.rng.Shuffle(len(s.perm), func(i, j int) { s.perm[i], s.perm[j] = s.perm[j], s.perm[i] })
	}
	rows := min(s.k*s.batchSize, s.n-s.row)
	w := &Window{Epoch: s.epoch, Seq: s.seq, X: make([]float32, 0, rows*s.dim)}
	for b := 0; b < s.k && s.row < s.n; b++ {
		r := min(s.batchSize, s.n-s.row)
		for _, i := range s.perm[s.row : s.row+r] {
			w.X = append(w.X, s.x[i*s.dim:(i+1)*s.dim]...)
		}
		w.Rows = append(w.Rows, r)
		s.row += r
	}
	s.seq++
	if s.row == s.n {
		s.epoch, s.row = s.epoch+1, 0
	}
	return w, true
}
