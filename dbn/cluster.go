package dbn

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"path/filepath"
	"regexp"
	"sync"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/pipedbn/pipedbn/config"
	"github.com/pipedbn/pipedbn/data"
	"github.com/pipedbn/pipedbn/monitor"
	"github.com/pipedbn/pipedbn/pipeline"
	"github.com/pipedbn/pipedbn/pipeline/driver"
	"github.com/pipedbn/pipedbn/pipeline/natsnet"
	"github.com/pipedbn/pipedbn/pipeline/protocol"
)

// runID names a run on the wire: the config's name, made a valid subject
// token, and a random suffix so that runs sharing a NATS server never mix.
func runID(name string) string {
	var b [4]byte
	rand.Read(b[:])
	clean := regexp.MustCompile(`[^A-Za-z0-9_-]`).ReplaceAllString(name, "-")
	if len(clean) > 40 {
		clean = clean[:40]
	}
	return clean + "-" + hex.EncodeToString(b[:])
}

// pretrainNATS runs the pipelined schedule over NATS: on the configured
// server, or on an embedded one with one local slave process per RBM. With
// reliability.checkpoint_every > 0 the slaves checkpoint into a JetStream
// object store (on the embedded server, into files in out/checkpoints), a
// lost slave is replaced (a local one restarted), and an interrupted run
// resumes when `master run` is pointed at the same output folder.
//
// The embedded server admits only the identities the master makes afresh
// at every start (natsnet.Identities): its own, and one per local slave,
// handed to that slave alone through a pipe; with cluster.slaves > 0, a pool
// for the slaves started by hand, in out/secrets/slaves.creds.
func pretrainNATS(ctx context.Context, cfg *config.Config, opt Options, out string, train *data.Set, stageCfgs []pipeline.StageConfig, shuffleSeed uint64, prog *progress) (*trained, error) {
	log := opt.Logger
	state, err := openRunState(out, cfg, log)
	if err != nil {
		return nil, err
	}
	// The data windows travel as narrow as their values allow.
	exact := pipeline.ExactPrecision(train.X)
	lay, err := layOutLocalSlaves(cfg, opt, stageCfgs, train.N, exact)
	if err != nil {
		return nil, err
	}
	prog.phases.end(phaseCalibration)
	srv, err := startServer(ctx, cfg, lay, log)
	if err != nil {
		return nil, err
	}
	defer srv.close()
	store, destroy, err := openStore(ctx, cfg, out, state, srv, log)
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	local, inMaster, err := startSlaves(ctx, cfg, opt, srv, out, lay, len(stageCfgs), cancel)
	if err != nil {
		return nil, err
	}
	if local != nil {
		defer local.stop()
	}
	if inMaster != nil {
		defer inMaster.wait()
	}
	saver := newSaver(out, stageCfgs, log)
	rec := &recorder{monitor: opt.Monitor}
	plan := driver.Plan{
		MasterConfig: protocol.MasterConfig{
			Run: protocol.Run{ID: state.RunID}, Stages: stageCfgs, Data: train.X, N: train.N, ShuffleSeed: shuffleSeed, DataPrecision: exact,
			Credits: cfg.Cluster.Credits, CheckpointEvery: cfg.Reliability.CheckpointEvery,
			Timing:   protocol.Timing{JoinTimeout: cfg.Cluster.JoinTimeout, LostAfter: cfg.Reliability.LostAfter},
			Observer: rec.observer(prog, saver, log),
		},
		Store:  store,
		Resume: state.Resume,
	}
	if local != nil {
		plan.Respawn = local.restart
		plan.Seating = lay.seating()
		plan.Replicas, plan.SyncEvery = lay.replicas(), cfg.Cluster.SyncEvery
	}
	if inMaster != nil {
		plan.Seating, plan.Peers, plan.Listening = lay.seating(), inMaster.peers, inMaster.run
	}
	if rel := cfg.Reliability; rel.SaveEvery > 0 && rel.CheckpointEvery > 0 {
		stopSaving := saver.every(rel.SaveEvery)
		defer stopSaving()
	}
	master := srv.master
	res, err := runMaster(ctx, master, plan, cfg, out, log)
	if err != nil {
		return nil, err
	}
	t := &trained{resumed: state.Resume, recoveries: rec.recoveries(), masterRejected: master.Rejected().ByReason(), layout: lay}
	for _, r := range res {
		t.addTrained(r)
	}
	// Pre-training is complete: the checkpoints are no longer needed.
	if destroy != nil {
		if err := destroy(context.Background()); err != nil {
			log.Warn("cannot delete the run's checkpoints", "store", store.Where(), "error", err)
		}
	}
	if err := state.finish(); err != nil {
		return nil, err
	}
	return t, nil
}

