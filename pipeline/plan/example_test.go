package plan_test

import (
	"fmt"

	"github.com/pipedbn/pipedbn/pipeline/plan"
)

// The quickstart DBN on three slaves of one CPU at 60 GFLOP/s on a 1 Gb/s
// network, accepting a plan up to 10% slower than the fastest for fewer RBM
// copies: RBM_1 alone, RBM_2 and RBM_3 grouped on two replicas.
func ExampleAuto() {
	job := plan.Job{Layers: []int{784, 500, 500, 2000}, BatchSize: 256, K: 10, Windows: 120}
	cl := plan.Cluster{
		Network:  plan.Network{Bandwidth: 125e6, Latency: 100e-6},
		ByteWork: 200,
	}
	for _, name := range []string{"a", "b", "c"} {
		cl.Machines = append(cl.Machines, plan.Machine{Name: name, CPUs: 1, Speed: 60})
	}
	p, err := plan.Auto(job, cl, plan.Options{Tolerance: 0.1})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Print(p)
	// Output:
	// auto plan (exact): 3 RBMs on 3 of 3 machines, 0.354 s per window (bottleneck: group 1)
	// predicted 43.1 s for 120 windows; greedy on a 93.8 s; speed-up 2.17, efficiency 0.72
	//   group  RBMs  machines  compute s  messages s  sync s  link s  window s
	//       1   1-2         a      0.311       0.044   0.000   0.064     0.354 *
	//       2     3       b,c      0.243       0.009   0.046   0.020     0.297
}

// A plan written by hand is checked, every problem reported.
func ExampleExplicit() {
	job := plan.Job{Layers: []int{784, 500, 500, 2000}, BatchSize: 256, K: 10, Windows: 120}
	cl := plan.Cluster{Machines: []plan.Machine{{Name: "a", CPUs: 1, Speed: 60}, {Name: "b", CPUs: 1, Speed: 60}}}
	_, err := plan.Explicit(job, cl, []plan.Group{
		{First: 1, Last: 1, Machines: []string{"a"}},
		{First: 3, Last: 3, Machines: []string{"a", "z"}},
	})
	fmt.Println(err)
	// Output:
	// explicit plan: group 2 (RBM_3): machine "a", also in group 1: plan: machine named twice
	// group 2 (RBM_3): machine "z": plan: unknown machine
	// RBM_2: plan: RBM in no group
}
