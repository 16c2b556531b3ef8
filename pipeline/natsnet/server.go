package natsnet

import (
	"fmt"
	"time"

	"github.com/nats-io/nats-server/v2/server"

	"github.com/pipedbn/pipedbn/messages"
)

// Embedded is a nats-server running inside this process, on a free port of
// the loopback interface: the no-setup default of `master run`.
type Embedded struct {
	srv   *server.Server
	users *Identities
}

// EmbeddedOptions configure an embedded server.
type EmbeddedOptions struct {
	// Port to listen on; 0 picks a free one.
	Port int
	// StoreDir, if set, enables JetStream with its file store there: the
	// run's checkpoints then survive a restart of the master (and of the
	// server).
	StoreDir string
	// Users, if set, are the only identities the server admits, each with
	// the permissions of its role (Identities.ServerConfig); JetStream is
	// the master's. Nil admits anyone who reaches the port, with every
	// permission: only for tests.
	Users *Identities
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
	opts := &server.Options{}
	if o.Users != nil {
		conf, err := o.Users.ServerConfig(nil)
		if err != nil {
			return nil, fmt.Errorf("embedded nats-server: %w", err)
		}
		// From a string: the passwords, in clear here, never touch a disk.
		if err := opts.ProcessConfigString(string(conf)); err != nil {
			return nil, fmt.Errorf("embedded nats-server: accounts config: %w", err)
		}
	}
	// Loopback only, whatever the config: nothing outside this host can
	// reach the server.
	opts.Host, opts.Port = "127.0.0.1", port
	opts.JetStream, opts.StoreDir = o.StoreDir != "", o.StoreDir
	opts.NoLog, opts.NoSigs = true, true
	// Windows travel in fragments of at most MaxPayload; 8 MB keeps the
	// fragment count low for large windows. MaxPending, what the server
	// holds for a client that reads slower than it is sent to, takes two
	// of the longest messages (messages.DefaultMaxPending; a run whose
	// slaves may send the master more at once is refused before it starts).
	opts.MaxPayload, opts.MaxPending = 8<<20, messages.DefaultMaxPending
	// A slave capped to a fraction of a CPU, training, reads a long window
	// slowly: give it a minute, not nats-server's 10 s, before its
	// connection is closed as a slow consumer.
	opts.WriteDeadline = time.Minute
	srv, err := server.NewServer(opts)
	if err != nil {
		return nil, fmt.Errorf("embedded nats-server: %w", err)
	}
	go srv.Start()
	if !srv.ReadyForConnections(10 * time.Second) {
		srv.Shutdown()
		return nil, fmt.Errorf("embedded nats-server: not ready after 10s")
	}
	return &Embedded{srv: srv, users: o.Users}, nil
}

// URL is the server's client URL, e.g. nats://127.0.0.1:39421.
func (e *Embedded) URL() string { return e.srv.ClientURL() }

// Shutdown stops the server.
func (e *Embedded) Shutdown() {
	e.srv.Shutdown()
	e.srv.WaitForShutdown()
}

// Connected reports whether a client is connected as user, one of the
// server's Identities; false on a server without them.
func (e *Embedded) Connected(user string) bool {
	if e.users == nil {
		return false
	}
	name := e.users.account(user)
	if name == "" {
		return false
	}
	acc, err := e.srv.LookupAccount(name)
	return err == nil && acc.NumLocalConnections() > 0
}
