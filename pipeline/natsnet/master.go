package natsnet

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/nats-io/nats.go"

	"github.com/pipedbn/pipedbn/messages"
	"github.com/pipedbn/pipedbn/pipeline"
	"github.com/pipedbn/pipedbn/pipeline/protocol"
)

// Plan is one pipelined pre-training run for the master to carry out.
type Plan struct {
	// RunID names the run on the wire (see CheckName).
	RunID string
	// Stages describe RBM_1..RBM_L; slave i trains Stages[i-1].
	Stages []pipeline.StageConfig
	// Replicas and SyncEvery, if set, give RBMs stage replicas (see
	// protocol.MasterConfig.Replicas): one slave per replica.
	Replicas  []int
	SyncEvery int
	// Seating, if set, names the seat each named slave takes (see
	// protocol.MasterConfig.Seating): the plan's stage groups.
	Seating map[string]protocol.Seat
	// Peers, if set, are the slaves running in the master's process: the
	// data windows and their credits go between them in memory.
	Peers *Peers
	// Data holds N rows of Stages[0].Visible values: RBM_1's input, which
	// the master streams to slave 1, shuffled every epoch by a source seeded
	// with ShuffleSeed.
	Data        []float32
	N           int
	ShuffleSeed uint64
	// Credits bounds the windows in flight on each link.
	Credits int
	// JoinTimeout bounds the wait for len(Stages) slaves to register, and
	// for a replacement of a lost one. Default 60s.
	JoinTimeout time.Duration
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
	// Resume restarts an interrupted run from what Store holds of it, as a
	// new incarnation: the words of the earlier one are rejected.
	Resume bool
	// Respawn, if set, starts a replacement for the lost slave of RBM rbm
	// (the embedded default restarts its local slave process); otherwise
	// the master waits for any new slave to register. Its ctx is done
	// when the lost slave speaks again before any replacement came (it
	// only stalled, and goes on), or when the run ends.
	Respawn func(ctx context.Context, rbm int, lost string) error

	// Listening, if set, is called once the master listens for
	// registrations (the server has its subscriptions): slaves started
	// then are heard at their first registration, not a RegisterEvery
	// later.
	Listening func()

	// Hooks see every slave's progress, from its status reports.
	Hooks pipeline.Hooks
	// Joined, Lost, Recovered and Checkpointed, if set, see every slave
	// that registers, each slave declared lost, each replacement resuming
	// a lost slave's RBM, and every checkpoint once it is stored.
	Joined       func(name, host string, cpus int)
	Lost         func(rbm int, slave string, silent time.Duration)
	Recovered    func(Recovery)
	Checkpointed func(rbm int, state pipeline.StageState)
}

// Recovery describes a lost slave and its replacement.
type Recovery = protocol.Recovery

// Trained is one RBM as its slave reported it at the end.
type Trained = protocol.Trained

// ErrSlaveLost is the error of a run whose slave stopped reporting and was
// not replaced.
var ErrSlaveLost = protocol.ErrSlaveLost

// Master is the master's side of a cluster: it drives the protocol's
// master (registration, assignment, the data feed to slave 1, checkpoints,
// replacement of lost slaves, collection) over NATS.
type Master struct {
	nc       *nats.Conn
	log      hclog.Logger
	rejected messages.Rejections
	// ep is the endpoint of the run under way, or of the last, for tests
	// to read its reassembly.
	ep atomic.Pointer[endpoint]
}

// NewMaster returns a master talking over nc.
func NewMaster(nc *nats.Conn, log hclog.Logger) *Master {
	if log == nil {
		log = hclog.NewNullLogger()
	}
	return &Master{nc: nc, log: log}
}

// Rejected returns what the master dropped during its last Run, per
// reason: unreadable input, reports of another run or of an earlier
// incarnation, registrations under a name not their sender's (foreign).
func (m *Master) Rejected() messages.Rejections { return m.rejected }

