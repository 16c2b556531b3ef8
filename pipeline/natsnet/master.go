package natsnet

import (
	"context"
	"sync/atomic"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/nats-io/nats.go"

	"github.com/pipedbn/pipedbn/messages"
	"github.com/pipedbn/pipedbn/pipeline/driver"
	"github.com/pipedbn/pipedbn/pipeline/protocol"
)

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

// Run carries out the plan and returns the trained RBMs in order.
// Cancelling ctx interrupts the run: every slave is asked to leave a
// checkpoint first, and Run returns ctx's error.
func (m *Master) Run(ctx context.Context, p driver.Plan) ([]protocol.Trained, error) {
	cfg, err := p.Begin(ctx, m.log)
	if err != nil {
		return nil, err
	}
	ep, err := m.listen(cfg, p.Listening)
	if err != nil {
		return nil, err
	}
	defer ep.close()
	conn, unwatch := m.watchConnection()
	defer unwatch()
	node, err := driver.NewMaster(cfg, driver.Config{
		Transport: ep, Peers: p.Peers, Store: p.Store, StoreRetry: time.Second, Respawn: p.Respawn, Logger: m.log,
	})
	if err != nil {
		return nil, err
	}
	err = node.Run(ctx, driver.Loop{Inbox: ep.in.C, Taken: ep.in.Take, Connection: conn})
	m.nc.Flush()
	m.rejected = node.Master().Rejections()
	return node.Outcome(ctx, err)
}

// listen subscribes the master's endpoint to the reports, credits and
// registrations of the run, and then tells listening (driver.Plan's).
func (m *Master) listen(cfg protocol.MasterConfig, listening func()) (*endpoint, error) {
	ep := newEndpoint(m.nc, protocol.MasterName, m.log)
	run := cfg.Run.ID
	for subject, f := range map[string]family{
		reportSubject(run, "*"): reports, creditSubject(run, "*", protocol.MasterName): credits, registerSubject("*"): registers,
	} {
		if err := ep.subscribe(subject, f, protocol.ReassemblyLimits(cfg, f.kinds, f.name == reports.name)); err != nil {
			ep.close()
			return nil, err
		}
	}
	m.ep.Store(ep)
	if listening != nil {
		if err := m.nc.Flush(); err != nil {
			ep.close()
			return nil, err
		}
		listening()
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
