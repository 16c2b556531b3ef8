package dbn

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/pipedbn/pipedbn/pipeline"
	"github.com/pipedbn/pipedbn/pipeline/plan"
	"github.com/pipedbn/pipedbn/rbm"
)

// TestUnequalMachinesPlan: with cluster.machine_cpus, each local slave
// process is capped at its own machine's CPUs, and the auto plan gives the
// machine at half speed the least work: on the quickstart DBN (RBM costs
// 392 : 250 : 1,000 per sample), RBM_2 alone, while RBM_3 takes two full
// machines as replicas. (The tolerance of 0.1 keeps the search from ever
// trying replicas of RBM_1 or RBM_2, so that only RBM_3's step cost is
// measured, which the end of the test checks; the default, 0, plans the
// same groups but measures all three on the way.)
func TestUnequalMachinesPlan(t *testing.T) {
	// Not parallel: it times no CD steps, but steps that cost as many
	// rows as a quiet machine measures (8), for a plan that does not
	// follow the load of the tests beside it.
	measured := measureStepCost
	measureStepCost = func(_, _, batch, small, _ int, _ time.Duration) rbm.StepCost {
		full, sub := time.Duration(batch+8)*time.Microsecond, time.Duration(small+8)*time.Microsecond
		return rbm.StepCost{Full: full, Sub: sub, FullCPU: full, SubCPU: sub}
	}
	defer func() { measureStepCost = measured }()
	cfg := loadConfig(t, `
data: {source: synthetic, train_limit: 6000}
dbn: {layers: [784, 500, 500, 2000]}
cluster: {machine_cpus: [0.5, 0.25, 0.5, 0.5], max_replicas: 4, replica_tolerance: 0.1}
`)
	const examples = 6000
	lay, err := layoutLocal(cfg, Stages(cfg, examples), examples, pipeline.Float32)
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
	// RBM_3 on replicas: its step cost measured, the others' not.
	if len(res.StepRows) != 3 || res.StepRows[0] != 0 || res.StepRows[1] != 0 || !(res.StepRows[2] > 0) {
		t.Errorf("result step_rows %v; want RBM_3's alone measured, the RBM on replicas", res.StepRows)
	}
	if !strings.Contains(res.Text, "RBM_1 8 (assumed), RBM_2 8 (assumed), RBM_3 ") {
		t.Errorf("the plan's text does not say which step costs were measured:\n%s", res.Text)
	}
}

// replicatedUnmeasured: the RBMs a plan puts on replicas whose step cost
// is not measured yet.
func TestReplicatedUnmeasured(t *testing.T) {
	t.Parallel()
	p := &plan.Plan{Groups: []plan.Group{
		{First: 1, Last: 1, Machines: []string{"a"}},
		{First: 2, Last: 3, Machines: []string{"b", "c"}},
		{First: 4, Last: 4, Machines: []string{"d", "e"}},
	}}
	tests := []struct {
		stepRows []float64
		want     []int
	}{
		{nil, []int{1, 2, 3}},
		{[]float64{0, 12, 0, 0}, []int{2, 3}},
		{[]float64{0, 12, 9, 14}, nil},
	}
	for _, tt := range tests {
		if got := replicatedUnmeasured(p, tt.stepRows); !slices.Equal(got, tt.want) {
			t.Errorf("replicatedUnmeasured(%v) = %v; want %v", tt.stepRows, got, tt.want)
		}
	}
}
