package natsnet

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/nats-io/nats.go"

	"github.com/pipedbn/pipedbn/messages"
	"github.com/pipedbn/pipedbn/pipeline"
	"github.com/pipedbn/pipedbn/pipeline/protocol"
	"github.com/pipedbn/pipedbn/rbm"
)

// Plan is one pipelined pre-training run for the master to carry out.
type Plan struct {
	// RunID names the run on the wire (see CheckName).
	RunID string
	// Stages describe RBM_1..RBM_L; slave i trains Stages[i-1].
	Stages []pipeline.StageConfig
	// Data holds N rows of Stages[0].Visible values: RBM_1's input, which
	// the master streams to slave 1, shuffled every epoch by a source seeded
	// with ShuffleSeed.
	Data        []float32
	N           int
	ShuffleSeed uint64
	// Credits bounds the windows in flight on each link.
	Credits int
	// JoinTimeout bounds the wait for len(Stages) slaves to register, and
	// for a replacement of a lost one.
	JoinTimeout time.Duration
	// Hooks see every slave's progress, from its status reports.
	Hooks pipeline.Hooks
	// Joined, if set, is called for every slave that registers.
	Joined func(name, host string, cpus int)
	// LostAfter declares a slave lost when nothing came from it for this
	// long after its assignment: three missed status reports and a second
	// of slack. Default 4s.
	LostAfter time.Duration
	// CheckpointEvery is C: every slave checkpoints after every C windows
	// of K mini-batches, into Store. 0 turns checkpoints off: a lost slave
	// then fails the run.
	CheckpointEvery int
	// Store keeps the checkpoints; nil keeps them in the master's memory.
	Store Store
	// Resume restarts an interrupted run from the checkpoints in Store.
	Resume bool
	// Respawn, if set, starts a replacement for the lost slave of RBM rbm
	// (the embedded default restarts its local slave process); otherwise
	// the master waits for any new slave to register.
	Respawn func(rbm int, lost string) error
	// Lost and Recovered, if set, see each slave declared lost and each
	// replacement resuming its RBM.
	Lost      func(rbm int, slave string, silent time.Duration)
	Recovered func(Recovery)
	// Checkpointed, if set, sees every checkpoint once it is stored: the
	// encoded Checkpoint message (see messages.Decode).
	Checkpointed func(rbm, windows, batches int, checkpoint []byte)
}

// Recovery describes a lost slave and its replacement.
type Recovery = protocol.Recovery

// Trained is one RBM as its slave reported it at the end.
type Trained = protocol.Trained

// Master is the master's side of a cluster: it waits for slaves, assigns
// RBM_i to the i-th, streams the data to slave 1, stores the slaves'
// checkpoints, replaces lost slaves and collects the weights.
type Master struct {
	nc  *nats.Conn
	log hclog.Logger
}

// NewMaster returns a master talking over nc.
func NewMaster(nc *nats.Conn, log hclog.Logger) *Master {
	if log == nil {
		log = hclog.NewNullLogger()
	}
	return &Master{nc: nc, log: log}
}

type joined struct {
	name, host string
	cpus       int
}

