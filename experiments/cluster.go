package experiments

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/pipedbn/pipedbn/config"
	"github.com/pipedbn/pipedbn/data"
	"github.com/pipedbn/pipedbn/pipeline"
	"github.com/pipedbn/pipedbn/pipeline/natsnet"
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
// server, or on an embedded one with one local slave process per RBM.
func pretrainNATS(ctx context.Context, cfg *config.Config, opt Options, out string, train *data.Set, stageCfgs []pipeline.StageConfig, shuffleSeed uint64, hooks pipeline.Hooks) (*trained, error) {
	log := opt.Logger
	url := cfg.Cluster.NatsURL
	if url == "" {
		emb, err := natsnet.StartEmbedded()
		if err != nil {
			return nil, err
		}
		defer emb.Shutdown()
		url = emb.URL()
		log.Info("embedded NATS server started", "url", url)
	}
	nc, err := natsnet.Connect(url, "pipedbn-master")
	if err != nil {
		return nil, fmt.Errorf("config %s: cluster.nats_url = %q: %w", cfg.File, cfg.Cluster.NatsURL, err)
	}
	defer nc.Drain()

	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	if cfg.Cluster.Slaves == 0 {
		local, err := startLocalSlaves(ctx, cfg, opt, url, out, len(stageCfgs), cancel)
		if err != nil {
			return nil, err
		}
		defer local.stop()
	} else {
		log.Info("waiting for slaves", "want", len(stageCfgs), "nats", url, "timeout", cfg.Cluster.JoinTimeout)
	}
	res, err := natsnet.NewMaster(nc, log.Named("cluster")).Run(ctx, natsnet.Plan{
		RunID:       runID(cfg.Name),
		Stages:      stageCfgs,
		Data:        train.X,
		N:           train.N,
		ShuffleSeed: shuffleSeed,
		Credits:     cfg.Cluster.Credits,
		JoinTimeout: cfg.Cluster.JoinTimeout,
		Hooks:       hooks,
	})
	if err != nil {
		if cause := context.Cause(ctx); cause != nil && cause != context.Canceled && ctx.Err() != nil {
			return nil, cause
		}
		return nil, err
	}
	t := &trained{}
	for _, r := range res {
		s := r.Stats
		t.rbms = append(t.rbms, r.RBM)
		t.results = append(t.results, RBMResult{
			Index: s.Index, Visible: r.RBM.Visible, Hidden: r.RBM.Hidden, Worker: r.Slave,
			Batches: s.Batches, ReconError: s.Recon, BusySeconds: s.Busy.Seconds(),
			WaitSeconds: (s.WaitInput + s.WaitCredit).Seconds(), BytesIn: r.BytesIn, BytesOut: r.BytesOut,
		})
	}
	return t, nil
}

// localSlaves are the slave processes the master starts for itself.
type localSlaves struct {
	cmds   []*exec.Cmd
	groups []*cpuGroup
	exited sync.WaitGroup
}

// startLocalSlaves starts n `slave` processes on url, each capped at
// cluster.cpus_per_worker CPUs where a cgroup can be made (with
// cluster.colocate, all of them together in one group of that many CPUs: one
// machine), with their logs in out/slave-<i>.log. A slave that exits with an
// error cancels ctx with a cause naming it and its log.
func startLocalSlaves(ctx context.Context, cfg *config.Config, opt Options, url, out string, n int, cancel context.CancelCauseFunc) (*localSlaves, error) {
	log := opt.Logger
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
	threads := max(1, runtime.NumCPU()/n)
	switch {
	case colocate:
		// n slaves share the machine's CPUs, as they would share its cores.
		threads = workerThreads(cpus / float64(n))
	case cpus > 0:
		threads = workerThreads(cpus)
	}
	ls := &localSlaves{}
	var shared *cpuGroup
	if colocate {
		g, err := newCPUGroup(fmt.Sprintf("pipedbn-%d-local", os.Getpid()), cpus)
		if err != nil {
			if g != nil {
				g.close()
			}
			log.Warn("cannot cap the local slaves' CPUs; they run uncapped", "cpus_per_worker", cpus, "colocate", true, "error", err)
		} else {
			shared = g
			ls.groups = append(ls.groups, g)
		}
	}
	for i := 1; i <= n; i++ {
		name := fmt.Sprintf("local-%d", i)
		logPath := filepath.Join(out, fmt.Sprintf("slave-%d.log", i))
		logFile, err := os.Create(logPath)
		if err != nil {
			ls.stop()
			return nil, err
		}
		args := append(append([]string{}, command[1:]...), "--nats", url, "--name", name,
			"--threads", strconv.Itoa(threads), "--join-timeout", cfg.Cluster.JoinTimeout.String())
		cmd := exec.Command(command[0], args...)
		cmd.Stdout, cmd.Stderr = logFile, logFile
		cmd.Env = append(slaveEnv(cfg.Cluster.NatsURL == ""), "GOMAXPROCS="+strconv.Itoa(threads))
		// A local slave must not outlive its master, even a killed one.
		cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGTERM}
		if err := cmd.Start(); err != nil {
			logFile.Close()
			ls.stop()
			return nil, fmt.Errorf("start local slave %s (%s): %w", name, command[0], err)
		}
		ls.cmds = append(ls.cmds, cmd)
		switch {
		case shared != nil:
			if err := shared.add(cmd.Process.Pid); err != nil {
				log.Warn("cannot cap a local slave's CPUs; it runs uncapped", "slave", name, "cpus_per_worker", cpus, "colocate", true, "error", err)
			}
		case cpus > 0 && !colocate:
			g, err := newCPUGroup(fmt.Sprintf("pipedbn-%d-%s", os.Getpid(), name), cpus)
			if err == nil {
				err = g.add(cmd.Process.Pid)
				ls.groups = append(ls.groups, g)
			}
			if err != nil {
				log.Warn("cannot cap a local slave's CPUs; it runs uncapped", "slave", name, "cpus_per_worker", cpus, "error", err)
			}
		}
		ls.exited.Add(1)
		go func() {
			defer ls.exited.Done()
			err := cmd.Wait()
			logFile.Close()
			if err != nil && ctx.Err() == nil {
				cancel(fmt.Errorf("local slave %s failed: %v (its log: %s)", name, err, logPath))
			}
		}()
	}
	if colocate {
		log.Info("local slaves started", "count", n, "threads_each", threads, "cpus_shared", cpus, "logs", out)
	} else {
		log.Info("local slaves started", "count", n, "threads_each", threads, "cpus_each", cpus, "logs", out)
	}
	return ls, nil
}

// stop waits a little for the slaves to finish, then terminates the rest.
func (ls *localSlaves) stop() {
	done := make(chan struct{})
	go func() { ls.exited.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		for _, c := range ls.cmds {
			c.Process.Signal(syscall.SIGTERM)
		}
		select {
		case <-done:
		case <-time.After(5 * time.Second):
			for _, c := range ls.cmds {
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
// which asks for none.
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
