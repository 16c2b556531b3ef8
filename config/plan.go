package config

import (
	"fmt"
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

// StageGroups returns the stage groups of an explicit cluster.plan, each
// the first and last RBM (1-based) that one local slave process trains,
// for a DBN of rbms RBMs; nil for auto and one-per-rbm. An explicit plan is
// a comma-separated list of RBMs or ranges of RBMs, in order, covering
// every RBM once: "1-2,3" trains RBM_1 and RBM_2 in one process and RBM_3
// in another.
func (cl Cluster) StageGroups(rbms int) ([][2]int, error) {
	if cl.Plan == PlanAuto || cl.Plan == PlanOnePerRBM {
		return nil, nil
	}
	want := fmt.Sprintf("must be %s, %s, or stage groups covering RBMs 1 to %d in order, like \"1-2,3\"", PlanAuto, PlanOnePerRBM, rbms)
	var groups [][2]int
	next := 1
	for _, part := range strings.Split(cl.Plan, ",") {
		first, last, isRange := strings.Cut(strings.TrimSpace(part), "-")
		if !isRange {
			last = first
		}
		a, errA := strconv.Atoi(strings.TrimSpace(first))
		b, errB := strconv.Atoi(strings.TrimSpace(last))
		switch {
		case errA != nil || errB != nil:
			return nil, fmt.Errorf("%s: %q is no RBM or range of RBMs", want, part)
		case a != next:
			return nil, fmt.Errorf("%s: group %q starts at RBM %d, want %d", want, part, a, next)
		case b < a || b > rbms:
			return nil, fmt.Errorf("%s: group %q ends at RBM %d", want, part, b)
		}
		groups = append(groups, [2]int{a, b})
		next = b + 1
	}
	if next != rbms+1 {
		return nil, fmt.Errorf("%s: RBMs %d to %d are in no group", want, next, rbms)
	}
	return groups, nil
}

// validatePlan checks cluster.plan and cluster.local_slaves against the
// rest of the config, reporting through bad.
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
	case groups != nil && cl.LocalSlaves > 0 && cl.LocalSlaves != len(groups):
		bad("cluster.local_slaves", cl.LocalSlaves, "cluster.plan = %q has %d stage groups, one local slave each (0: as many)", cl.Plan, len(groups))
	case cl.Plan == PlanOnePerRBM && cl.LocalSlaves > 0 && cl.LocalSlaves != rbms:
		bad("cluster.local_slaves", cl.LocalSlaves, "cluster.plan = %s needs one local slave per RBM, %d (0: as many)", PlanOnePerRBM, rbms)
	case cl.Plan == PlanAuto && cl.LocalSlaves > rbms:
		bad("cluster.local_slaves", cl.LocalSlaves, "more than the DBN's %d RBMs: stage replicas are not implemented yet, so the rest would idle", rbms)
	}
}
