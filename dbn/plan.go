package dbn

import (
	"context"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/pipedbn/pipedbn/blas"
	"github.com/pipedbn/pipedbn/config"
	"github.com/pipedbn/pipedbn/pipeline"
	"github.com/pipedbn/pipedbn/pipeline/driver"
	"github.com/pipedbn/pipedbn/pipeline/natsnet"
	"github.com/pipedbn/pipedbn/pipeline/plan"
	"github.com/pipedbn/pipedbn/pipeline/protocol"
	"github.com/pipedbn/pipedbn/rbm"
)

// layout is how a pipelined run's local slave processes share its RBMs:
// the plan (cluster.plan) and, per process, the stage group it runs and
// its replica: one slave per RBM_i of the group (proc.name).
type layout struct {
	plan *plan.Plan
	// procs[p] is process p's stage group and replica.
	procs []proc
	// threads is each process's BLAS threads, where its proc.cpus is 0;
	// 0 where they differ (cluster.machine_cpus).
	threads int
	// speed is the master's, measured; machineCPUs each process's CPUs as
	// planned, 0 where they differ (cluster.machine_cpus).
	speed, machineCPUs float64
	// stepRows is what a step of each RBM costs beyond its samples, as
	// measured for the plan (plan.Job.StepRows); nil: not measured.
	stepRows []float64
	// logStem starts the processes' log names: "slave" if empty.
	logStem string
}

// proc is a local slave process: RBMs first to last (1-based), replica
// replica of replicas, on a machine of cpus CPUs (its cgroup's quota and
// BLAS threads; 0: uncapped, or the colocated slaves' shared cap).
type proc struct {
	first, last, replica, replicas int
	cpus                           float64
}

// procsOf is one process per group of groups, without replicas.
func procsOf(groups ...[2]int) []proc {
	var ps []proc
	for _, g := range groups {
		ps = append(ps, proc{first: g[0], last: g[1], replica: 0, replicas: 1})
	}
	return ps
}

// name is the name, and with a localAuth the NATS user, of the slave of
// RBM i in process pr: local-i, or local-i-rk for replica k.
func (pr proc) name(i int) string {
	if pr.replicas == 1 {
		return localSlaveName(i)
	}
	return fmt.Sprintf("local-%d-r%d", i, pr.replica)
}

// Assumed costs of local slaves: loopback moves bytes for free, but
// handling them costs CPU, ByteWork as the table3 report measured it (see
// plan.Cluster.ByteWork); a capped slave's quota costs it QuotaLoss, the
// median of 2-9% measured at 0.225 to 0.9 CPU
// (experiments/results/equal4_plans/).
const (
	localLatency   = 100e-6
	localByteWork  = 200
	localQuotaLoss = 0.04
)

// calibration is how long the master measures its CD-1 speed.
const calibration = 300 * time.Millisecond

// layoutLocal plans the local slaves of cfg's pipelined run of stages on
// examples rows of data, exact in precision exact: the machines are the local slave processes, each
// of cluster.cpus_per_worker CPUs, or sharing this box's CPUs (or the
// colocated cap) equally; their speed is the master's, measured on one
// thread; auto searches stage groups only (no replicas yet).
func layoutLocal(cfg *config.Config, stages []pipeline.StageConfig, examples int, exact pipeline.Precision) (*layout, error) {
	// The counts below size allocations: refuse what the checks before
	// the data refuse, should a caller have skipped them.
	if err := checkSlaves(cfg); err != nil {
		return nil, err
	}
	cl := cfg.Cluster
	explicit, err := cl.StageGroups(len(stages))
	if err != nil {
		return nil, fmt.Errorf("config %s: cluster.plan = %q: %w", cfg.File, cl.Plan, err)
	}
	capped := (cl.CPUsPerWorker > 0 || len(cl.MachineCPUs) > 0) && !cl.Colocate
	lay := &layout{}
	machineCPUs := lay.sizeMachines(cl, localProcesses(cl, len(stages), explicit, capped), capped)
	job := localJob(cl, stages, examples)
	job.Data = exact
	calibrating := time.Now()
	lay.speed = measureSpeed()
	pc := plan.Cluster{Network: plan.Network{Latency: localLatency}, ByteWork: localByteWork}
	if capped {
		pc.QuotaLoss = localQuotaLoss
	}
	cpusOf := map[string]float64{}
	for p, c := range machineCPUs {
		name := fmt.Sprintf("process-%d", p+1)
		cpusOf[name] = c
		pc.Machines = append(pc.Machines, plan.Machine{Name: name, CPUs: c, Speed: lay.speed})
	}
	lay.plan, lay.stepRows, err = planMeasured(cl, explicit, job, pc, capped)
	if err != nil {
		return nil, fmt.Errorf("plan the local slaves: %w", err)
	}
	lay.plan.Calibrated(time.Since(calibrating).Seconds())
	for _, g := range lay.plan.Groups {
		for k, name := range g.Machines {
			pr := proc{first: g.First, last: g.Last, replica: k, replicas: len(g.Machines)}
			if capped {
				pr.cpus = cpusOf[name]
			}
			lay.procs = append(lay.procs, pr)
		}
	}
	return lay, nil
}

