package pipeline

import (
	"context"
	"slices"
	"testing"
)

// trainWindows trains st on the windows of src with Seq in [from, to),
// feeding each window's middle result nowhere.
func trainWindows(t *testing.T, st *Stage, src *Source, epochs, from, to int) {
	t.Helper()
	mid := &Window{X: make([]float32, 0, st.cfg.BatchSize*st.cfg.K*st.cfg.Hidden)}
	for e := 0; e < epochs; e++ {
		err := src.Epoch(context.Background(), e, func(w *Window) error {
			if w.Seq < from || w.Seq >= to {
				return nil
			}
			if w.Epoch > st.epoch && st.epochElems > 0 {
				st.EndEpoch()
			}
			mid.X = mid.X[:w.TotalRows()*st.cfg.Hidden]
			return st.Train(w, mid)
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	st.EndEpoch()
}

// A stage restored from a Snapshot and trained on the rest of the windows
// ends bit-identical to one that never stopped: the checkpoint holds
// everything training depends on (weights, momentum, generator, epoch sums).
func TestSnapshotResumesExactly(t *testing.T) {
	const n, epochs, batch, k = 200, 3, 16, 2 // 13 batches, 7 windows per epoch
	cfg := testConfigs([]int{20, 12}, epochs, batch, k)[0]
	x := examples(3, n, 20)
	total := epochs * WindowsPerEpoch(n, batch, k)

	whole := NewStage(cfg)
	trainWindows(t, whole, NewSource(x, n, 20, batch, k, 5), epochs, 0, total)

	for _, cut := range []int{1, 7, 10, total - 1} {
		// Train up to the cut and snapshot between windows, as a slave does.
		first := NewStage(cfg)
		src := NewSource(x, n, 20, batch, k, 5)
		mid := &Window{X: make([]float32, 0, batch*k*12)}
		var snap StageState
		for e := 0; e < epochs; e++ {
			src.Epoch(context.Background(), e, func(w *Window) error {
				if w.Seq >= cut {
					return nil
				}
				if w.Epoch > first.epoch && first.epochElems > 0 {
					first.EndEpoch()
				}
				mid.X = mid.X[:w.TotalRows()*12]
				if err := first.Train(w, mid); err != nil {
					t.Fatal(err)
				}
				if first.Windows() == cut {
					snap = first.Snapshot()
				}
				return nil
			})
		}
		if snap.Windows != cut {
			t.Fatalf("cut %d: snapshot at window %d", cut, snap.Windows)
		}
		resumed, err := RestoreStage(cfg, snap)
		if err != nil {
			t.Fatal(err)
		}
		trainWindows(t, resumed, NewSource(x, n, 20, batch, k, 5), epochs, cut, total)
		a, b := whole.Stats(), resumed.Stats()
		if !slices.Equal(whole.RBM().W, resumed.RBM().W) || !slices.Equal(whole.RBM().A, resumed.RBM().A) || !slices.Equal(whole.RBM().B, resumed.RBM().B) {
			t.Errorf("cut %d: resumed weights differ from the uninterrupted run", cut)
		}
		if a.Batches != b.Batches || a.Rows != b.Rows || !slices.Equal(a.Recon, b.Recon) {
			t.Errorf("cut %d: resumed stats %d batches %d rows %v; uninterrupted %d %d %v", cut, b.Batches, b.Rows, b.Recon, a.Batches, a.Rows, a.Recon)
		}
		if resumed.Windows() != total {
			t.Errorf("cut %d: resumed stage trained up to window %d; want %d", cut, resumed.Windows(), total)
		}
	}
}

func TestRestoreStageRejectsMismatch(t *testing.T) {
	cfg := testConfigs([]int{20, 12}, 2, 16, 2)[0]
	good := NewStage(cfg).Snapshot()
	for name, mod := range map[string]func(*StageState){
		"short W":      func(s *StageState) { s.W = s.W[1:] },
		"short A":      func(s *StageState) { s.A = nil },
		"short VelB":   func(s *StageState) { s.Trainer.VelB = s.Trainer.VelB[1:] },
		"zero RNG":     func(s *StageState) { clear(s.Trainer.RNG[:]) },
		"epoch past":   func(s *StageState) { s.Epoch = 2 },
		"negative win": func(s *StageState) { s.Windows = -1 },
	} {
		s := good
		s.W = slices.Clone(good.W)
		s.Trainer.VelB = slices.Clone(good.Trainer.VelB)
		mod(&s)
		if _, err := RestoreStage(cfg, s); err == nil {
			t.Errorf("%s: restored", name)
		}
	}
}
