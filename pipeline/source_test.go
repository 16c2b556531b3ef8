package pipeline

import (
	"slices"
	"testing"
)

// Again deals any window Next dealt anew, the same to the bit: windows of
// every epoch, the short last window of an epoch, the settle phase's, in
// any order.
func TestSourceAgain(t *testing.T) {
	t.Parallel()
	const n, dim, batch, k = 53, 3, 4, 3 // 14 mini-batches, 5 windows an epoch, the last of 2
	x := examples(1, n, dim)
	cfg := testConfigs([]int{dim, 2, 2}, 3, batch, k)
	PlanSettle(cfg, n, 0.5, 0.1, SettleAfter)
	src := NewSource(x, n, dim, batch, k, 9)
	var dealt []*Window
	for w, ok := src.NextOf(cfg[0]); ok; w, ok = src.NextOf(cfg[0]) {
		dealt = append(dealt, w)
		if again := src.Again(w.Seq); !sameWindow(again, w) {
			t.Fatalf("window %d dealt again right away differs", w.Seq)
		}
	}
	if len(dealt) != 3*5+cfg[0].Settle.Windows {
		t.Fatalf("dealt %d windows; want %d", len(dealt), 3*5+cfg[0].Settle.Windows)
	}
	for _, seq := range []int{16, 0, 4, 9, 5, 17, 3} {
		if again := src.Again(seq); !sameWindow(again, dealt[seq]) {
			t.Errorf("window %d (epoch %d) dealt again differs: epoch %d, rows %v", seq, dealt[seq].Epoch, again.Epoch, again.Rows)
		}
	}
}

func sameWindow(a, b *Window) bool {
	return a.Epoch == b.Epoch && a.Seq == b.Seq && slices.Equal(a.Rows, b.Rows) && slices.Equal(a.X, b.X) && a.Bias == nil && b.Bias == nil
}

// A labelled source deals each row's label with it, in Next, Again and
// Epoch alike.
func TestSourceLabels(t *testing.T) {
	t.Parallel()
	const n, dim, batch, k = 23, 2, 4, 2
	x := make([]float32, n*dim)
	y := make([]uint8, n)
	for r := range n {
		x[r*dim] = float32(r)
		y[r] = uint8(3*r + 1)
	}
	check := func(how string, w *Window) {
		t.Helper()
		if len(w.Labels) != w.TotalRows() {
			t.Fatalf("%s window %d: %d labels for %d rows", how, w.Seq, len(w.Labels), w.TotalRows())
		}
		for i, l := range w.Labels {
			if r := int(w.X[i*dim]); l != y[r] {
				t.Fatalf("%s window %d row %d (example %d): label %d, want %d", how, w.Seq, i, r, l, y[r])
			}
		}
	}
	src := NewSource(x, n, dim, batch, k, 5).WithLabels(y)
	for w, ok := src.Next(2); ok; w, ok = src.Next(2) {
		check("Next", w)
		check("Again", src.Again(w.Seq))
	}
	byEpoch := NewSource(x, n, dim, batch, k, 5).WithLabels(y)
	if err := byEpoch.Epoch(t.Context(), 0, func(w *Window) error { check("Epoch", w); return nil }); err != nil {
		t.Fatal(err)
	}
}
