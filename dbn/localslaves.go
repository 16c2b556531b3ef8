package dbn

import (
	"cmp"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/pipedbn/pipedbn/config"
	"github.com/pipedbn/pipedbn/pipeline/natsnet"
)

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

// logPath is the log of process p: slave-<i>.log (the layout's logStem
// for slave), i its group's first RBM,
// or slave-<i>-r<k>.log for its replica k.
func (ls *localSlaves) logPath(p int) string {
	pr := ls.layout.procs[p]
	stem := cmp.Or(ls.layout.logStem, "slave")
	if pr.replicas > 1 {
		return filepath.Join(ls.out, fmt.Sprintf("%s-%d-r%d.log", stem, pr.first, pr.replica))
	}
	return filepath.Join(ls.out, fmt.Sprintf("%s-%d.log", stem, pr.first))
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
