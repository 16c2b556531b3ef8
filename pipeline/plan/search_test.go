package plan

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"
)

// randomInstance returns a small random job and cluster; equal asks for
// equal machines.
func randomInstance(rng *rand.Rand, equal bool) (Job, Cluster) {
	l, n := 1+rng.IntN(4), 1+rng.IntN(5)
	job := Job{BatchSize: 16 << rng.IntN(5), K: 1 + rng.IntN(10), Windows: 1 + rng.IntN(200), SyncEvery: rng.IntN(4), CDK: rng.IntN(3)}
	for range l + 1 {
		job.Layers = append(job.Layers, 10+rng.IntN(2000))
	}
	cl := Cluster{
		Network:    Network{Bandwidth: []float64{0, 1e8, 1e9}[rng.IntN(3)], Latency: rng.Float64() * 1e-3},
		ByteWork:   rng.Float64() * 400,
		ThreadLoss: rng.Float64() * 0.2,
	}
	cpus := []float64{0.25, 0.5, 1, 2, 4}
	first := Machine{CPUs: cpus[rng.IntN(len(cpus))], Speed: 10 + rng.Float64()*90}
	for k := range n {
		mc := first
		if !equal && k > 0 {
			mc = Machine{CPUs: cpus[rng.IntN(len(cpus))], Speed: 10 + rng.Float64()*90}
		}
		mc.Name = fmt.Sprintf("m%d", k+1)
		cl.Machines = append(cl.Machines, mc)
	}
	return job, cl
}

// bruteForce calls yield with the score of every plan of m: every split of
// the RBMs into contiguous groups, and every assignment of machines to the
// groups or to none that leaves no group without one.
func bruteForce(m *model, yield func(score)) {
	l, n := m.job.rbms(), len(m.cl.Machines)
	for cuts := 0; cuts < 1<<(l-1); cuts++ {
		var ranges [][2]int
		start := 0
		for i := 1; i <= l; i++ {
			if i == l || cuts&(1<<(i-1)) != 0 {
				ranges = append(ranges, [2]int{start, i})
				start = i
			}
		}
		g := len(ranges)
		total := 1
		for range n {
			total *= g + 1
		}
		for code := range total {
			groups := make([][]int, g+1) // groups[g]: idle machines
			for k, c := 0, code; k < n; k, c = k+1, c/(g+1) {
				groups[c%(g+1)] = append(groups[c%(g+1)], k)
			}
			s := score{ok: true}
			for gi, r := range ranges {
				if len(groups[gi]) == 0 {
					s.ok = false
					break
				}
				s = s.then(m.cost(r[0], r[1], groups[gi]), r[1]-r[0], len(groups[gi]))
			}
			if s.ok {
				yield(s)
			}
		}
	}
}

// TestAutoMatchesBruteForce checks the exact searches against every plan of
// random small instances: the fastest window, and within the tolerance the
// fewest copies, then the fastest.
func TestAutoMatchesBruteForce(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(14, 1))
	tolerances := []float64{0, 0.1, 0.3, math.Inf(1)}
	for n := range 300 {
		job, cl := randomInstance(rng, n%2 == 0)
		tol := tolerances[rng.IntN(len(tolerances))]
		m, err := newModel(job, cl)
		if err != nil {
			t.Fatal(err)
		}
		fastest := math.Inf(1)
		bruteForce(m, func(s score) { fastest = min(fastest, s.window) })
		bound := max(fastest, m.masterLink())*(1+tol) + 1e-12*fastest
		var want score
		bruteForce(m, func(s score) {
			if s.window <= bound && leaner(s, want) {
				want = s
			}
		})
		p, err := Auto(job, cl, Options{Tolerance: tol})
		if err != nil {
			t.Fatal(err)
		}
		wantWindow := max(want.window, m.masterLink())
		if !p.Exact || p.Copies() != want.copies || math.Abs(p.Window-wantWindow) > 1e-9*wantWindow {
			t.Errorf("instance %d (layers %v, %d machines, equal %v, tolerance %g): Auto = %s, %d copies, window %g, exact %v; brute force: %d copies, window %g\n%s",
				n, job.Layers, len(cl.Machines), m.equal(), tol, layout(p), p.Copies(), p.Window, p.Exact, want.copies, wantWindow, p)
		}
	}
}

