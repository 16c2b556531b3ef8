package driver

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/pipedbn/pipedbn/pipeline/protocol"
)

// A group refuses a name given twice as fatal; when one of its slaves
// fails, the others are stopped and the failure is what the group returns.
func TestRunGroup(t *testing.T) {
	log := hclog.NewNullLogger()
	opt := SlaveOptions{JoinTimeout: time.Second, Logger: log}
	never := func(context.Context, SlaveOptions) error { t.Error("a slave ran"); return nil }
	if err := RunGroup(context.Background(), opt, []string{"a", "a"}, never); !IsFatal(err) {
		t.Errorf("RunGroup(a, a) = %v; want a fatal error", err)
	}
	boom := errors.New("boom")
	turns := map[*sync.Mutex]bool{}
	var mu sync.Mutex
	err := RunGroup(context.Background(), opt, []string{"a", "b"}, func(ctx context.Context, s SlaveOptions) error {
		mu.Lock()
		turns[s.turn] = true
		mu.Unlock()
		if s.Name == "b" {
			return boom
		}
		<-ctx.Done()
		return context.Cause(ctx)
	})
	if !errors.Is(err, boom) {
		t.Errorf("RunGroup = %v; want b's error", err)
	}
	if len(turns) != 1 {
		t.Errorf("%d turn mutexes; want one shared by the group", len(turns))
	}
}

// One name runs as a lone slave, named so, and a spare (the master needs no
// more slaves) ends with nil; a group's slaves share their peers.
func TestRunGroupOfOne(t *testing.T) {
	var got string
	err := RunGroup(context.Background(), SlaveOptions{}, []string{"a"}, func(_ context.Context, s SlaveOptions) error {
		got = s.Name
		return fmt.Errorf("joining: %w", protocol.ErrClusterFull)
	})
	if err != nil || got != "a" {
		t.Errorf("RunGroup(a) = %v, ran %q; want nil, a", err, got)
	}
	var mu sync.Mutex
	peers := map[*Peers]bool{}
	RunGroup(context.Background(), SlaveOptions{}, []string{"a", "b"}, func(_ context.Context, s SlaveOptions) error {
		mu.Lock()
		defer mu.Unlock()
		peers[s.Peers] = true
		return nil
	})
	if len(peers) != 1 || peers[nil] {
		t.Errorf("peers %v; want one set shared by the group", peers)
	}
}