// Run carries out the plan and returns the trained RBMs in order.
func (m *Master) Run(ctx context.Context, p Plan) ([]Trained, error) {
	if err := CheckName(p.RunID); err != nil {
		return nil, fmt.Errorf("run %w", err)
	}
	if p.Store == nil {
		p.Store = NewMemStore()
	}
	if p.JoinTimeout <= 0 {
		p.JoinTimeout = 60 * time.Second
	}
	L := len(p.Stages)
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	r := newRun(m, p, cancel)
	defer r.endLife()

	if p.Resume {
		done, err := r.loadStored(ctx)
		if err != nil {
			return nil, err
		}
		if done {
			m.log.Info("every RBM's weights are stored: pre-training is complete", "store", p.Store.Where())
			return r.trained(), nil
		}
	}
	if err := r.putState(ctx); err != nil {
		return nil, fmt.Errorf("store the run's state in %s: %w", p.Store.Where(), err)
	}

	// Reports first, so that nothing a slave says is missed.
	reports, err := m.nc.Subscribe(reportWildcard(p.RunID), r.onReport)
	if err != nil {
		return nil, err
	}
	defer reports.Unsubscribe()
	if err := reports.SetPendingLimits(-1, -1); err != nil {
		return nil, err
	}
	go r.storeCheckpoints(r.life)
	m.nc.SetDisconnectErrHandler(func(*nats.Conn, error) { r.disconnected() })
	m.nc.SetReconnectHandler(func(*nats.Conn) { r.reconnected() })
	defer func() {
		m.nc.SetDisconnectErrHandler(nil)
		m.nc.SetReconnectHandler(nil)
	}()

	reg, err := m.nc.Subscribe(RegisterSubject, r.onRegister)
	if err != nil {
		return nil, err
	}
	defer reg.Unsubscribe()
	slaves, err := r.waitForSlaves(ctx)
	if err != nil {
		return nil, err
	}
	defer func() {
		r.mu.Lock()
		names := r.names()
		r.mu.Unlock()
		reason := "the run is complete"
		if ctx.Err() != nil {
			reason = "the master stopped the run"
		}
		m.stop(names, p.RunID, reason)
	}()

	// Where each RBM starts: the beginning, or a chain of checkpoints in
	// which no producer resumes after its consumer.
	starts := make([]*messages.Checkpoint, L+1)
	if p.Resume {
		if starts, err = r.resumePoints(ctx); err != nil {
			return nil, err
		}
	}
	r.mu.Lock()
	for i, s := range slaves[:L] {
		r.slaves[i+1] = s.name
		r.seen[i+1] = time.Now()
	}
	r.mu.Unlock()
	for i := 1; i <= L; i++ {
		if err := r.assign(i, p.Resume, starts[i]); err != nil {
			return nil, err
		}
	}
	for _, s := range slaves[L:] {
		m.stop([]string{s.name}, "", "all RBMs are assigned")
	}
	go r.watch(ctx)

	// Stream the data to slave 1 while the slaves report.
	feedErr := make(chan error, 1)
	first := 0
	if starts[1] != nil {
		first = starts[1].Windows
	}
	sender, err := NewSender(m.nc, p.RunID, MasterName, 0, slaves[0].name)
	if err != nil {
		return nil, err
	}
	defer sender.Stop()
	sender.StartAt(uint64(first))
	r.mu.Lock()
	r.feed = sender
	r.mu.Unlock()
	go func() {
		c := p.Stages[0]
		src := pipeline.NewSource(p.Data, p.N, c.Visible, c.BatchSize, c.K, p.ShuffleSeed)
		err := pipeline.FeedFrom(ctx, src, c.Epochs, first, sender)
		if err != nil && ctx.Err() == nil {
			err = fmt.Errorf("feed the data to rbm 1: %w", err)
		}
		feedErr <- err
	}()

	select {
	case <-r.done:
	case <-ctx.Done():
		if r.err() == nil {
			r.interrupted()
		}
	}
	if err := r.err(); err != nil {
		return nil, err
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if err := <-feedErr; err != nil {
		return nil, err
	}
	r.flushStore(30 * time.Second)
	return r.trained(), nil
}

// flushStore waits up to d for the queued checkpoints and weights to be
// stored.
func (r *run) flushStore(d time.Duration) {
	stored := make(chan struct{})
	go func() { r.pending.Wait(); close(stored) }()
	select {
	case <-stored:
	case <-time.After(d):
		r.m.log.Warn("checkpoints or weights still unstored; leaving", "waited", d, "store", r.p.Store.Where())
	}
}

func assign(p Plan, i int, up, down string) *messages.Assign {
	c := p.Stages[i]
	return &messages.Assign{
		RunID: p.RunID, RBM: c.Index, RBMs: len(p.Stages), Visible: c.Visible, Hidden: c.Hidden,
		Units: c.Units.String(), Epochs: c.Epochs, BatchSize: c.BatchSize, K: c.K, CDK: c.CDK,
		Middle:       c.Middle.String(),
		LearningRate: messages.Schedule{Initial: c.LearningRate[0], Final: c.LearningRate[1]},
		Momentum:     messages.Schedule{Initial: c.Momentum[0], Final: c.Momentum[1]},
		WeightDecay:  c.WeightDecay, Seed: c.Seed,
		BatchesPerEpoch: pipeline.BatchesPerEpoch(p.N, c.BatchSize), RowsPerEpoch: p.N,
		Upstream: up, Downstream: down, Credits: p.Credits, CheckpointEvery: p.CheckpointEvery,
	}
}

func (m *Master) stop(names []string, runID, reason string) {
	for _, n := range names {
		m.sendCtl(n, &messages.Stop{RunID: runID, Reason: reason})
	}
	m.nc.Flush()
}

// sendCtl sends m to a slave's control subject, in fragments.
func (m *Master) sendCtl(slave string, msg messages.Message) error {
	parts, err := messages.EncodeParts(msg, int(m.nc.MaxPayload()), uint64(time.Now().UnixNano()))
	if err != nil {
		return err
	}
	for _, b := range parts {
		if err := m.nc.Publish(ctlSubject(slave), b); err != nil && !disconnected(m.nc, err) {
			return err
		}
	}
	return nil
}

// ErrSlaveLost is the error of a run whose slave stopped reporting and was
// not replaced.
var ErrSlaveLost = errors.New("slave lost")

// vacancy is an RBM whose slave was lost, waiting for a replacement.
type vacancy struct {
	lost        string
	since       time.Time
	silent      time.Duration
	lostAtBatch int
}

// storeJob is a checkpoint or final weights to put in the store.
type storeJob struct {
	rbm, windows, batches int
	weights               bool
	payload               []byte
}

// run is the master's state during one Run.
type run struct {
	m       *Master
	p       Plan
	L       int
	cancel  context.CancelFunc
	life    context.Context // ends when Run returns
	endLife context.CancelFunc
	reasm   *messages.Reassembler
	queue   chan storeJob

	mu       sync.Mutex
	running  bool
	joined   []joined
	enough   chan struct{}
	slaves   map[int]string    // the current slave of each RBM
	seen     map[int]time.Time // its last report
	batches  map[int]int       // the mini-batches it last reported
	vacant   map[int]*vacancy
	stored   map[int]map[int]int // each RBM's stored checkpoints: windows -> batches
	weights  map[int]*messages.Weights
	epochs   map[int]int
	feed     *Sender
	offline  bool // the master's own connection is down
	stopping bool // the master is stopping the run
	gone     map[int]bool
	pending  sync.WaitGroup // checkpoints and weights queued, not yet stored
	failure  error
	done     chan struct{}
}

func newRun(m *Master, p Plan, cancel context.CancelFunc) *run {
	life, endLife := context.WithCancel(context.Background())
	return &run{
		life: life, endLife: endLife,
		m: m, p: p, L: len(p.Stages), cancel: cancel,
		reasm: messages.NewReassembler(messages.ReassemblerConfig{MaxTotal: 1 << 30, MaxBytes: 2 << 30}),
		queue: make(chan storeJob, 64), enough: make(chan struct{}),
		slaves: map[int]string{}, seen: map[int]time.Time{}, batches: map[int]int{},
		vacant: map[int]*vacancy{}, stored: map[int]map[int]int{},
		weights: map[int]*messages.Weights{}, epochs: map[int]int{}, done: make(chan struct{}),
		gone: map[int]bool{},
	}
}

func (r *run) fail(err error) {
	r.mu.Lock()
	if r.failure == nil {
		r.failure = err
	}
	r.mu.Unlock()
	r.cancel()
}

func (r *run) err() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.failure
}

