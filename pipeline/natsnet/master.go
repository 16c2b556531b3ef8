package natsnet

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/nats-io/nats.go"

	"github.com/pipedbn/pipedbn/messages"
	"github.com/pipedbn/pipedbn/pipeline"
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
	// JoinTimeout bounds the wait for len(Stages) slaves to register.
	JoinTimeout time.Duration
	// Hooks see every slave's progress, from its status reports.
	Hooks pipeline.Hooks
	// Joined, if set, is called for every slave that registers.
	Joined func(name, host string, cpus int)
	// LostAfter declares a slave lost when nothing came from it for this
	// long after its assignment: three missed status reports and a second
	// of slack. Default 4s.
	LostAfter time.Duration
}

// Trained is one RBM as its slave reported it at the end.
type Trained struct {
	Slave string
	RBM   *rbm.RBM
	Stats pipeline.Stats
	// BytesIn and BytesOut are the bytes of windows the slave received and
	// sent.
	BytesIn, BytesOut int64
}

// Master is the master's side of a cluster: it waits for slaves, assigns
// RBM_i to the i-th, streams the data to slave 1 and collects the weights.
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
	L := len(p.Stages)
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()

	// Reports first, so that nothing a slave says is missed.
	col := newCollector(p, cancel)
	reports, err := m.nc.Subscribe(reportWildcard(p.RunID), col.onReport)
	if err != nil {
		return nil, err
	}
	defer reports.Unsubscribe()
	if err := reports.SetPendingLimits(-1, -1); err != nil {
		return nil, err
	}

	slaves, err := m.waitForSlaves(ctx, L, p)
	if err != nil {
		return nil, err
	}
	names := make([]string, L)
	col.mu.Lock()
	for i, s := range slaves[:L] {
		names[i] = s.name
		col.slaves[i+1] = s.name
		col.seen[i+1] = time.Now()
	}
	col.mu.Unlock()
	go col.watch(ctx, p.LostAfter)
	defer func() {
		if ctx.Err() != nil {
			m.stop(names, p.RunID, "the master stopped the run")
		}
	}()
	for i, s := range slaves[:L] {
		up, down := MasterName, ""
		if i > 0 {
			up = names[i-1]
		}
		if i+1 < L {
			down = names[i+1]
		}
		a := assign(p, i, up, down)
		b, err := messages.Encode(a)
		if err != nil {
			return nil, err
		}
		if err := m.nc.Publish(ctlSubject(s.name), b); err != nil {
			return nil, err
		}
		m.log.Info("assigned", "slave", s.name, "rbm", i+1, "size", fmt.Sprintf("%dx%d", a.Visible, a.Hidden))
	}
	for _, s := range slaves[L:] {
		m.stop([]string{s.name}, "", "all RBMs are assigned")
	}

	// Stream the data to slave 1 while the slaves report.
	feedErr := make(chan error, 1)
	go func() {
		sender, err := NewSender(m.nc, p.RunID, MasterName, 0, names[0])
		if err != nil {
			feedErr <- err
			return
		}
		c := p.Stages[0]
		src := pipeline.NewSource(p.Data, p.N, c.Visible, c.BatchSize, c.K, p.ShuffleSeed)
		err = pipeline.Feed(ctx, src, c.Epochs, sender)
		if err != nil && ctx.Err() == nil {
			err = fmt.Errorf("feed the data to %s: %w", names[0], err)
		}
		feedErr <- err
	}()

	select {
	case <-col.done:
	case <-ctx.Done():
	}
	if err := col.err(); err != nil {
		return nil, err
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if err := <-feedErr; err != nil {
		return nil, err
	}
	return col.trained(), nil
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
		Upstream: up, Downstream: down, Credits: p.Credits,
	}
}

