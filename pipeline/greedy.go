package pipeline

import (
	"context"
	"fmt"

	"github.com/pipedbn/pipedbn/rbm"
)

// Hooks are called as training goes, for progress displays and logs. Any may
// be nil. They run on the training goroutine: keep them quick.
type Hooks struct {
	// Window is called after every window a stage trains.
	Window func(Stats)
	// Epoch is called after a stage closes an epoch.
	Epoch func(Stats)
	// Trained, if set, is called after every window a stage trains in
	// this process (Greedy), after Window, with the stage's RBM: it may
	// copy the parameters, not keep or change them.
	Trained func(Stats, *rbm.RBM)
}

func (h Hooks) window(s Stats) {
	if h.Window != nil {
		h.Window(s)
	}
}

func (h Hooks) epoch(s Stats) {
	if h.Epoch != nil {
		h.Epoch(s)
	}
}

// transformRows bounds the scratch the greedy transform works through at once.
const transformRows = 1024

// Greedy pre-trains the stages one after the other (the paper's Algorithm 1):
// RBM_1 trains for all its epochs on x (n rows of cfgs[0].Visible values),
// then the whole data set is transformed once through it (the hidden
// probabilities, equation 1) and RBM_2 trains on that, and so on. Each stage
// shuffles its input every epoch with a source seeded from seeds[i].
func Greedy(ctx context.Context, x []float32, n int, cfgs []StageConfig, seeds []uint64, hooks Hooks) ([]*Stage, error) {
	stages := make([]*Stage, 0, len(cfgs))
	for i, cfg := range cfgs {
		if len(x) != n*cfg.Visible {
			return stages, fmt.Errorf("rbm %d: input holds %d values, want %d rows x %d", cfg.Index, len(x), n, cfg.Visible)
		}
		st := NewStage(cfg)
		stages = append(stages, st)
		src := NewSource(x, n, cfg.Visible, cfg.BatchSize, cfg.K, seeds[i])
		for e := 0; e < cfg.Epochs; e++ {
			err := src.Epoch(ctx, e, func(w *Window) error {
				if err := st.Train(w, nil); err != nil {
					return err
				}
				hooks.window(st.stats)
				if hooks.Trained != nil {
					hooks.Trained(st.stats, st.rbm)
				}
				return nil
			})
			if err != nil {
				return stages, err
			}
			st.EndEpoch()
			hooks.epoch(st.Stats())
		}
		if i == len(cfgs)-1 {
			break
		}
		next := make([]float32, n*cfg.Hidden)
		for r := 0; r < n; r += transformRows {
			rows := min(transformRows, n-r)
			st.rbm.HiddenProbs(next[r*cfg.Hidden:(r+rows)*cfg.Hidden], x[r*cfg.Visible:(r+rows)*cfg.Visible], rows)
		}
		x = next
	}
	return stages, nil
}