// localProcesses is the number of local slave processes of a DBN of rbms
// RBMs: cluster.local_slaves if set, else one per machine of
// cluster.machine_cpus, per process of an explicit plan, per RBM (the
// paper's plan, or capped processes), or else one.
func localProcesses(cl config.Cluster, rbms int, explicit []config.StageGroup, capped bool) int {
	switch {
	case cl.LocalSlaves > 0:
		return cl.LocalSlaves
	case len(cl.MachineCPUs) > 0:
		return len(cl.MachineCPUs)
	case explicit != nil:
		return config.Processes(explicit)
	case cl.Plan == config.PlanOnePerRBM || capped:
		return rbms
	}
	return 1
}

// sizeMachines sets lay's threads and machineCPUs for m local processes
// and returns each process's CPUs (the machine the plan calls
// process-<p+1> at p): cluster.machine_cpus where given, else
// cluster.cpus_per_worker each (capped), the colocated cap shared, or this
// box's CPUs shared.
func (lay *layout) sizeMachines(cl config.Cluster, m int, capped bool) []float64 {
	unequal := len(cl.MachineCPUs) > 0
	cpus := float64(runtime.NumCPU()) / float64(m)
	switch {
	case capped:
		cpus = cl.CPUsPerWorker
		lay.threads = workerThreads(cpus)
	case cl.Colocate && cl.CPUsPerWorker > 0:
		cpus = cl.CPUsPerWorker / float64(m)
		lay.threads = workerThreads(cpus)
	default:
		lay.threads = max(1, runtime.NumCPU()/m)
	}
	machineCPUs := make([]float64, m)
	for p := range machineCPUs {
		machineCPUs[p] = cpus
		if unequal {
			machineCPUs[p] = cl.MachineCPUs[p]
		}
	}
	if unequal {
		lay.threads = 0 // each process's own: workerThreads(proc.cpus)
	} else {
		lay.machineCPUs = cpus
	}
	return machineCPUs
}

// localJob is the planner's view of the pipelined run of stages on
// examples rows of data.
func localJob(cl config.Cluster, stages []pipeline.StageConfig, examples int) plan.Job {
	s := stages[0]
	job := plan.Job{BatchSize: s.BatchSize, K: s.K, CDK: s.CDK, SyncEvery: cl.SyncEvery, Middle: s.OutPrecision(),
		Windows: s.Epochs*pipeline.WindowsPerEpoch(examples, s.BatchSize, s.K) + s.Settle.Windows}
	job.Layers = append(job.Layers, s.Visible)
	for _, st := range stages {
		job.Layers = append(job.Layers, st.Hidden)
	}
	return job
}

// planLocal plans job on pc as cluster.plan says: the explicit stage
// groups, each replica on the next machine; the paper's one RBM per
// slave; or the planner's choice.
func planLocal(cl config.Cluster, explicit []config.StageGroup, job plan.Job, pc plan.Cluster) (*plan.Plan, error) {
	switch {
	case explicit != nil:
		var groups []plan.Group
		p := 0
		for _, g := range explicit {
			pg := plan.Group{First: g.First, Last: g.Last}
			for range g.Replicas {
				pg.Machines = append(pg.Machines, pc.Machines[p].Name)
				p++
			}
			groups = append(groups, pg)
		}
		return plan.Explicit(job, pc, groups)
	case cl.Plan == config.PlanOnePerRBM:
		return plan.OnePerRBM(job, pc)
	default:
		return plan.Auto(job, pc, plan.Options{Tolerance: cl.ReplicaTolerance, MaxReplicas: cl.MaxReplicas, TopOnly: cl.Replicate == config.ReplicateTop})
	}
}

