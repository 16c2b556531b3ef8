package plan

import (
	"fmt"
	"math"
	"math/bits"
	"slices"
)

// ExactMachines is the most unequal machines Auto searches exactly (over
// every subset of machines per group, 3^M subsets in all); beyond it, Auto
// uses the ordered heuristic. Equal machines are searched exactly at any M.
const ExactMachines = 10

// Options tune Auto.
type Options struct {
	// Tolerance is how much slower than the fastest plan, as a fraction of
	// its window, a plan with fewer RBM copies (Σ over RBMs of their
	// group's replicas beyond one) may be and still be chosen.
	// Replicas change what each RBM trains on (r copies averaged every S
	// windows make r times fewer sequential updates per epoch), a
	// statistical cost the time model does not see; pipelining and groups
	// do not. 0 means the fastest plan, with the fewest copies among
	// equally fast ones; +Inf means no replicas at all (the fastest plan of
	// stage groups alone). Negative or NaN is an error.
	Tolerance float64
	// MaxReplicas caps every group's replicas; 0: no cap. 1 plans stage
	// groups alone.
	MaxReplicas int
	// TopOnly gives replicas to the top RBM alone, in a group of its own:
	// on the quickstart DBN replicas cost RBM_2 quality, and RBM_3 none
	// (README, "Stage replicas").
	TopOnly bool
}

// score is a partial plan's value in the search: its slowest group's
// window, its RBM copies beyond one (Σ over RBMs of their group's r-1) and
// the machines it uses.
type score struct {
	ok     bool
	window float64
	copies int
	used   int
}

// faster orders scores by window alone: the first pass of the search,
// which finds the fastest window.
func faster(a, b score) bool {
	return a.ok && (!b.ok || a.window < b.window)
}

// leaner orders scores by RBM copies, then window, then machines used: the
// second pass, among plans within the tolerance. The copies add up over
// groups and the window is their max, both monotone in a prefix's score, so
// the dynamic programme stays exact in (copies, window); machines used only
// breaks ties.
func leaner(a, b score) bool {
	switch {
	case !a.ok:
		return false
	case !b.ok:
		return true
	case a.copies != b.copies:
		return a.copies < b.copies
	case a.window != b.window:
		return a.window < b.window
	}
	return a.used < b.used
}

// then extends a prefix's score with a group of rbms RBMs on r replicas
// and cost c.
func (s score) then(c Cost, rbms, r int) score {
	return score{ok: true, window: max(s.window, c.Window), copies: s.copies + rbms*(r-1), used: s.used + r}
}

// search is one dynamic programme: better orders scores, and groups with a
// window above bound are not considered.
type search func(better func(a, b score) bool, bound float64) (score, []span)

// Auto returns the plan that minimises the predicted window, like
// PipeDream's optimizer: a dynamic programme over prefixes of the RBMs and
// the machines given to them, whose last group is a range of RBMs with a
// number of replicas. It runs twice: first for the fastest window T, then,
// among plans whose every group takes at most T·(1+opts.Tolerance), for the
// fewest RBM copies (Σ over RBMs of their group's replicas beyond one),
// then the fastest. Equal machines are interchangeable, so the programme
// over machine counts is exact; for unequal ones it is exact over subsets
// up to ExactMachines machines, and beyond that it gives each group a run
// of consecutive machines in the order of speed (fastest first and slowest
// first tried), so that replicas, which wait for the slowest of them, are
// of similar speed.
func Auto(job Job, cl Cluster, opts Options) (*Plan, error) {
	m, err := newModel(job, cl)
	if err != nil {
		return nil, err
	}
	if !(opts.Tolerance >= 0) || opts.MaxReplicas < 0 {
		return nil, fmt.Errorf("plan: options: tolerance = %g, max replicas = %d: want 0 or more", opts.Tolerance, opts.MaxReplicas)
	}
	m.maxReplicas, m.topOnly = opts.MaxReplicas, opts.TopOnly
	var searches []search
	exact := true
	switch {
	case m.equal():
		order := make([]int, len(cl.Machines))
		for k := range order {
			order[k] = k
		}
		searches = []search{m.ordered(order)}
	case len(cl.Machines) <= ExactMachines:
		searches = []search{m.subsets}
	default:
		exact = false
		order := m.bySpeed()
		slowFirst := slices.Clone(order)
		slices.Reverse(slowFirst)
		searches = []search{m.ordered(order), m.ordered(slowFirst)}
	}
	fastest := math.Inf(1)
	for _, s := range searches {
		if sc, _ := s(faster, math.Inf(1)); sc.ok {
			fastest = min(fastest, sc.window)
		}
	}
	// The master's link paces every plan alike: groups may take up to it.
	bound := max(fastest, m.masterLink())*(1+opts.Tolerance) + 1e-12*fastest
	var best score
	var plan []span
	for _, s := range searches {
		if sc, spans := s(leaner, bound); leaner(sc, best) {
			best, plan = sc, spans
		}
	}
	return m.evaluate(StrategyAuto, exact, plan), nil
}

