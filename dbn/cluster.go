package dbn

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/pipedbn/pipedbn/config"
	"github.com/pipedbn/pipedbn/data"
	"github.com/pipedbn/pipedbn/monitor"
	"github.com/pipedbn/pipedbn/pipeline"
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
	lay, err := layOutLocalSlaves(cfg, opt, stageCfgs, train.N)
	if err != nil {
		return nil, err
	}
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
	plan := natsnet.Plan{
		MasterConfig: protocol.MasterConfig{
			Run: protocol.Run{ID: state.RunID}, Stages: stageCfgs, Data: train.X, N: train.N, ShuffleSeed: shuffleSeed,
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
func layOutLocalSlaves(cfg *config.Config, opt Options, stageCfgs []pipeline.StageConfig, rows int) (*layout, error) {
	if cfg.Cluster.Slaves != 0 {
		return nil, nil
	}
	lay, err := layoutLocal(cfg, stageCfgs, rows)
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
	var connect []natsnet.Option
	if s.url == "" {
		ids, err := natsnet.NewIdentities(protocol.MasterName, slaveUsers(cfg.Cluster.Slaves, lay))
		if err != nil {
			return nil, err
		}
		if s.emb, err = natsnet.StartEmbeddedWith(natsnet.EmbeddedOptions{Users: ids}); err != nil {
			return nil, err
		}
		s.ids, s.url = ids, s.emb.URL()
		connect = append(connect, ids.Master.Option())
		log.Info("embedded NATS server started", "url", s.url, "identities", len(ids.Slaves)+1)
	}
	// A server of its own may come up after the master (a Swarm stack
	// starts its services in no order): wait for it as for the slaves.
	var wait time.Duration
	if s.emb == nil {
		wait = cfg.Cluster.JoinTimeout
	}
	nc, err := natsnet.ConnectWait(ctx, s.url, "pipedbn-master", wait, log, connect...)
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
		Recovered: func(rec protocol.Recovery) {
			r.mu.Lock()
			r.done = append(r.done, rec)
			r.mu.Unlock()
			r.monitor.Recovered(rec)
		},
		Checkpointed: prog.checkpointed(saver.checkpointed),
		Joined:       r.monitor.Joined,
	}
}

// recoveries returns the recoveries seen so far.
func (r *recorder) recoveries() []protocol.Recovery {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]protocol.Recovery(nil), r.done...)
}

