package natsnet

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/nats-io/nats.go"

	"github.com/pipedbn/pipedbn/messages"
	"github.com/pipedbn/pipedbn/pipeline"
	"github.com/pipedbn/pipedbn/pipeline/driver"
	"github.com/pipedbn/pipedbn/pipeline/protocol"
)

// Plan is one pipelined pre-training run for the master to carry out.
type Plan struct {
	// RunID names the run on the wire (see protocol.CheckName).
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
	Peers *driver.Peers
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
	Store protocol.Store
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
	Recovered    func(protocol.Recovery)
	Checkpointed func(rbm int, state pipeline.StageState)
}

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

// Run carries out the plan and returns the trained RBMs in order.
// Cancelling ctx interrupts the run: every slave is asked to leave a
// checkpoint first, and Run returns ctx's error.
func (m *Master) Run(ctx context.Context, p Plan) ([]protocol.Trained, error) {
	if err := protocol.CheckName(p.RunID); err != nil {
		return nil, fmt.Errorf("run %w", err)
	}
	if p.Store == nil {
		p.Store = protocol.NewMemStore()
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
	ep, err := m.listen(cfg, p)
	if err != nil {
		return nil, err
	}
	defer ep.close()
	conn, unwatch := m.watchConnection()
	defer unwatch()
	node, err := driver.NewMaster(cfg, driver.Config{
		Transport: ep, Peers: p.Peers, Counters: &ep.window, Store: p.Store, StoreRetry: time.Second, Respawn: p.Respawn, Logger: m.log,
	})
	if err != nil {
		return nil, err
	}
	err = node.Run(ctx, driver.Loop{Inbox: ep.inbox, Taken: ep.take, Connection: conn})
	m.nc.Flush()
	if m.rejected = node.Master().Rejections(); m.rejected.Total() > 0 {
		m.log.Warn("the master dropped messages", "rejected", m.rejected.String())
	}
	if err != nil {
		if errors.Is(err, protocol.ErrInterrupted) && ctx.Err() != nil {
			return nil, ctx.Err()
		}
		return nil, err
	}
	return node.Master().Trained(), nil
}

// listen subscribes the master's endpoint to the reports, credits and
// registrations of the run, and tells p.Listening.
func (m *Master) listen(cfg protocol.MasterConfig, p Plan) (*endpoint, error) {
	ep := newEndpoint(m.nc, protocol.MasterName, m.log)
	run := cfg.Run.ID
	for subject, f := range map[string]family{
		reportSubject(run, "*"): reports, creditSubject(run, "*", protocol.MasterName): credits, registerSubject("*"): registers,
	} {
		if err := ep.subscribe(subject, f, m.limits(f, cfg, p.N)); err != nil {
			ep.close()
			return nil, err
		}
	}
	m.ep.Store(ep)
	if p.Listening != nil {
		if err := m.nc.Flush(); err != nil {
			ep.close()
			return nil, err
		}
		p.Listening()
	}
	return ep, nil
}

// watchConnection returns the news of the master's connection: false when
// it is lost, true when it is back. On a cluster the connection moves to
// another server when its own dies; the log says where it is, which the
// stack test reads.
func (m *Master) watchConnection() (<-chan bool, func()) {
	conn := make(chan bool, 16)
	notify := func(up bool) {
		select {
		case conn <- up:
		default:
		}
	}
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
	return conn, func() {
		m.nc.SetDisconnectErrHandler(nil)
		m.nc.SetReconnectHandler(nil)
	}
}

// config turns the plan into the protocol master's configuration: a new
// run, or, resuming, what the store holds of the interrupted one, as a new
// incarnation (driver.Begin).
func (m *Master) config(ctx context.Context, p Plan) (protocol.MasterConfig, error) {
	cfg := protocol.MasterConfig{
		Run: protocol.Run{ID: p.RunID}, Stages: p.Stages, Replicas: p.Replicas, SyncEvery: p.SyncEvery, Seating: p.Seating, Data: p.Data, N: p.N, ShuffleSeed: p.ShuffleSeed,
		Credits: p.Credits, CheckpointEvery: p.CheckpointEvery, Timing: protocol.DefaultTiming(p.JoinTimeout, p.LostAfter),
		Observer: protocol.Observer{Hooks: p.Hooks, Joined: p.Joined, Lost: p.Lost, Recovered: p.Recovered, Checkpointed: p.Checkpointed},
		Logger:   m.log,
	}
	return cfg, driver.Begin(ctx, p.Store, &cfg, p.Resume)
}