// layOutLocalSlaves lays out the local slaves of a run with cluster.slaves 0 and
// says the plan; nil for slaves started by hand.
func layOutLocalSlaves(cfg *config.Config, opt Options, stageCfgs []pipeline.StageConfig, rows int, exact pipeline.Precision) (*layout, error) {
	if cfg.Cluster.Slaves != 0 {
		return nil, nil
	}
	lay, err := layoutLocal(cfg, stageCfgs, rows, exact)
	if err != nil {
		return nil, err
	}
	if err := checkPlanned(cfg, lay, opt.Logger); err != nil {
		return nil, err
	}
	opt.Logger.Info("plan of the local slaves (cluster.plan = " + cfg.Cluster.Plan + "):\n" + lay.plan.String())
	opt.Monitor.Planned(lay.plan.String())
	return lay, nil
}

// natsServer is the master's NATS: the configured server, or an embedded
// one with the identities it admits, and the master on its connection.
type natsServer struct {
	url    string
	emb    *natsnet.Embedded   // nil: the configured server
	ids    *natsnet.Identities // the embedded server's
	master *natsnet.Master
	// jetStream opens the run's JetStream store on the master's
	// connection; drain drains that connection.
	jetStream func(ctx context.Context, runID string) (*natsnet.JetStreamStore, error)
	drain     func()
}

// close drains the connection and shuts the embedded server down.
func (s *natsServer) close() {
	s.drain()
	if s.emb != nil {
		s.emb.Shutdown()
	}
}

// startServer starts the embedded server when cluster.nats_url is empty,
// with identities for the master and the slaves of lay (or a pool), and
// connects the master to the server.
func startServer(ctx context.Context, cfg *config.Config, lay *layout, log hclog.Logger) (*natsServer, error) {
	s := &natsServer{url: cfg.Cluster.NatsURL}
	var master *natsnet.Credential // the master's identity on the embedded server
	if s.url == "" {
		ids, err := natsnet.NewIdentities(protocol.MasterName, slaveUsers(cfg.Cluster.Slaves, lay))
		if err != nil {
			return nil, err
		}
		if s.emb, err = natsnet.StartEmbeddedWith(natsnet.EmbeddedOptions{Users: ids}); err != nil {
			return nil, err
		}
		s.ids, s.url = ids, s.emb.URL()
		master = &ids.Master
		log.Info("embedded NATS server started", "url", s.url, "identities", len(ids.Slaves)+1)
	}
	// A server of its own may come up after the master (a Swarm stack
	// starts its services in no order): wait for it as for the slaves.
	var wait time.Duration
	if s.emb == nil {
		wait = cfg.Cluster.JoinTimeout
	}
	nc, err := natsnet.ConnectWait(ctx, s.url, "pipedbn-master", wait, log, master.Options()...)
	if err != nil {
		if s.emb != nil {
			s.emb.Shutdown()
		}
		return nil, fmt.Errorf("config %s: cluster.nats_url = %q: %w", cfg.File, cfg.Cluster.NatsURL, err)
	}
	s.master = natsnet.NewMaster(nc, log.Named("cluster"))
	s.jetStream = func(ctx context.Context, runID string) (*natsnet.JetStreamStore, error) {
		return natsnet.OpenJetStreamStore(ctx, nc, runID)
	}
	s.drain = func() { nc.Drain() }
	if !nc.AuthRequired() {
		log.Warn("the NATS server asks for no credentials: whoever reaches it can read the data, stop slaves and forge their reports (README: Who may connect)", "nats", s.url)
	}
	return s, nil
}

// openStore opens the store of the run's checkpoints, and what deletes
// them once pre-training is complete (nil: nothing to delete).
func openStore(ctx context.Context, cfg *config.Config, out string, state *runState, srv *natsServer, log hclog.Logger) (protocol.Store, func(context.Context) error, error) {
	var store protocol.Store
	var destroy func(context.Context) error
	switch {
	case cfg.Reliability.CheckpointEvery <= 0:
	case srv.emb != nil:
		// The embedded server's JetStream would keep them on this disk
		// too, at the cost of a server between the master and its files.
		fstore, err := protocol.OpenFileStore(filepath.Join(out, "checkpoints"))
		if err != nil {
			return nil, nil, err
		}
		store, destroy = fstore, fstore.Destroy
		log.Info("checkpoints in files", "store", fstore.Where())
		if old := filepath.Join(out, "jetstream"); state.Resume && dirExists(old) {
			log.Warn("checkpoints of an older build (JetStream) are not read: this run starts from the files' checkpoints, if any; delete the folder when done", "folder", old)
		}
	default:
		js, err := srv.jetStream(ctx, state.RunID)
		if err != nil {
			log.Warn("no JetStream: checkpoints stay in the master's memory; a lost slave can be replaced, an interrupted master cannot resume", "error", err)
			store = protocol.NewMemStore()
		} else {
			store, destroy = js, js.Destroy
			log.Info("checkpoints in JetStream", "store", js.Where())
		}
	}
	if state.Resume {
		log.Info("resuming the interrupted run", "run", state.RunID, "output", out, "store", store.Where())
	}
	return store, destroy, nil
}

