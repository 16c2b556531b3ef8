package dbn

import (
	"slices"
	"testing"

	"github.com/pipedbn/pipedbn/config"
)

// TestUnequalMachinesPlan: with cluster.machine_cpus, each local slave
// process is capped at its own machine's CPUs, and the auto plan gives the
// machine at half speed the least work: on the quickstart DBN (RBM costs
// 392 : 250 : 1,000 per sample), RBM_2 alone, while RBM_3 takes two full
// machines as replicas.
func TestUnequalMachinesPlan(t *testing.T) {
	t.Parallel()
	cfg := loadConfig(t, `
data: {source: synthetic, train_limit: 6000}
dbn: {layers: [784, 500, 500, 2000]}
cluster: {machine_cpus: [0.5, 0.25, 0.5, 0.5], max_replicas: 4}
`)
	const examples = 6000
	lay, err := layoutLocal(cfg, Stages(cfg, examples), examples)
	if err != nil {
		t.Fatal(err)
	}
	t.Log("\n" + lay.plan.String())
	if len(lay.procs) != 4 {
		t.Fatalf("%d processes; want one per machine, 4", len(lay.procs))
	}
	var total float64
	for p, pr := range lay.procs {
		total += pr.cpus
		if pr.cpus == 0.25 && (pr.first != 2 || pr.last != 2) {
			t.Errorf("process %d (%v) on the half-speed machine trains RBMs %d-%d; want RBM_2 alone", p, lay.names(p), pr.first, pr.last)
		}
		if pr.first == 3 && pr.cpus != 0.5 {
			t.Errorf("process %d (%v), a replica of RBM_3, on %g CPUs; want a full machine, 0.5", p, lay.names(p), pr.cpus)
		}
	}
	if total != 1.75 {
		t.Errorf("the processes have %g CPUs in all; want the machines' 1.75", total)
	}
	res := lay.result(nil)
	if res.CPUs != 0 || res.Threads != 0 {
		t.Errorf("result cpus %g, threads %d; want 0 where the machines differ", res.CPUs, res.Threads)
	}
	for _, g := range res.Groups {
		if len(g.CPUs) != g.Replicas {
			t.Errorf("group %v: cpus %v for %d replicas", g.RBMs, g.CPUs, g.Replicas)
		}
	}
	if len(res.StepRows) != 3 {
		t.Errorf("result step_rows %v; want one measured per RBM, every one may be replicated", res.StepRows)
	}
}

// replicable: the RBMs a plan may replicate are those it measures the
// steps of.
func TestReplicable(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name     string
		cl       config.Cluster
		explicit []config.StageGroup
		m        int
		want     []bool
	}{
		{"auto", config.Cluster{Plan: config.PlanAuto, Replicate: config.ReplicateAny}, nil, 4, []bool{true, true, true}},
		{"auto, top", config.Cluster{Plan: config.PlanAuto, Replicate: config.ReplicateTop}, nil, 4, []bool{false, false, true}},
		{"auto, one machine", config.Cluster{Plan: config.PlanAuto}, nil, 1, []bool{false, false, false}},
		{"auto, no replicas", config.Cluster{Plan: config.PlanAuto, MaxReplicas: 1}, nil, 8, []bool{false, false, false}},
		{"one-per-rbm", config.Cluster{Plan: config.PlanOnePerRBM}, nil, 3, []bool{false, false, false}},
		{"explicit", config.Cluster{Plan: "1,2-3x2"}, []config.StageGroup{{First: 1, Last: 1, Replicas: 1}, {First: 2, Last: 3, Replicas: 2}}, 3, []bool{false, true, true}},
	}
	for _, tt := range tests {
		if got := replicable(tt.cl, tt.explicit, tt.m, 3); !slices.Equal(got, tt.want) {
			t.Errorf("%s: replicable = %v; want %v", tt.name, got, tt.want)
		}
	}
}
