package pipeline

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sync"
	"time"
)

// State is what a stage is doing, as shown to users (Lens's client states).
type State int

// The states of a stage.
const (
	Idle          State = iota // not started
	Training                   // running CD-k on a window
	WaitingInput               // waiting for the next window from below
	WaitingCredit              // waiting for the stage above to free a buffer
	Done                       // finished all epochs
	Failed                     // stopped by an error
	Lost                       // its slave was lost; a replacement is coming
)

var stateNames = [...]string{"idle", "training", "waiting for input", "waiting for credit", "done", "failed", "lost: waiting for a replacement"}

func (s State) String() string {
	if s < 0 || int(s) >= len(stateNames) {
		return fmt.Sprintf("State(%d)", int(s))
	}
	return stateNames[s]
}

// RunStage drives stage st through the pipelined schedule: it trains on
// every window in delivers, and sends each window's middle result with B_i to
// out (nil for the top RBM), until in ends. Time blocked on in counts as
// waiting for input, time blocked on out as waiting for credit.
func RunStage(ctx context.Context, st *Stage, in Receiver, out Sender, hooks Hooks) (err error) {
	defer func() {
		if err != nil {
			st.stats.State = Failed
		} else {
			st.stats.State = Done
		}
		hooks.window(st.Stats())
	}()
	var mid *Window
	if out != nil {
		mid = &Window{X: make([]float32, 0, st.cfg.BatchSize*st.cfg.K*st.cfg.Hidden)}
	}
	for {
		st.stats.State = WaitingInput
		t := time.Now()
		w, err := in.Recv(ctx)
		st.stats.WaitInput += time.Since(t)
		if errors.Is(err, io.EOF) {
			st.EndEpoch()
			hooks.epoch(st.Stats())
			if out != nil {
				return out.Close(ctx)
			}
			return nil
		}
		if err != nil {
			return fmt.Errorf("rbm %d: receive: %w", st.cfg.Index, err)
		}
		if w.Epoch > st.epoch && st.epochElems > 0 {
			st.EndEpoch()
			hooks.epoch(st.Stats())
		}
		st.stats.State = Training
		if mid != nil {
			mid.X = mid.X[:w.TotalRows()*st.cfg.Hidden]
		}
		if err := st.Train(w, mid); err != nil {
			return err
		}
		if out != nil {
			st.stats.State = WaitingCredit
			t := time.Now()
			if err := out.Send(ctx, mid); err != nil {
				return fmt.Errorf("rbm %d: send window %d: %w", st.cfg.Index, mid.Seq, err)
			}
			st.stats.WaitCredit += time.Since(t)
		}
		hooks.window(st.Stats())
		if hooks.AfterWindow != nil {
			if err := hooks.AfterWindow(st); err != nil {
				return err
			}
		}
	}
}

// Feed sends epochs of shuffled data windows from src to out, then closes
// out: the master's part of the pipelined schedule, feeding RBM_1.
func Feed(ctx context.Context, src *Source, epochs int, out Sender) error {
	return FeedFrom(ctx, src, epochs, 0, out)
}

// FeedFrom is Feed resumed at the window with Seq start: the source deals
// the same windows as from the beginning, and those before start are not
// sent.
func FeedFrom(ctx context.Context, src *Source, epochs, start int, out Sender) error {
	for e := 0; e < epochs; e++ {
		if err := src.Epoch(ctx, e, func(w *Window) error {
			if w.Seq < start {
				return nil
			}
			return out.Send(ctx, w)
		}); err != nil {
			return err
		}
	}
	return out.Close(ctx)
}

// Pipelined pre-trains all stages at once in this process (the paper's
// Algorithm 2 over in-memory links): the data, shuffled every epoch by a
// source seeded with seed, feeds RBM_1, and every stage streams its middle
// results and B_i to the next. credits bounds the windows in flight on each
// link. The first error stops every stage.
func Pipelined(ctx context.Context, x []float32, n int, cfgs []StageConfig, seed uint64, credits int, hooks Hooks) ([]*Stage, error) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	stages := make([]*Stage, len(cfgs))
	links := make([]*MemLink, len(cfgs))
	for i, c := range cfgs {
		stages[i] = NewStage(c)
		links[i] = NewMemLink(credits)
	}
	var (
		wg       sync.WaitGroup
		once     sync.Once
		firstErr error
	)
	fail := func(err error) {
		if err != nil {
			once.Do(func() { firstErr = err; cancel() })
		}
	}
	wg.Add(1 + len(stages))
	go func() {
		defer wg.Done()
		c := cfgs[0]
		fail(Feed(ctx, NewSource(x, n, c.Visible, c.BatchSize, c.K, seed), c.Epochs, links[0]))
	}()
	for i, st := range stages {
		var out Sender
		if i+1 < len(stages) {
			out = links[i+1]
		}
		go func() {
			defer wg.Done()
			fail(RunStage(ctx, st, links[i], out, hooks))
		}()
	}
	wg.Wait()
	return stages, firstErr
}
