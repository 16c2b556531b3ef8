package driver

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/pipedbn/pipedbn/internal/memlimit"
	"github.com/pipedbn/pipedbn/pipeline"
	"github.com/pipedbn/pipedbn/pipeline/protocol"
)

// fatal marks a slave error that retrying cannot fix.
type fatal struct{ error }

func (e fatal) Unwrap() error { return e.error }

// Fatal marks err as an error that retrying cannot fix: Serve returns it
// rather than waiting for the next master.
func Fatal(err error) error { return fatal{err} }

// IsFatal reports whether err, or an error it wraps, was marked Fatal.
func IsFatal(err error) bool {
	var f fatal
	return errors.As(err, &f)
}

// Fits refuses an assignment of RBM c, in flow f, whose estimated memory
// (the master's estimate of a slave process on a network) exceeds what
// limit says the slave may use: in one line, before training, rather than
// being killed when the machine runs out. It is a protocol.SlaveConfig's
// Fits.
func Fits(limit func() (memlimit.Limit, bool), c pipeline.StageConfig, f pipeline.Flow) error {
	lim, ok := limit()
	if !ok {
		return nil
	}
	f.Wire = true
	need := c.SlaveMemory(f)
	total := need.Total() + memlimit.ProcessOverhead
	if total <= lim.Bytes {
		return nil
	}
	return fmt.Errorf("cannot hold RBM_%d (%dx%d): it needs about %s, the most for %s, and %s; give the slave a larger machine, or lower pretrain.k_batches or cluster.credits",
		c.Index, c.Visible, c.Hidden, memlimit.BytesText(total), need.Largest().What, lim.Text())
}

// Serving is how Serve runs slaves one after another.
type Serving struct {
	// Run runs one slave until its run is over.
	Run func(ctx context.Context) error
	// Unreachable reports whether an error of Run says that the network
	// could not be reached at all: the slave waits for a master.
	Unreachable func(error) bool
	// Where names the network in log lines.
	Where  string
	Logger hclog.Logger
}

// serveSayEvery is how often a serving slave with no master says that it
// still waits.
const serveSayEvery = time.Minute

// Serve runs s.Run again and again, so that one long-lived slave (a
// compose service, a slave on another host) trains an RBM for every master
// that comes. It returns when ctx is cancelled or on an error marked Fatal.
// A master gone for good (protocol.ErrMasterGone) ends a run, not the
// slave: it waits for the next master, and says every serveSayEvery that
// it still does.
func Serve(ctx context.Context, s Serving) error {
	log := s.Logger
	var waiting, said time.Time // since when no master came, and when the slave last said so
	for {
		err := s.Run(ctx)
		switch {
		case ctx.Err() != nil:
			return ctx.Err()
		case IsFatal(err):
			return err
		case err == nil:
			log.Info("run done; waiting for the next master")
			waiting, said = time.Time{}, time.Time{}
			continue
		case errors.Is(err, protocol.ErrMasterGone):
			log.Warn("the master is gone; waiting for the next master", "error", err)
			waiting, said = time.Now(), time.Now()
		case errors.Is(err, protocol.ErrNoMaster), s.Unreachable(err):
			// Said once a while, not at every try: a slave may wait
			// for days, and the network refuses it at once every second.
			now := time.Now()
			if waiting.IsZero() {
				waiting = now
			}
			if said.IsZero() || now.Sub(said) >= serveSayEvery {
				log.Info("no master yet; still waiting", "network", s.Where, "waiting", now.Sub(waiting).Round(time.Second), "error", err)
				said = now
			}
		case errors.Is(err, protocol.ErrClusterFull):
			// A spare: it stands by, and takes over a lost slave's RBM.
			log.Debug("standing by: the master has all the slaves it needs")
		default:
			log.Warn("not trained this time; retrying", "error", err)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(time.Second):
		}
	}
}

// RunGroup runs a stage group of a plan in this process: one slave per
// name, each with run, registering and training the RBM the master seats it
// at (its plan's Seating gives a group's names consecutive RBMs). The
// slaves share the process's BLAS threads (o.Threads) and train one window
// at a time, in the group's turn, each window with all of them, so that a
// group on one machine does the work of greedy pre-training in the same
// time, while its windows still flow as the pipelined schedule's. run gets
// o (Defaults filled in) with the slave's name, a logger named after it,
// the turn, and Peers shared by the group (new ones unless o has them),
// which hand the middle results and credits between the group's RBMs over
// in memory (the same messages, in order, under the same protocol).
//
// A slave whose name is still held by a process heard from moments ago (a
// restarted group whose master has not yet noticed that its predecessor is
// gone) registers again until o.JoinTimeout. When one slave fails, RunGroup
// stops the others (each leaving its checkpoint) and returns the first
// error. One name runs as a lone slave, with o's logger and peers: a spare
// ends with nil (Spare).
func RunGroup(ctx context.Context, o SlaveOptions, names []string, run func(context.Context, SlaveOptions) error) error {
	o.Defaults()
	switch len(names) {
	case 0:
		return errors.New("slave group: no names")
	case 1:
		o.Name = names[0]
		err := run(ctx, o)
		return Spare(err, o.Logger)
	}
	seen := map[string]bool{}
	for _, n := range names {
		if seen[n] {
			return Fatal(fmt.Errorf("slave group: name %q twice", n))
		}
		seen[n] = true
	}
	if o.Peers == nil {
		o.Peers = NewPeers()
	}
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	turn := &sync.Mutex{}
	errs := make([]error, len(names))
	var wg sync.WaitGroup
	for k, name := range names {
		wg.Add(1)
		go func() {
			defer wg.Done()
			s := o
			s.Name, s.Logger, s.turn = name, o.Logger.Named(name), turn
			err := runSeat(ctx, name, o.JoinTimeout, o.Logger, func(ctx context.Context) error { return run(ctx, s) })
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

// runSeat is one slave of a group: run, again while its name is in use by
// a process the master heard from moments ago, until join has passed.
func runSeat(ctx context.Context, name string, join time.Duration, log hclog.Logger, run func(context.Context) error) error {
	deadline := time.Now().Add(join)
	for {
		err := run(ctx)
		if !errors.Is(err, protocol.ErrNameInUse) || time.Now().After(deadline) {
			return err
		}
		log.Info("name still held by an earlier process; registering again", "slave", name)
		select {
		case <-ctx.Done():
			return context.Cause(ctx)
		case <-time.After(time.Second):
		}
	}
}

// SlaveTiming is the timing of a slave process: protocol.DefaultTiming's,
// with join, and status and finish where they are set (0: the default's).
// Declaring slaves lost is the master's concern, not the slave's.
func SlaveTiming(join, status, finish time.Duration) protocol.Timing {
	t := protocol.DefaultTiming(join, 0)
	t.LostAfter = time.Hour
	if status > 0 {
		t.StatusEvery = status
	}
	if finish > 0 {
		t.FinishTimeout = finish
	}
	return t
}
