package config

import (
	"fmt"
	"math"
	"strconv"
	"strings"
)

// The named values of cluster.plan; any other value is an explicit plan of
// stage groups (see Cluster.StageGroups).
const (
	// PlanAuto lets the planner (pipeline/plan) choose the stage groups
	// for the local slaves' machines: the default.
	PlanAuto = "auto"
	// PlanOnePerRBM is the paper's mapping: RBM_i on slave i.
	PlanOnePerRBM = "one-per-rbm"
)

// StageGroup is a group of an explicit cluster.plan: RBMs First to Last
// (1-based) trained by one local slave process, on Replicas processes
// that train it data-parallel.
type StageGroup struct{ First, Last, Replicas int }

// StageGroups returns the stage groups of an explicit cluster.plan for a
// DBN of rbms RBMs; nil for auto and one-per-rbm. An explicit plan is a
// comma-separated list of RBMs or ranges of RBMs, in order, covering every
// RBM once, each with "xR" for R stage replicas: "1-2,3x2" trains RBM_1
// and RBM_2 in one process and RBM_3 on two.
func (cl Cluster) StageGroups(rbms int) ([]StageGroup, error) {
	if cl.Plan == PlanAuto || cl.Plan == PlanOnePerRBM {
		return nil, nil
	}
	want := fmt.Sprintf("must be %s, %s, or stage groups covering RBMs 1 to %d in order, each with xR for R replicas, like \"1-2,3x2\"", PlanAuto, PlanOnePerRBM, rbms)
	var groups []StageGroup
	next := 1
	for _, part := range strings.Split(cl.Plan, ",") {
		rbmsOf, times, replicated := strings.Cut(strings.TrimSpace(part), "x")
		first, last, isRange := strings.Cut(rbmsOf, "-")
		if !isRange {
			last = first
		}
		a, okA := planCount(first)
		b, okB := planCount(last)
		r, okR := 1, true
		if replicated {
			r, okR = planCount(times)
		}
		switch {
		case signed(first, last, times):
			return nil, fmt.Errorf("%s: group %q: RBMs and replicas are plain numbers, without a sign", want, part)
		case !okA || !okB:
			return nil, fmt.Errorf("%s: %q is no RBM or range of RBMs", want, part)
		case !okR || r < 1:
			return nil, fmt.Errorf("%s: group %q: %q is no number of replicas in [1, %d]", want, part, times, MaxSize)
		case a != next:
			return nil, fmt.Errorf("%s: group %q starts at RBM %d, want %d", want, part, a, next)
		case b < a || b > rbms:
			return nil, fmt.Errorf("%s: group %q ends at RBM %d", want, part, b)
		}
		groups = append(groups, StageGroup{a, b, r})
		next = b + 1
	}
	if next != rbms+1 {
		return nil, fmt.Errorf("%s: RBMs %d to %d are in no group", want, next, rbms)
	}
	return groups, nil
}

// planCount reads a number of cluster.plan: decimal digits alone (around
// them spaces), at most MaxSize, so that no sum or product of a plan's
// numbers overflows.
func planCount(s string) (int, bool) {
	s = strings.TrimSpace(s)
	if s == "" || strings.Trim(s, "0123456789") != "" {
		return 0, false
	}
	n, err := strconv.Atoi(s)
	return n, err == nil && n <= MaxSize
}

// signed reports whether one of a group's numbers has a sign, which
// strconv would take but a plan does not.
func signed(nums ...string) bool {
	for _, s := range nums {
		if s = strings.TrimSpace(s); s != "" && (s[0] == '+' || s[0] == '-') {
			return true
		}
	}
	return false
}

// Processes returns the local slave processes groups take: one per
// replica of each.
func Processes(groups []StageGroup) int {
	n := 0
	for _, g := range groups {
		n += g.Replicas
	}
	return n
}

