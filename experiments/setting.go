package experiments

import (
	"fmt"

	"github.com/pipedbn/pipedbn/config"
)

// Setting is where and how a run pre-trained, in the terms of the paper's
// Table 3: its rows are greedy on one machine, pipelined on one machine and
// pipelined on L machines (one per RBM). One box emulates a machine with a
// CPU quota of cluster.cpus_per_worker CPUs.
type Setting int

const (
	// GreedyOneMachine is greedy pre-training capped at cpus_per_worker CPUs.
	GreedyOneMachine Setting = iota
	// PipelinedOneMachine is pipelined pre-training with all local slaves
	// in one group of cpus_per_worker CPUs (cluster.colocate).
	PipelinedOneMachine
	// PipelinedLMachines is pipelined pre-training with one slave per RBM,
	// each its own machine: a local slave in its own group of
	// cpus_per_worker CPUs (or of its cluster.machine_cpus), or a remote
	// slave (cluster.slaves > 0).
	PipelinedLMachines
	// GreedyWholeBox is greedy pre-training without a CPU cap.
	GreedyWholeBox
	// PipelinedWholeBox is pipelined pre-training with uncapped local
	// slaves sharing this box.
	PipelinedWholeBox
	// PipelinedInProcess is pipelined pre-training inside the master
	// (cluster.transport memory), uncapped.
	PipelinedInProcess
)

// String names the setting as sweep.csv and report.md do: "greedy, 1 machine".
func (s Setting) String() string {
	switch s {
	case GreedyOneMachine:
		return "greedy, 1 machine"
	case PipelinedOneMachine:
		return "pipelined, 1 machine"
	case PipelinedLMachines:
		return "pipelined, L machines"
	case GreedyWholeBox:
		return "greedy, whole box"
	case PipelinedWholeBox:
		return "pipelined, whole box"
	case PipelinedInProcess:
		return "pipelined, in-process"
	}
	return fmt.Sprintf("Setting(%d)", int(s))
}

// describe says how a setting is made, for the report.
func (s Setting) describe() string {
	switch s {
	case GreedyOneMachine:
		return "the greedy trainer (Algorithm 1) in one process capped at `cluster.cpus_per_worker` CPUs (a cgroup CPU quota)"
	case PipelinedOneMachine:
		return "one local slave process per RBM (Algorithm 2 over NATS), all of them in one CPU group of `cluster.cpus_per_worker` CPUs (`cluster.colocate: true`)"
	case PipelinedLMachines:
		return "one slave per RBM, each its own machine: a local slave process in its own CPU group of `cluster.cpus_per_worker` CPUs (or a remote slave)"
	case GreedyWholeBox:
		return "the greedy trainer with every CPU of this box (`cluster.cpus_per_worker: 0`)"
	case PipelinedWholeBox:
		return "local slaves, uncapped, sharing every CPU of this box as `cluster.plan` lays them out (auto: one stage group of every RBM inside the master; one-per-rbm: a slave process per RBM)"
	case PipelinedInProcess:
		return "all RBMs in the master process (`cluster.transport: memory`), uncapped"
	}
	return ""
}

// SettingOf classifies a run's configuration.
func SettingOf(c *config.Config) Setting {
	cl := c.Cluster
	switch {
	case c.Pretrain.Mode == config.Greedy && cl.CPUsPerWorker > 0:
		return GreedyOneMachine
	case c.Pretrain.Mode == config.Greedy:
		return GreedyWholeBox
	case cl.Transport == config.Memory:
		return PipelinedInProcess
	case cl.Slaves > 0:
		return PipelinedLMachines
	case cl.CPUsPerWorker == 0 && len(cl.MachineCPUs) == 0:
		return PipelinedWholeBox
	case cl.Colocate:
		return PipelinedOneMachine
	}
	return PipelinedLMachines
}
