package driver

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/pipedbn/pipedbn/messages"
	"github.com/pipedbn/pipedbn/pipeline/protocol"
)

// storeTimeout bounds one attempt of a store operation.
const storeTimeout = 30 * time.Second

// storer is a master's store worker: it carries out the store operations
// one at a time, in order.
type storer struct {
	store protocol.Store
	retry time.Duration
	log   hclog.Logger
	queue []protocol.StoreOp // not yet begun
	busy  bool               // an operation is under way

	mu sync.Mutex
	// attempt ends the attempt of a Put under way; nil between attempts.
	attempt context.CancelFunc
}

// storeResult is the outcome of a store operation.
type storeResult struct {
	cp  *messages.Checkpoint
	err error
}

// idle reports whether no store operation waits or is under way.
func (s *storer) idle() bool { return len(s.queue) == 0 && !s.busy }

// drop forgets the operations not yet begun.
func (s *storer) drop() { s.queue = nil }

func (n *Node) storeOps(ops []protocol.StoreOp) {
	n.store.queue = append(n.store.queue, ops...)
	n.nextStore()
}

// nextStore begins the next store operation, if none is under way, and
// hands its outcome to the master when it is over: Stored, Loaded, or, a
// checkpoint that could not be stored, Abort.
func (n *Node) nextStore() {
	s := n.store
	if s.busy || len(s.queue) == 0 || n.stopped {
		return
	}
	op := s.queue[0]
	s.queue, s.busy = s.queue[1:], true
	var r storeResult
	n.cfg.Executor.Go(StoreWork, func() { r = s.do(n.life, op) }, func() {
		s.busy = false
		if n.stopped {
			return
		}
		switch op.Kind {
		case protocol.Put:
			if r.err != nil {
				n.master.Abort(n.Now(), fmt.Errorf("store %s: %w", op.Name, r.err))
			} else {
				n.master.Stored(n.Now(), op)
			}
		case protocol.Get:
			n.master.Loaded(n.Now(), op, r.cp, r.err)
		}
		n.nextStore()
	})
}

// do carries out op.
func (s *storer) do(life context.Context, op protocol.StoreOp) storeResult {
	var r storeResult
	switch op.Kind {
	case protocol.Put:
		b, err := messages.Encode(op.Msg)
		if err != nil {
			return storeResult{err: err}
		}
		r.err = s.put(life, op.Name, b)
	case protocol.Get:
		r.cp, r.err = protocol.LoadCheckpoint(life, s.store, op.Name)
	case protocol.Delete:
		s.store.Delete(life, op.Name)
	}
	return r
}

// put stores b as name; with retry set, again every retry while the store
// does not take it, until it does or the node's life ends.
func (s *storer) put(life context.Context, name string, b []byte) error {
	for {
		try, cancel := context.WithTimeout(life, storeTimeout)
		s.mu.Lock()
		s.attempt = cancel
		s.mu.Unlock()
		err := s.store.Put(try, name, b)
		s.mu.Lock()
		s.attempt = nil
		s.mu.Unlock()
		cancel()
		switch {
		case err == nil || life.Err() != nil:
			return nil
		case s.retry <= 0:
			return err
		}
		s.log.Warn("cannot store; retrying", "object", name, "store", s.store.Where(), "error", err)
		select {
		case <-time.After(s.retry):
		case <-life.Done():
		}
	}
}

// connectionLost ends the attempt of a Put under way, which then tries
// again: its acks are lost with the server, and it would wait out its
// timeout before it tried again on the next server.
func (s *storer) connectionLost() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.attempt != nil {
		s.attempt()
	}
}
