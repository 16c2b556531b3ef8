package natsnet

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/pipedbn/pipedbn/pipeline/driver"
	"github.com/pipedbn/pipedbn/pipeline/protocol"
)

// RunGroup runs a stage group of a plan in this process: one slave per
// name, each registering and training the RBM the master seats it at (its
// plan's Seating gives a group's names consecutive RBMs). The slaves share
// the process's BLAS threads (opt.Threads) and train one window at a time,
// each window with all of them, so that a group on one machine does the
// work of greedy pre-training in the same time, while its windows still
// flow as the pipelined schedule's. Middle results and credits between the
// group's RBMs are handed over in memory (the same messages, in order,
// under the same protocol), not through the NATS server.
//
// A slave whose name is still held by a process heard from moments ago (a
// restarted group whose master has not yet noticed that its predecessor
// is gone) registers again until opt.JoinTimeout. When one slave fails,
// RunGroup stops the others (each leaving its checkpoint) and returns the
// first error. One name is RunSlave.
func RunGroup(ctx context.Context, opt SlaveOptions, names []string) error {
	if len(names) == 0 {
		return errors.New("slave group: no names")
	}
	seen := map[string]bool{}
	for _, n := range names {
		if seen[n] {
			return fatalError{fmt.Errorf("slave group: name %q twice", n)}
		}
		seen[n] = true
	}
	if len(names) == 1 {
		o := opt
		o.Name = names[0]
		return RunSlave(ctx, o)
	}
	opt.defaults()
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	opt.turn = &sync.Mutex{}
	if opt.Peers == nil {
		opt.Peers = driver.NewPeers()
	}
	errs := make([]error, len(names))
	var wg sync.WaitGroup
	for k, name := range names {
		o := opt
		o.Name, o.Logger = name, opt.Logger.Named(name)
		wg.Add(1)
		go func() {
			defer wg.Done()
			err := runSeat(ctx, o)
			if err != nil && !errors.Is(err, protocol.ErrClusterFull) {
				errs[k] = fmt.Errorf("slave %s: %w", name, err)
				cancel(errs[k])
			}
		}()
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil && !errors.Is(err, context.Canceled) {
			return err
		}
	}
	return errors.Join(errs...)
}

// runSeat is one slave of a group: runSlave, registering again while its
// name is in use by a process the master heard from moments ago.
func runSeat(ctx context.Context, opt SlaveOptions) error {
	deadline := time.Now().Add(opt.JoinTimeout)
	for {
		o := opt
		err := runSlave(ctx, &o)
		if !errors.Is(err, protocol.ErrNameInUse) || time.Now().After(deadline) {
			return err
		}
		opt.Logger.Info("name still held by an earlier process; registering again", "slave", opt.Name)
		select {
		case <-ctx.Done():
			return context.Cause(ctx)
		case <-time.After(time.Second):
		}
	}
}