// limits bounds the reassembly of what arrives on a subject of family f:
// what a slave of the plan's largest RBM may send, from each sender, and on
// a report subject, which all the slaves share, room for every seat's.
func (m *Master) limits(f family, cfg protocol.MasterConfig, rows int) messages.ReassemblerConfig {
	shapes := make([]messages.Shape, len(cfg.Stages))
	for i, c := range cfg.Stages {
		shapes[i] = protocol.ShapeOf(c, rows)
	}
	lim := f.limits(shapes...)
	if f.name == reports.name {
		seats := max(len(cfg.Stages), 1)
		if cfg.Replicas != nil {
			seats = 0
			for _, r := range cfg.Replicas {
				seats += max(r, 1)
			}
		}
		lim.MaxBytes = lim.MaxSenderBytes * int64(seats)
		lim.MaxMessages = max(16, 2*seats)
	}
	return lim
}

// storeDone is the outcome of a StoreOp.
type storeDone struct {
	op  protocol.StoreOp
	cp  *messages.Checkpoint
	err error
}

// Run carries out the plan and returns the trained RBMs in order.
// Cancelling ctx interrupts the run: every slave is asked to leave a
// checkpoint first, and Run returns ctx's error.
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
	if p.LostAfter <= 0 {
		p.LostAfter = 4 * time.Second
	}
	cfg, err := m.config(ctx, p)
	if err != nil {
		return nil, err
	}
	pm, err := protocol.NewMaster(cfg)
	if err != nil {
		return nil, err
	}

	ep := newEndpoint(m.nc, MasterName, m.log)
	defer ep.close()
	if p.Peers != nil {
		ep.peers = p.Peers
		p.Peers.add(MasterName, ep)
		defer p.Peers.remove(MasterName, ep)
	}
	run := cfg.Run.ID
	for subject, f := range map[string]family{
		reportSubject(run, "*"): reports, creditSubject(run, "*", MasterName): credits, registerSubject("*"): registers,
	} {
		if err := ep.subscribe(subject, f, m.limits(f, cfg, p.N)); err != nil {
			return nil, err
		}
	}
	m.ep.Store(ep)
	if p.Listening != nil {
		if err := m.nc.Flush(); err != nil {
			return nil, err
		}
		p.Listening()
	}
	conn := make(chan bool, 16)
	// A lost connection also ends the store operation under way: the acks
	// of what it published are lost with the server, and it would wait out
	// its timeout (30 s) before it tried again on the next server.
	connLost := make(chan struct{}, 1)
	notify := func(up bool) {
		select {
		case conn <- up:
		default:
		}
		if !up {
			select {
			case connLost <- struct{}{}:
			default:
			}
		}
	}
	// On a cluster the connection moves to another server when its own
	// dies; the log says where it is, which the stack test reads.
	m.log.Info("connected to NATS", "server", m.nc.ConnectedServerName(), "url", m.nc.ConnectedUrlRedacted(), "cluster", m.nc.ConnectedClusterName())
	m.nc.SetDisconnectErrHandler(func(_ *nats.Conn, err error) {
		if err == nil {
			return // closed, not lost
		}
		m.log.Warn("NATS connection lost; reconnecting", "error", err)
		notify(false)
	})
	m.nc.SetReconnectHandler(func(nc *nats.Conn) {
		m.log.Info("NATS reconnected", "server", nc.ConnectedServerName(), "url", nc.ConnectedUrlRedacted())
		notify(true)
	})
	defer func() {
		m.nc.SetDisconnectErrHandler(nil)
		m.nc.SetReconnectHandler(nil)
	}()

	life, endLife := context.WithCancel(context.Background())
	defer endLife()
	work, stored := make(chan protocol.StoreOp), make(chan storeDone)
	go m.storeWorker(life, p.Store, work, stored, connLost)
	respawnErrs := make(chan error, len(p.Stages))

	var queue []protocol.StoreOp // store ops not yet handed to the worker
	busy := false                // an op is with the worker
	// Per RBM, the call-off of its slave's restart under way.
	callOff := map[int]context.CancelFunc{}
	flush := func() {
		out := pm.Ready()
		for _, e := range out.Messages {
			ep.send(run, e)
		}
		queue = append(queue, out.Store...)
		for _, r := range out.Respawn {
			if p.Respawn == nil {
				continue
			}
			if c := callOff[r.RBM]; c != nil {
				c()
			}
			wanted, c := context.WithCancel(life)
			callOff[r.RBM] = c
			go func() {
				if err := p.Respawn(wanted, r.RBM, r.Slave); err != nil {
					respawnErrs <- fmt.Errorf("restart the slave of rbm %d: %w", r.RBM, err)
				}
			}()
		}
		for _, r := range out.Back {
			if c := callOff[r.RBM]; c != nil {
				c()
				delete(callOff, r.RBM)
			}
		}
	}
	receive := func(d delivery) {
		ep.take(d)
		switch {
		case d.arriving:
			// The master consumes no windows.
		case d.rejected:
			pm.Rejected(d.reason)
		default:
			pm.Receive(ep.now(), d.env)
		}
	}
	tick := time.NewTicker(cfg.Timing.Tick())
	defer tick.Stop()
	interrupt := ctx.Done()
	pm.Start(ep.now())
	flush()
	// The run goes on until the master is done, and then until what it
	// asked to store is stored, for a while.
	var flushBy <-chan time.Time
	for {
		if done, _ := pm.Done(); done && flushBy == nil {
			flushBy = time.After(30 * time.Second)
		}
		if flushBy != nil && len(queue) == 0 && !busy {
			break
		}
		var next chan<- protocol.StoreOp
		var op protocol.StoreOp
		if len(queue) > 0 && !busy {
			next, op = work, queue[0]
		}
		select {
		case d := <-ep.inbox:
			receive(d)
		case next <- op:
			queue, busy = queue[1:], true
		case d := <-stored:
			busy = false
			switch d.op.Kind {
			case protocol.Put:
				if d.err != nil {
					pm.Abort(ep.now(), fmt.Errorf("store %s: %w", d.op.Name, d.err))
				} else {
					pm.Stored(ep.now(), d.op)
				}
			case protocol.Get:
				pm.Loaded(ep.now(), d.op, d.cp, d.err)
			}
		case up := <-conn:
			pm.Connection(ep.now(), up)
		case err := <-respawnErrs:
			pm.Abort(ep.now(), err)
		case <-tick.C:
			ep.drain(receive)
			pm.Tick(ep.now())
		case <-interrupt:
			interrupt = nil
			pm.Interrupt(ep.now())
		case <-flushBy:
			m.log.Warn("checkpoints or weights still unstored; leaving", "waited", "30s", "store", p.Store.Where())
			queue, busy = nil, false
		}
		flush()
	}
	m.nc.Flush()
	if m.rejected = pm.Rejections(); m.rejected.Total() > 0 {
		m.log.Warn("the master dropped messages", "rejected", m.rejected.String())
	}
	if _, err := pm.Done(); err != nil {
		if errors.Is(err, protocol.ErrInterrupted) && ctx.Err() != nil {
			return nil, ctx.Err()
		}
		return nil, err
	}
	return pm.Trained(), nil
}

