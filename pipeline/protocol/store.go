package protocol

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"sync"

	"github.com/pipedbn/pipedbn/messages"
	"github.com/pipedbn/pipedbn/pipeline"
)

// Store keeps a run's checkpoints and final weights where a restarted
// master finds them: the slaves' checkpoints (encoded Checkpoint messages)
// under CheckpointName, the weights under WeightsName, and the master's own
// state under StateName. The transports implement it (a JetStream object
// store, the master's memory); the master's state machine only names what
// to put, get and delete (StoreOp).
type Store interface {
	Put(ctx context.Context, name string, data []byte) error
	// Get returns an error wrapping ErrNotStored for a name not stored.
	Get(ctx context.Context, name string) ([]byte, error)
	Delete(ctx context.Context, name string) error
	// List returns every stored name.
	List(ctx context.Context) ([]string, error)
	// Where says where the store is, for logs.
	Where() string
}

// ErrNotStored is returned by Store.Get for a name that is not stored.
var ErrNotStored = errors.New("not stored")

// StateName is the name of the master's own state in a Store.
const StateName = "master"

// CheckpointName is the name of the checkpoint of seat at after windows
// windows: "rbm-2/000000000040", or "rbm-2-replica-1/000000000040" for a
// replica other than the first.
func CheckpointName(at Seat, windows int) string {
	if at.Replica == 0 {
		return fmt.Sprintf("rbm-%d/%012d", at.RBM, windows)
	}
	return fmt.Sprintf("rbm-%d-replica-%d/%012d", at.RBM, at.Replica, windows)
}

// WeightsName is the name of RBM_rbm's final weights.
func WeightsName(rbm int) string { return fmt.Sprintf("weights/rbm-%d", rbm) }

// ParseCheckpointName is the inverse of CheckpointName.
func ParseCheckpointName(name string) (at Seat, windows int, ok bool) {
	rest, found := strings.CutPrefix(name, "rbm-")
	if !found {
		return Seat{}, 0, false
	}
	where, w, found := strings.Cut(rest, "/")
	if !found {
		return Seat{}, 0, false
	}
	i, k, replica := strings.Cut(where, "-replica-")
	var err error
	if at.RBM, err = strconv.Atoi(i); err != nil || at.RBM < 1 {
		return Seat{}, 0, false
	}
	if replica {
		if at.Replica, err = strconv.Atoi(k); err != nil || at.Replica < 1 {
			return Seat{}, 0, false
		}
	}
	if windows, err = strconv.Atoi(w); err != nil || windows < 0 {
		return Seat{}, 0, false
	}
	return at, windows, true
}

// StoreOpKind is what a StoreOp does.
type StoreOpKind int

// The kinds of StoreOp.
const (
	// Put stores Msg under Name; the driver retries until it succeeds and
	// then calls Master.Stored.
	Put StoreOpKind = iota + 1
	// Get loads the checkpoint Name; the driver calls Master.Loaded.
	Get
	// Delete removes Name; nothing waits for it.
	Delete
)

// StoreOp is a checkpoint or weights for the driver to store, load or
// delete.
type StoreOp struct {
	Kind StoreOpKind
	Name string
	// Seat and Windows say whose checkpoint (Windows -1 for an RBM's
	// weights, at replica 0).
	Seat    Seat
	Windows int
	// Msg is what Put stores: a *messages.Checkpoint or *messages.Weights.
	Msg messages.Message
}

// Stored is what a Store holds of an interrupted run, for a master that
// resumes it.
type Stored struct {
	// Checkpoints lists the windows of each seat's stored checkpoints.
	Checkpoints map[Seat][]int
	// Weights holds the final weights of the RBMs that finished.
	Weights map[int]*messages.Weights
}

// ReadStored lists what store holds of the run runID of the RBMs stages
// describe: its checkpoints and weights. The weights must be those of the
// run, with the stages' shapes.
func ReadStored(ctx context.Context, store Store, runID string, stages []pipeline.StageConfig) (*Stored, error) {
	names, err := store.List(ctx)
	if err != nil {
		return nil, fmt.Errorf("list %s: %w", store.Where(), err)
	}
	s := &Stored{Checkpoints: map[Seat][]int{}, Weights: map[int]*messages.Weights{}}
	L := len(stages)
	for _, n := range names {
		if at, w, ok := ParseCheckpointName(n); ok && at.RBM <= L {
			s.Checkpoints[at] = append(s.Checkpoints[at], w)
		}
	}
	for i := 1; i <= L; i++ {
		b, err := store.Get(ctx, WeightsName(i))
		if errors.Is(err, ErrNotStored) {
			continue
		}
		if err != nil {
			return nil, err
		}
		m, err := messages.Decode(b)
		w, ok := m.(*messages.Weights)
		if err != nil || !ok {
			return nil, fmt.Errorf("%s in %s: not weights: %v", WeightsName(i), store.Where(), err)
		}
		visible, hidden := stages[i-1].ParamShape()
		if err := w.Check(runID, i, visible, hidden); err != nil {
			return nil, fmt.Errorf("%s in %s: %w", WeightsName(i), store.Where(), err)
		}
		s.Weights[i] = w
	}
	return s, nil
}

// LoadCheckpoint reads the checkpoint name from store.
func LoadCheckpoint(ctx context.Context, store Store, name string) (*messages.Checkpoint, error) {
	b, err := store.Get(ctx, name)
	if err != nil {
		return nil, err
	}
	msg, err := messages.Decode(b)
	if err != nil {
		return nil, err
	}
	cp, ok := msg.(*messages.Checkpoint)
	if !ok {
		return nil, fmt.Errorf("%s in %s holds a %s", name, store.Where(), msg.Kind())
	}
	return cp, nil
}

// MemStore is a Store in memory: it survives the loss of any slave, not a
// restart of the process that holds it.
type MemStore struct {
	mu sync.Mutex
	m  map[string][]byte
}

// NewMemStore returns an empty MemStore.
func NewMemStore() *MemStore { return &MemStore{m: map[string][]byte{}} }

// Put implements Store.
func (s *MemStore) Put(_ context.Context, name string, data []byte) error {
	s.mu.Lock()
	s.m[name] = append([]byte(nil), data...)
	s.mu.Unlock()
	return nil
}

// Get implements Store.
func (s *MemStore) Get(_ context.Context, name string) ([]byte, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	b, ok := s.m[name]
	if !ok {
		return nil, fmt.Errorf("%s: %w", name, ErrNotStored)
	}
	return b, nil
}

// Delete implements Store.
func (s *MemStore) Delete(_ context.Context, name string) error {
	s.mu.Lock()
	delete(s.m, name)
	s.mu.Unlock()
	return nil
}

// List implements Store.
func (s *MemStore) List(context.Context) ([]string, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	names := make([]string, 0, len(s.m))
	for n := range s.m {
		names = append(names, n)
	}
	sort.Strings(names)
	return names, nil
}

// Where implements Store.
func (s *MemStore) Where() string { return "memory" }
