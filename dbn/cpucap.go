package dbn

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
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

// newCPUGroup creates the cgroup name with a quota of cpus CPUs.
func newCPUGroup(name string, cpus float64) (*cpuGroup, error) {
	quota := int64(cpus * cfsPeriod)
	if quota < 1000 {
		quota = 1000
	}
	if _, err := os.Stat("/sys/fs/cgroup/cgroup.controllers"); err == nil {
		g := &cpuGroup{dir: filepath.Join("/sys/fs/cgroup", name), parent: "/sys/fs/cgroup"}
		if err := os.Mkdir(g.dir, 0o755); err != nil && !errors.Is(err, os.ErrExist) {
			return nil, err
		}
		return g, os.WriteFile(filepath.Join(g.dir, "cpu.max"), []byte(fmt.Sprintf("%d %d", quota, cfsPeriod)), 0o644)
	}
	root := "/sys/fs/cgroup/cpu"
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
