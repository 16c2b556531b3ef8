package natsnet

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// Store keeps a run's checkpoints and final weights where a restarted
// master finds them: the slaves' checkpoints (encoded Checkpoint messages)
// under names "rbm-<i>/<windows>", the weights under "weights/rbm-<i>", and
// the master's own state under "master".
type Store interface {
	Put(ctx context.Context, name string, data []byte) error
	// Get returns ErrNotStored for a name not stored.
	Get(ctx context.Context, name string) ([]byte, error)
	Delete(ctx context.Context, name string) error
	// List returns every stored name.
	List(ctx context.Context) ([]string, error)
	// Where says where the store is, for logs.
	Where() string
}

// ErrNotStored is returned by Store.Get for a name that is not stored.
var ErrNotStored = errors.New("not stored")

func checkpointName(rbm, windows int) string { return fmt.Sprintf("rbm-%d/%012d", rbm, windows) }
func weightsName(rbm int) string             { return fmt.Sprintf("weights/rbm-%d", rbm) }

// parseCheckpointName is the inverse of checkpointName.
func parseCheckpointName(name string) (rbm, windows int, ok bool) {
	rest, found := strings.CutPrefix(name, "rbm-")
	if !found {
		return 0, 0, false
	}
	i, w, found := strings.Cut(rest, "/")
	if !found {
		return 0, 0, false
	}
	rbm, err1 := strconv.Atoi(i)
	windows, err2 := strconv.Atoi(w)
	if err1 != nil || err2 != nil || rbm < 1 || windows < 0 {
		return 0, 0, false
	}
	return rbm, windows, true
}

// MemStore is a Store in the master's memory: it survives the loss of any
// slave, not a restart of the master.
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
	var names []string
	for n := range s.m {
		names = append(names, n)
	}
	sort.Strings(names)
	return names, nil
}

// Where implements Store.
func (s *MemStore) Where() string { return "the master's memory" }

// JetStreamStore is a Store in a JetStream object store bucket of its own
// per run: every Put is acknowledged by the server once written, and it
// survives restarts of the master and (with file storage) of the server.
type JetStreamStore struct {
	js     jetstream.JetStream
	obs    jetstream.ObjectStore
	bucket string
}

// BucketName is the object store bucket of a run's checkpoints.
func BucketName(runID string) string { return "pipedbn-" + runID }

// OpenJetStreamStore opens (creating it if need be) the bucket of run
// runID on the server nc is connected to.
func OpenJetStreamStore(ctx context.Context, nc *nats.Conn, runID string) (*JetStreamStore, error) {
	js, err := jetstream.New(nc)
	if err != nil {
		return nil, err
	}
	bucket := BucketName(runID)
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	obs, err := js.CreateOrUpdateObjectStore(ctx, jetstream.ObjectStoreConfig{
		Bucket: bucket, Description: "pipedbn checkpoints of run " + runID, Storage: jetstream.FileStorage,
	})
	if err != nil {
		return nil, fmt.Errorf("JetStream object store %s on %s: %w", bucket, nc.ConnectedUrlRedacted(), err)
	}
	return &JetStreamStore{js: js, obs: obs, bucket: bucket}, nil
}

// Put implements Store.
func (s *JetStreamStore) Put(ctx context.Context, name string, data []byte) error {
	_, err := s.obs.PutBytes(ctx, name, data)
	return err
}

// Get implements Store.
func (s *JetStreamStore) Get(ctx context.Context, name string) ([]byte, error) {
	b, err := s.obs.GetBytes(ctx, name)
	if errors.Is(err, jetstream.ErrObjectNotFound) {
		return nil, fmt.Errorf("%s: %w", name, ErrNotStored)
	}
	return b, err
}

// Delete implements Store.
func (s *JetStreamStore) Delete(ctx context.Context, name string) error {
	err := s.obs.Delete(ctx, name)
	if errors.Is(err, jetstream.ErrObjectNotFound) {
		return nil
	}
	return err
}

// List implements Store.
func (s *JetStreamStore) List(ctx context.Context) ([]string, error) {
	infos, err := s.obs.List(ctx)
	if errors.Is(err, jetstream.ErrNoObjectsFound) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var names []string
	for _, in := range infos {
		if !in.Deleted {
			names = append(names, in.Name)
		}
	}
	sort.Strings(names)
	return names, nil
}

// Where implements Store.
func (s *JetStreamStore) Where() string { return "JetStream object store " + s.bucket }

// Destroy deletes the bucket and everything in it: the run is complete.
func (s *JetStreamStore) Destroy(ctx context.Context) error {
	return s.js.DeleteObjectStore(ctx, s.bucket)
}
