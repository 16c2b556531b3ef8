package plan

import (
	"errors"
	"fmt"
	"github.com/pipedbn/pipedbn/pipeline"
	"math"
	"slices"
	"strings"
	"testing"
	"time"
)

// quickstart is configs/quickstart.yaml's pre-training: the 784-500-500-2000
// DBN in mini-batches of 256, K = 10, 5 epochs of the 60,000 Fashion-MNIST
// training images (235 mini-batches, 24 windows an epoch).
var quickstart = Job{Layers: []int{784, 500, 500, 2000}, BatchSize: 256, K: 10, Windows: 120}

// Networks: 10 Gb/s, 1 Gb/s, and this box's loopback as the table3 report
// models it.
var (
	fast     = Network{Bandwidth: 1.25e9, Latency: 100e-6}
	gigabit  = Network{Bandwidth: 1.25e8, Latency: 100e-6}
	loopback = Network{Latency: 100e-6}
)

// The project's box: CD-1 at about 60 GFLOP/s per CPU as SampleWork counts
// (rbm_cd1_vs_gemm5: 14.4k samples/s on 784x500), and 14.7 ms per MB of
// messages at 0.225 CPU (table3 report), about 200 flop-equivalents a byte.
const boxSpeed, boxByteWork = 60, 200

// equalCluster returns n machines m1..mn of one CPU of the box.
func equalCluster(n int, net Network) Cluster {
	cl := Cluster{Network: net, ByteWork: boxByteWork, ThreadLoss: 0.05}
	for k := range n {
		cl.Machines = append(cl.Machines, Machine{Name: fmt.Sprintf("m%d", k+1), CPUs: 1, Speed: boxSpeed})
	}
	return cl
}

// layout renders a plan's groups as "1-2:m1 3:m2,m3".
func layout(p *Plan) string {
	var parts []string
	for _, g := range p.Groups {
		parts = append(parts, g.rbms()+":"+strings.Join(g.Machines, ","))
	}
	return strings.Join(parts, " ")
}

// groupOf returns the group of p that trains RBM_i.
func groupOf(p *Plan, i int) Group {
	for _, g := range p.Groups {
		if g.First <= i && i <= g.Last {
			return g
		}
	}
	panic(fmt.Sprintf("RBM_%d in no group of %s", i, layout(p)))
}

func TestSampleWork(t *testing.T) {
	t.Parallel()
	tests := []struct {
		v, h, k int
		want    float64
	}{
		{784, 500, 1, 10*784*500 + 280*(784+500)},
		{500, 500, 1, 10*500*500 + 280*1000},
		{500, 2000, 1, 10*500*2000 + 280*2500},
		{784, 500, 3, 18*784*500 + 3*280*(784+500)},
	}
	for _, tt := range tests {
		if got := SampleWork(tt.v, tt.h, tt.k); got != tt.want {
			t.Errorf("SampleWork(%d, %d, %d) = %g; want %g", tt.v, tt.h, tt.k, got, tt.want)
		}
	}
	// rbm_cd1_vs_gemm5: 14.38k samples/s of CD-1 on 784x500, in
	// mini-batches of 256, each step StepRows samples more.
	if got := SpeedFromRate(RefVisible, RefHidden, 1, 14380); math.Abs(got-63.5) > 0.1 {
		t.Errorf("SpeedFromRate(784, 500, 1, 14380) = %.2f; want 63.5", got)
	}
}