// equal reports whether every machine has the same CPUs and speed.
func (m *model) equal() bool {
	for _, mc := range m.cl.Machines[1:] {
		if mc.CPUs != m.cl.Machines[0].CPUs || mc.Speed != m.cl.Machines[0].Speed {
			return false
		}
	}
	return true
}

// bySpeed returns the machines' indices, fastest first (by training rate,
// then bytes handling rate, then index).
func (m *model) bySpeed() []int {
	order := make([]int, len(m.cl.Machines))
	for k := range order {
		order[k] = k
	}
	slices.SortStableFunc(order, func(a, b int) int {
		switch {
		case m.capacity[a] != m.capacity[b]:
			return cmpDesc(m.capacity[a], m.capacity[b])
		default:
			return cmpDesc(m.handle[a], m.handle[b])
		}
	})
	return order
}

func cmpDesc(a, b float64) int {
	switch {
	case a > b:
		return -1
	case a < b:
		return 1
	}
	return 0
}

// ordered returns the programme over prefixes of the RBMs and of order:
// best[j][n] is the best plan of RBMs 0..j-1 on machines among order[:n],
// each group a run order[a:n'] of consecutive machines, a machine skipped
// being idle:
//
//	best[0][n] = the empty plan
//	best[j][n] = better of best[j][n-1] (order[n-1] idle) and, for every
//	             i < j and a < n, best[i][a] then RBMs i..j-1 on order[a:n]
//
// That is O(L²·M²) groups, each costed in O(r). With equal machines any
// order is every assignment, so the programme is exact.
func (m *model) ordered(order []int) search {
	return func(better func(a, b score) bool, bound float64) (score, []span) {
		l, n := m.job.rbms(), len(order)
		type step struct{ i, a int } // a < 0: machine n-1 idle
		best := make([][]score, l+1)
		from := make([][]step, l+1)
		for j := range best {
			best[j], from[j] = make([]score, n+1), make([]step, n+1)
		}
		for k := range best[0] {
			best[0][k] = score{ok: true}
		}
		for j := 1; j <= l; j++ {
			for k := 1; k <= n; k++ {
				best[j][k], from[j][k] = best[j][k-1], step{-1, -1}
				for i := 0; i < j; i++ {
					for a := k - 1; a >= 0; a-- {
						if !best[i][a].ok || !m.replicasAllowed(i, j, k-a) {
							continue
						}
						c := m.cost(i, j, order[a:k])
						if c.Window > bound {
							continue
						}
						if s := best[i][a].then(c, j-i, k-a); better(s, best[j][k]) {
							best[j][k], from[j][k] = s, step{i, a}
						}
					}
				}
			}
		}
		if !best[l][n].ok {
			return score{}, nil
		}
		var spans []span
		for j, k := l, n; j > 0; {
			st := from[j][k]
			if st.a < 0 {
				k--
				continue
			}
			ms := slices.Clone(order[st.a:k])
			slices.Sort(ms)
			spans = append(spans, span{st.i, j, ms})
			j, k = st.i, st.a
		}
		slices.Reverse(spans)
		return best[l][n], spans
	}
}

// subsets is the exact programme for unequal machines: best[j][set] is the
// best plan of RBMs 0..j-1 on exactly the machines in set, and its last
// group takes any nonempty subset of set:
//
//	best[j][set] = best over i < j and nonempty sub ⊆ set of
//	               best[i][set \ sub] then RBMs i..j-1 on sub
//
// That is O(L²·3^M) groups, each costed in O(r).
func (m *model) subsets(better func(a, b score) bool, bound float64) (score, []span) {
	l, n := m.job.rbms(), len(m.cl.Machines)
	size := 1 << n
	members := make([][]int, size)
	for set := 1; set < size; set++ {
		low := bits.TrailingZeros(uint(set))
		members[set] = append(slices.Clone(members[set&(set-1)]), low)
		slices.Sort(members[set])
	}
	type step struct{ i, sub int }
	best := make([][]score, l+1)
	from := make([][]step, l+1)
	for j := range best {
		best[j], from[j] = make([]score, size), make([]step, size)
	}
	best[0][0] = score{ok: true}
	for j := 1; j <= l; j++ {
		for set := 1; set < size; set++ {
			for i := 0; i < j; i++ {
				for sub := set; sub > 0; sub = (sub - 1) & set {
					prev := best[i][set&^sub]
					ms := members[sub]
					if !prev.ok || !m.replicasAllowed(i, j, len(ms)) {
						continue
					}
					c := m.cost(i, j, ms)
					if c.Window > bound {
						continue
					}
					if s := prev.then(c, j-i, len(ms)); better(s, best[j][set]) {
						best[j][set], from[j][set] = s, step{i, sub}
					}
				}
			}
		}
	}
	top := 0
	for set := 1; set < size; set++ {
		if better(best[l][set], best[l][top]) {
			top = set
		}
	}
	if !best[l][top].ok {
		return score{}, nil
	}
	var spans []span
	for j, set := l, top; j > 0; {
		st := from[j][set]
		spans = append(spans, span{st.i, j, slices.Clone(members[st.sub])})
		j, set = st.i, set&^st.sub
	}
	slices.Reverse(spans)
	return best[l][top], spans
}
