package driver

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/pipedbn/pipedbn/pipeline/protocol"
)

// Begin readies cfg, a run's master configuration, for a master process
// whose checkpoints go to store. Of cfg's run it keeps the ID, which must be
// a valid name (protocol.CheckName), and its Timing's zero fields take
// their defaults (protocol.Timing.WithDefaults). A new run is incarnation
// 1; resuming, cfg takes what store holds of the interrupted run, as the
// next incarnation, whose words the slaves tell from the earlier one's. It
// stores the master's own state (protocol.StateName) for the next resume.
func Begin(ctx context.Context, store protocol.Store, cfg *protocol.MasterConfig, resume bool) error {
	if err := protocol.CheckName(cfg.Run.ID); err != nil {
		return fmt.Errorf("run %w", err)
	}
	cfg.Run = protocol.Run{ID: cfg.Run.ID, Incarnation: 1}
	cfg.Timing = cfg.Timing.WithDefaults()
	cfg.Stored = nil
	if resume {
		st, err := protocol.ReadStored(ctx, store, cfg.Run.ID, cfg.Stages)
		if err != nil {
			return err
		}
		cfg.Stored = st
		var prev masterState
		if b, err := store.Get(ctx, protocol.StateName); err == nil {
			if err := json.Unmarshal(b, &prev); err != nil {
				return fmt.Errorf("%s in %s: %w", protocol.StateName, store.Where(), err)
			}
		} else if !errors.Is(err, protocol.ErrNotStored) {
			return err
		}
		cfg.Run.Incarnation = prev.Incarnation + 1
	}
	b, err := json.Marshal(masterState{
		RunID: cfg.Run.ID, Incarnation: cfg.Run.Incarnation, RBMs: len(cfg.Stages), CheckpointEvery: cfg.CheckpointEvery,
		K: cfg.Stages[0].K, Epochs: cfg.Stages[0].Epochs, Rows: cfg.N, Resumed: resume, Saved: time.Now().UTC().Format(time.RFC3339),
	})
	if err != nil {
		return err
	}
	put, cancel := context.WithTimeout(ctx, storeTimeout)
	defer cancel()
	if err := store.Put(put, protocol.StateName, b); err != nil {
		return fmt.Errorf("store the run's state in %s: %w", store.Where(), err)
	}
	return nil
}

// masterState is what the master stores of itself: what run this is, and
// its incarnation.
type masterState struct {
	RunID           string `json:"run_id"`
	Incarnation     uint32 `json:"incarnation"`
	RBMs            int    `json:"rbms"`
	CheckpointEvery int    `json:"checkpoint_every"`
	K               int    `json:"k"`
	Epochs          int    `json:"epochs"`
	Rows            int    `json:"rows"`
	Resumed         bool   `json:"resumed"`
	Saved           string `json:"saved"`
}