// names returns the current slaves; r.mu held.
func (r *run) names() []string {
	var names []string
	for i := 1; i <= r.L; i++ {
		if n, ok := r.slaves[i]; ok {
			names = append(names, n)
		}
	}
	return names
}

// onRegister answers registrations: until L slaves have joined (Lens's
// waitForClients), then from replacements of lost slaves.
func (r *run) onRegister(msg *nats.Msg) {
	mm, err := messages.Decode(msg.Data)
	reg, ok := mm.(*messages.Register)
	if err != nil || !ok {
		msg.Respond([]byte("not a registration"))
		return
	}
	if reg.Protocol != messages.Version {
		msg.Respond([]byte(fmt.Sprintf("protocol version %d, the master speaks %d", reg.Protocol, messages.Version)))
		return
	}
	if err := CheckName(reg.Name); err != nil {
		msg.Respond([]byte(err.Error()))
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, s := range r.joined {
		if s.name == reg.Name && !r.isVacated(reg.Name) {
			msg.Respond(nil) // a repeated registration
			return
		}
	}
	if r.running {
		rbm := 0
		for i := 1; i <= r.L; i++ {
			if r.vacant[i] != nil && (rbm == 0 || r.vacant[i].lost == reg.Name) {
				rbm = i
			}
		}
		if rbm == 0 {
			msg.Respond([]byte(clusterFull))
			return
		}
		msg.Respond(nil)
		r.joined = append(r.joined, joined{reg.Name, reg.Host, reg.CPUs})
		r.m.log.Info("replacement joined", "slave", reg.Name, "host", reg.Host, "rbm", rbm)
		if r.p.Joined != nil {
			r.p.Joined(reg.Name, reg.Host, reg.CPUs)
		}
		v := r.vacant[rbm]
		delete(r.vacant, rbm)
		r.slaves[rbm] = reg.Name
		r.seen[rbm] = time.Now()
		go r.replace(rbm, reg.Name, v)
		return
	}
	if len(r.joined) >= r.L {
		msg.Respond([]byte(clusterFull))
		return
	}
	r.joined = append(r.joined, joined{reg.Name, reg.Host, reg.CPUs})
	msg.Respond(nil)
	r.m.log.Info("slave joined", "slave", reg.Name, "host", reg.Host, "cpus", reg.CPUs, "joined", len(r.joined), "want", r.L)
	if r.p.Joined != nil {
		r.p.Joined(reg.Name, reg.Host, reg.CPUs)
	}
	if len(r.joined) == r.L {
		close(r.enough)
	}
}

// isVacated reports whether name is the lost slave of a vacancy; r.mu held.
func (r *run) isVacated(name string) bool {
	for _, v := range r.vacant {
		if v.lost == name {
			return true
		}
	}
	return false
}

// waitForSlaves waits until L slaves have joined, or fails after the join
// timeout naming who came.
func (r *run) waitForSlaves(ctx context.Context) ([]joined, error) {
	t := time.NewTimer(r.p.JoinTimeout)
	defer t.Stop()
	select {
	case <-r.enough:
	case <-ctx.Done():
		return nil, ctx.Err()
	case <-t.C:
		r.mu.Lock()
		defer r.mu.Unlock()
		var names []string
		for _, s := range r.joined {
			names = append(names, s.name)
		}
		return nil, fmt.Errorf("cluster.join_timeout = %s: %d of %d slaves joined (%s); start more with `slave --nats %s`",
			r.p.JoinTimeout, len(r.joined), r.L, strings.Join(names, ", "), r.m.nc.ConnectedUrl())
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.running = true
	return append([]joined(nil), r.joined...), nil
}

// neighbours returns the producer and consumer names of RBM i; r.mu held.
func (r *run) neighbours(i int) (up, down string) {
	up = MasterName
	if i > 1 {
		up = r.slaves[i-1]
	}
	if i < r.L {
		down = r.slaves[i+1]
	}
	return up, down
}

// assign sends RBM i to its slave, with the checkpoint to resume from when
// resume is set (nil: from the beginning).
func (r *run) assign(i int, resume bool, from *messages.Checkpoint) error {
	r.mu.Lock()
	name := r.slaves[i]
	up, down := r.neighbours(i)
	r.mu.Unlock()
	a := assign(r.p, i-1, up, down)
	a.Resume = resume
	if err := r.m.sendCtl(name, a); err != nil {
		return err
	}
	if resume {
		if from == nil {
			from = &messages.Checkpoint{RunID: r.p.RunID, RBM: i}
		}
		if err := r.m.sendCtl(name, from); err != nil {
			return err
		}
	}
	r.m.log.Info("assigned", "slave", name, "rbm", i, "size", fmt.Sprintf("%dx%d", a.Visible, a.Hidden), "from_window", from.GetWindows())
	return nil
}

// replace hands RBM i, whose slave was lost, to the slave name: it resumes
// from the RBM's latest stored checkpoint, and its neighbours relink to it.
func (r *run) replace(i int, name string, v *vacancy) {
	ctx := context.Background()
	r.mu.Lock()
	latest, batches := -1, 0
	for w, b := range r.stored[i] {
		if w > latest {
			latest, batches = w, b
		}
	}
	r.mu.Unlock()
	var from *messages.Checkpoint
	if latest >= 0 {
		c, err := r.getCheckpoint(ctx, i, latest)
		if err != nil {
			r.fail(fmt.Errorf("rbm %d: read its checkpoint at window %d from %s: %w", i, latest, r.p.Store.Where(), err))
			return
		}
		from = c
	} else {
		latest = 0
	}
	if err := r.assign(i, true, from); err != nil {
		r.fail(fmt.Errorf("rbm %d: assign to replacement %s: %w", i, name, err))
		return
	}
	if name != v.lost {
		r.mu.Lock()
		feed := r.feed
		var relinks []struct {
			slave string
			a     *messages.Assign
		}
		if i > 1 {
			up, _ := r.neighbours(i - 1)
			relinks = append(relinks, struct {
				slave string
				a     *messages.Assign
			}{r.slaves[i-1], assign(r.p, i-2, up, name)})
		}
		if i < r.L {
			_, down := r.neighbours(i + 1)
			relinks = append(relinks, struct {
				slave string
				a     *messages.Assign
			}{r.slaves[i+1], assign(r.p, i, name, down)})
		}
		r.mu.Unlock()
		if i == 1 && feed != nil {
			if err := feed.Relink(name); err != nil {
				r.fail(err)
				return
			}
		}
		for _, rl := range relinks {
			if err := r.m.sendCtl(rl.slave, rl.a); err != nil {
				r.fail(err)
				return
			}
		}
	}
	rec := Recovery{
		RBM: i, Lost: v.lost, Replacement: name, Silent: v.silent, LostAtBatch: v.lostAtBatch,
		ResumedAtBatch: batches, ResumedAtWindow: latest, Redone: v.lostAtBatch - batches,
	}
	r.m.log.Warn("replacement resumes", "rbm", i, "lost", v.lost, "slave", name, "window", latest, "redone_batches", rec.Redone)
	if r.p.Recovered != nil {
		r.p.Recovered(rec)
	}
}

func (r *run) getCheckpoint(ctx context.Context, i, windows int) (*messages.Checkpoint, error) {
	b, err := r.p.Store.Get(ctx, checkpointName(i, windows))
	if err != nil {
		return nil, err
	}
	m, err := messages.Decode(b)
	if err != nil {
		return nil, err
	}
	c, ok := m.(*messages.Checkpoint)
	if !ok {
		return nil, fmt.Errorf("%s holds a %s", checkpointName(i, windows), m.Kind())
	}
	st := r.p.Stages[i-1]
	if err := c.Check(r.p.RunID, i, st.Visible, st.Hidden); err != nil {
		return nil, err
	}
	return c, nil
}

// onReport takes a slave's status, checkpoint, weights or error. Reports
// count only from the current slave of their RBM, named by the subject.
func (r *run) onReport(msg *nats.Msg) {
	payload, err := r.reasm.Add(msg.Data)
	if err != nil || payload == nil {
		return
	}
	m, err := messages.Decode(payload)
	if err != nil {
		return
	}
	slave := msg.Subject[strings.LastIndexByte(msg.Subject, '.')+1:]
	var runID string
	var i int
	switch m := m.(type) {
	case *messages.Status:
		runID, i = m.RunID, m.RBM
	case *messages.Weights:
		runID, i = m.RunID, m.RBM
	case *messages.Error:
		runID, i = m.RunID, m.RBM
	case *messages.Checkpoint:
		runID, i = m.RunID, m.RBM
	default:
		return
	}
	if runID != r.p.RunID || i < 1 || i > r.L {
		return
	}
	r.mu.Lock()
	if r.slaves[i] != slave || r.vacant[i] != nil {
		r.mu.Unlock()
		return // a lost slave's late words, or a stranger's
	}
	r.seen[i] = time.Now()
	r.mu.Unlock()
	st := r.p.Stages[i-1]
	switch m := m.(type) {
	case *messages.Status:
		s := pipeline.Stats{
			Index: m.RBM, Epoch: m.Epoch, Batches: m.Batches, Recon: m.ReconErrors, LastRecon: m.ReconError,
			Rows: m.Batches * st.BatchSize, Busy: seconds(m.BusySeconds),
			WaitInput: seconds(m.WaitSeconds), State: localState(m.State), Worker: m.Slave,
		}
		if r.p.Hooks.Window != nil {
			r.p.Hooks.Window(s)
		}
		r.mu.Lock()
		r.batches[i] = m.Batches
		newEpoch := len(m.ReconErrors) > r.epochs[i]
		r.epochs[i] = len(m.ReconErrors)
		r.mu.Unlock()
		if newEpoch && r.p.Hooks.Epoch != nil {
			r.p.Hooks.Epoch(s)
		}
	case *messages.Checkpoint:
		if err := m.Check(r.p.RunID, i, st.Visible, st.Hidden); err != nil {
			r.m.log.Warn("bad checkpoint", "slave", slave, "rbm", i, "error", err)
			return
		}
		r.enqueue(storeJob{rbm: i, windows: m.Windows, batches: m.Batches, payload: payload})
	case *messages.Weights:
		if err := m.Check(r.p.RunID, i, st.Visible, st.Hidden); err != nil {
			r.fail(fmt.Errorf("rbm %d: slave %s sent bad weights: %w", i, slave, err))
			return
		}
		r.mu.Lock()
		_, dup := r.weights[i]
		r.weights[i] = m
		complete := !dup && len(r.weights) == r.L
		r.mu.Unlock()
		if !dup {
			r.enqueue(storeJob{rbm: i, weights: true, payload: payload})
		}
		if complete {
			close(r.done)
		}
	case *messages.Error:
		if strings.HasPrefix(m.Text, StoppedPrefix) {
			r.left(i, slave, m.Text)
			return
		}
		r.fail(fmt.Errorf("rbm %d on slave %s: %s", i, slave, m.Text))
	}
}

// left notes that the slave of RBM i stopped on request: when the master
// is stopping the run it is one fewer to wait for; otherwise (the slave was
// told to stop by its own signal) it is lost, at once.
func (r *run) left(i int, slave, text string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.gone[i] = true
	if r.stopping {
		return
	}
	r.m.log.Warn("slave stopped", "slave", slave, "rbm", i, "said", text)
	// Let the watchdog declare it lost at its next tick.
	r.seen[i] = time.Time{}
}

// interrupted stops a run the master itself was told to stop (SIGINT):
// every slave leaves a checkpoint and stops, and the master stores those
// checkpoints before it returns, so that `master run` on the same output
// resumes the run.
func (r *run) interrupted() {
	r.mu.Lock()
	r.stopping = true
	names := r.names()
	r.mu.Unlock()
	for _, n := range names {
		r.m.sendCtl(n, &messages.Stop{RunID: r.p.RunID, Reason: "the master was interrupted"})
	}
	r.m.nc.Flush()
	deadline := time.Now().Add(drainGrace + 2*time.Second)
	for time.Now().Before(deadline) {
		r.mu.Lock()
		n := 0
		for i := 1; i <= r.L; i++ {
			if _, ok := r.weights[i]; ok || r.gone[i] {
				n++
			}
		}
		r.mu.Unlock()
		if n == r.L {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	r.flushStore(30 * time.Second)
}

// storeCheckpoints puts checkpoints and weights in the store, retrying
// while the store is unreachable, acknowledges each checkpoint to its slave
// and drops the checkpoints no resume can need any more.
func (r *run) storeCheckpoints(ctx context.Context) {
	for {
		var job storeJob
		select {
		case job = <-r.queue:
		case <-ctx.Done():
			return
		}
		r.store(ctx, job)
	}
}

// store puts one job in the store; see storeCheckpoints.
func (r *run) store(ctx context.Context, job storeJob) {
	defer r.pending.Done()
	name := checkpointName(job.rbm, job.windows)
	if job.weights {
		name = weightsName(job.rbm)
	}
	for {
		put, cancel := context.WithTimeout(ctx, 30*time.Second)
		err := r.p.Store.Put(put, name, job.payload)
		cancel()
		if err == nil {
			break
		}
		if ctx.Err() != nil {
			return
		}
		r.m.log.Warn("cannot store; retrying", "object", name, "store", r.p.Store.Where(), "error", err)
		select {
		case <-time.After(time.Second):
		case <-ctx.Done():
			return
		}
	}
	if job.weights {
		return
	}
	r.mu.Lock()
	if r.stored[job.rbm] == nil {
		r.stored[job.rbm] = map[int]int{}
	}
	r.stored[job.rbm][job.windows] = job.batches
	slave := r.slaves[job.rbm]
	r.mu.Unlock()
	r.m.sendCtl(slave, &messages.CheckpointAck{RunID: r.p.RunID, RBM: job.rbm, Windows: uint64(job.windows)})
	if r.p.Checkpointed != nil {
		r.p.Checkpointed(job.rbm, job.windows, job.batches, job.payload)
	}
	r.collect(ctx, job.rbm)
	r.collect(ctx, job.rbm-1)
}

// enqueue hands a job to the store worker, unless the run is over.
func (r *run) enqueue(job storeJob) {
	r.pending.Add(1)
	select {
	case r.queue <- job:
	case <-r.life.Done():
		r.pending.Done()
	}
}

// collect deletes RBM i's checkpoints that no resume can need: a lost
// slave resumes from its latest, and after a restart of the master RBM i
// resumes from its newest checkpoint not after RBM i+1's latest.
func (r *run) collect(ctx context.Context, i int) {
	if i < 1 {
		return
	}
	r.mu.Lock()
	limit := latestOf(r.stored[i])
	if i < r.L {
		limit = latestOf(r.stored[i+1])
	}
	keep := -1
	for w := range r.stored[i] {
		if w <= limit && w > keep {
			keep = w
		}
	}
	var drop []int
	for w := range r.stored[i] {
		if w < keep {
			drop = append(drop, w)
			delete(r.stored[i], w)
		}
	}
	r.mu.Unlock()
	for _, w := range drop {
		r.p.Store.Delete(ctx, checkpointName(i, w))
	}
}

func latestOf(ws map[int]int) int {
	latest := -1
	for w := range ws {
		latest = max(latest, w)
	}
	return latest
}

// loadStored reads what an interrupted run left in the store, and reports
// whether every RBM's weights are there.
func (r *run) loadStored(ctx context.Context) (bool, error) {
	names, err := r.p.Store.List(ctx)
	if err != nil {
		return false, fmt.Errorf("list %s: %w", r.p.Store.Where(), err)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, n := range names {
		if i, w, ok := parseCheckpointName(n); ok && i <= r.L {
			if r.stored[i] == nil {
				r.stored[i] = map[int]int{}
			}
			r.stored[i][w] = 0
		}
	}
	for i := 1; i <= r.L; i++ {
		b, err := r.p.Store.Get(ctx, weightsName(i))
		if errors.Is(err, ErrNotStored) {
			continue
		}
		if err != nil {
			return false, err
		}
		m, err := messages.Decode(b)
		w, ok := m.(*messages.Weights)
		if err != nil || !ok {
			return false, fmt.Errorf("%s in %s: not weights: %v", weightsName(i), r.p.Store.Where(), err)
		}
		st := r.p.Stages[i-1]
		if err := w.Check(r.p.RunID, i, st.Visible, st.Hidden); err != nil {
			return false, fmt.Errorf("%s in %s: %w", weightsName(i), r.p.Store.Where(), err)
		}
		r.weights[i] = w
	}
	return len(r.weights) == r.L, nil
}

// resumePoints picks the checkpoint each RBM resumes from after a restart
// of the master: the top RBM's latest, and below it each RBM's newest one
// not after its consumer's, so that every window a consumer still needs is
// produced again. The windows RBM_1 needs the master deals again itself.
func (r *run) resumePoints(ctx context.Context) ([]*messages.Checkpoint, error) {
	starts := make([]*messages.Checkpoint, r.L+1)
	r.mu.Lock()
	limit := latestOf(r.stored[r.L])
	picks := make([]int, r.L+1)
	for i := r.L; i >= 1; i-- {
		pick := -1
		for w := range r.stored[i] {
			if w <= limit && w > pick {
				pick = w
			}
		}
		picks[i] = pick
		limit = max(pick, 0)
	}
	r.mu.Unlock()
	for i := 1; i <= r.L; i++ {
		if picks[i] <= 0 {
			continue
		}
		c, err := r.getCheckpoint(ctx, i, picks[i])
		if err != nil {
			return nil, fmt.Errorf("rbm %d: checkpoint at window %d in %s: %w", i, picks[i], r.p.Store.Where(), err)
		}
		starts[i] = c
		r.m.log.Info("resuming", "rbm", i, "window", c.Windows, "batches", c.Batches)
	}
	return starts, nil
}

// putState stores the master's own state: what run this is.
func (r *run) putState(ctx context.Context) error {
	b, err := json.Marshal(map[string]any{
		"run_id": r.p.RunID, "rbms": r.L, "checkpoint_every": r.p.CheckpointEvery,
		"k": r.p.Stages[0].K, "epochs": r.p.Stages[0].Epochs, "rows": r.p.N, "resumed": r.p.Resume,
		"saved": time.Now().UTC().Format(time.RFC3339),
	})
	if err != nil {
		return err
	}
	put, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	return r.p.Store.Put(put, "master", b)
}

func (r *run) disconnected() {
	r.mu.Lock()
	r.offline = true
	r.mu.Unlock()
}

// reconnected restarts every slave's silence count: nothing could reach
// the master while its own connection was down.
func (r *run) reconnected() {
	r.mu.Lock()
	r.offline = false
	now := time.Now()
	for i := range r.seen {
		r.seen[i] = now
	}
	r.mu.Unlock()
}

// watch declares a slave lost when it stays silent for LostAfter (it
// crashed, hangs, or lost its connection), and waits for its replacement:
// with checkpoints off, or when none comes within the join timeout, the run
// fails.
func (r *run) watch(ctx context.Context) {
	lostAfter := r.p.LostAfter
	if lostAfter <= 0 {
		lostAfter = 4 * time.Second
	}
	t := time.NewTicker(lostAfter / 16)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-r.done:
			return
		case now := <-t.C:
			r.mu.Lock()
			if r.offline {
				r.mu.Unlock()
				continue
			}
			var lost []int
			var failure error
			for i, at := range r.seen {
				v := r.vacant[i]
				switch {
				case v != nil && now.Sub(v.since) > r.p.JoinTimeout:
					failure = fmt.Errorf("%w: slave %s (rbm %d) was lost %s ago and no replacement joined (cluster.join_timeout = %s)",
						ErrSlaveLost, v.lost, i, now.Sub(v.since).Round(time.Second), r.p.JoinTimeout)
				case v == nil && now.Sub(at) > lostAfter:
					if r.p.CheckpointEvery <= 0 {
						failure = fmt.Errorf("%w: slave %s (rbm %d) sent nothing for %s, and without checkpoints (reliability.checkpoint_every = 0) no replacement can take over",
							ErrSlaveLost, r.slaves[i], i, now.Sub(at).Round(100*time.Millisecond))
						break
					}
					// Its last word: a status report, or a checkpoint sent after it.
					lostAt := r.batches[i]
					if w := latestOf(r.stored[i]); w >= 0 {
						lostAt = max(lostAt, r.stored[i][w])
					}
					r.vacant[i] = &vacancy{lost: r.slaves[i], since: now, silent: now.Sub(at), lostAtBatch: lostAt}
					lost = append(lost, i)
				}
			}
			vac := map[int]vacancy{}
			for _, i := range lost {
				vac[i] = *r.vacant[i]
			}
			r.mu.Unlock()
			if failure != nil {
				r.fail(failure)
				return
			}
			for _, i := range lost {
				v := vac[i]
				r.m.log.Warn("slave lost; waiting for a replacement", "slave", v.lost, "rbm", i, "silent", v.silent.Round(100*time.Millisecond))
				if r.p.Lost != nil {
					r.p.Lost(i, v.lost, v.silent)
				}
				// If it is only hung, it must not come back to train.
				r.m.sendCtl(v.lost, &messages.Stop{RunID: r.p.RunID, Reason: "declared lost"})
				if r.p.Respawn != nil {
					go func() {
						if err := r.p.Respawn(i, v.lost); err != nil {
							r.fail(fmt.Errorf("restart the slave of rbm %d: %w", i, err))
						}
					}()
				}
			}
		}
	}
}

func (r *run) trained() []Trained {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []Trained
	for i := 1; i <= r.L; i++ {
		w := r.weights[i]
		cfg := r.p.Stages[i-1]
		rb := &rbm.RBM{Visible: w.Visible, Hidden: w.Hidden, Units: cfg.Units, W: w.W, A: w.A, B: w.B}
		out = append(out, Trained{
			Slave: r.slaves[i], RBM: rb, BytesIn: int64(w.BytesIn), BytesOut: int64(w.BytesOut),
			Stats: pipeline.Stats{
				Index: i, Epoch: cfg.Epochs - 1, Batches: w.Batches, Recon: w.ReconErrors,
				Busy: seconds(w.BusySeconds), WaitInput: seconds(w.WaitSeconds), State: pipeline.Done, Worker: r.slaves[i],
			},
		})
	}
	return out
}