// waitForSlaves answers registrations until n slaves have joined (Lens's
// waitForClients), or fails after the join timeout naming who came.
func (m *Master) waitForSlaves(ctx context.Context, n int, p Plan) ([]joined, error) {
	var (
		mu     sync.Mutex
		slaves []joined
		enough = make(chan struct{})
	)
	sub, err := m.nc.Subscribe(RegisterSubject, func(msg *nats.Msg) {
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
		mu.Lock()
		defer mu.Unlock()
		for _, s := range slaves {
			if s.name == reg.Name {
				msg.Respond(nil) // a repeated registration
				return
			}
		}
		if len(slaves) >= n {
			msg.Respond([]byte("the cluster is full"))
			return
		}
		slaves = append(slaves, joined{reg.Name, reg.Host, reg.CPUs})
		msg.Respond(nil)
		m.log.Info("slave joined", "slave", reg.Name, "host", reg.Host, "cpus", reg.CPUs, "joined", len(slaves), "want", n)
		if p.Joined != nil {
			p.Joined(reg.Name, reg.Host, reg.CPUs)
		}
		if len(slaves) == n {
			close(enough)
		}
	})
	if err != nil {
		return nil, err
	}
	defer sub.Unsubscribe()
	timeout := p.JoinTimeout
	if timeout <= 0 {
		timeout = 60 * time.Second
	}
	t := time.NewTimer(timeout)
	defer t.Stop()
	select {
	case <-enough:
	case <-ctx.Done():
		return nil, ctx.Err()
	case <-t.C:
		mu.Lock()
		defer mu.Unlock()
		var names []string
		for _, s := range slaves {
			names = append(names, s.name)
		}
		return nil, fmt.Errorf("cluster.join_timeout = %s: %d of %d slaves joined (%s); start more with `slave --nats %s`",
			timeout, len(slaves), n, strings.Join(names, ", "), m.nc.ConnectedUrl())
	}
	mu.Lock()
	defer mu.Unlock()
	return append([]joined(nil), slaves...), nil
}

func (m *Master) stop(names []string, runID, reason string) {
	b, err := messages.Encode(&messages.Stop{RunID: runID, Reason: reason})
	if err != nil {
		return
	}
	for _, n := range names {
		m.nc.Publish(ctlSubject(n), b)
	}
	m.nc.Flush()
}

// collector gathers the slaves' reports.
type collector struct {
	p      Plan
	cancel context.CancelFunc
	reasm  *messages.Reassembler
	slaves map[int]string

	mu      sync.Mutex
	seen    map[int]time.Time // the last report of each RBM's slave
	weights map[int]*messages.Weights
	epochs  map[int]int
	failure error
	done    chan struct{}
}

func newCollector(p Plan, cancel context.CancelFunc) *collector {
	return &collector{
		p: p, cancel: cancel, slaves: map[int]string{},
		reasm:   messages.NewReassembler(messages.ReassemblerConfig{MaxTotal: 1 << 30, MaxBytes: 2 << 30}),
		weights: map[int]*messages.Weights{}, epochs: map[int]int{}, done: make(chan struct{}),
		seen: map[int]time.Time{},
	}
}

func (c *collector) fail(err error) {
	c.mu.Lock()
	if c.failure == nil {
		c.failure = err
	}
	c.mu.Unlock()
	c.cancel()
}

func (c *collector) err() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.failure
}

