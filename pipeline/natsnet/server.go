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

// StartEmbedded starts a nats-server on 127.0.0.1 and a random free port.
func StartEmbedded() (*Embedded, error) {
	opts := &server.Options{
		Host:   "127.0.0.1",
		Port:   server.RANDOM_PORT,
		NoLog:  true,
		NoSigs: true,
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