// TestCost pins the cost of one group to the formulas of doc.go.
func TestCost(t *testing.T) {
	t.Parallel()
	job := Job{Layers: []int{100, 50}, BatchSize: 10, K: 2, Windows: 5, SyncEvery: 4}
	cl := Cluster{
		Machines:   []Machine{{Name: "a", CPUs: 2, Speed: 1}, {Name: "b", CPUs: 2, Speed: 1}},
		Network:    Network{Bandwidth: 1000, Latency: 0.01},
		ByteWork:   10,
		ThreadLoss: 0.5,
	}
	p, err := Explicit(job, cl, []Group{{First: 1, Last: 1, Machines: []string{"a", "b"}}})
	if err != nil {
		t.Fatal(err)
	}
	const (
		rows     = 20.0
		sample   = 10*100*50 + 280*150            // flop-equivalents of a sample
		work     = (rows + 2*2*StepRows) * sample // a window of 20 rows in K·r = 4 steps
		capacity = 1e9 * 2 / (1 + 0.5)            // 2 CPUs with a ThreadLoss of 0.5
		in       = 4 * rows * 100                 // the data window; the top RBM sends nothing
		params   = 4 * (100*50 + 100 + 50)        // each replica sends them, and gets their mean
	)
	want := Cost{
		Compute:  work / capacity / 2,
		Messages: in * 10 / 1e9 / 2,
		Sync:     (2.0*params/1000 + 2*0.01 + 2*params*10/1e9) / 4 / 2, // the master's link carries both replicas'
		Link:     in / 1000 / 2,
		Transit:  0.01 + in/1000 + work/capacity + in*10/1e9,
	}
	want.Window = max(want.Compute+want.Messages+want.Sync, want.Link)
	got := p.Costs[0]
	for _, f := range []struct {
		name      string
		got, want float64
	}{
		{"Compute", got.Compute, want.Compute}, {"Messages", got.Messages, want.Messages},
		{"Sync", got.Sync, want.Sync}, {"Link", got.Link, want.Link},
		{"Window", got.Window, want.Window}, {"Transit", got.Transit, want.Transit},
	} {
		if math.Abs(f.got-f.want) > 1e-12*math.Abs(f.want) {
			t.Errorf("Cost.%s = %g; want %g", f.name, f.got, f.want)
		}
	}
	// The master's link streams a data window in 8 s, slower than the
	// group: it paces the pipeline.
	if p.Window != in/1000 || p.Bottleneck != -1 {
		t.Errorf("Window = %g, Bottleneck = %d; want the master's link, %g, -1", p.Window, p.Bottleneck, in/1000.0)
	}
	if want := 4*p.Window + want.Transit; math.Abs(p.Seconds-want) > 1e-9 {
		t.Errorf("Seconds = %g; want %g", p.Seconds, want)
	}
	if want := 5 * (rows + 2*StepRows) * sample / capacity; math.Abs(p.Greedy-want) > 1e-12 {
		t.Errorf("Greedy = %g; want %g", p.Greedy, want)
	}
}

// The calibration that measured the machines counts in the predicted
// time once, however often the caller says how long it took, and in the
// speed-up; the plan's text gives it.
func TestCalibrated(t *testing.T) {
	t.Parallel()
	job := Job{Layers: []int{100, 50, 20}, BatchSize: 10, K: 2, Windows: 5}
	cl := Cluster{Machines: []Machine{{Name: "a", CPUs: 1, Speed: 1}, {Name: "b", CPUs: 1, Speed: 1}}}
	p, err := OnePerRBM(job, cl)
	if err != nil {
		t.Fatal(err)
	}
	pipeline := p.Seconds
	p.Calibrated(2)
	p.Calibrated(0.5)
	if p.Seconds != pipeline+0.5 || p.Calibration != 0.5 {
		t.Errorf("Seconds = %g, Calibration = %g; want %g, 0.5", p.Seconds, p.Calibration, pipeline+0.5)
	}
	if got, want := p.SpeedUp(), p.Greedy/(pipeline+0.5); got != want {
		t.Errorf("SpeedUp = %g; want %g", got, want)
	}
	if !strings.Contains(p.String(), "(0.5 s of calibration)") {
		t.Errorf("the plan's text does not give its calibration:\n%s", p)
	}
}

