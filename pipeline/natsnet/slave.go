package natsnet

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/pipedbn/pipedbn/pipeline/driver"
	"github.com/pipedbn/pipedbn/pipeline/protocol"
)

// SlaveOptions configure a slave over NATS.
type SlaveOptions struct {
	// SlaveOptions are the slave's own: its name, threads, timing, group.
	driver.SlaveOptions
	// URL of the NATS server, e.g. nats://127.0.0.1:4222.
	URL string
	// NATSOptions are extra connection options (credentials, TLS).
	NATSOptions []nats.Option
	// Credentials, if set, are the identities the slave may connect as:
	// it claims the first the server admits (see ReadCredentials) and
	// takes its user as its name; with Name set, only the identity of that
	// user. A secured server lets a slave publish only on subjects named
	// after its user (users.conf.tmpl), so name and user must agree.
	Credentials []Credential
}

// Connect connects to the NATS server at url, with a clear error when it
// cannot be reached or refuses the credentials. When opts carry no
// credentials and the environment variable CredentialsEnv names a file of
// one identity, Connect connects as that identity.
func Connect(url, name string, opts ...nats.Option) (*nats.Conn, error) {
	all := append([]nats.Option{nats.Name(name), nats.Timeout(5 * time.Second), nats.MaxReconnects(-1), nats.ReconnectWait(250 * time.Millisecond),
		// Nothing relies on the client buffering while it reconnects (it
		// drops what exceeds its buffer, silently): a message published
		// then fails at once, and the protocol sends it again.
		nats.ReconnectBufSize(-1)}, opts...)
	if !hasAuth(opts) {
		env, err := envCredentials()
		if err != nil {
			return nil, err
		}
		if env != nil {
			all = append(all, env)
		}
	}
	nc, err := nats.Connect(url, all...)
	switch {
	case err == nil:
		return nc, nil
	case errors.Is(err, nats.ErrAuthorization), errors.Is(err, nats.ErrMaxAccountConnectionsExceeded):
		return nil, fmt.Errorf("NATS at %s refused the connection: %w", url, err)
	default:
		return nil, fmt.Errorf("cannot reach NATS at %s: %w", url, err)
	}
}

// RunSlave joins a cluster and trains the RBM the master assigns: it
// registers, waits for its assignment, trains on the windows from below while
// streaming its own middle results up, reports its status every StatusEvery,
// and finally sends its weights. It returns when the run is done, when the
// master stops it or needs no more slaves (a spare: nil), or when ctx is
// cancelled (SIGINT, SIGTERM: after leaving a checkpoint), draining its NATS
// connection.
func RunSlave(ctx context.Context, opt SlaveOptions) error {
	err := runSlave(ctx, &opt)
	return driver.Spare(err, opt.Logger)
}

// runSlave is RunSlave, with the slave's name (claimed with its identity)
// left in opt.
func runSlave(ctx context.Context, opt *SlaveOptions) error {
	opt.Defaults()
	// A refused publish or subscription (a permissions violation) reaches
	// the client only asynchronously: log it, or it goes unseen.
	base := opt.Logger
	natsOpts := append(append([]nats.Option{}, opt.NATSOptions...), nats.ErrorHandler(func(nc *nats.Conn, _ *nats.Subscription, err error) {
		base.Error("NATS error", "connection", nc.Opts.Name, "error", err)
	}), nats.DisconnectErrHandler(func(_ *nats.Conn, err error) {
		if err == nil {
			return // closed, not lost
		}
		base.Warn("NATS connection lost; reconnecting", "error", err)
	}), nats.ReconnectHandler(func(nc *nats.Conn) {
		base.Info("NATS reconnected", "server", nc.ConnectedServerName(), "url", nc.ConnectedUrlRedacted())
	}))
	var nc *nats.Conn
	var err error
	if len(opt.Credentials) > 0 {
		nc, err = opt.claim(natsOpts)
	} else if err = protocol.CheckName(opt.Name); err != nil {
		return driver.Fatal(fmt.Errorf("slave %w", err))
	} else {
		nc, err = Connect(opt.URL, "pipedbn-slave-"+opt.Name, natsOpts...)
	}
	if err != nil {
		return err
	}
	defer nc.Drain()
	err = drive(ctx, nc, opt)
	if errors.Is(err, protocol.ErrNoMaster) {
		return fmt.Errorf("%w on %s (is `master run` with cluster.nats_url = %s running?)", err, opt.URL, opt.URL)
	}
	return err
}

