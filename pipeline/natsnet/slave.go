package natsnet

import (
	"context"
	"errors"
	"fmt"
	"os"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/nats-io/nats.go"

	"github.com/pipedbn/pipedbn/blas"
	"github.com/pipedbn/pipedbn/messages"
	"github.com/pipedbn/pipedbn/pipeline"
	"github.com/pipedbn/pipedbn/pipeline/protocol"
	"github.com/pipedbn/pipedbn/rbm"
)

// SlaveOptions configure a slave.
type SlaveOptions struct {
	// URL of the NATS server, e.g. nats://127.0.0.1:4222.
	URL string
	// Name identifies the slave (see CheckName).
	Name string
	// Threads is the number of BLAS threads; 0 means one per CPU.
	Threads int
	// JoinTimeout bounds the wait for a master to answer the registration
	// and then to assign an RBM. Default 60s.
	JoinTimeout time.Duration
	// StatusEvery is the period of status reports to the master. Default 1s.
	StatusEvery time.Duration
	// FinishTimeout bounds the wait, after the weights are sent, for the
	// master to confirm the end of the run. Default 10m.
	FinishTimeout time.Duration
	// Logger receives the slave's log lines; nil discards them.
	Logger hclog.Logger
	// NATSOptions are extra connection options (credentials, TLS).
	NATSOptions []nats.Option
	// Credentials, if set, are the identities the slave may connect as:
	// it claims the first the server admits (see ReadCredentials) and
	// takes its user as its name; with Name set, only the identity of that
	// user. A secured server lets a slave publish only on subjects named
	// after its user (deploy/nats), so name and user must agree.
	Credentials []Credential

	// WindowDelay, if set, makes the slave sleep after every window: it
	// emulates a slower machine (tests, demos of failures and recovery).
	WindowDelay time.Duration

	// afterWindow, for tests, runs after every window with its training time.
	afterWindow func(busy time.Duration, in *Receiver)
}

func (o *SlaveOptions) defaults() {
	if o.JoinTimeout <= 0 {
		o.JoinTimeout = 60 * time.Second
	}
	if o.StatusEvery <= 0 {
		o.StatusEvery = time.Second
	}
	if o.FinishTimeout <= 0 {
		o.FinishTimeout = 10 * time.Minute
	}
	if o.Threads <= 0 {
		o.Threads = runtime.NumCPU()
	}
	if o.Logger == nil {
		o.Logger = hclog.NewNullLogger()
	}
}

