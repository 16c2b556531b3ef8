package natsnet

import (
	"bytes"
	"context"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
)

// A put or get while nothing serves the bucket's stream (as on a cluster
// before its replicas elect a leader) waits for it instead of failing.
func TestStoreWaitsForItsStream(t *testing.T) {
	t.Parallel()
	_, nc := serveWith(t, EmbeddedOptions{StoreDir: t.TempDir()})
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	store, err := OpenJetStreamStore(ctx, nc, "leaderless")
	if err != nil {
		t.Fatal(err)
	}
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	stream := "OBJ_" + BucketName("leaderless")
	info, err := js.Stream(ctx, stream)
	if err != nil {
		t.Fatal(err)
	}
	cfg := info.CachedInfo().Config
	if err := js.DeleteStream(ctx, stream); err != nil {
		t.Fatal(err)
	}
	back := make(chan error, 1)
	time.AfterFunc(700*time.Millisecond, func() {
		_, err := js.CreateStream(ctx, cfg)
		back <- err
	})
	want := []byte("the run's state")
	if err := store.Put(ctx, "state", want); err != nil {
		t.Fatalf("put while the stream was away: %v", err)
	}
	if err := <-back; err != nil {
		t.Fatal(err)
	}
	got, err := store.Get(ctx, "state")
	if err != nil || !bytes.Equal(got, want) {
		t.Fatalf("get = %q, %v; want %q", got, err, want)
	}
}
