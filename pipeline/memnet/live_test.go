package memnet

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/pipedbn/pipedbn/pipeline"
	"github.com/pipedbn/pipedbn/pipeline/protocol"
)

// TestLiveCheckpoints runs in real time, training on goroutines, and checks
// that the run checkpoints into its store like a run over NATS, and ends
// with the weights of the simulated run.
func TestLiveCheckpoints(t *testing.T) {
	cfg, slaves := tiny(2)
	want, _, _, err := simulate(cfg, slaves, nil)
	if err != nil {
		t.Fatal(err)
	}
	var checkpoints []int
	cfg.Observer.Checkpointed = func(rbm int, st pipeline.StageState) { checkpoints = append(checkpoints, st.Windows) }
	store := protocol.NewMemStore()
	got, err := New(cfg, slaves, Options{Timing: protocol.DefaultTiming(10*time.Second, 4*time.Second), Store: store}).Run(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	for i := range got {
		if !slices.Equal(got[i].RBM.W, want[i].RBM.W) {
			t.Errorf("rbm %d: live weights differ from the simulated run's", i+1)
		}
	}
	// 18 windows per RBM and those of the settle phase, a checkpoint
	// every 2.
	if want := 3 * (18 + cfg.Stages[0].Settle.Windows) / 2; len(checkpoints) != want {
		t.Errorf("%d checkpoints stored; want %d", len(checkpoints), want)
	}
	names, _ := store.List(context.Background())
	if len(names) < 3 {
		t.Errorf("the store holds %v; want at least a checkpoint and the weights of each RBM", names)
	}
}