// A CPU quota slows a machine of less than one CPU by 1 + QuotaLoss, in
// training and in handling bytes alike; a machine of a whole CPU or more
// keeps its speed.
func TestQuotaLoss(t *testing.T) {
	t.Parallel()
	job := Job{Layers: []int{100, 50, 20}, BatchSize: 10, K: 2, Windows: 5}
	costs := func(cpus, loss float64) []Cost {
		cl := Cluster{Machines: []Machine{{Name: "a", CPUs: cpus, Speed: 1}, {Name: "b", CPUs: cpus, Speed: 1}}, ByteWork: 200, QuotaLoss: loss}
		p, err := OnePerRBM(job, cl)
		if err != nil {
			t.Fatal(err)
		}
		return p.Costs
	}
	for _, cpus := range []float64{0.45, 1, 2} {
		want := 1.0
		if cpus < 1 {
			want = 1.25
		}
		without, with := costs(cpus, 0), costs(cpus, 0.25)
		for k := range with {
			if r := with[k].Compute / without[k].Compute; math.Abs(r-want) > 1e-12 {
				t.Errorf("%g CPUs, group %d: Compute %gx without the loss; want %g", cpus, k+1, r, want)
			}
			if r := with[k].Messages / without[k].Messages; math.Abs(r-want) > 1e-12 {
				t.Errorf("%g CPUs, group %d: Messages %gx without the loss; want %g", cpus, k+1, r, want)
			}
		}
	}
}

// TestMeasuredStepRows: a step cost measured for an RBM replaces StepRows
// in its work, on replicas and in greedy's prediction alike; RBMs with none
// measured keep StepRows.
func TestMeasuredStepRows(t *testing.T) {
	t.Parallel()
	job := Job{Layers: []int{100, 50, 20}, BatchSize: 10, K: 2, Windows: 5, StepRows: []float64{24}}
	cl := Cluster{Machines: []Machine{{Name: "a", CPUs: 1, Speed: 1}, {Name: "b", CPUs: 1, Speed: 1}, {Name: "c", CPUs: 1, Speed: 1}}}
	p, err := Explicit(job, cl, []Group{{First: 1, Last: 1, Machines: []string{"a", "b"}}, {First: 2, Last: 2, Machines: []string{"c"}}})
	if err != nil {
		t.Fatal(err)
	}
	const (
		rows    = 20.0
		sample1 = 10*100*50 + 280*150
		sample2 = 10*50*20 + 280*70
	)
	// RBM_1 on 2 replicas: K·r = 4 steps a window, 24 rows each more.
	if got, want := p.Costs[0].Compute, (rows+4*24)*sample1/1e9/2; math.Abs(got-want) > 1e-12*want {
		t.Errorf("RBM_1's compute = %g; want %g, with the measured 24 rows a step", got, want)
	}
	// RBM_2, none measured: K = 2 steps of StepRows more.
	if got, want := p.Costs[1].Compute, (rows+2*StepRows)*sample2/1e9; math.Abs(got-want) > 1e-12*want {
		t.Errorf("RBM_2's compute = %g; want %g, with StepRows a step", got, want)
	}
	if got, want := p.Greedy, 5*((rows+2*24)*sample1+(rows+2*StepRows)*sample2)/1e9; math.Abs(got-want) > 1e-12*want {
		t.Errorf("Greedy = %g; want %g", got, want)
	}
	if !strings.Contains(p.String(), "RBM_1 24, RBM_2 8 (assumed)") {
		t.Errorf("the plan's text does not give the step costs:\n%s", p)
	}
}

func TestStepRowsFrom(t *testing.T) {
	t.Parallel()
	const c = 100 * time.Microsecond // a row's time
	tests := []struct {
		name      string
		full, sub time.Duration
		want      float64
	}{
		{"12 rows a step", c * (256 + 12), c * (32 + 12), 12},
		{"no cost a step", c * 256, c * 32, 0},
		{"small steps cheaper than their rows", c * 256, c * 16, 0},
		{"as slow as a full step", c * 256, c * 256, MaxStepRows * 256},
		{"slower than a full step", c * 256, c * 300, MaxStepRows * 256},
		{"a huge cost", c * (256 + 5000), c * (32 + 5000), MaxStepRows * 256},
	}
	for _, tt := range tests {
		if got := StepRowsFrom(tt.full, tt.sub, 256, 32); math.Abs(got-tt.want) > 1e-9 {
			t.Errorf("%s: StepRowsFrom(%v, %v, 256, 32) = %g; want %g", tt.name, tt.full, tt.sub, got, tt.want)
		}
	}
}