// ErrStopped is returned when the master stops the run.
var ErrStopped = errors.New("stopped by the master")

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
// master stops it, or when ctx is cancelled (SIGINT, SIGTERM), draining its
// NATS connection.
func RunSlave(ctx context.Context, opt SlaveOptions) error {
	opt.defaults()
	// A refused publish or subscription (a permissions violation) reaches
	// the client only asynchronously: log it, or it goes unseen.
	base := opt.Logger
	natsOpts := append(append([]nats.Option{}, opt.NATSOptions...), nats.ErrorHandler(func(nc *nats.Conn, _ *nats.Subscription, err error) {
		base.Error("NATS error", "connection", nc.Opts.Name, "error", err)
	}))
	var nc *nats.Conn
	var err error
	if len(opt.Credentials) > 0 {
		nc, err = opt.claim(natsOpts)
	} else if err = CheckName(opt.Name); err != nil {
		return fmt.Errorf("slave %w", err)
	} else {
		nc, err = Connect(opt.URL, "pipedbn-slave-"+opt.Name, natsOpts...)
	}
	if err != nil {
		return err
	}
	defer nc.Drain()
	log := opt.Logger
	blas.SetThreads(opt.Threads)

	ctl, err := nc.SubscribeSync(ctlSubject(opt.Name))
	if err != nil {
		return err
	}
	if err := register(ctx, nc, opt); err != nil {
		return err
	}
	log.Info("registered; waiting for an assignment", "nats", opt.URL)
	// The control subject carries the assignment, the checkpoint to resume
	// from, relinks, checkpoint acks and the final stop, all in fragments.
	ctlMsgs := make(chan messages.Message, 16)
	life, endLife := context.WithCancel(context.Background())
	defer endLife()
	go readControl(life, ctl, ctlMsgs)
	wait := time.NewTimer(opt.JoinTimeout)
	defer wait.Stop()
	var a *messages.Assign
	for a == nil {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-wait.C:
			return fmt.Errorf("registered with the master at %s, but no RBM was assigned within %s", opt.URL, opt.JoinTimeout)
		case m := <-ctlMsgs:
			switch m := m.(type) {
			case *messages.Assign:
				a = m
			case *messages.Stop:
				log.Info("the master needs no more slaves", "reason", m.Reason)
				return nil
			}
		}
	}
	return trainAssigned(ctx, nc, ctlMsgs, a, opt)
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
			return nil, fatalError{fmt.Errorf("slave name %q is no user of its credentials: a secured NATS server lets a slave publish only on subjects named after its user", o.Name)}
		}
	}
	for _, c := range creds {
		if err := CheckName(c.User); err != nil {
			return nil, fatalError{fmt.Errorf("credentials: user %w", err)}
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

// fatalError marks a slave error that retrying cannot fix.
type fatalError struct{ error }

func (e fatalError) Unwrap() error { return e.error }

// clusterFull is the master's answer to a registration it needs no slave for.
const clusterFull = "the cluster is full"

// errClusterFull is returned when the master needs no more slaves now.
var errClusterFull = errors.New("the master needs no more slaves")

// errNoMaster is returned when no master answered a registration.
var errNoMaster = errors.New("no master answered")

// ServeSlave runs RunSlave again and again, so that one long-lived slave
// (a compose service, a slave on another host) trains an RBM for every
// master that comes. It returns when ctx is cancelled or on an error that
// retrying cannot fix: refused credentials, a name that fits no identity.
func ServeSlave(ctx context.Context, opt SlaveOptions) error {
	opt.defaults()
	log := opt.Logger
	if len(opt.Credentials) == 0 {
		if err := CheckName(opt.Name); err != nil {
			return fmt.Errorf("slave %w", err)
		}
	}
	for {
		err := RunSlave(ctx, opt)
		var fatal fatalError
		switch {
		case ctx.Err() != nil:
			return ctx.Err()
		case errors.As(err, &fatal), errors.Is(err, nats.ErrAuthorization):
			return err
		case err == nil:
			log.Info("run done; waiting for the next master")
			continue
		case errors.Is(err, errNoMaster):
			log.Info("no master yet; still waiting", "nats", opt.URL)
		case errors.Is(err, errClusterFull):
			// A spare: it stands by, and takes over a lost slave's RBM.
			log.Debug("standing by: the master has all the slaves it needs")
		default:
			log.Warn("not trained this time; retrying", "error", err)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(time.Second):
		}
	}
}

// register announces the slave until a master answers.
func register(ctx context.Context, nc *nats.Conn, opt SlaveOptions) error {
	host, _ := os.Hostname()
	b, err := messages.Encode(&messages.Register{
		Name: opt.Name, Host: host, CPUs: opt.Threads, PID: os.Getpid(), Protocol: messages.Version,
	})
	if err != nil {
		return err
	}
	deadline := time.Now().Add(opt.JoinTimeout)
	for {
		try, cancel := context.WithTimeout(ctx, time.Second)
		reply, err := nc.RequestWithContext(try, RegisterSubject, b)
		cancel()
		if err == nil {
			if len(reply.Data) > 0 {
				if string(reply.Data) == clusterFull {
					return errClusterFull
				}
				return fmt.Errorf("the master refused slave %s: %s", opt.Name, reply.Data)
			}
			return nil
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%w on %s within %s (is `master run` with cluster.nats_url = %s running?)", errNoMaster, opt.URL, opt.JoinTimeout, opt.URL)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// StageConfig turns an assignment into the stage it describes.
func StageConfig(a *messages.Assign) (pipeline.StageConfig, error) {
	units, err := rbm.ParseUnits(a.Units)
	if err != nil {
		return pipeline.StageConfig{}, err
	}
	middle, err := rbm.ParseMiddle(a.Middle)
	if err != nil {
		return pipeline.StageConfig{}, err
	}
	return pipeline.StageConfig{
		Index: a.RBM, Visible: a.Visible, Hidden: a.Hidden, Units: units,
		Epochs: a.Epochs, BatchSize: a.BatchSize, K: a.K, CDK: a.CDK, Middle: middle,
		LearningRate: [2]float64{a.LearningRate.Initial, a.LearningRate.Final},
		Momentum:     [2]float64{a.Momentum.Initial, a.Momentum.Final},
		WeightDecay:  a.WeightDecay, Seed: a.Seed,
	}, nil
}

// errDrained stops the stage at a window boundary when the slave is asked to
// stop: by a signal or by the master.
var errDrained = errors.New("stopping: checkpoint taken")

func trainAssigned(ctx context.Context, nc *nats.Conn, ctlMsgs <-chan messages.Message, a *messages.Assign, opt SlaveOptions) error {
	log := opt.Logger.With("rbm", a.RBM, "run", a.RunID)
	cfg, err := StageConfig(a)
	if err != nil {
		return fmt.Errorf("assignment: %w", err)
	}
	report := reportSubject(a.RunID, opt.Name)
	send := func(m messages.Message) error {
		parts, err := messages.EncodeParts(m, int(nc.MaxPayload()), uint64(time.Now().UnixNano()))
		if err != nil {
			return err
		}
		for _, p := range parts {
			if err := nc.Publish(report, p); err != nil && !disconnected(nc, err) {
				return err
			}
		}
		return nil
	}
	fail := func(err error) error {
		send(&messages.Error{RunID: a.RunID, RBM: a.RBM, Text: err.Error()})
		nc.Flush()
		return err
	}
	log.Info("assigned", "visible", a.Visible, "hidden", a.Hidden, "upstream", a.Upstream, "downstream", a.Downstream, "resume", a.Resume)

	life, endLife := context.WithCancel(context.Background())
	defer endLife()

	st := pipeline.NewStage(cfg)
	var start uint64
	if a.Resume {
		c, err := waitCheckpoint(ctx, ctlMsgs, a, cfg, opt.JoinTimeout)
		if err != nil {
			return fail(err)
		}
		if c.Windows > 0 {
			if st, err = pipeline.RestoreStage(cfg, stageStateOf(c)); err != nil {
				return fail(err)
			}
			start = uint64(c.Windows)
		}
		log.Info("resuming", "window", start, "batches", st.Stats().Batches)
	}

	in, err := NewReceiver(nc, a.RunID, a.Upstream, a.RBM-1, opt.Name, a.Visible, a.Credits)
	if err != nil {
		return fail(err)
	}
	in.Checkpointing(a.CheckpointEvery > 0)
	if a.Resume {
		in.StartAt(start)
	}
	var out *Sender
	var outSender pipeline.Sender
	if a.Downstream != "" {
		if out, err = NewSender(nc, a.RunID, opt.Name, a.RBM, a.Downstream); err != nil {
			return fail(err)
		}
		defer out.Stop()
		if a.Resume {
			out.StartAt(start)
		}
		outSender = out
	}

	var mu sync.Mutex
	latest := st.Stats()
	status := func() *messages.Status {
		mu.Lock()
		s := latest
		mu.Unlock()
		m := &messages.Status{
			RunID: a.RunID, RBM: a.RBM, Slave: opt.Name, State: wireState(s.State),
			Epoch: s.Epoch, Batches: s.Batches, ReconError: s.LastRecon, ReconErrors: s.Recon,
			BusySeconds: s.Busy.Seconds(), WaitSeconds: (s.WaitInput + s.WaitCredit).Seconds(),
			BytesIn: uint64(in.Stats().Bytes),
		}
		if out != nil {
			m.BytesOut = uint64(out.Stats().Bytes)
		}
		return m
	}

	// A signal or the master's stop drains the stage: it stops at the next
	// window boundary with a checkpoint, or after a grace period wherever it
	// waits.
	train, stopTraining := context.WithCancel(context.Background())
	defer stopTraining()
	var draining atomic.Bool
	var stopReason atomic.Value
	drain := func(reason error) {
		if draining.CompareAndSwap(false, true) {
			stopReason.Store(reason)
			if in.Waiting() {
				stopTraining() // idle between windows: stop now
			} else {
				time.AfterFunc(drainGrace, stopTraining)
			}
		}
	}
	acked := make(chan uint64, 16)
	finished := make(chan struct{})
	go func() {
		select {
		case <-ctx.Done():
			drain(ctx.Err())
		case <-life.Done():
		}
	}()
	go func() {
		for {
			var m messages.Message
			select {
			case m = <-ctlMsgs:
			case <-life.Done():
				return
			}
			switch m := m.(type) {
			case *messages.Stop:
				if m.RunID != "" && m.RunID != a.RunID {
					continue
				}
				select {
				case <-finished:
				default:
					close(finished)
				}
				drain(ErrStopped)
			case *messages.Assign:
				if m.RunID != a.RunID || m.RBM != a.RBM {
					continue
				}
				if m.Upstream != a.Upstream {
					log.Info("new upstream", "slave", m.Upstream)
					a.Upstream = m.Upstream
					in.Relink(m.Upstream)
				}
				if out != nil && m.Downstream != a.Downstream && m.Downstream != "" {
					log.Info("new downstream", "slave", m.Downstream)
					a.Downstream = m.Downstream
					out.Relink(m.Downstream)
				}
			case *messages.CheckpointAck:
				if m.RunID == a.RunID && m.RBM == a.RBM {
					in.SetDurable(m.Windows)
					select {
					case acked <- m.Windows:
					default:
					}
				}
			}
		}
	}()

	lastCheckpoint := -1
	checkpoint := func(st *pipeline.Stage) error {
		if st.Windows() == lastCheckpoint {
			return nil
		}
		lastCheckpoint = st.Windows()
		return send(checkpointOf(a.RunID, cfg, st.Snapshot()))
	}
	var lastBusy time.Duration
	hooks := pipeline.Hooks{
		Window: func(s pipeline.Stats) {
			mu.Lock()
			latest = s
			mu.Unlock()
			if opt.afterWindow != nil {
				opt.afterWindow(s.Busy-lastBusy, in)
				lastBusy = s.Busy
			}

		},
		AfterWindow: func(st *pipeline.Stage) error {
			if opt.WindowDelay > 0 {
				time.Sleep(opt.WindowDelay)
			}
			if c := a.CheckpointEvery; (c > 0 && st.Windows()%c == 0) || draining.Load() {
				if err := checkpoint(st); err != nil {
					return fmt.Errorf("send checkpoint: %w", err)
				}
			}
			if draining.Load() {
				return errDrained
			}
			return nil
		},
	}
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		t := time.NewTicker(opt.StatusEvery)
		defer t.Stop()
		for {
			select {
			case <-done:
				return
			case <-t.C:
				send(status())
			}
		}
	}()
	err = pipeline.RunStage(train, st, in, outSender, hooks)
	close(done)
	wg.Wait()
	if err != nil {
		if !draining.Load() {
			log.Error("training failed", "error", err)
			return fail(err)
		}
		// Stopped on request: leave a checkpoint if the stage stands at a
		// window whose middle result was handed on, and wait (briefly) for
		// the master to store it.
		if out == nil || out.Sent() == uint64(st.Windows()) {
			if err := checkpoint(st); err == nil {
				waitAck(acked, uint64(st.Windows()), drainGrace)
			}
		}
		reason := stopReason.Load().(error)
		send(&messages.Error{RunID: a.RunID, RBM: a.RBM, Text: fmt.Sprintf("%s%v (at window %d)", StoppedPrefix, reason, st.Windows())})
		nc.Flush()
		log.Warn("stopped", "reason", reason, "window", st.Windows())
		return reason
	}
	if ls := in.Stats(); ls.Rejected > 0 || ls.Duplicates > 0 || ls.Gaps > 0 {
		log.Warn("link anomalies", "rejected", ls.Rejected, "duplicates", ls.Duplicates, "gaps", ls.Gaps, "resends", ls.Resends)
	}
	if out != nil {
		if n := out.Stats().Resent; n > 0 {
			log.Info("windows sent again on request", "windows", n)
		}
	}
	s := st.Stats()
	r := st.RBM()
	final := status()
	w := &messages.Weights{
		RunID: a.RunID, RBM: a.RBM, Visible: r.Visible, Hidden: r.Hidden, W: r.W, A: r.A, B: r.B,
		ReconErrors: s.Recon, Batches: s.Batches, BusySeconds: s.Busy.Seconds(),
		WaitSeconds: (s.WaitInput + s.WaitCredit).Seconds(), BytesIn: final.BytesIn, BytesOut: final.BytesOut,
	}
	// Until the master says the run is complete, report the status (so that
	// the master knows the slave alive), resend the weights now and then (a
	// NATS restart may have dropped them), and keep the middle results for
	// a replacement of the slave above.
	t := time.NewTicker(opt.StatusEvery)
	defer t.Stop()
	deadline := time.After(opt.FinishTimeout)
	var weightsSent time.Time
	for {
		if err := send(final); err != nil {
			return err
		}
		if time.Since(weightsSent) >= weightsEvery {
			if err := send(w); err != nil {
				return fmt.Errorf("send weights: %w", err)
			}
			weightsSent = time.Now()
		}
		nc.Flush()
		select {
		case <-finished:
			log.Info("done", "batches", s.Batches, "busy_seconds", s.Busy.Seconds())
			return nil
		case <-ctx.Done():
			return nil // the weights are sent; nothing to checkpoint
		case <-deadline:
			log.Warn("the master did not confirm the end of the run; leaving", "waited", opt.FinishTimeout)
			return nil
		case <-t.C:
		}
	}
}

// StoppedPrefix starts the Error text of a slave that stopped on request
// (a signal, or the master), after leaving a checkpoint when it could: to
// the master it is a lost slave to replace, not a failed run.
const StoppedPrefix = "stopped: "

// drainGrace bounds how long a slave asked to stop waits for a window
// boundary, and then for its checkpoint to be stored.
const drainGrace = 3 * time.Second

// weightsEvery is how often a finished slave sends its weights again until
// the master confirms the end of the run.
const weightsEvery = 5 * time.Second

// readControl reassembles the messages of the control subject.
func readControl(ctx context.Context, ctl *nats.Subscription, out chan<- messages.Message) {
	reasm := messages.NewReassembler(messages.ReassemblerConfig{MaxTotal: 1 << 30, MaxBytes: 2 << 30})
	for {
		msg, err := ctl.NextMsgWithContext(ctx)
		if err != nil {
			return
		}
		payload, err := reasm.Add(msg.Data)
		if err != nil || payload == nil {
			continue
		}
		m, err := messages.Decode(payload)
		if err != nil {
			continue
		}
		select {
		case out <- m:
		case <-ctx.Done():
			return
		}
	}
}

// waitCheckpoint waits for the checkpoint a resumed slave starts from.
func waitCheckpoint(ctx context.Context, ctl <-chan messages.Message, a *messages.Assign, cfg pipeline.StageConfig, timeout time.Duration) (*messages.Checkpoint, error) {
	t := time.NewTimer(timeout)
	defer t.Stop()
	for {
		select {
		case m := <-ctl:
			switch m := m.(type) {
			case *messages.Checkpoint:
				if err := m.Check(a.RunID, a.RBM, cfg.Visible, cfg.Hidden); err != nil {
					return nil, fmt.Errorf("checkpoint to resume from: %w", err)
				}
				return m, nil
			case *messages.Stop:
				return nil, ErrStopped
			}
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-t.C:
			return nil, fmt.Errorf("assigned rbm %d to resume, but no checkpoint came within %s", a.RBM, timeout)
		}
	}
}

// waitAck waits up to d for the master to confirm the checkpoint at windows.
func waitAck(acked <-chan uint64, windows uint64, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	for {
		select {
		case w := <-acked:
			if w >= windows {
				return true
			}
		case <-t.C:
			return false
		}
	}
}

var (
	wireState  = protocol.WireState
	localState = protocol.LocalState
)
