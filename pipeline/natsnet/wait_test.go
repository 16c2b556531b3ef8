package natsnet

import (
	"context"
	"errors"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/pipedbn/pipedbn/pipeline/protocol"
)

// ConnectWait waits for a server that starts after it was called, and gives
// up at once where one answers and refuses, or where it may not wait.
func TestConnectWait(t *testing.T) {
	port := freePort(t)
	url := "nats://127.0.0.1:" + strconv.Itoa(port)
	start := time.Now()
	if _, err := ConnectWait(context.Background(), url, "m", 0, nil); err == nil || time.Since(start) > 3*time.Second {
		t.Fatalf("ConnectWait(no server, wait 0) = %v after %s; want an error at once", err, time.Since(start))
	}

	var (
		mu  sync.Mutex
		srv *Embedded
	)
	defer func() {
		mu.Lock()
		defer mu.Unlock()
		if srv != nil {
			srv.Shutdown()
		}
	}()
	go func() {
		time.Sleep(1500 * time.Millisecond)
		mu.Lock()
		defer mu.Unlock()
		var err error
		if srv, err = StartEmbeddedWith(EmbeddedOptions{Port: port}); err != nil {
			t.Error(err)
		}
	}()
	start = time.Now()
	nc, err := ConnectWait(context.Background(), url, "m", 20*time.Second, testLogger(t))
	if err != nil {
		t.Fatalf("ConnectWait(a server up in 1.5 s) = %v", err)
	}
	nc.Close()
	if d := time.Since(start); d < time.Second {
		t.Errorf("ConnectWait connected after %s, before the server started", d)
	}

	ids, err := NewIdentities(protocol.MasterName, []string{"s1"})
	if err != nil {
		t.Fatal(err)
	}
	secured, err := StartEmbeddedWith(EmbeddedOptions{Users: ids})
	if err != nil {
		t.Fatal(err)
	}
	defer secured.Shutdown()
	start = time.Now()
	_, err = ConnectWait(context.Background(), secured.URL(), "m", 20*time.Second, nil, nats.UserInfo(protocol.MasterName, "wrong"))
	if !errors.Is(err, nats.ErrAuthorization) || time.Since(start) > 5*time.Second {
		t.Errorf("ConnectWait(refused credentials) = %v after %s; want %v at once", err, time.Since(start), nats.ErrAuthorization)
	}
}