// runMaster runs the master's plan; an interrupted run says how to resume
// it and gives the interruption's cause.
func runMaster(ctx context.Context, master *natsnet.Master, plan natsnet.Plan, cfg *config.Config, out string, log hclog.Logger) ([]protocol.Trained, error) {
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

// localSlaves are the slave processes the master starts for itself.
type localSlaves struct {
	ctx      context.Context
	cancel   context.CancelCauseFunc
	log      hclog.Logger
	command  []string
	url, out string
	layout   *layout
	threads  int
	cpus     float64
	colocate bool
	joinWait time.Duration
	// lostAfter is reliability.lost_after: a process started more recently
	// than that is newer than any loss the master reports.
	lostAfter time.Duration
	embedded  bool
	lenient   bool // a slave that dies is replaced, not fatal
	shared    *cpuGroup
	auth      *localAuth

	// Per process p (0-based): its command, a channel closed when it has
	// ended, when it started, and how often it was restarted.
	mu       sync.Mutex
	cmds     map[int]*exec.Cmd
	exits    map[int]chan struct{}
	started  map[int]time.Time
	restarts map[int]int
	// restarting serialises the restarts of one process: the master may
	// report the losses of a group's slaves at the same moment, and the
	// second must find the process the first started.
	restarting map[int]*sync.Mutex
	groups     []*cpuGroup
	exited     sync.WaitGroup
}

// maxRestarts bounds how often the master restarts one local slave
// process: a slave that keeps dying has a problem a restart does not fix.
const maxRestarts = 3

// localAuth is how the local slaves of an embedded server get in: slave i
// (1-based) as identity creds[i-1], which no other process sees.
type localAuth struct {
	url   string
	creds []natsnet.Credential
	// connected reports whether a connection holds an identity (the
	// server admits one at a time); nil: never asked.
	connected func(user string) bool
}

// localSlaveName is the name, and with a localAuth the NATS user, of local
// slave i.
func localSlaveName(i int) string { return fmt.Sprintf("local-%d", i) }

// slaveUsers are the slave identities of the embedded server: one per local
// slave of lay when the master starts its own (pool == 0), else a pool of
// that many for the slaves started by hand.
func slaveUsers(pool int, lay *layout) []string {
	if pool == 0 {
		return lay.allNames()
	}
	var users []string
	for k := 1; k <= pool; k++ {
		users = append(users, natsnet.SlaveUser(k))
	}
	return users
}

// writePool writes the pool of slave identities to path in dir, both
// readable by the master's user alone (as `make compose-secrets` makes them).
func writePool(dir, path string, creds []natsnet.Credential) error {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	if err := os.Chmod(dir, 0o700); err != nil {
		return err
	}
	return natsnet.WriteCredentials(path, "NATS identities (user:password) of the slaves of one start of `master run`\n"+
		"on its embedded server: a new start makes new ones. SECRET.", creds)
}

// startLocalSlaves starts the `slave` processes of lay on url, one per
// stage group (with one slave per RBM of the group), each capped at
// cluster.cpus_per_worker CPUs where a cgroup can be made (with
// cluster.colocate, all of them together in one group of that many CPUs: one
// machine), with their logs in out/slave-<i>.log, i the group's first RBM.
// Without checkpoints, a slave that exits with an error cancels ctx with a
// cause naming it and its log; with them, the master notices the loss and
// restarts it.
func startLocalSlaves(ctx context.Context, cfg *config.Config, opt Options, url, out string, lay *layout, cancel context.CancelCauseFunc) (*localSlaves, error) {
	return startLocalSlavesAs(ctx, cfg, opt, &localAuth{url: url}, out, lay, cancel)
}

// startLocalSlavesAs is startLocalSlaves on auth.url, with the slaves'
// identities in auth: each slave reads its own from an inherited pipe
// (--credentials /dev/fd/3), so that it is never on disk, in an argument
// or in the environment.
func startLocalSlavesAs(ctx context.Context, cfg *config.Config, opt Options, auth *localAuth, out string, lay *layout, cancel context.CancelCauseFunc) (*localSlaves, error) {
	log := opt.Logger
	n := len(lay.procs)
	if slaves := len(lay.allNames()); auth.creds != nil && len(auth.creds) != slaves {
		return nil, fmt.Errorf("start local slaves: %d identities for %d slaves", len(auth.creds), slaves)
	}
	command := opt.SlaveCommand
	if len(command) == 0 {
		exe, err := os.Executable()
		if err != nil {
			return nil, fmt.Errorf("start local slaves: %w", err)
		}
		command = []string{exe, "slave"}
	}
	cpus := cfg.Cluster.CPUsPerWorker
	colocate := cfg.Cluster.Colocate && cpus > 0
	threads := lay.threads
	ls := &localSlaves{
		ctx: ctx, cancel: cancel, log: log, command: command, url: auth.url, out: out, layout: lay, threads: threads,
		cpus: cpus, colocate: colocate, joinWait: cfg.Cluster.JoinTimeout, lostAfter: cfg.Reliability.LostAfter,
		embedded: cfg.Cluster.NatsURL == "", lenient: cfg.Reliability.CheckpointEvery > 0, auth: auth,
		cmds: map[int]*exec.Cmd{}, exits: map[int]chan struct{}{}, started: map[int]time.Time{}, restarts: map[int]int{},
		restarting: map[int]*sync.Mutex{},
	}
	for p := range n {
		ls.restarting[p] = new(sync.Mutex)
	}
	if colocate {
		g, err := newCPUGroup(fmt.Sprintf("pipedbn-%d-local", os.Getpid()), cpus)
		if err != nil {
			if g != nil {
				g.close()
			}
			log.Warn("cannot cap the local slaves' CPUs; they run uncapped", "cpus_per_worker", cpus, "colocate", true, "error", err)
		} else {
			ls.shared = g
			ls.groups = append(ls.groups, g)
		}
	}
	for p := range n {
		if err := ls.start(p, false); err != nil {
			ls.stop()
			return nil, err
		}
	}
	if colocate {
		log.Info("local slaves started", "count", n, "threads_each", threads, "cpus_shared", cpus, "logs", out)
	} else if len(cfg.Cluster.MachineCPUs) > 0 {
		var each []float64
		for _, pr := range lay.procs {
			each = append(each, pr.cpus)
		}
		log.Info("local slaves started", "count", n, "cpus", each, "logs", out)
	} else {
		log.Info("local slaves started", "count", n, "threads_each", threads, "cpus_each", cpus, "logs", out)
	}
	return ls, nil
}

// start starts local slave process p, its log in out/slave-<i>.log (i its
// group's first RBM; appended to on a restart), with the identities of its
// slaves, if they have them, in a new pipe.
func (ls *localSlaves) start(p int, again bool) error {
	names := ls.layout.names(p)
	name := strings.Join(names, ",")
	logPath := ls.logPath(p)
	flags := os.O_CREATE | os.O_WRONLY | os.O_TRUNC
	if again {
		flags = os.O_CREATE | os.O_WRONLY | os.O_APPEND
	}
	logFile, err := os.OpenFile(logPath, flags, 0o644)
	if err != nil {
		return err
	}
	pr := ls.layout.procs[p]
	threads := ls.threads
	if pr.cpus > 0 {
		threads = workerThreads(pr.cpus)
	}
	args := append(append([]string{}, ls.command[1:]...), "--nats", ls.url, "--name", name,
		"--threads", strconv.Itoa(threads), "--join-timeout", ls.joinWait.String())
	var creds *os.File
	if ls.auth.creds != nil {
		var own []natsnet.Credential
		for _, c := range ls.auth.creds {
			if slices.Contains(names, c.User) {
				own = append(own, c)
			}
		}
		if creds, err = credentialsPipe(own); err != nil {
			logFile.Close()
			return fmt.Errorf("start local slave %s: %w", name, err)
		}
		// ExtraFiles[0] is the child's fd 3.
		args = append(args, "--credentials", "/dev/fd/3")
	}
	cmd := exec.Command(ls.command[0], args...)
	cmd.Stdout, cmd.Stderr = logFile, logFile
	cmd.Env = append(slaveEnv(ls.embedded), "GOMAXPROCS="+strconv.Itoa(threads))
	if creds != nil {
		cmd.ExtraFiles = []*os.File{creds}
	}
	// A local slave must not outlive its master, even a killed one: with
	// the master gone, nobody stores its checkpoint, and a resumed run
	// wants its name (and, embedded, the server went with the master).
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	err = cmd.Start()
	if creds != nil {
		creds.Close() // the slave has its own copy now
	}
	if err != nil {
		logFile.Close()
		return fmt.Errorf("start local slave %s (%s): %w", name, ls.command[0], err)
	}
	// Capped before watch reaps it: its pid stays its own until then.
	ls.capCPUs(cmd, name, names[0], pr.cpus)
	ls.watch(p, cmd, logFile, name, logPath)
	return nil
}

// watch records the started process p and waits for its end in a
// goroutine: an unexpected end fails the run, or, lenient, waits for the
// master to replace it.
func (ls *localSlaves) watch(p int, cmd *exec.Cmd, logFile *os.File, name, logPath string) {
	exited := make(chan struct{})
	ls.mu.Lock()
	ls.cmds[p] = cmd
	ls.exits[p] = exited
	ls.started[p] = time.Now()
	ls.mu.Unlock()
	ls.exited.Add(1)
	go func() {
		defer ls.exited.Done()
		err := cmd.Wait()
		close(exited)
		logFile.Close()
		if err != nil && ls.ctx.Err() == nil {
			if ls.lenient {
				ls.log.Warn("local slave exited; the master replaces it once it notices", "slave", name, "error", err, "log", logPath)
				return
			}
			ls.cancel(fmt.Errorf("local slave %s failed: %v (its log: %s)", name, err, logPath))
		}
	}()
}

// capCPUs puts the started process in the shared CPU group, or in one of
// its own of cpus CPUs (first its group's first slave name); a process it
// cannot cap runs uncapped.
func (ls *localSlaves) capCPUs(cmd *exec.Cmd, name, first string, cpus float64) {
	switch {
	case ls.shared != nil:
		if err := ls.shared.add(cmd.Process.Pid); err != nil {
			ls.log.Warn("cannot cap a local slave's CPUs; it runs uncapped", "slave", name, "cpus_per_worker", ls.cpus, "colocate", true, "error", err)
		}
	case cpus > 0:
		g, err := newCPUGroup(fmt.Sprintf("pipedbn-%d-%s-%d", os.Getpid(), first, cmd.Process.Pid), cpus)
		if err == nil {
			err = g.add(cmd.Process.Pid)
			ls.mu.Lock()
			ls.groups = append(ls.groups, g)
			ls.mu.Unlock()
		}
		if err != nil {
			ls.log.Warn("cannot cap a local slave's CPUs; it runs uncapped", "slave", name, "cpus", cpus, "error", err)
		}
	}
}

// logPath is the log of process p: slave-<i>.log, i its group's first RBM,
// or slave-<i>-r<k>.log for its replica k.
func (ls *localSlaves) logPath(p int) string {
	pr := ls.layout.procs[p]
	if pr.replicas > 1 {
		return filepath.Join(ls.out, fmt.Sprintf("slave-%d-r%d.log", pr.first, pr.replica))
	}
	return filepath.Join(ls.out, fmt.Sprintf("slave-%d.log", pr.first))
}

// comeBackGrace is how long a lost slave whose process still runs has to
// speak again before it is killed and restarted: a status report's
// interval and some slack. A process that only stalled (stopped, or a
// starved machine) and reports within it goes on where it is, and its work
// since its checkpoint is kept.
const comeBackGrace = 1500 * time.Millisecond

// restart is the master's Respawn for local slaves: it makes sure the
// process of the lost slave of RBM rbm is gone and starts a new one, with
// all the slaves of its stage group. The other slaves of a group whose
// process was restarted are lost too, a moment later: a process started
// since the loss (lost_after ago) brings them back already. wanted is done
// when the master has taken the lost slave back: its process is left
// alone.
func (ls *localSlaves) restart(wanted context.Context, rbm int, lost string) error {
	p := ls.layout.process(lost)
	if p < 0 {
		return fmt.Errorf("%s is no local slave", lost)
	}
	ls.restarting[p].Lock()
	defer ls.restarting[p].Unlock()
	ls.mu.Lock()
	old, exited := ls.cmds[p], ls.exits[p]
	if old != nil && time.Since(ls.started[p]) < ls.lostAfter {
		ls.mu.Unlock()
		select {
		case <-exited:
		default:
			ls.log.Info("the lost slave's process was restarted since it fell silent", "slave", lost, "rbm", rbm)
			return nil
		}
		ls.mu.Lock()
	}
	if old != nil {
		ls.mu.Unlock()
		select {
		case <-exited:
		case <-wanted.Done():
		case <-time.After(comeBackGrace):
		}
		if wanted.Err() != nil {
			ls.log.Info("restart called off: the lost slave spoke again, or the run ended", "slave", lost, "rbm", rbm)
			return nil
		}
		ls.mu.Lock()
	}
	ls.restarts[p]++
	n := ls.restarts[p]
	ls.mu.Unlock()
	if n > maxRestarts {
		return fmt.Errorf("local slave %s (rbm %d) was lost %d times; see %s", lost, rbm, n, ls.logPath(p))
	}
	if old != nil {
		old.Process.Kill()
		// The new process gets the same identity, which the server admits
		// once at a time: the old one's connection must be gone first.
		select {
		case <-exited:
		case <-time.After(5 * time.Second):
		case <-ls.ctx.Done():
			return context.Cause(ls.ctx)
		}
		if ls.auth.connected != nil {
			for _, name := range ls.layout.names(p) {
				for deadline := time.Now().Add(5 * time.Second); ls.auth.connected(name) && time.Now().Before(deadline); {
					time.Sleep(20 * time.Millisecond)
				}
			}
		}
	}
	ls.log.Info("restarting local slave", "slave", strings.Join(ls.layout.names(p), ","), "rbm", rbm, "restart", n)
	return ls.start(p, true)
}

// credentialsPipe returns the read end of a pipe that holds cs, one
// user:password line each, the whole of what ReadCredentials reads from it:
// the write end is closed.
func credentialsPipe(cs []natsnet.Credential) (*os.File, error) {
	r, w, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	// A few lines fit in the pipe's buffer: the write does not wait for a
	// reader.
	for _, c := range cs {
		if _, err = fmt.Fprintf(w, "%s:%s\n", c.User, c.Password); err != nil {
			break
		}
	}
	if cerr := w.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		r.Close()
		return nil, err
	}
	return r, nil
}