// validatePlan checks cluster.plan, cluster.local_slaves and
// cluster.machine_cpus against the rest of the config, reporting through
// bad.
func (c *Config) validatePlan(bad func(key string, val any, reason string, args ...any)) {
	cl := c.Cluster
	rbms := len(c.DBN.Layers) - 1
	if cl.LocalSlaves < 0 {
		bad("cluster.local_slaves", cl.LocalSlaves, "must be >= 0 (0: as cluster.plan decides)")
	}
	if rbms < 1 {
		return
	}
	groups, err := cl.StageGroups(rbms)
	if err != nil {
		bad("cluster.plan", cl.Plan, "%v", err)
		return
	}
	local := cl.Slaves == 0 && cl.Transport == NATS
	switch {
	case groups != nil && !local:
		bad("cluster.plan", cl.Plan, "stage groups need the local slaves of cluster.transport = nats and cluster.slaves = 0 (slaves started by hand train one RBM each)")
	case cl.LocalSlaves > 0 && !local:
		bad("cluster.local_slaves", cl.LocalSlaves, "only counts the local slaves of cluster.transport = nats and cluster.slaves = 0")
	case groups != nil && cl.LocalSlaves > 0 && cl.LocalSlaves != Processes(groups):
		bad("cluster.local_slaves", cl.LocalSlaves, "cluster.plan = %q has %d stage groups and replicas, one local slave each (0: as many)", cl.Plan, Processes(groups))
	case cl.Plan == PlanOnePerRBM && cl.LocalSlaves > 0 && cl.LocalSlaves != rbms:
		bad("cluster.local_slaves", cl.LocalSlaves, "cluster.plan = %s needs one local slave per RBM, %d (0: as many)", PlanOnePerRBM, rbms)
	}
	if len(cl.MachineCPUs) > 0 {
		for k, cpus := range cl.MachineCPUs {
			if !(cpus > 0 && cpus <= MaxCPUsPerWorker) {
				bad(fmt.Sprintf("cluster.machine_cpus[%d]", k), cpus, "must be a number of CPUs in (0, %d]", MaxCPUsPerWorker)
			}
		}
		n := len(cl.MachineCPUs)
		switch {
		case !local:
			bad("cluster.machine_cpus", cl.MachineCPUs, "only sizes the local slaves of cluster.transport = nats and cluster.slaves = 0")
		case cl.Colocate:
			bad("cluster.machine_cpus", cl.MachineCPUs, "gives each local slave a machine of its own; cluster.colocate = true puts them all on one")
		case cl.LocalSlaves > 0 && cl.LocalSlaves != n:
			bad("cluster.local_slaves", cl.LocalSlaves, "cluster.machine_cpus lists %d machines, one local slave each (0: as many)", n)
		case groups != nil && Processes(groups) != n:
			bad("cluster.machine_cpus", cl.MachineCPUs, "lists %d machines; cluster.plan = %q has %d stage groups and replicas, one machine each", n, cl.Plan, Processes(groups))
		case cl.Plan == PlanOnePerRBM && n != rbms:
			bad("cluster.machine_cpus", cl.MachineCPUs, "lists %d machines; cluster.plan = %s needs one per RBM, %d", n, PlanOnePerRBM, rbms)
		}
	}
	if cl.SyncEvery < 1 {
		bad("cluster.sync_every", cl.SyncEvery, "must be >= 1 (windows a stage replica trains between two averages)")
	} else if ce := c.Reliability.CheckpointEvery; ce > 0 && ce%cl.SyncEvery != 0 && c.replicasPossible(groups) {
		bad("cluster.sync_every", cl.SyncEvery, "must divide reliability.checkpoint_every = %d: a stage replica checkpoints after an average", ce)
	}
	if t := cl.ReplicaTolerance; t < 0 || math.IsNaN(t) {
		bad("cluster.replica_tolerance", t, "must be >= 0 (0: the fastest plan)")
	}
	if cl.MaxReplicas < 1 {
		bad("cluster.max_replicas", cl.MaxReplicas, "must be >= 1 (1: no stage replicas)")
	}
}

// replicasPossible reports whether a pipelined run of c may have stage
// replicas: an explicit plan with some, or the auto plan of local slaves.
func (c *Config) replicasPossible(groups []StageGroup) bool {
	if groups != nil {
		return Processes(groups) > len(groups)
	}
	return c.Cluster.Plan == PlanAuto && c.Cluster.MaxReplicas > 1 && c.Cluster.Slaves == 0 && c.Cluster.Transport == NATS
}
