package protocol

import (
	"context"
	"errors"
	"reflect"
	"testing"

	"github.com/pipedbn/pipedbn/messages"
)

func TestCheckpointNames(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		at      Seat
		windows int
		want    string
	}{
		{Seat{1, 0}, 0, "rbm-1/000000000000"},
		{Seat{3, 0}, 42, "rbm-3/000000000042"},
		{Seat{12, 0}, 123456789012, "rbm-12/123456789012"},
		{Seat{2, 3}, 40, "rbm-2-replica-3/000000000040"},
	} {
		name := CheckpointName(tc.at, tc.windows)
		if name != tc.want {
			t.Errorf("CheckpointName(%v, %d) = %q; want %q", tc.at, tc.windows, name, tc.want)
		}
		if at, w, ok := ParseCheckpointName(name); at != tc.at || w != tc.windows || !ok {
			t.Errorf("ParseCheckpointName(%q) = %v, %d, %t; want %v, %d, true", name, at, w, ok, tc.at, tc.windows)
		}
	}
	for _, name := range []string{"", StateName, WeightsName(1), "rbm-1", "rbm-0/000000000001", "rbm-x/1", "rbm-1/x", "rbm-1/-2", "rbm--1/2", "rbm-1-replica-0/2", "rbm-1-replica-x/2", "rbm-1-replica-/2"} {
		if at, w, ok := ParseCheckpointName(name); ok {
			t.Errorf("ParseCheckpointName(%q) = %v, %d, true; want false", name, at, w)
		}
	}
	if got := WeightsName(2); got != "weights/rbm-2" {
		t.Errorf("WeightsName(2) = %q; want weights/rbm-2", got)
	}
}

func TestMemStore(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := NewMemStore()
	if got := s.Where(); got != "memory" {
		t.Fatalf("Where() = %q; want memory", got)
	}
	b := []byte("one")
	s.Put(ctx, "b", b)
	b[0] = 'X' // the store keeps its own copy
	s.Put(ctx, "a", []byte("two"))
	if got, err := s.Get(ctx, "b"); string(got) != "one" || err != nil {
		t.Fatalf("Get(b) = %q, %v; want one, nil", got, err)
	}
	if names, err := s.List(ctx); !reflect.DeepEqual(names, []string{"a", "b"}) || err != nil {
		t.Fatalf("List() = %v, %v; want [a b], nil", names, err)
	}
	s.Delete(ctx, "b")
	if got, err := s.Get(ctx, "b"); got != nil || !errors.Is(err, ErrNotStored) || err.Error() != "b: not stored" {
		t.Fatalf("Get(b) after Delete = %q, %v; want nil, b: not stored", got, err)
	}
	if names, _ := s.List(ctx); !reflect.DeepEqual(names, []string{"a"}) {
		t.Fatalf("List() after Delete = %v; want [a]", names)
	}
}

// failingStore fails what its fields say.
type failingStore struct {
	*MemStore
	list, get error
}

func (s failingStore) List(ctx context.Context) ([]string, error) {
	if s.list != nil {
		return nil, s.list
	}
	return s.MemStore.List(ctx)
}

func (s failingStore) Get(ctx context.Context, name string) ([]byte, error) {
	if s.get != nil {
		return nil, s.get
	}
	return s.MemStore.Get(ctx, name)
}

func TestReadStored(t *testing.T) {
	t.Parallel()
	stages := testStages(2, 1)
	s := storeOf(t, [][2]int{{1, 4}, {1, 2}, {2, 2}, {3, 8}}, fakeWeights(stages[0], 1))
	got := readStored(t, s, 2)
	// RBM 3 is not of this run of 2 RBMs.
	if want := map[Seat][]int{{RBM: 1}: {2, 4}, {RBM: 2}: {2}}; !reflect.DeepEqual(got.Checkpoints, want) {
		t.Errorf("ReadStored().Checkpoints = %v; want %v", got.Checkpoints, want)
	}
	if len(got.Weights) != 1 || got.Weights[1] == nil || got.Weights[1].W[0] != 1 {
		t.Errorf("ReadStored().Weights = %v; want RBM 1's", got.Weights)
	}

	ctx := context.Background()
	other := fakeWeights(stages[1], 2)
	other.RunID = "r0"
	otherRun := storeOf(t, nil, other)
	notWeights := NewMemStore()
	notWeights.Put(ctx, WeightsName(1), []byte("junk"))
	cp, _ := messages.Encode(fakeCheckpoint(stages[0], 2, 2))
	checkpoint := NewMemStore()
	checkpoint.Put(ctx, WeightsName(1), cp)
	for _, tc := range []struct {
		name  string
		store Store
		want  string
	}{
		{"weights of another run", otherRun, `weights/rbm-2 in memory: weights of rbm 2: run "r0", want "r1": messages: not for this receiver`},
		{"not weights", notWeights, "weights/rbm-1 in memory: not weights: "},
		{"a checkpoint", checkpoint, "weights/rbm-1 in memory: not weights: <nil>"},
		{"list fails", failingStore{MemStore: NewMemStore(), list: errors.New("offline")}, "list memory: offline"},
		{"get fails", failingStore{MemStore: NewMemStore(), get: errors.New("offline")}, "offline"},
	} {
		_, err := ReadStored(ctx, tc.store, testRun.ID, testStages(2, 1))
		if err == nil || len(err.Error()) < len(tc.want) || err.Error()[:len(tc.want)] != tc.want {
			t.Errorf("ReadStored(%s) = %v; want an error starting %q", tc.name, err, tc.want)
		}
	}
}