// config turns the plan into the protocol master's configuration: a new
// run, or, resuming, what the store holds of the interrupted one, as a new
// incarnation. It stores the master's own state.
func (m *Master) config(ctx context.Context, p Plan) (protocol.MasterConfig, error) {
	cfg := protocol.MasterConfig{
		Run: protocol.Run{ID: p.RunID, Incarnation: 1}, Stages: p.Stages, Replicas: p.Replicas, SyncEvery: p.SyncEvery, Seating: p.Seating, Data: p.Data, N: p.N, ShuffleSeed: p.ShuffleSeed,
		Credits: p.Credits, CheckpointEvery: p.CheckpointEvery, Timing: protocol.DefaultTiming(p.JoinTimeout, p.LostAfter),
		Observer: protocol.Observer{Hooks: p.Hooks, Joined: p.Joined, Lost: p.Lost, Recovered: p.Recovered, Checkpointed: p.Checkpointed},
		Logger:   m.log,
	}
	if p.Resume {
		st, err := protocol.ReadStored(ctx, p.Store, p.RunID, p.Stages)
		if err != nil {
			return cfg, err
		}
		cfg.Stored = st
		var prev masterState
		if b, err := p.Store.Get(ctx, protocol.StateName); err == nil {
			if err := json.Unmarshal(b, &prev); err != nil {
				return cfg, fmt.Errorf("%s in %s: %w", protocol.StateName, p.Store.Where(), err)
			}
		} else if !errors.Is(err, ErrNotStored) {
			return cfg, err
		}
		cfg.Run.Incarnation = prev.Incarnation + 1
	}
	b, err := json.Marshal(masterState{
		RunID: p.RunID, Incarnation: cfg.Run.Incarnation, RBMs: len(p.Stages), CheckpointEvery: p.CheckpointEvery,
		K: p.Stages[0].K, Epochs: p.Stages[0].Epochs, Rows: p.N, Resumed: p.Resume, Saved: time.Now().UTC().Format(time.RFC3339),
	})
	if err != nil {
		return cfg, err
	}
	put, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	if err := p.Store.Put(put, protocol.StateName, b); err != nil {
		return cfg, fmt.Errorf("store the run's state in %s: %w", p.Store.Where(), err)
	}
	return cfg, nil
}

