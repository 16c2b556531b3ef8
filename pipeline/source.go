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