// TestQuickstartPlans plans the quickstart DBN on 1 to 8 equal machines and
// a fast network. Per sample its RBMs cost 4.28 : 2.78 : 10.70 MFLOP
// (392k : 250k : 1000k GEMM terms), so one machine per RBM is paced by RBM_3
// at 1.66x at best, and pipelining alone (no replicas) cannot beat that on
// any number of machines. Replicating RBM_3 on two machines and grouping
// RBM_1 and RBM_2 on a third balances 7.06 against 10.70/2 (2.5x); the
// model finds replicating more than RBM_3 cheaper still, because a replica
// averaging its group's parameters (6.6 MB each way through the master for
// the whole DBN) handles fewer bytes per window than a group boundary (8 MB of
// data in, 5.1 MB of middle result out and in again): the fastest plans are
// data-parallel, each replica training every RBM.
func TestQuickstartPlans(t *testing.T) {
	t.Parallel()
	tests := []struct {
		machines   int
		minSpeedUp float64
		check      func(t *testing.T, p *Plan)
	}{
		{1, 0.9, func(t *testing.T, p *Plan) {
			if got := layout(p); got != "1-3:m1" {
				t.Errorf("plan = %s; want 1-3:m1", got)
			}
			if p.SpeedUp() > 1 {
				t.Errorf("speed-up on one machine = %.2f; want at most 1 (messages cost)", p.SpeedUp())
			}
		}},
		{2, 1.7, nil},
		{3, 2.4, func(t *testing.T, p *Plan) {
			if len(p.Groups) == 3 {
				t.Errorf("plan = %s; want not one per RBM", layout(p))
			}
			if g := groupOf(p, 3); len(g.Machines) < 2 {
				t.Errorf("plan = %s; want RBM_3 replicated", layout(p))
			}
		}},
		{4, 3.0, nil},
		{8, 5.5, nil},
	}
	var table strings.Builder
	prev := 0.0
	for _, tt := range tests {
		p, err := Auto(quickstart, equalCluster(tt.machines, fast), Options{})
		if err != nil {
			t.Fatal(err)
		}
		fmt.Fprintf(&table, "\n%s", p)
		if !p.Exact {
			t.Errorf("%d machines: Exact = false; want an exact search for equal machines", tt.machines)
		}
		if s := p.SpeedUp(); s < tt.minSpeedUp {
			t.Errorf("%d machines: speed-up %.2f; want at least %.2f", tt.machines, s, tt.minSpeedUp)
		}
		if s := p.SpeedUp(); s < prev {
			t.Errorf("%d machines: speed-up %.2f; want at least the %.2f of fewer machines", tt.machines, s, prev)
		}
		prev = p.SpeedUp()
		if tt.check != nil {
			tt.check(t, p)
		}
	}
	t.Logf("quickstart DBN, equal machines of 1 CPU at %d GFLOP/s, 10 Gb/s:%s", boxSpeed, table.String())
}

// TestQuickstartFewerCopies plans the quickstart DBN on 3 machines trading
// speed for fewer RBM copies: without replicas RBM_3 paces the pipeline
// (RBM_1 and RBM_2 grouped: 7.06 < 10.70), and within 25% of the fastest
// plan RBM_3 alone is replicated.
func TestQuickstartFewerCopies(t *testing.T) {
	t.Parallel()
	cl := equalCluster(3, fast)
	one, err := OnePerRBM(quickstart, cl)
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		tolerance  float64
		want       string
		maxSpeedUp float64
	}{
		{math.Inf(1), "1-2:m1 3:m2", (4.28 + 2.78 + 10.70) / 10.70},
		{0.25, "1-2:m1 3:m2,m3", (4.28 + 2.78 + 10.70) / (4.28 + 2.78)},
	}
	for _, tt := range tests {
		p, err := Auto(quickstart, cl, Options{Tolerance: tt.tolerance})
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("tolerance %g:\n%s", tt.tolerance, p)
		if got := layout(p); got != tt.want {
			t.Errorf("Auto(tolerance %g) = %s; want %s", tt.tolerance, got, tt.want)
		}
		if s := p.SpeedUp(); s > tt.maxSpeedUp || s < one.SpeedUp() {
			t.Errorf("Auto(tolerance %g): speed-up %.2f; want between one-per-rbm's %.2f and %.2f", tt.tolerance, s, one.SpeedUp(), tt.maxSpeedUp)
		}
	}
	t.Logf("for comparison:\n%s", one)
}