// planMeasured plans job on pc (planLocal) and returns the plan with the
// step costs measured for it (job.StepRows; nil: none measured).
// Replicas take a step per sub-batch, whose cost depends on the RBM's
// shape and this machine: measure it for each RBM the plan replicates,
// and plan again, until the plan replicates no RBM left unmeasured. On
// capped machines a step costs its process's CPU time (measureStepRows).
func planMeasured(cl config.Cluster, explicit []config.StageGroup, job plan.Job, pc plan.Cluster, capped bool) (*plan.Plan, []float64, error) {
	for {
		p, err := planLocal(cl, explicit, job, pc)
		if err != nil {
			return nil, job.StepRows, err
		}
		unmeasured := replicatedUnmeasured(p, job.StepRows)
		if len(unmeasured) == 0 {
			return p, job.StepRows, nil
		}
		if job.StepRows == nil {
			job.StepRows = make([]float64, len(job.Layers)-1)
		}
		measureStepRows(job, unmeasured, capped)
	}
}

// replicas returns each RBM's number of stage replicas, RBM_i's at i-1.
func (l *layout) replicas() []int {
	var rs []int
	for _, pr := range l.procs {
		if pr.replica == 0 {
			for i := pr.first; i <= pr.last; i++ {
				rs = append(rs, pr.replicas)
			}
		}
	}
	return rs
}

// groupsText writes the plan's stage groups as cluster.plan spells them:
// "1-2x3,3".
func (l *layout) groupsText() string {
	var gs []string
	for _, pr := range l.procs {
		if pr.replica != 0 {
			continue
		}
		g := strconv.Itoa(pr.first)
		if pr.last > pr.first {
			g += "-" + strconv.Itoa(pr.last)
		}
		if pr.replicas > 1 {
			g += "x" + strconv.Itoa(pr.replicas)
		}
		gs = append(gs, g)
	}
	return strings.Join(gs, ",")
}

// names returns every local slave's name, in the order of processes.
func (l *layout) allNames() []string {
	var names []string
	for p := range l.procs {
		names = append(names, l.names(p)...)
	}
	return names
}

// measureSpeed returns this machine's CD-1 speed on one thread, as
// pipeline/plan wants it, restoring the BLAS threads afterwards.
func measureSpeed() float64 {
	threads := blas.Threads()
	blas.SetThreads(1)
	defer blas.SetThreads(threads)
	rate := rbm.MeasureRate(plan.RefVisible, plan.RefHidden, plan.RefBatch, 1, calibration)
	return plan.SpeedFromRate(plan.RefVisible, plan.RefHidden, 1, rate)
}

// stepCalibration is how long the master times CD-1 steps of one RBM
// shape to learn what a stage replica's smaller steps cost.
const stepCalibration = 100 * time.Millisecond

// replicatedUnmeasured returns the RBMs (0-based) that p puts on stage
// replicas and whose step cost stepRows does not hold yet.
func replicatedUnmeasured(p *plan.Plan, stepRows []float64) []int {
	var rbms []int
	for _, g := range p.Groups {
		if len(g.Machines) < 2 {
			continue
		}
		for i := g.First - 1; i < g.Last; i++ {
			if i >= len(stepRows) || stepRows[i] == 0 {
				rbms = append(rbms, i)
			}
		}
	}
	return rbms
}

// measureStepCost times CD steps of a full and of a small mini-batch
// (rbm.MeasureStepCost); a test that checks a plan's shape replaces it, since
// the measurement, and so the plan, follows the machine's load.
var measureStepCost = rbm.MeasureStepCost

