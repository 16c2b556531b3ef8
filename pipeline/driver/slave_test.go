package driver

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
)

// A group refuses a name given twice as fatal; when one of its slaves
// fails, the others are stopped and the failure is what the group returns.
func TestRunGroup(t *testing.T) {
	log := hclog.NewNullLogger()
	never := func(context.Context, string, *sync.Mutex) error { t.Error("a slave ran"); return nil }
	if err := RunGroup(context.Background(), []string{"a", "a"}, time.Second, log, never); !IsFatal(err) {
		t.Errorf("RunGroup(a, a) = %v; want a fatal error", err)
	}
	boom := errors.New("boom")
	turns := map[*sync.Mutex]bool{}
	var mu sync.Mutex
	err := RunGroup(context.Background(), []string{"a", "b"}, time.Second, log, func(ctx context.Context, name string, turn *sync.Mutex) error {
		mu.Lock()
		turns[turn] = true
		mu.Unlock()
		if name == "b" {
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
