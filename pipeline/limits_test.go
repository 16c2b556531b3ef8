package pipeline

import (
	"math"
	"testing"
)

func TestWindowRows(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ k, batch, n, want int }{
		{10, 256, 60000, 2560},
		{100000, 256, 60000, 60000}, // a window longer than the epoch is the epoch
		{math.MaxInt, math.MaxInt, 53, 53},
		{3, 4, 12, 12},
		{0, 4, 12, 0},
		{3, 0, 12, 0},
		{3, 4, 0, 0},
		{3, 4, -5, 0},
	} {
		if got := WindowRows(tc.k, tc.batch, tc.n); got != tc.want {
			t.Errorf("WindowRows(%d, %d, %d) = %d; want %d", tc.k, tc.batch, tc.n, got, tc.want)
		}
	}
	if got, want := WindowBytes(WindowRows(100000, 256, 60000), 784, false), int64(4*60000*784); got != want {
		t.Errorf("WindowBytes(WindowRows(100000, 256, 60000), 784, false) = %d; want %d", got, want)
	}
	if got := WindowBytes(WindowRows(math.MaxInt, math.MaxInt, math.MaxInt), math.MaxInt, true); got != math.MaxInt64 {
		t.Errorf("WindowBytes(WindowRows(MaxInt...), MaxInt, true) = %d; want it to saturate at %d", got, int64(math.MaxInt64))
	}
}

// TestSourceWindowCapped: a source of K mini-batches longer than its data
// holds a window of the data's rows, as the memory estimate counts it,
// not one of K x batch rows.
func TestSourceWindowCapped(t *testing.T) {
	t.Parallel()
	const n, dim, batch, k = 53, 1, 256, 100000
	src := NewSource(examples(1, n, dim), n, dim, batch, k, 9)
	if got, want := cap(src.win.X), WindowRows(k, batch, n)*dim; got > want {
		t.Errorf("NewSource(%d rows, K %d x %d): window buffer of %d values; want at most %d", n, k, batch, got, want)
	}
	w, ok := src.Next(1)
	if !ok || w.TotalRows() != n || len(w.X) != n*dim {
		t.Fatalf("Next: %v rows (ok %v); want the epoch's %d in one window", w.Rows, ok, n)
	}
}

func TestLinkCredits(t *testing.T) {
	t.Parallel()
	c := StageConfig{Index: 1, Visible: 784, Hidden: 10, BatchSize: 256, K: 200}
	for _, tc := range []struct {
		credits, n int
		budget     int64
		want       int
	}{
		{4, 60000, 256 << 20, 1},           // a window of 153 MiB travels alone
		{4, 60000, 1 << 40, 4},             // the configured credits where they fit
		{math.MaxInt, 256, 256 << 20, 334}, // as many as fit, however many configured
		{4, 0, 256 << 20, 4},               // no rows: no window to bound them by
	} {
		if got := LinkCredits(tc.credits, c, tc.n, tc.budget); got != tc.want {
			t.Errorf("LinkCredits(%d, K 200 x 256 x 784, %d rows, budget %d) = %d; want %d", tc.credits, tc.n, tc.budget, got, tc.want)
		}
	}
}