// TestOrderedHeuristic measures the heuristic for many unequal machines
// against every plan of random small instances of unequal machines: it is
// exact for some and never far off.
func TestOrderedHeuristic(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(14, 2))
	worst, exact, runs := 1.0, 0, 0
	for n := range 300 {
		job, cl := randomInstance(rng, false)
		m, err := newModel(job, cl)
		if err != nil {
			t.Fatal(err)
		}
		fastest := math.Inf(1)
		bruteForce(m, func(s score) { fastest = min(fastest, s.window) })
		order := m.bySpeed()
		reversed := make([]int, len(order))
		for k, v := range order {
			reversed[len(order)-1-k] = v
		}
		got := math.Inf(1)
		for _, s := range []search{m.ordered(order), m.ordered(reversed)} {
			sc, _ := s(faster, math.Inf(1))
			got = min(got, sc.window)
		}
		ratio := got / fastest
		if ratio < 1-1e-9 {
			t.Errorf("instance %d: heuristic window %g below the brute force's %g", n, got, fastest)
		}
		if ratio < 1+1e-9 {
			exact++
		}
		runs++
		worst = max(worst, ratio)
	}
	t.Logf("ordered heuristic on %d random instances of unequal machines: exact on %d, worst window %.3f x the optimum", runs, exact, worst)
	if worst > 1.5 {
		t.Errorf("heuristic window up to %.3f x the optimum; want at most 1.5", worst)
	}
}

// TestMaxReplicas: a cap of one replica plans stage groups alone, the plan
// of an infinite tolerance; a cap of two never gives a group more.
func TestMaxReplicas(t *testing.T) {
	t.Parallel()
	job := Job{Layers: []int{784, 500, 500, 2000}, BatchSize: 256, K: 10, Windows: 120}
	cl := Cluster{Network: Network{Bandwidth: 1.25e9, Latency: 100e-6}, ByteWork: 200}
	for k := 1; k <= 8; k++ {
		cl.Machines = append(cl.Machines, Machine{Name: fmt.Sprintf("m%d", k), CPUs: 1, Speed: 60})
	}
	alone, err := Auto(job, cl, Options{MaxReplicas: 1})
	if err != nil {
		t.Fatal(err)
	}
	groups, err := Auto(job, cl, Options{Tolerance: math.Inf(1)})
	if err != nil {
		t.Fatal(err)
	}
	if alone.String() != groups.String() {
		t.Errorf("MaxReplicas 1:\n%s\nwant the plan of stage groups alone:\n%s", alone, groups)
	}
	two, err := Auto(job, cl, Options{MaxReplicas: 2})
	if err != nil {
		t.Fatal(err)
	}
	free, err := Auto(job, cl, Options{})
	if err != nil {
		t.Fatal(err)
	}
	most := 0
	for _, g := range two.Groups {
		most = max(most, len(g.Machines))
	}
	if most != 2 || two.Window <= free.Window {
		t.Errorf("MaxReplicas 2: at most %d replicas, window %.3f (uncapped %.3f); want 2 replicas somewhere, and a slower plan:\n%s", most, two.Window, free.Window, two)
	}
	if _, err := Auto(job, cl, Options{MaxReplicas: -1}); err == nil {
		t.Error("MaxReplicas -1: no error; want one")
	}
}

// TestTopOnly: with replicas for the top RBM alone, no other group gets
// any, and on 4 equal machines the quickstart DBN's plan replicates RBM_3
// in a group of its own and keeps RBM_1 and RBM_2 whole.
func TestTopOnly(t *testing.T) {
	t.Parallel()
	job := Job{Layers: []int{784, 500, 500, 2000}, BatchSize: 256, K: 10, Windows: 120, SyncEvery: 5}
	cl := Cluster{Network: Network{Latency: 100e-6}, ByteWork: 200}
	for k := 1; k <= 4; k++ {
		cl.Machines = append(cl.Machines, Machine{Name: fmt.Sprintf("m%d", k), CPUs: 1, Speed: 60})
	}
	p, err := Auto(job, cl, Options{TopOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	last := p.Groups[len(p.Groups)-1]
	for _, g := range p.Groups[:len(p.Groups)-1] {
		if len(g.Machines) > 1 {
			t.Errorf("group %d-%d on %d replicas below the top:\n%s", g.First, g.Last, len(g.Machines), p)
		}
	}
	if last.First != 3 || last.Last != 3 || len(last.Machines) < 2 {
		t.Errorf("top group %d-%d on %d replicas; want RBM_3 alone, replicated:\n%s", last.First, last.Last, len(last.Machines), p)
	}
	t.Logf("top only:\n%s", p)
}
