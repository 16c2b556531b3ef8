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

// JetStreamStore is a Store in a JetStream object store bucket of its own
// per run: every Put is acknowledged by the server once written, and it
// survives restarts of the master and (with file storage) of the server,
// and, replicated on a cluster, the loss of a server.
type JetStreamStore struct {
	js       jetstream.JetStream
	obs      jetstream.ObjectStore
	bucket   string
	replicas int
}

// BucketName is the object store bucket of a run's checkpoints.
func BucketName(runID string) string { return "pipedbn-" + runID }

// MaxReplicas is the most copies of a run's checkpoints a NATS cluster
// keeps: three survive the loss of any one server (JetStream's RAFT needs
// a majority of the copies).
const MaxReplicas = 3

// openTimeout bounds OpenJetStreamStore's wait for JetStream, and Put's
// and Get's for a bucket's stream: a cluster that has just started elects
// its JetStream leaders first.
const openTimeout = 30 * time.Second

// OpenJetStreamStore opens (creating it if need be) the bucket of run
// runID on the server nc is connected to. On a server of a cluster (its
// INFO names one) the bucket is replicated on min(MaxReplicas, cluster
// size) servers: the server says how many it can place by refusing more
// (no suitable peers, insufficient resources, or replicas not supported
// when JetStream is not clustered), so it asks for MaxReplicas and then
// fewer. A cluster whose JetStream is not ready yet is waited for, up to
// 30 s.
func OpenJetStreamStore(ctx context.Context, nc *nats.Conn, runID string) (*JetStreamStore, error) {
	js, err := jetstream.New(nc)
	if err != nil {
		return nil, err
	}
	bucket := BucketName(runID)
	replicas := 1
	if nc.ConnectedClusterName() != "" {
		replicas = MaxReplicas
	}
	ctx, cancel := context.WithTimeout(ctx, openTimeout)
	defer cancel()
	for {
		try, cancelTry := context.WithTimeout(ctx, 10*time.Second)
		obs, err := js.CreateOrUpdateObjectStore(try, jetstream.ObjectStoreConfig{
			Bucket: bucket, Description: "pipedbn checkpoints of run " + runID, Storage: jetstream.FileStorage,
			Replicas: replicas,
		})
		cancelTry()
		if err == nil {
			return &JetStreamStore{js: js, obs: obs, bucket: bucket, replicas: replicas}, nil
		}
		var api jetstream.JetStreamError
		code := jetstream.ErrorCode(0)
		if errors.As(err, &api) && api.APIError() != nil {
			code = api.APIError().ErrorCode
		}
		switch {
		case replicas > 1 && (code == errNoPeers || code == errInsufficientResources || code == errReplicasNotSupported):
			replicas--
			continue
		case ctx.Err() == nil && (code == errClusterNotAvailable || errors.Is(err, context.DeadlineExceeded) || errors.Is(err, nats.ErrTimeout)):
			select {
			case <-time.After(500 * time.Millisecond):
				continue
			case <-ctx.Done():
			}
		}
		return nil, fmt.Errorf("JetStream object store %s (%d replicas) on %s: %w", bucket, replicas, nc.ConnectedUrlRedacted(), err)
	}
}

// The JetStream API's error codes (nats-server's jetstream_errors.json)
// that OpenJetStreamStore acts on.
const (
	errNoPeers               jetstream.ErrorCode = 10005 // no suitable peers for placement
	errClusterNotAvailable   jetstream.ErrorCode = 10008 // JetStream system temporarily unavailable
	errInsufficientResources jetstream.ErrorCode = 10023
	errReplicasNotSupported  jetstream.ErrorCode = 10074 // replicas > 1 not supported in non-clustered mode
)

// Replicas is the number of servers that keep a copy of the checkpoints.
func (s *JetStreamStore) Replicas() int { return s.replicas }

// Put implements Store. The object store waits for the acks of a put's
// publishes until ctx's deadline when ctx has one, and for each at most
// its default timeout (5 s) otherwise; a put whose acks are lost, because
// its stream's leader died with a server of the cluster, would wait out the
// whole deadline. So it gets ctx without its deadline, ended when ctx
// ends. Put and Get wait while nothing serves the bucket (whileNoResponders).
func (s *JetStreamStore) Put(ctx context.Context, name string, data []byte) error {
	put, cancel := context.WithCancel(context.WithoutCancel(ctx))
	defer cancel()
	defer context.AfterFunc(ctx, cancel)()
	return whileNoResponders(put, func() error {
		_, err := s.obs.PutBytes(put, name, data)
		return err
	})
}

// noRespondersWait is how long Put and Get wait before they try again
// when nothing serves the bucket's stream yet.
const noRespondersWait = 250 * time.Millisecond

// whileNoResponders calls op until it returns anything but "no
// responders", ctx ends, or it has waited openTimeout. Nothing serves a
// bucket's stream for a moment after it is created on a cluster, until its
// replicas elect a leader, or while they elect a new one.
func whileNoResponders(ctx context.Context, op func() error) error {
	giveUp := time.Now().Add(openTimeout)
	for {
		err := op()
		if !errors.Is(err, nats.ErrNoResponders) && !errors.Is(err, jetstream.ErrNoStreamResponse) || time.Now().After(giveUp) {
			return err
		}
		select {
		case <-time.After(noRespondersWait):
		case <-ctx.Done():
			return err
		}
	}
}

// Get implements Store.
func (s *JetStreamStore) Get(ctx context.Context, name string) ([]byte, error) {
	var b []byte
	err := whileNoResponders(ctx, func() (err error) {
		b, err = s.obs.GetBytes(ctx, name)
		return err
	})
	if errors.Is(err, jetstream.ErrObjectNotFound) {
		return nil, fmt.Errorf("%s: %w", name, protocol.ErrNotStored)
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
func (s *JetStreamStore) Where() string {
	if s.replicas > 1 {
		return fmt.Sprintf("JetStream object store %s (%d replicas)", s.bucket, s.replicas)
	}
	return "JetStream object store " + s.bucket
}

// Destroy deletes the bucket and everything in it: the run is complete.
func (s *JetStreamStore) Destroy(ctx context.Context) error {
	return s.js.DeleteObjectStore(ctx, s.bucket)
}
