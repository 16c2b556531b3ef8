package driver

import (
	"context"
	"testing"
	"time"

	"github.com/pipedbn/pipedbn/pipeline"
	"github.com/pipedbn/pipedbn/pipeline/protocol"
)

// Begin keeps of a plan's run its ID alone, fills in its timing's defaults
// and drops a stale Stored; resuming, it counts the incarnations on; a run
// ID that is no name fails it before anything is stored.
func TestBegin(t *testing.T) {
	ctx := context.Background()
	store := protocol.NewMemStore()
	stages := []pipeline.StageConfig{{Index: 1, Visible: 4, Hidden: 3, Epochs: 1, BatchSize: 2, K: 1}}
	cfg := protocol.MasterConfig{
		Run: protocol.Run{ID: "r", Incarnation: 7}, Stages: stages, N: 4,
		Timing: protocol.Timing{JoinTimeout: time.Second}, Stored: &protocol.Stored{},
	}
	if err := Begin(ctx, store, &cfg, false); err != nil {
		t.Fatal(err)
	}
	def := protocol.Timing{}.WithDefaults()
	if cfg.Run != (protocol.Run{ID: "r", Incarnation: 1}) || cfg.Stored != nil || cfg.Timing.JoinTimeout != time.Second || cfg.Timing.StatusEvery != def.StatusEvery {
		t.Errorf("Begin(new run): run %+v, stored %v, timing %+v", cfg.Run, cfg.Stored, cfg.Timing)
	}
	if err := Begin(ctx, store, &cfg, true); err != nil {
		t.Fatal(err)
	}
	if cfg.Run.Incarnation != 2 {
		t.Errorf("Begin(resume): incarnation %d; want 2", cfg.Run.Incarnation)
	}
	bad := protocol.MasterConfig{Run: protocol.Run{ID: "a b"}, Stages: stages}
	empty := protocol.NewMemStore()
	if err := Begin(ctx, empty, &bad, false); err == nil {
		t.Error("Begin(run ID with a space) = nil; want an error")
	}
	if names, _ := empty.List(ctx); len(names) != 0 {
		t.Errorf("Begin(bad run ID) stored %v", names)
	}
}
