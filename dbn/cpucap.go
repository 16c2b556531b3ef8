package dbn

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"

	"github.com/hashicorp/go-hclog"

	"github.com/pipedbn/pipedbn/blas"
)

// cpuGroup is a cgroup with a CPU quota: the processes in it together get at
// most cpus CPUs of time, which is how one box emulates a cluster of equal,
// smaller machines. It works with cgroup v2 (cpu.max) or v1 (the cpu
// controller's cfs quota), as root.
type cpuGroup struct {
	dir    string
	parent string // where members go back to on close
}

const cfsPeriod = 100000 // µs

// cgroupRoot is where the cgroup hierarchies are mounted. A test points it
// at an empty folder to see a box without them.
var cgroupRoot = "/sys/fs/cgroup"

// newCPUGroup creates the cgroup name with a quota of cpus CPUs.
func newCPUGroup(name string, cpus float64) (*cpuGroup, error) {
	quota := int64(cpus * cfsPeriod)
	if quota < 1000 {
		quota = 1000
	}
	if _, err := os.Stat(filepath.Join(cgroupRoot, "cgroup.controllers")); err == nil {
		g := &cpuGroup{dir: filepath.Join(cgroupRoot, name), parent: cgroupRoot}
		if err := os.Mkdir(g.dir, 0o755); err != nil && !errors.Is(err, os.ErrExist) {
			return nil, err
		}
		return g, os.WriteFile(filepath.Join(g.dir, "cpu.max"), []byte(fmt.Sprintf("%d %d", quota, cfsPeriod)), 0o644)
	}
	root := filepath.Join(cgroupRoot, "cpu")
	if _, err := os.Stat(filepath.Join(root, "cpu.cfs_quota_us")); err != nil {
		return nil, fmt.Errorf("no cgroup cpu controller found (neither cgroup v2 nor %s)", root)
	}
	g := &cpuGroup{dir: filepath.Join(root, name), parent: root}
	if err := os.Mkdir(g.dir, 0o755); err != nil && !errors.Is(err, os.ErrExist) {
		return nil, err
	}
	if err := os.WriteFile(filepath.Join(g.dir, "cpu.cfs_period_us"), []byte(strconv.Itoa(cfsPeriod)), 0o644); err != nil {
		return nil, err
	}
	return g, os.WriteFile(filepath.Join(g.dir, "cpu.cfs_quota_us"), []byte(strconv.FormatInt(quota, 10)), 0o644)
}

// add moves process pid (all its threads) into the group.
func (g *cpuGroup) add(pid int) error {
	return os.WriteFile(filepath.Join(g.dir, "cgroup.procs"), []byte(strconv.Itoa(pid)), 0o644)
}

// close moves this process back out if it is a member and removes the group
// (which fails harmlessly while other members still run).
func (g *cpuGroup) close() error {
	os.WriteFile(filepath.Join(g.parent, "cgroup.procs"), []byte(strconv.Itoa(os.Getpid())), 0o644)
	return os.Remove(g.dir)
}

// masterWorker is this process while it is the one worker of a phase of the
// run: the greedy trainer, or fine-tuning on one worker.
type masterWorker struct {
	// cpus is the cap the phase runs under: cluster.cpus_per_worker, or 0
	// when there is none (none asked, or no cgroup could be made).
	cpus float64
	// threads is the phase's BLAS threads.
	threads int
	group   *cpuGroup
	// before is the process's BLAS threads, to put back (0: left alone).
	before int
}

// asWorker makes this process the one worker of a phase, which what names
// in the log ("the greedy trainer", "fine-tuning"). With cpus =
// cluster.cpus_per_worker > 0 it gets what any worker of the run gets: a
// cgroup of its own capped at cpus CPUs and workerThreads(cpus) BLAS
// threads, so that the phase runs on an emulated machine like the slaves'.
// Where the cgroup cannot be made (not root, no cpu controller) it warns and
// the phase runs uncapped, with cpus 0. release undoes both.
func asWorker(cpus float64, phase, what string, log hclog.Logger) *masterWorker {
	w := &masterWorker{threads: blas.Threads()}
	if cpus <= 0 {
		return w
	}
	w.before, w.threads = w.threads, workerThreads(cpus)
	blas.SetThreads(w.threads)
	g, err := newCPUGroup(fmt.Sprintf("pipedbn-%d-%s", os.Getpid(), phase), cpus)
	if err == nil {
		err = g.add(os.Getpid())
	}
	if err != nil {
		if g != nil {
			g.close()
		}
		log.Warn("cannot cap the master's CPUs; "+what+" runs uncapped", "cpus_per_worker", cpus, "error", err)
		return w
	}
	w.group, w.cpus = g, cpus
	return w
}

// release moves this process out of the phase's cgroup, uncapped again, and
// puts its BLAS threads back.
func (w *masterWorker) release() {
	if w.group != nil {
		w.group.close()
		w.group = nil
	}
	if w.before > 0 {
		blas.SetThreads(w.before)
		w.before = 0
	}
}