func (c *collector) onReport(msg *nats.Msg) {
	payload, err := c.reasm.Add(msg.Data)
	if err != nil || payload == nil {
		return
	}
	m, err := messages.Decode(payload)
	if err != nil {
		return
	}
	switch m := m.(type) {
	case *messages.Status, *messages.Weights, *messages.Error:
		c.heard(m)
	}
	switch m := m.(type) {
	case *messages.Status:
		if m.RunID != c.p.RunID || m.RBM < 1 || m.RBM > len(c.p.Stages) {
			return
		}
		s := pipeline.Stats{
			Index: m.RBM, Epoch: m.Epoch, Batches: m.Batches, Recon: m.ReconErrors, LastRecon: m.ReconError,
			Rows: m.Batches * c.p.Stages[m.RBM-1].BatchSize, Busy: seconds(m.BusySeconds),
			WaitInput: seconds(m.WaitSeconds), State: localState(m.State), Worker: m.Slave,
		}
		if c.p.Hooks.Window != nil {
			c.p.Hooks.Window(s)
		}
		c.mu.Lock()
		newEpoch := len(m.ReconErrors) > c.epochs[m.RBM]
		c.epochs[m.RBM] = len(m.ReconErrors)
		c.mu.Unlock()
		if newEpoch && c.p.Hooks.Epoch != nil {
			c.p.Hooks.Epoch(s)
		}
	case *messages.Weights:
		if m.RunID != c.p.RunID || m.RBM < 1 || m.RBM > len(c.p.Stages) {
			return
		}
		st := c.p.Stages[m.RBM-1]
		if err := m.Check(c.p.RunID, m.RBM, st.Visible, st.Hidden); err != nil {
			c.fail(fmt.Errorf("rbm %d: slave %s sent bad weights: %w", m.RBM, c.slave(m.RBM), err))
			return
		}
		c.mu.Lock()
		_, dup := c.weights[m.RBM]
		c.weights[m.RBM] = m
		complete := !dup && len(c.weights) == len(c.p.Stages)
		c.mu.Unlock()
		if complete {
			close(c.done)
		}
	case *messages.Error:
		if m.RunID != c.p.RunID {
			return
		}
		c.fail(fmt.Errorf("rbm %d on slave %s: %s", m.RBM, c.slave(m.RBM), m.Text))
	}
}

// heard notes that the slave of a report's RBM is alive.
func (c *collector) heard(m messages.Message) {
	var run string
	var i int
	switch m := m.(type) {
	case *messages.Status:
		run, i = m.RunID, m.RBM
	case *messages.Weights:
		run, i = m.RunID, m.RBM
	case *messages.Error:
		run, i = m.RunID, m.RBM
	}
	if run != c.p.RunID {
		return
	}
	c.mu.Lock()
	if _, ok := c.seen[i]; ok {
		c.seen[i] = time.Now()
	}
	c.mu.Unlock()
}

// watch fails the run when a slave that has not sent its weights stays
// silent for lostAfter: it crashed, hangs, or lost its connection.
func (c *collector) watch(ctx context.Context, lostAfter time.Duration) {
	if lostAfter <= 0 {
		lostAfter = 4 * time.Second
	}
	t := time.NewTicker(lostAfter / 8)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-c.done:
			return
		case now := <-t.C:
			c.mu.Lock()
			var lost error
			for i, at := range c.seen {
				if _, finished := c.weights[i]; !finished && now.Sub(at) > lostAfter {
					lost = fmt.Errorf("%w: slave %s (rbm %d) sent nothing for %s", ErrSlaveLost, c.slaves[i], i, now.Sub(at).Round(100*time.Millisecond))
					break
				}
			}
			c.mu.Unlock()
			if lost != nil {
				c.fail(lost)
				return
			}
		}
	}
}

// ErrSlaveLost is the error of a run whose slave stopped reporting.
var ErrSlaveLost = errors.New("slave lost")

func (c *collector) slave(i int) string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.slaves[i]
}

func (c *collector) trained() []Trained {
	c.mu.Lock()
	defer c.mu.Unlock()
	var out []Trained
	for i := 1; i <= len(c.p.Stages); i++ {
		w := c.weights[i]
		cfg := c.p.Stages[i-1]
		r := &rbm.RBM{Visible: w.Visible, Hidden: w.Hidden, Units: cfg.Units, W: w.W, A: w.A, B: w.B}
		out = append(out, Trained{
			Slave: c.slaves[i], RBM: r, BytesIn: int64(w.BytesIn), BytesOut: int64(w.BytesOut),
			Stats: pipeline.Stats{
				Index: i, Epoch: cfg.Epochs - 1, Batches: w.Batches, Recon: w.ReconErrors,
				Busy: seconds(w.BusySeconds), WaitInput: seconds(w.WaitSeconds), State: pipeline.Done, Worker: c.slaves[i],
			},
		})
	}
	sort.Slice(out, func(a, b int) bool { return out[a].Stats.Index < out[b].Stats.Index })
	return out
}

func seconds(s float64) time.Duration { return time.Duration(s * float64(time.Second)) }