// masterState is what the master stores of itself: what run this is, and
// its incarnation.
type masterState struct {
	RunID           string `json:"run_id"`
	Incarnation     uint32 `json:"incarnation"`
	RBMs            int    `json:"rbms"`
	CheckpointEvery int    `json:"checkpoint_every"`
	K               int    `json:"k"`
	Epochs          int    `json:"epochs"`
	Rows            int    `json:"rows"`
	Resumed         bool   `json:"resumed"`
	Saved           string `json:"saved"`
}

// storeWorker carries out the master's store operations one at a time:
// a Put is retried while the store is unreachable, until it succeeds or
// the run's life ends; one under way when the connection is lost (a
// signal on connLost) is given up and tried again.
func (m *Master) storeWorker(life context.Context, store Store, work <-chan protocol.StoreOp, done chan<- storeDone, connLost <-chan struct{}) {
	for {
		var op protocol.StoreOp
		select {
		case op = <-work:
		case <-life.Done():
			return
		}
		d := storeDone{op: op}
		switch op.Kind {
		case protocol.Put:
			b, err := messages.Encode(op.Msg)
			if err != nil {
				d.err = err
				break
			}
			for {
				select {
				case <-connLost: // lost before this attempt: not its concern
				default:
				}
				put, cancel := context.WithTimeout(life, 30*time.Second)
				watched := make(chan struct{})
				go func() {
					defer close(watched)
					select {
					case <-connLost:
						cancel()
					case <-put.Done():
					}
				}()
				err := store.Put(put, op.Name, b)
				cancel()
				<-watched
				if err == nil || life.Err() != nil {
					break
				}
				m.log.Warn("cannot store; retrying", "object", op.Name, "store", store.Where(), "error", err)
				select {
				case <-time.After(time.Second):
				case <-life.Done():
				}
			}
		case protocol.Get:
			d.cp, d.err = protocol.LoadCheckpoint(life, store, op.Name)
		case protocol.Delete:
			store.Delete(life, op.Name)
		}
		select {
		case done <- d:
		case <-life.Done():
			return
		}
	}
}
