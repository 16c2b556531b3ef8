package natsnet

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/pipedbn/pipedbn/pipeline/protocol"
)

// Store keeps a run's checkpoints and final weights where a restarted
// master finds them (see protocol.Store).
type Store = protocol.Store

// ErrNotStored is returned by Store.Get for a name that is not stored.
var ErrNotStored = protocol.ErrNotStored

// NewMemStore returns an empty store in the master's memory: it survives
// the loss of any slave, not a restart of the master.
func NewMemStore() *protocol.MemStore { return protocol.NewMemStore() }

var (
	checkpointName      = protocol.CheckpointName
	weightsName         = protocol.WeightsName
	parseCheckpointName = protocol.ParseCheckpointName
)

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
