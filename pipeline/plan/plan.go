package plan

import (
	"bytes"
	"errors"
	"fmt"
	"slices"
	"strings"
	"text/tabwriter"
)

// Strategy is how a plan was made (the values of cluster.plan).
type Strategy int

const (
	// StrategyAuto is the plan Auto searched for.
	StrategyAuto Strategy = iota
	// StrategyOnePerRBM is the paper's mapping: RBM_i on machine i.
	StrategyOnePerRBM
	// StrategyExplicit is a plan the user wrote, checked by Explicit.
	StrategyExplicit
)

// String returns "auto", "one-per-rbm" or "explicit".
func (s Strategy) String() string {
	switch s {
	case StrategyAuto:
		return "auto"
	case StrategyOnePerRBM:
		return "one-per-rbm"
	case StrategyExplicit:
		return "explicit"
	}
	return fmt.Sprintf("Strategy(%d)", int(s))
}

// Group is a stage group: the consecutive RBMs one slave trains, passing
// middle results between them in memory, and the slaves that replicate it.
type Group struct {
	// First and Last number the group's RBMs as the paper does: RBM_First
	// to RBM_Last, 1-based, inclusive.
	First, Last int
	// Machines names the group's replicas: each trains every r-th window
	// (r = len(Machines)) and they average their parameters every
	// Job.SyncEvery windows.
	Machines []string
}

// rbms renders the group's RBMs as "2" or "2-3".
func (g Group) rbms() string {
	if g.Last == g.First {
		return fmt.Sprint(g.First)
	}
	return fmt.Sprintf("%d-%d", g.First, g.Last)
}

// Plan is a plan and its prediction.
type Plan struct {
	Strategy Strategy
	// Exact reports that the search proved the plan optimal for the model;
	// false for a heuristic search and for plans not searched.
	Exact bool
	Job   Job
	// Cluster is the cluster the plan is for.
	Cluster Cluster
	// Groups in the order of their RBMs, and their predicted costs.
	Groups []Group
	Costs  []Cost
	// Unused names the machines the plan leaves idle.
	Unused []string
	// Window is the pipeline's predicted seconds per window: its slowest
	// group's, or the master's link's when it streams data slower.
	Window float64
	// Bottleneck is the index in Groups of the slowest group; -1 when the
	// master's link is slower than every group.
	Bottleneck int
	// Seconds is the predicted pre-training time: Job.Windows windows at
	// Window each, plus the pipeline's fill (the first window's transit
	// through the groups before the bottleneck's pace), plus Calibration.
	Seconds float64
	// Calibration is the seconds the run spent measuring its machines
	// for the plan (Calibrated): they are part of its pre-training.
	Calibration float64
	// Greedy is the predicted greedy pre-training time on the fastest
	// machine, GreedyOn, with all its CPUs: training only (the transforms
	// between RBMs are left out, so speed-ups are slightly understated).
	Greedy   float64
	GreedyOn string
	// capacity is the cluster's training rate over the fastest machine's.
	capacity float64
	// pipeline is Seconds less Calibration.
	pipeline float64
}

// Calibrated counts the seconds the calibration that measured the
// machines took in p's Seconds: a run spends them before its first window.
func (p *Plan) Calibrated(seconds float64) {
	p.Calibration = seconds
	p.Seconds = p.pipeline + seconds
}

// SpeedUp returns the predicted speed-up over greedy pre-training on the
// fastest machine.
func (p *Plan) SpeedUp() float64 { return p.Greedy / p.Seconds }

// Efficiency returns SpeedUp over the cluster's capacity in fastest
// machines (M for equal machines), idle machines included.
func (p *Plan) Efficiency() float64 { return p.SpeedUp() / p.capacity }

// Copies returns the RBM copies beyond one: Σ over RBMs of their group's
// replicas beyond one, what Auto's Tolerance trades for time.
func (p *Plan) Copies() int {
	n := 0
	for _, g := range p.Groups {
		n += (g.Last - g.First + 1) * (len(g.Machines) - 1)
	}
	return n
}

