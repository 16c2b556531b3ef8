package natsnet

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"runtime"
	"sync"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/nats-io/nats.go"

	"github.com/pipedbn/pipedbn/blas"
	"github.com/pipedbn/pipedbn/internal/memlimit"
	"github.com/pipedbn/pipedbn/pipeline"
	"github.com/pipedbn/pipedbn/pipeline/driver"
	"github.com/pipedbn/pipedbn/pipeline/protocol"
)

// SlaveOptions configure a slave.
type SlaveOptions struct {
	// URL of the NATS server, e.g. nats://127.0.0.1:4222.
	URL string
	// Name identifies the slave (see protocol.CheckName).
	Name string
	// Threads is the number of BLAS threads; 0 means one per CPU.
	Threads int
	// JoinTimeout bounds the wait for a master to answer the registration
	// and then to assign an RBM. Default protocol.DefaultJoinTimeout.
	JoinTimeout time.Duration
	// StatusEvery is the period of status reports to the master; 0:
	// protocol.DefaultTiming's.
	StatusEvery time.Duration
	// FinishTimeout bounds the wait, after the weights are sent, for the
	// master to confirm the end of the run; 0: protocol.DefaultTiming's.
	FinishTimeout time.Duration
	// MasterGoneAfter bounds how long the slave goes on without its
	// master: with no connection to the NATS server, or connected while
	// nothing listens to its status reports (the master was killed, or its
	// run is over). Then it stops as on a signal and ends with an error
	// wrapping protocol.ErrMasterGone. Default driver.DefaultMasterGoneAfter; negative:
	// never.
	MasterGoneAfter time.Duration
	// Logger receives the slave's log lines; nil discards them.
	Logger hclog.Logger
	// NATSOptions are extra connection options (credentials, TLS).
	NATSOptions []nats.Option
	// Credentials, if set, are the identities the slave may connect as:
	// it claims the first the server admits (see ReadCredentials) and
	// takes its user as its name; with Name set, only the identity of that
	// user. A secured server lets a slave publish only on subjects named
	// after its user (users.conf.tmpl), so name and user must agree.
	Credentials []Credential

	// WindowDelay, if set, makes the slave sleep after every window: it
	// emulates a slower machine (tests, demos of failures and recovery).
	WindowDelay time.Duration

	// Peers, if set, are the nodes of this process the slave hands its
	// link messages to in memory (RunGroup makes them for its group).
	Peers *driver.Peers

	// MemoryLimit returns what the slave may use, to check the RBM it is
	// assigned against (pipeline.StageConfig.SlaveMemory); nil:
	// memlimit.Here, this machine's.
	MemoryLimit func() (memlimit.Limit, bool)

	// turn, shared by the slaves of one stage group (RunGroup), lets one
	// of them train at a time.
	turn *sync.Mutex

	// afterWindow, for tests, runs after every window with its training
	// time and the input bytes received and not yet taken.
	afterWindow func(busy time.Duration, pending int)
}

func (o *SlaveOptions) defaults() {
	if o.JoinTimeout <= 0 {
		o.JoinTimeout = protocol.DefaultJoinTimeout
	}
	if o.MasterGoneAfter == 0 {
		o.MasterGoneAfter = driver.DefaultMasterGoneAfter
	}
	if o.Threads <= 0 {
		o.Threads = runtime.NumCPU()
	}
	if o.Logger == nil {
		o.Logger = hclog.NewNullLogger()
	}
	if o.MemoryLimit == nil {
		o.MemoryLimit = memlimit.Here
	}
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
	if errors.Is(err, protocol.ErrClusterFull) {
		opt.Logger.Info("not needed: the master has all the slaves it needs")
		return nil
	}
	return err
}

// runSlave is RunSlave, with the slave's name (claimed with its identity)
// left in opt.
func runSlave(ctx context.Context, opt *SlaveOptions) error {
	opt.defaults()
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
	blas.SetThreads(opt.Threads)
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
	loop := driver.Loop{Inbox: ep.inbox, Taken: ep.take, Turn: opt.turn, AfterJob: func(began time.Time) {
		if opt.WindowDelay > 0 {
			time.Sleep(opt.WindowDelay)
		}
		if opt.afterWindow != nil {
			opt.afterWindow(time.Since(began), ep.pending())
		}
	}}
	var gone error // the master's loss, once the watch has declared it
	if opt.MasterGoneAfter > 0 {
		p, err := newProbes(nc, ep.Now)
		if err != nil {
			return err
		}
		defer p.close()
		ep.probes = p
		watch := driver.NewMasterWatch(p, "NATS at "+opt.URL, opt.MasterGoneAfter, opt.Logger)
		loop.Check = func(now time.Duration) error {
			if gone == nil {
				if gone = watch.Gone(now); gone != nil {
					opt.Logger.Error("the master is gone; leaving", "error", gone)
					return gone
				}
			}
			return nil
		}
	}
	node, err := driver.NewSlave(opt.slaveConfig(ep), driver.Config{Transport: ep, Peers: opt.Peers, Counters: &ep.window, Logger: opt.Logger})
	if err != nil {
		return driver.Fatal(err)
	}
	err = node.Run(ctx, loop)
	if nc.IsConnected() { // else nothing waits to go out: the server is gone
		nc.FlushTimeout(5 * time.Second)
	}
	if gone != nil && (err == nil || errors.Is(err, protocol.ErrMasterGone)) {
		err = gone // a finished slave ends with nil on an interrupt
	}
	return err
}

// slaveConfig is the protocol slave's configuration.
func (o *SlaveOptions) slaveConfig(ep *endpoint) protocol.SlaveConfig {
	timing := driver.SlaveTiming(o.JoinTimeout, o.StatusEvery, o.FinishTimeout)
	host, _ := os.Hostname()
	return protocol.SlaveConfig{
		Name: o.Name, Host: host, CPUs: o.Threads, PID: os.Getpid(), Process: rand.Uint64() | 1,
		Timing: timing, Bytes: ep.window.Bytes, Logger: o.Logger, Fits: func(c pipeline.StageConfig, f pipeline.Flow) error { return driver.Fits(o.MemoryLimit, c, f) },
	}
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

// ServeSlave runs slaves one after another (driver.Serve), so that one
// long-lived slave (a compose service, a slave on another host) trains an
// RBM for every master that comes. It returns when ctx is cancelled or on
// an error that retrying cannot fix: refused credentials, a name that fits
// no identity. A master gone for good ends a run, not the slave.
func ServeSlave(ctx context.Context, opt SlaveOptions) error {
	opt.defaults()
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