// measureStepRows measures, on one thread, what a CD step of each of the
// RBMs rbms (0-based) costs beyond its samples into job.StepRows, once per
// shape: steps of job's mini-batch against steps of an eighth of it, the
// sub-batch of 8 replicas (smaller steps tell the cost apart from the
// machine's noise better than the larger sub-batches of fewer replicas).
// An RBM measured at no cost at all gets the least above it, so that it
// counts as measured. Capped, the steps are compared by the CPU time
// their process spent: a quota also takes from a step what the Go
// runtime spends on its other threads while the step is in C, a larger
// share of a small step than of a full one (experiments/results/cgo_calls/).
func measureStepRows(job plan.Job, rbms []int, capped bool) {
	threads := blas.Threads()
	blas.SetThreads(1)
	defer blas.SetThreads(threads)
	small := max(1, job.BatchSize/8)
	measured := map[[2]int]float64{} // by shape, those of earlier calls too
	for i, s := range job.StepRows {
		if s > 0 {
			measured[[2]int{job.Layers[i], job.Layers[i+1]}] = s
		}
	}
	for _, i := range rbms {
		shape := [2]int{job.Layers[i], job.Layers[i+1]}
		s, done := measured[shape]
		if !done {
			s = plan.StepRows // mini-batches of a row or so: nothing to tell apart
			if small < job.BatchSize {
				c := measureStepCost(shape[0], shape[1], job.BatchSize, small, max(1, job.CDK), stepCalibration)
				full, sub := c.Full, c.Sub
				if capped {
					full, sub = c.FullCPU, c.SubCPU
				}
				s = plan.StepRowsFrom(full, sub, job.BatchSize, small)
			}
			measured[shape] = s
		}
		job.StepRows[i] = max(s, math.SmallestNonzeroFloat64)
	}
}

// seating names the seat of every local slave: local-i trains RBM_i,
// local-i-rk its replica k.
func (l *layout) seating() map[string]protocol.Seat {
	s := map[string]protocol.Seat{}
	for _, pr := range l.procs {
		for i := pr.first; i <= pr.last; i++ {
			s[pr.name(i)] = protocol.Seat{RBM: i, Replica: pr.replica}
		}
	}
	return s
}

// process returns the process (0-based) that runs the slave name, or -1.
func (l *layout) process(name string) int {
	for p := range l.procs {
		if slices.Contains(l.names(p), name) {
			return p
		}
	}
	return -1
}

// names returns the slave names of process p, one per RBM of its group.
func (l *layout) names(p int) []string {
	pr := l.procs[p]
	var names []string
	for i := pr.first; i <= pr.last; i++ {
		names = append(names, pr.name(i))
	}
	return names
}

// result is the plan's part of result.json, with the busy seconds per
// window of each group measured from its RBMs' rows.
func (l *layout) result(rows []RBMResult) *PlanResult {
	p := l.plan
	r := &PlanResult{
		Strategy: p.Strategy.String(), SpeedGFLOPS: l.speed, CPUs: l.machineCPUs, Threads: l.threads,
		StepRows: l.stepRows, Windows: p.Job.Windows, PredictedSeconds: p.Seconds, PredictedSpeedUp: p.SpeedUp(), PredictedEfficiency: p.Efficiency(),
		Text: p.String(),
	}
	for k, g := range p.Groups {
		pg := PlanGroup{Replicas: len(g.Machines), PredictedWindowSeconds: p.Costs[k].Window, PredictedComputeSeconds: p.Costs[k].Compute}
		for q, pr := range l.procs {
			if pr.first == g.First {
				pg.Slaves = append(pg.Slaves, l.names(q)...)
				pg.CPUs = append(pg.CPUs, pr.cpus)
			}
		}
		var busy float64
		for i := g.First; i <= g.Last; i++ {
			pg.RBMs = append(pg.RBMs, i)
			for _, row := range rows {
				if row.Index == i {
					busy += row.BusySeconds
				}
			}
		}
		if p.Job.Windows > 0 {
			pg.MeasuredBusySeconds = busy / float64(p.Job.Windows)
		}
		r.Groups = append(r.Groups, pg)
	}
	return r
}