// String renders p as a table, one line per group: its RBMs, its replicas,
// its predicted seconds per window and their parts; the bottleneck marked *.
func (p *Plan) String() string {
	var b bytes.Buffer
	used := len(p.Cluster.Machines) - len(p.Unused)
	search := ""
	if p.Strategy == StrategyAuto {
		search = " (heuristic)"
		if p.Exact {
			search = " (exact)"
		}
	}
	neck := "the master's link"
	if p.Bottleneck >= 0 {
		neck = fmt.Sprintf("group %d", p.Bottleneck+1)
	}
	fmt.Fprintf(&b, "%s plan%s: %d RBMs on %d of %d machines, %.3f s per window (bottleneck: %s)\n",
		p.Strategy, search, p.Job.rbms(), used, len(p.Cluster.Machines), p.Window, neck)
	calibration := ""
	if p.Calibration > 0 {
		calibration = fmt.Sprintf(" (%.1f s of calibration)", p.Calibration)
	}
	fmt.Fprintf(&b, "predicted %.1f s for %d windows%s; greedy on %s %.1f s; speed-up %.2f, efficiency %.2f\n",
		p.Seconds, p.Job.Windows, calibration, p.GreedyOn, p.Greedy, p.SpeedUp(), p.Efficiency())
	w := tabwriter.NewWriter(&b, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(w, "group\tRBMs\tmachines\tcompute s\tmessages s\tsync s\tlink s\twindow s\t")
	for k, g := range p.Groups {
		c := p.Costs[k]
		mark := ""
		if k == p.Bottleneck {
			mark = " *"
		}
		fmt.Fprintf(w, "%d\t%s\t%s\t%.3f\t%.3f\t%.3f\t%.3f\t%.3f\t%s\n", k+1, g.rbms(),
			strings.Join(g.Machines, ","), c.Compute, c.Messages, c.Sync, c.Link, c.Window, mark)
	}
	w.Flush()
	if len(p.Job.StepRows) > 0 {
		var costs []string
		for i := range p.Job.rbms() {
			c := fmt.Sprintf("%.0f", p.Job.stepRows(i))
			if i >= len(p.Job.StepRows) || p.Job.StepRows[i] == 0 {
				c += " (assumed)"
			}
			costs = append(costs, fmt.Sprintf("RBM_%d %s", i+1, c))
		}
		fmt.Fprintf(&b, "a CD step costs, beyond its rows, as many rows as: %s\n", strings.Join(costs, ", "))
	}
	if len(p.Unused) > 0 {
		fmt.Fprintf(&b, "unused: %s\n", strings.Join(p.Unused, ","))
	}
	return b.String()
}

// span is a group in the search's terms: RBMs i..j-1 (0-based) on machines
// ms (indices into the cluster).
type span struct {
	i, j int
	ms   []int
}

// evaluate predicts a plan of spans, which must be valid.
func (m *model) evaluate(s Strategy, exact bool, spans []span) *Plan {
	p := &Plan{Strategy: s, Exact: exact, Job: m.job, Cluster: m.cl,
		Window: m.masterLink(), Bottleneck: -1}
	used := make([]bool, len(m.cl.Machines))
	fill := 0.0
	for k, sp := range spans {
		g := Group{First: sp.i + 1, Last: sp.j}
		for _, mc := range sp.ms {
			g.Machines = append(g.Machines, m.cl.Machines[mc].Name)
			used[mc] = true
		}
		c := m.cost(sp.i, sp.j, sp.ms)
		p.Groups, p.Costs = append(p.Groups, g), append(p.Costs, c)
		if c.Window > p.Window || p.Bottleneck < 0 && c.Window == p.Window {
			p.Window, p.Bottleneck = c.Window, k
		}
		fill += c.Transit
	}
	fastest, total := 0, 0.0
	for k, u := range used {
		if !u {
			p.Unused = append(p.Unused, m.cl.Machines[k].Name)
		}
		if m.capacity[k] > m.capacity[fastest] {
			fastest = k
		}
		total += m.capacity[k]
	}
	w := float64(m.job.Windows)
	p.pipeline = (w-1)*p.Window + fill
	p.Seconds = p.pipeline
	p.Greedy = w * m.groupWork(0, m.job.rbms(), 1) / m.capacity[fastest]
	p.GreedyOn = m.cl.Machines[fastest].Name
	p.capacity = total / m.capacity[fastest]
	return p
}

// Errors of explicit plans and named strategies.
var (
	// ErrGap reports an RBM in no group.
	ErrGap = errors.New("plan: RBM in no group")
	// ErrOverlap reports an RBM in more than one group.
	ErrOverlap = errors.New("plan: RBM in more than one group")
	// ErrRange reports a group whose RBMs are not a range of the DBN's.
	ErrRange = errors.New("plan: RBMs out of range")
	// ErrNoMachine reports a group without machines.
	ErrNoMachine = errors.New("plan: group without machines")
	// ErrUnknownMachine reports a machine name not in the cluster.
	ErrUnknownMachine = errors.New("plan: unknown machine")
	// ErrReusedMachine reports a machine named twice.
	ErrReusedMachine = errors.New("plan: machine named twice")
	// ErrTooManyGroups reports more groups than machines.
	ErrTooManyGroups = errors.New("plan: more groups than machines")
	// ErrTooFewMachines reports a strategy that needs more machines.
	ErrTooFewMachines = errors.New("plan: too few machines")
)

// OnePerRBM returns the paper's plan: RBM_i on the cluster's i-th machine,
// the machines beyond the L-th idle. It needs as many machines as RBMs.
func OnePerRBM(job Job, cl Cluster) (*Plan, error) {
	m, err := newModel(job, cl)
	if err != nil {
		return nil, err
	}
	l := job.rbms()
	if len(cl.Machines) < l {
		return nil, fmt.Errorf("one-per-rbm: %d RBMs on %d machines: %w", l, len(cl.Machines), ErrTooFewMachines)
	}
	spans := make([]span, l)
	for i := range spans {
		spans[i] = span{i, i + 1, []int{i}}
	}
	return m.evaluate(StrategyOnePerRBM, false, spans), nil
}

// Explicit checks a plan written by hand and predicts it. The groups may
// come in any order; together they must cover RBM_1 to RBM_L once each,
// and every machine they name must be the cluster's and named once. It
// reports every problem at once.
func Explicit(job Job, cl Cluster, groups []Group) (*Plan, error) {
	m, err := newModel(job, cl)
	if err != nil {
		return nil, err
	}
	l := job.rbms()
	var errs []error
	if len(groups) > len(cl.Machines) {
		errs = append(errs, fmt.Errorf("%d groups on %d machines: %w", len(groups), len(cl.Machines), ErrTooManyGroups))
	}
	index := make(map[string]int, len(cl.Machines))
	for k, mc := range cl.Machines {
		index[mc.Name] = k
	}
	owner := make(map[string]int)
	cover := make([][]int, l) // cover[i]: the groups holding RBM_{i+1}
	spans := make([]span, 0, len(groups))
	for gi, g := range groups {
		name := fmt.Sprintf("group %d (RBM_%s)", gi+1, g.rbms())
		ok := true
		if g.First < 1 || g.Last > l || g.First > g.Last {
			errs = append(errs, fmt.Errorf("%s: want 1 <= first <= last <= %d: %w", name, l, ErrRange))
			ok = false
		} else {
			for i := g.First - 1; i < g.Last; i++ {
				cover[i] = append(cover[i], gi+1)
			}
		}
		if len(g.Machines) == 0 {
			errs = append(errs, fmt.Errorf("%s: %w", name, ErrNoMachine))
			ok = false
		}
		sp := span{i: g.First - 1, j: g.Last}
		for _, mc := range g.Machines {
			k, known := index[mc]
			switch prev, dup := owner[mc]; {
			case !known:
				errs = append(errs, fmt.Errorf("%s: machine %q: %w", name, mc, ErrUnknownMachine))
				ok = false
			case dup:
				errs = append(errs, fmt.Errorf("%s: machine %q, also in group %d: %w", name, mc, prev, ErrReusedMachine))
				ok = false
			default:
				owner[mc] = gi + 1
				sp.ms = append(sp.ms, k)
			}
		}
		if ok {
			spans = append(spans, sp)
		}
	}
	for i, gs := range cover {
		switch {
		case len(gs) == 0:
			errs = append(errs, fmt.Errorf("RBM_%d: %w", i+1, ErrGap))
		case len(gs) > 1:
			errs = append(errs, fmt.Errorf("RBM_%d in groups %v: %w", i+1, gs, ErrOverlap))
		}
	}
	if err := errors.Join(errs...); err != nil {
		return nil, fmt.Errorf("explicit plan: %w", err)
	}
	slices.SortFunc(spans, func(a, b span) int { return a.i - b.i })
	return m.evaluate(StrategyExplicit, false, spans), nil
}
