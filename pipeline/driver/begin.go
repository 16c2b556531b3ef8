package driver

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/pipedbn/pipedbn/pipeline/protocol"
)

// Plan is one pipelined pre-training run for a master process to carry
// out, over any transport.
type Plan struct {
	// MasterConfig is the run for the protocol's master: Run.ID names it
	// on the wire, and Timing's zero fields take protocol.DefaultTiming's
	// values, with protocol.DefaultJoinTimeout and
	// protocol.DefaultLostAfter. Begin sets the incarnation, Stored (from
	// Store) and Logger.
	protocol.MasterConfig
	// Peers, if set, are the slaves running in the master's process: the
	// data windows and their credits go between them in memory.
	Peers *Peers
	// Store keeps the checkpoints; nil keeps them in the master's memory.
	Store protocol.Store
	// Resume restarts an interrupted run from what Store holds of it, as a
	// new incarnation: the words of the earlier one are rejected.
	Resume bool
	// Respawn, if set, starts a replacement for the lost slave of RBM rbm
	// (the embedded default restarts its local slave process); otherwise
	// the master waits for any new slave to register. Its ctx is done
	// when the lost slave speaks again before any replacement came (it
	// only stalled, and goes on), or when the run ends.
	Respawn func(ctx context.Context, rbm int, lost string) error
	// Listening, if set, is called once the master listens for
	// registrations (a NATS server has its subscriptions): slaves started
	// then are heard at their first registration, not a RegisterEvery
	// later.
	Listening func()
}

// Begin readies the plan for a master process logging to log: its Store,
// if nil, becomes a fresh protocol.MemStore, and it returns the protocol
// master's configuration, begun in Store (see Begin).
func (p *Plan) Begin(ctx context.Context, log hclog.Logger) (protocol.MasterConfig, error) {
	if p.Store == nil {
		p.Store = protocol.NewMemStore()
	}
	cfg := p.MasterConfig
	cfg.Logger = log
	return cfg, Begin(ctx, p.Store, &cfg, p.Resume)
}

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
