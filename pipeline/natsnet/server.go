package natsnet

import (
	"fmt"
	"time"

	"github.com/nats-io/nats-server/v2/server"
)

// Embedded is a nats-server running inside this process, on a free port of
// the loopback interface: the no-setup default of `master run`.
type Embedded struct {
	srv *server.Server
}

// EmbeddedOptions configure an embedded server.
type EmbeddedOptions struct {
	// Port to listen on; 0 picks a free one.
	Port int
	// StoreDir, if set, enables JetStream with its file store there: the
	// run's checkpoints then survive a restart of the master (and of the
	// server).
	StoreDir string
}

// StartEmbedded starts a nats-server on 127.0.0.1 and a random free port,
// without JetStream.
func StartEmbedded() (*Embedded, error) { return StartEmbeddedWith(EmbeddedOptions{}) }

// StartEmbeddedWith starts a nats-server on 127.0.0.1 as o says.
func StartEmbeddedWith(o EmbeddedOptions) (*Embedded, error) {
	port := o.Port
	if port == 0 {
		port = server.RANDOM_PORT
	}
	opts := &server.Options{
		Host:      "127.0.0.1",
		Port:      port,
		JetStream: o.StoreDir != "",
		StoreDir:  o.StoreDir,
		NoLog:     true,
		NoSigs:    true,
		// Windows travel in fragments of at most MaxPayload; 8 MB keeps the
		// fragment count low for large windows.
		MaxPayload: 8 << 20,
		MaxPending: 256 << 20,
	}
	srv, err := server.NewServer(opts)
	if err != nil {
		return nil, fmt.Errorf("embedded nats-server: %w", err)
	}
	go srv.Start()
	if !srv.ReadyForConnections(10 * time.Second) {
		srv.Shutdown()
		return nil, fmt.Errorf("embedded nats-server: not ready after 10s")
	}
	return &Embedded{srv: srv}, nil
}

// URL is the server's client URL, e.g. nats://127.0.0.1:39421.
func (e *Embedded) URL() string { return e.srv.ClientURL() }

// Shutdown stops the server.
func (e *Embedded) Shutdown() {
	e.srv.Shutdown()
	e.srv.WaitForShutdown()
}