// TestEqualLayersOnePerRBM: four equal 784x784 RBMs on four machines (the
// emulated4 case) balance without groups or replicas, and one per RBM is
// chosen where replicas save nothing: on a 1 Gb/s network, or on any within
// a 10% tolerance. On a faster network the model puts the replicas' ring
// all-reduce of 9.8 MB below the 16 MB a middle stage handles per window,
// and finds the data-parallel plan about 6% faster.
func TestEqualLayersOnePerRBM(t *testing.T) {
	t.Parallel()
	job := Job{Layers: []int{784, 784, 784, 784, 784}, BatchSize: 256, K: 10, Windows: 120}
	tests := []struct {
		net       Network
		tolerance float64
	}{
		{gigabit, 0},
		{fast, 0.1},
		{loopback, 0.1},
	}
	for _, tt := range tests {
		cl := equalCluster(4, tt.net)
		p, err := Auto(job, cl, Options{Tolerance: tt.tolerance})
		if err != nil {
			t.Fatal(err)
		}
		one, err := OnePerRBM(job, cl)
		if err != nil {
			t.Fatal(err)
		}
		if got, want := layout(p), layout(one); got != want {
			t.Errorf("Auto(%g B/s, tolerance %g) = %s; want one per RBM, %s\n%s", tt.net.Bandwidth, tt.tolerance, got, want, p)
		}
		if p.Window != one.Window {
			t.Errorf("Auto window %g; want one-per-rbm's %g", p.Window, one.Window)
		}
	}
	fastest, err := Auto(job, equalCluster(4, loopback), Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("loopback, tolerance 0:\n%s", fastest)
}

// TestHalfSpeedMachine: a machine at half speed gets less work per window
// than every full-speed one, with the exact search and the heuristic.
func TestHalfSpeedMachine(t *testing.T) {
	t.Parallel()
	for _, machines := range []int{2, 3, 5, ExactMachines + 2} {
		for _, job := range []Job{quickstart, {Layers: []int{784, 784, 784, 784, 784}, BatchSize: 256, K: 10, Windows: 120}} {
			cl := equalCluster(machines, gigabit)
			half := len(cl.Machines) / 2
			cl.Machines[half].Speed /= 2
			p, err := Auto(job, cl, Options{})
			if err != nil {
				t.Fatal(err)
			}
			if got, want := p.Exact, machines <= ExactMachines; got != want {
				t.Errorf("%d machines: Exact = %v; want %v", machines, got, want)
			}
			share := make(map[string]float64) // flop-equivalents per window
			for _, g := range p.Groups {
				w := 0.0
				for i := g.First - 1; i < g.Last; i++ {
					w += job.rows() * SampleWork(job.Layers[i], job.Layers[i+1], 1)
				}
				for _, mc := range g.Machines {
					share[mc] = w / float64(len(g.Machines))
				}
			}
			name := cl.Machines[half].Name
			for _, mc := range cl.Machines {
				if mc.Name != name && share[mc.Name] <= share[name] {
					t.Errorf("%d machines, layers %v: %s (full speed) gets %.3g flop a window, %s (half speed) %.3g; want less for the half-speed one\n%s",
						machines, job.Layers, mc.Name, share[mc.Name], name, share[name], p)
				}
			}
			if machines == 2 && share[name] == 0 {
				t.Errorf("2 machines, layers %v: %s (half speed) idle; want it to train\n%s", job.Layers, name, p)
			}
			if machines <= 3 || machines > ExactMachines {
				t.Logf("%s at half speed:\n%s", name, p)
			}
		}
	}
}

func TestOnePerRBM(t *testing.T) {
	t.Parallel()
	p, err := OnePerRBM(quickstart, equalCluster(4, fast))
	if err != nil {
		t.Fatal(err)
	}
	if got, want := layout(p), "1:m1 2:m2 3:m3"; got != want {
		t.Errorf("OnePerRBM = %s; want %s", got, want)
	}
	if !slices.Equal(p.Unused, []string{"m4"}) || p.Bottleneck != 2 {
		t.Errorf("OnePerRBM: unused %v, bottleneck %d; want [m4], 2", p.Unused, p.Bottleneck)
	}
	_, err = OnePerRBM(quickstart, equalCluster(2, fast))
	if !errors.Is(err, ErrTooFewMachines) {
		t.Errorf("OnePerRBM on 2 machines: error %v; want ErrTooFewMachines", err)
	}
}

// TestExplicit: a plan written by hand predicts as Auto's own plan does, and
// its groups may come in any order.
func TestExplicit(t *testing.T) {
	t.Parallel()
	cl := equalCluster(4, gigabit)
	auto, err := Auto(quickstart, cl, Options{})
	if err != nil {
		t.Fatal(err)
	}
	groups := slices.Clone(auto.Groups)
	slices.Reverse(groups)
	p, err := Explicit(quickstart, cl, groups)
	if err != nil {
		t.Fatal(err)
	}
	if layout(p) != layout(auto) || p.Window != auto.Window || p.Seconds != auto.Seconds || p.Strategy != StrategyExplicit {
		t.Errorf("Explicit(Auto's groups) = %s, %g s per window, %v; want %s, %g", layout(p), p.Window, p.Strategy, layout(auto), auto.Window)
	}
}

func TestExplicitErrors(t *testing.T) {
	t.Parallel()
	cl := equalCluster(3, fast)
	tests := []struct {
		name   string
		groups []Group
		want   []error
	}{
		{"gap", []Group{{1, 1, []string{"m1"}}, {3, 3, []string{"m2"}}}, []error{ErrGap}},
		{"overlap", []Group{{1, 2, []string{"m1"}}, {2, 3, []string{"m2"}}}, []error{ErrOverlap}},
		{"range", []Group{{1, 2, []string{"m1"}}, {3, 4, []string{"m2"}}}, []error{ErrRange, ErrGap}},
		{"reversed", []Group{{3, 1, []string{"m1"}}}, []error{ErrRange, ErrGap}},
		{"unknown machine", []Group{{1, 3, []string{"m1", "m9"}}}, []error{ErrUnknownMachine}},
		{"reused machine", []Group{{1, 2, []string{"m1"}}, {3, 3, []string{"m2", "m1"}}}, []error{ErrReusedMachine}},
		{"no machine", []Group{{1, 2, nil}, {3, 3, []string{"m1"}}}, []error{ErrNoMachine}},
		{"no groups", nil, []error{ErrGap}},
		{"too many groups", []Group{{1, 1, []string{"m1"}}, {2, 2, []string{"m2"}}, {3, 3, []string{"m3"}}, {3, 3, []string{"m1"}}},
			[]error{ErrTooManyGroups, ErrOverlap, ErrReusedMachine}},
	}
	for _, tt := range tests {
		p, err := Explicit(quickstart, cl, tt.groups)
		if err == nil {
			t.Errorf("%s: Explicit = %s; want an error", tt.name, layout(p))
			continue
		}
		for _, want := range tt.want {
			if !errors.Is(err, want) {
				t.Errorf("%s: Explicit error %q; want %q among its errors", tt.name, err, want)
			}
		}
	}
}

func TestValidate(t *testing.T) {
	t.Parallel()
	good := equalCluster(2, fast)
	tests := []struct {
		name string
		job  Job
		cl   Cluster
		opts Options
		want []string
	}{
		{"job", Job{Layers: []int{784, 0}, K: -1, CDK: -1}, good, Options{},
			[]string{"layers[1] = 0", "batch_size = 0", "k = -1", "windows = 0", "cd_k = -1"}},
		{"one layer", Job{Layers: []int{784}, BatchSize: 1, K: 1, Windows: 1}, good, Options{}, []string{"layers = [784]"}},
		{"cluster", quickstart, Cluster{Machines: []Machine{{Name: "a", CPUs: 0, Speed: 1}, {Name: "a", CPUs: 1, Speed: math.NaN()}, {CPUs: 1, Speed: 1}},
			Network: Network{Bandwidth: -1}, ByteWork: math.Inf(1)}, Options{},
			[]string{"machines[0].cpus = 0", "machines[1].name = \"a\": also machines[0]'s", "machines[1].speed = NaN", "machines[2].name = \"\"", "network.bandwidth = -1", "byte_work = +Inf"}},
		{"no machines", quickstart, Cluster{}, Options{}, []string{"machines = []"}},
		{"step rows", Job{Layers: []int{784, 500}, BatchSize: 1, K: 1, Windows: 1, StepRows: []float64{-1, 2}}, good, Options{},
			[]string{"step_rows = [-1 2]: want at most one per RBM (1)", "step_rows[0] = -1"}},
		{"step rows NaN", Job{Layers: []int{784, 500}, BatchSize: 1, K: 1, Windows: 1, StepRows: []float64{math.NaN()}}, good, Options{},
			[]string{"step_rows[0] = NaN"}},
		{"tolerance", quickstart, good, Options{Tolerance: -0.1}, []string{"tolerance = -0.1"}},
	}
	for _, tt := range tests {
		_, err := Auto(tt.job, tt.cl, tt.opts)
		if err == nil {
			t.Errorf("%s: Auto succeeded; want an error", tt.name)
			continue
		}
		for _, want := range tt.want {
			if !strings.Contains(err.Error(), want) {
				t.Errorf("%s: error %q; want it to report %q", tt.name, err, want)
			}
		}
	}
}

func TestStrategyString(t *testing.T) {
	t.Parallel()
	for s, want := range map[Strategy]string{StrategyAuto: "auto", StrategyOnePerRBM: "one-per-rbm", StrategyExplicit: "explicit", 7: "Strategy(7)"} {
		if got := s.String(); got != want {
			t.Errorf("Strategy(%d).String() = %q; want %q", int(s), got, want)
		}
	}
}

// The links carry middle results at Job.Middle's size a value, B_i in
// float32, and the data windows in float32 whatever Middle says.
func TestMiddlePrecisionPricesTheLinks(t *testing.T) {
	t.Parallel()
	cl := Cluster{
		Machines: []Machine{{Name: "a", CPUs: 1, Speed: 1}, {Name: "b", CPUs: 1, Speed: 1}},
		Network:  Network{Bandwidth: 1000, Latency: 0.01},
		ByteWork: 10,
	}
	const rows = 20.0
	for _, c := range []struct {
		middle pipeline.Precision
		size   float64 // bytes a middle-result value takes
	}{{pipeline.Float32, 4}, {pipeline.Float16, 2}, {pipeline.Uint8, 1}, {pipeline.Binary, 1.0 / 8}} {
		job := Job{Layers: []int{100, 48, 30}, BatchSize: 10, K: 2, Windows: 5, Middle: c.middle}
		p, err := Explicit(job, cl, []Group{{First: 1, Last: 1, Machines: []string{"a"}}, {First: 2, Last: 2, Machines: []string{"b"}}})
		if err != nil {
			t.Fatal(err)
		}
		data, middle := 4*rows*100, rows*48*c.size+4*48
		if got, want := p.Costs[0].Link, max(data, middle)/1000; math.Abs(got-want) > 1e-12 {
			t.Errorf("%s: RBM_1's link %g s; want %g (data %g bytes, middle result and B_1 %g)", c.middle, got, want, data, middle)
		}
		if got, want := p.Costs[1].Messages, middle*10/1e9; math.Abs(got-want) > 1e-15 {
			t.Errorf("%s: RBM_2's messages %g s; want %g (%g bytes in)", c.middle, got, want, middle)
		}
	}
}