// stop waits a little for the slaves to finish, then terminates the rest.
func (ls *localSlaves) stop() {
	done := make(chan struct{})
	go func() { ls.exited.Wait(); close(done) }()
	ls.mu.Lock()
	cmds := make([]*exec.Cmd, 0, len(ls.cmds))
	for _, c := range ls.cmds {
		cmds = append(cmds, c)
	}
	ls.mu.Unlock()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		for _, c := range cmds {
			c.Process.Signal(syscall.SIGTERM)
		}
		select {
		case <-done:
		case <-time.After(5 * time.Second):
			for _, c := range cmds {
				c.Process.Kill()
			}
			<-done
		}
	}
	for _, g := range ls.groups {
		g.close()
	}
}

// slaveEnv is the environment of a local slave: the master's, less the NATS
// credentials when the slave talks to the master's own embedded server,
// which admits only the identity the master hands it.
func slaveEnv(embedded bool) []string {
	env := os.Environ()
	if !embedded {
		return env
	}
	out := env[:0:0]
	for _, kv := range env {
		if !strings.HasPrefix(kv, natsnet.CredentialsEnv+"=") {
			out = append(out, kv)
		}
	}
	return out
}

// dirExists reports whether path is a folder.
func dirExists(path string) bool {
	fi, err := os.Stat(path)
	return err == nil && fi.IsDir()
}