// startSlaves starts the run's slaves: a stage group in the master's
// process, or local slave processes, or none (slaves by hand: it says how
// they join). rbms is how many slaves the master waits for.
func startSlaves(ctx context.Context, cfg *config.Config, opt Options, srv *natsServer, out string, lay *layout, rbms int, cancel context.CancelCauseFunc) (*localSlaves, *inMasterGroup, error) {
	log := opt.Logger
	var (
		local    *localSlaves
		inMaster *inMasterGroup
		err      error
	)
	switch {
	case lay != nil && lay.inMaster(cfg) && len(opt.SlaveCommand) == 0:
		var creds []natsnet.Credential
		if srv.ids != nil {
			creds = srv.ids.Slaves
		}
		inMaster, err = newInMaster(ctx, cfg, srv.url, creds, out, lay, cancel)
	case cfg.Cluster.Slaves == 0 && srv.emb != nil:
		local, err = startLocalSlavesAs(ctx, cfg, opt, &localAuth{url: srv.url, creds: srv.ids.Slaves, connected: srv.emb.Connected}, out, lay, cancel)
	case cfg.Cluster.Slaves == 0:
		local, err = startLocalSlaves(ctx, cfg, opt, srv.url, out, lay, cancel)
	case srv.emb != nil:
		// Slaves by hand on this host (the server listens on loopback):
		// they claim identities of the pool, fresh at every master start.
		dir := filepath.Join(out, "secrets")
		pool := filepath.Join(dir, "slaves.creds")
		if err := writePool(dir, pool, srv.ids.Slaves); err != nil {
			return nil, nil, fmt.Errorf("slave identities: %w", err)
		}
		log.Info("waiting for slaves", "want", rbms, "nats", srv.url, "timeout", cfg.Cluster.JoinTimeout,
			"identities", len(srv.ids.Slaves), "join_with", fmt.Sprintf("slave --nats %s --credentials %s", srv.url, pool))
	default:
		log.Info("waiting for slaves", "want", rbms, "nats", srv.url, "timeout", cfg.Cluster.JoinTimeout)
	}
	return local, inMaster, err
}

// recorder sees a run's losses and recoveries: it logs them, tells the
// progress and the monitor, and keeps the recoveries for the results.
type recorder struct {
	monitor *monitor.Run
	mu      sync.Mutex
	done    []protocol.Recovery
}

// observer returns the protocol observer of the run.
func (r *recorder) observer(prog *progress, saver *saver, log hclog.Logger) protocol.Observer {
	return protocol.Observer{
		Hooks: prog.hooks(),
		Lost: func(rbm int, slave string, silent time.Duration) {
			log.Warn("slave lost; replacing it", "slave", slave, "rbm", rbm, "silent", silent.Round(100*time.Millisecond))
			prog.lost(rbm)
			r.monitor.Lost(rbm, slave, silent)
		},
		Recovered:    r.recovered,
		Checkpointed: prog.checkpointed(saver.checkpointed),
		Joined:       r.monitor.Joined,
		Passed:       prog.phases.observer(),
	}
}

// recovered keeps rec and shows it on the monitor.
func (r *recorder) recovered(rec protocol.Recovery) {
	r.mu.Lock()
	r.done = append(r.done, rec)
	r.mu.Unlock()
	r.monitor.Recovered(rec)
}

// recoveries returns the recoveries seen so far.
func (r *recorder) recoveries() []protocol.Recovery {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]protocol.Recovery(nil), r.done...)
}

// runMaster runs the master's plan; an interrupted run says how to resume
// it and gives the interruption's cause.
func runMaster(ctx context.Context, master *natsnet.Master, plan driver.Plan, cfg *config.Config, out string, log hclog.Logger) ([]protocol.Trained, error) {
	res, err := master.Run(ctx, plan)
	if err == nil {
		return res, nil
	}
	cause := context.Cause(ctx)
	if errors.Is(err, context.Canceled) && errors.Is(cause, context.Canceled) {
		if cfg.Reliability.CheckpointEvery > 0 {
			log.Warn("interrupted: the checkpoints are stored; run `master run` with the same config and output to resume", "output", out)
		}
		return nil, cause
	}
	if cause != nil && ctx.Err() != nil {
		return nil, cause
	}
	return nil, err
}