// drive runs the slave's state machine on nc until it ends (see
// driver.Node.Run), watching for the loss of its master.
func drive(ctx context.Context, nc *nats.Conn, opt *SlaveOptions) error {
	ep := newEndpoint(nc, opt.Name, opt.Logger)
	defer ep.close()
	// Until its Assign comes, the slave takes only small messages on its
	// control subject (see endpoint.assigned).
	if err := ep.subscribe(ctlSubject(opt.Name), controls, controls.limits()); err != nil {
		return err
	}
	loop := opt.Loop(ep.in.C, ep.in.Take, ep.pending)
	var watch *driver.MasterWatch
	if opt.MasterGoneAfter > 0 {
		p, err := newProbes(nc, ep.Now)
		if err != nil {
			return err
		}
		defer p.close()
		ep.probes = p
		watch = driver.NewMasterWatch(p, "NATS at "+opt.URL, opt.MasterGoneAfter, opt.Logger)
		loop.Check = watch.Check
	}
	node, err := opt.NewSlave(ep)
	if err != nil {
		return driver.Fatal(err)
	}
	err = node.Run(ctx, loop)
	if nc.IsConnected() { // else nothing waits to go out: the server is gone
		nc.FlushTimeout(5 * time.Second)
	}
	return watch.Outcome(err)
}

// claim connects as one of the slave's identities and names the slave
// after it.
func (o *SlaveOptions) claim(natsOpts []nats.Option) (*nats.Conn, error) {
	creds := o.Credentials
	if o.Name != "" {
		creds = nil
		for _, c := range o.Credentials {
			if c.User == o.Name {
				creds = append(creds, c)
			}
		}
		if len(creds) == 0 {
			return nil, driver.Fatal(fmt.Errorf("slave name %q is no user of its credentials: a secured NATS server lets a slave publish only on subjects named after its user", o.Name))
		}
	}
	for _, c := range creds {
		if err := protocol.CheckName(c.User); err != nil {
			return nil, driver.Fatal(fmt.Errorf("credentials: user %w", err))
		}
	}
	nc, c, err := claimIdentity(o.URL, "pipedbn-slave-", creds, natsOpts)
	if err != nil {
		return nil, err
	}
	if o.Name == "" {
		o.Name = c.User
		o.Logger = o.Logger.Named(c.User)
	}
	return nc, nil
}

// RunGroup runs a stage group of a plan in this process over NATS
// (driver.RunGroup): one slave per name, with opt's connection options and
// credentials. Middle results and credits between the group's RBMs are
// handed over in memory, not through the NATS server. One name is
// RunSlave.
func RunGroup(ctx context.Context, opt SlaveOptions, names []string) error {
	return driver.RunGroup(ctx, opt.SlaveOptions, names, func(ctx context.Context, o driver.SlaveOptions) error {
		n := opt
		n.SlaveOptions = o
		return runSlave(ctx, &n)
	})
}

// ServeSlave runs slaves one after another (driver.Serve), so that one
// long-lived slave (a compose service, a slave on another host) trains an
// RBM for every master that comes. It returns when ctx is cancelled or on
// an error that retrying cannot fix: refused credentials, a name that fits
// no identity. A master gone for good ends a run, not the slave.
func ServeSlave(ctx context.Context, opt SlaveOptions) error {
	opt.Defaults()
	if len(opt.Credentials) == 0 {
		if err := protocol.CheckName(opt.Name); err != nil {
			return fmt.Errorf("slave %w", err)
		}
	}
	return driver.Serve(ctx, driver.Serving{Run: func(ctx context.Context) error {
		o := opt // a claim names o after its identity, anew every time
		err := runSlave(ctx, &o)
		if errors.Is(err, nats.ErrAuthorization) {
			err = driver.Fatal(err)
		}
		return err
	}, Unreachable: unreachable, Where: opt.URL, Logger: opt.Logger})
}