// inMaster reports whether the plan's one stage group runs inside the
// master's process: on a box with no CPU caps, a single group of every RBM
// gets every CPU, and its slaves take the master's data windows in memory
// instead of through the NATS server, whose copies, checksums and system
// calls would compete with training for the same CPUs. (A run given
// Options.SlaveCommand starts that command instead.)
func (l *layout) inMaster(cfg *config.Config) bool {
	return len(l.procs) == 1 && l.procs[0].cpus == 0 && cfg.Cluster.CPUsPerWorker == 0
}

// inMasterGroup is a stage group running inside the master's process.
type inMasterGroup struct {
	peers *driver.Peers
	// start runs the group, once: when the master listens for
	// registrations (driver.Plan.Listening).
	start func()
	once  sync.Once
	done  chan struct{}
}

// newInMaster prepares lay's one stage group to run in this process
// (natsnet.RunGroup with the master's BLAS threads, as identities creds
// where the server wants them), its log in out/slave-1.log. A group that
// fails cancels ctx with a cause naming its log.
func newInMaster(ctx context.Context, cfg *config.Config, url string, creds []natsnet.Credential, out string, lay *layout, cancel context.CancelCauseFunc) (*inMasterGroup, error) {
	logPath := filepath.Join(out, "slave-1.log")
	f, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o644)
	if err != nil {
		return nil, fmt.Errorf("start the slaves in the master: %w", err)
	}
	g := &inMasterGroup{peers: driver.NewPeers(), done: make(chan struct{})}
	opt := natsnet.SlaveOptions{URL: url, Credentials: creds, SlaveOptions: driver.SlaveOptions{
		Threads: blas.Threads(), JoinTimeout: cfg.Cluster.JoinTimeout, Peers: g.peers,
		Logger: hclog.New(&hclog.LoggerOptions{Name: "slave", Output: f, Level: hclog.Info}),
	}}
	g.start = func() {
		go func() {
			defer close(g.done)
			defer f.Close()
			if err := natsnet.RunGroup(ctx, opt, lay.names(0)); err != nil && ctx.Err() == nil {
				cancel(fmt.Errorf("the slaves in the master failed: %v (their log: %s)", err, logPath))
			}
		}()
	}
	return g, nil
}

// run starts the group's slaves, once.
func (g *inMasterGroup) run() { g.once.Do(g.start) }

// wait waits for the group's slaves to end; a group that never started
// (the master failed first) ends now.
func (g *inMasterGroup) wait() {
	g.once.Do(func() { close(g.done) })
	<-g.done
}

// PlanLocal returns the plan a pipelined run of cfg would lay its local
// slaves out by, and what it predicts, without training: `master plan`.
// It reads the training data for its number of examples and measures this
// machine's CD-1 speed, as the run does. Slaves started by hand
// (cluster.slaves > 0) are planned only once they join and report their
// speeds, and greedy and in-process runs have no plan: each is an error
// naming its key. A plan that needs more memory than this machine has is
// refused as the run would be.
func PlanLocal(cfg *config.Config) (*PlanResult, error) {
	var key string
	var val any
	var reason string
	switch cl := cfg.Cluster; {
	case cfg.Pretrain.Mode != config.Pipelined:
		key, val, reason = "pretrain.mode", cfg.Pretrain.Mode, "greedy pre-training has no plan: it trains every RBM in one process; plan a pipelined run"
	case cl.Transport == config.Memory:
		key, val, reason = "cluster.transport", cl.Transport, "the in-process transport trains every RBM in the master, unplanned; plan a run over nats"
	case cl.Slaves > 0:
		key, val, reason = "cluster.slaves", cl.Slaves, "slaves started by hand are planned once they join and report their speeds; `master plan` plans local slaves (cluster.slaves: 0)"
	}
	if key != "" {
		return nil, fmt.Errorf("config %s: %s = %v: %s", cfg.File, key, val, reason)
	}
	if err := CheckLimits(cfg, hclog.NewNullLogger()); err != nil {
		return nil, err
	}
	train, _, err := LoadData(cfg)
	if err != nil {
		return nil, err
	}
	lay, err := layoutLocal(cfg, Stages(cfg, train.N), train.N, pipeline.ExactPrecision(train.X))
	if err != nil {
		return nil, err
	}
	if err := checkPlanned(cfg, lay, hclog.NewNullLogger()); err != nil {
		return nil, err
	}
	return lay.result(nil), nil
}
