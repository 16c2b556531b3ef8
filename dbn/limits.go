package dbn

// Limits before work: a run is refused, in one line
// naming dbn.layers, before it loads its data or allocates an RBM, when its
// estimated memory (pipeline.Memory) does not fit what this machine has, or
// a message it must send exceeds what its transport carries.

import (
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/hashicorp/go-hclog"

	"github.com/pipedbn/pipedbn/config"
	"github.com/pipedbn/pipedbn/data"
	"github.com/pipedbn/pipedbn/finetune"
	"github.com/pipedbn/pipedbn/internal/memlimit"
	"github.com/pipedbn/pipedbn/internal/sat"
	"github.com/pipedbn/pipedbn/messages"
	"github.com/pipedbn/pipedbn/pipeline"
	"github.com/pipedbn/pipedbn/pipeline/protocol"
)

// Message limits. natsMaxMessage is the longest message a NATS endpoint
// takes in (natsnet's reassemblers have the default limits); a longer one
// is dropped as unreadable, and a run whose weights are dropped so never
// ends. natsMaxPending is what a NATS server holds for the master's
// connection of the messages arriving from all its slaves at once (its
// max_pending: beyond it the server cuts the master off as a slow consumer). codecMaxBody is the longest body the wire codec encodes (a uint32
// length): an in-memory run encodes its checkpoints and weights into its
// store.
const (
	natsMaxMessage = messages.DefaultMaxMessage
	natsMaxPending = messages.DefaultMaxPending
	codecMaxBody   = math.MaxUint32
)

// CheckLimits refuses, before any work, a run of cfg that cannot succeed
// on this machine: one whose estimated memory (for `master run`: this
// process, and its slaves where they run on this machine) exceeds what
// this machine has available or this process's cgroup allows, or one that
// must send a message longer than its transport carries. Its error is one
// line naming dbn.layers, the estimate and the limit. It logs the estimate,
// and that of every remote slave, at debug level to log (nil: nowhere).
func CheckLimits(cfg *config.Config, log hclog.Logger) error {
	if log == nil {
		log = hclog.NewNullLogger()
	}
	if len(cfg.DBN.Layers) < 2 {
		return nil // no DBN to estimate: Validate refuses it
	}
	if err := checkSlaves(cfg); err != nil {
		return err
	}
	replicas := explicitReplicas(cfg)
	lim, ok := memlimit.Here()
	return checkRun(cfg, estimateRun(cfg, replicas), replicas, lim, ok, log)
}

// checkRun refuses a run of estimate est, with stage replicas (nil: none),
// that needs more memory than lim (known: ok), or whose messages its
// transport cannot carry. A run that fits logs its estimate, and its
// warning if any, only once its messages passed too: a refusal stays one
// line on stderr.
func checkRun(cfg *config.Config, est runEstimate, replicas []int, lim memlimit.Limit, ok bool, log hclog.Logger) error {
	if !ok || est.total() <= lim.Bytes {
		if err := checkMessages(cfg, replicas); err != nil {
			return err
		}
	}
	return est.check(cfg, lim, ok, log)
}

// checkPlanned is CheckLimits once the local slaves' plan lay is known:
// the slaves it names, and for a plan with stage replicas (replicas[i-1]:
// RBM_i's) their memory and messages: each replica is a slave process of
// its own, and the master holds and receives their checkpoints and
// averages.
func checkPlanned(cfg *config.Config, lay *layout, log hclog.Logger) error {
	if n := len(lay.allNames()); n > pipeline.MaxSlaves {
		return fmt.Errorf("config %s: cluster.plan = %q: the plan %s has %d slaves (one per RBM of each process), more than the %d one run may have; lower cluster.max_replicas or cluster.local_slaves",
			cfg.File, cfg.Cluster.Plan, lay.groupsText(), n, pipeline.MaxSlaves)
	}
	replicas := lay.replicas()
	if len(replicas) == 0 || slices.Max(replicas) <= 1 {
		return nil
	}
	lim, ok := memlimit.Here()
	return checkRun(cfg, estimateRun(cfg, replicas), replicas, lim, ok, log)
}

// checkSlaves refuses, before the data is loaded and before anything is
// allocated by them, a pipelined run of more slaves than
// pipeline.MaxSlaves: slaves by hand for the embedded server's identities,
// or local slaves by the count that decides them (cluster.plan's groups
// and replicas, cluster.local_slaves, cluster.machine_cpus, or one per RBM
// of dbn.layers). An auto plan's own count is known once it is made
// (checkPlanned).
func checkSlaves(cfg *config.Config) error {
	cl := cfg.Cluster
	rbms := len(cfg.DBN.Layers) - 1
	if cfg.Pretrain.Mode != config.Pipelined || cl.Transport != config.NATS || rbms < 1 {
		return nil
	}
	const most = pipeline.MaxSlaves
	refuse := func(key string, val any, n int, what string) error {
		return fmt.Errorf("config %s: %s = %v: %d %s, more than the %d slaves one run may have", cfg.File, key, val, n, what, most)
	}
	if cl.Slaves > 0 {
		if cl.NatsURL == "" && cl.Slaves > most {
			return refuse("cluster.slaves", cl.Slaves, cl.Slaves, "slaves, each with its own identity on the embedded NATS server")
		}
		return nil
	}
	groups, err := cl.StageGroups(rbms)
	switch {
	case err != nil:
		return nil // Validate reports it
	case groups != nil:
		if n := groupSlaves(groups); n > most {
			return refuse("cluster.plan", fmt.Sprintf("%q", cl.Plan), n, "local slaves (one per RBM of each stage group, on each of its replicas)")
		}
	case len(cl.MachineCPUs) > most:
		return refuse("cluster.machine_cpus", fmt.Sprintf("[%d machines]", len(cl.MachineCPUs)), len(cl.MachineCPUs), "local slave processes")
	case cl.LocalSlaves > most:
		return refuse("cluster.local_slaves", cl.LocalSlaves, cl.LocalSlaves, "local slave processes")
	}
	if rbms > most {
		return refuse("dbn.layers", layersText(cfg.DBN.Layers), rbms, "RBMs, each with a local slave of its own")
	}
	return nil
}

// groupSlaves is the slaves of stage groups: one per RBM of each group on
// each of its replicas, saturating rather than overflowing.
func groupSlaves(groups []config.StageGroup) int {
	var n int64
	for _, g := range groups {
		n = sat.Add(n, sat.Mul(int64(g.Last-g.First+1), int64(g.Replicas)))
	}
	return int(min(n, math.MaxInt))
}

// explicitReplicas returns the stage replicas of each RBM (RBM_i's at
// i-1) of an explicit cluster.plan, known before any planning; nil for
// auto, one-per-rbm, and runs without local slaves.
func explicitReplicas(cfg *config.Config) []int {
	if cfg.Pretrain.Mode != config.Pipelined || checkSlaves(cfg) != nil {
		return nil
	}
	groups, err := cfg.Cluster.StageGroups(len(cfg.DBN.Layers) - 1)
	if err != nil {
		return nil
	}
	var rs []int
	for _, g := range groups {
		for i := g.First; i <= g.Last; i++ {
			rs = append(rs, g.Replicas)
		}
	}
	return rs
}

// runEstimate is the memory of a run on this machine.
type runEstimate struct {
	// master is this process; slaves are one per RBM, in this process
	// (inProcess), in processes of their own on this machine (local), or
	// elsewhere.
	master           pipeline.Memory
	slaves           []pipeline.Memory
	inProcess, local bool
	// replicas[i] is how many slaves train RBM_i+1 (stage replicas), each
	// a process of its own where they are local; nil: one each.
	replicas []int
	// rbm is the largest RBM's worker (its Stage in greedy, else its
	// slave): its index and its memory.
	rbm    int
	rbmMem int64
}

// total is what the run needs on this machine: the master (its slaves
// included when they run in it) and its local slave processes.
func (e runEstimate) total() int64 {
	t := e.master.Total()
	if e.local {
		for i, s := range e.slaves {
			t = sat.Add(t, sat.Mul(s.Total(), int64(e.copies(i))))
		}
	}
	return t
}

// copies is the number of slaves that train RBM_i+1.
func (e runEstimate) copies(i int) int {
	if i < len(e.replicas) {
		return max(e.replicas[i], 1)
	}
	return 1
}

// largest is the largest part of what the run needs on this machine.
func (e runEstimate) largest() pipeline.MemoryPart {
	l := e.master.Largest()
	if e.local {
		for _, s := range e.slaves {
			if p := s.Largest(); p.Bytes > l.Bytes {
				l = p
			}
		}
	}
	return l
}

// dataSizes returns the examples of cfg's data, and the most classes its
// labels may have, without loading it: for IDX files from their headers
// (0 examples when they cannot be read: loading reports why).
func dataSizes(cfg *config.Config) (train, test, classes int) {
	d := cfg.Data
	classes = 256 // a label is a byte
	switch d.Source {
	case config.Synthetic:
		train, test = d.SyntheticSizes()
	case config.FashionMNIST, config.IDX:
		var err error
		if train, test, err = data.IDXDirSizes(d.Dir); err != nil {
			return 0, 0, classes
		}
		if d.TrainLimit > 0 {
			train = min(train, d.TrainLimit)
		}
		if d.TestLimit > 0 {
			test = min(test, d.TestLimit)
		}
		if d.Source == config.FashionMNIST {
			classes = len(finetune.FashionMNISTClasses)
		}
	case config.NPZ, config.NPY, config.CSV:
		train, test = userDataSizes(d)
	}
	return train, test, classes
}

// estimateRun estimates the memory of a `master run` of cfg.
func estimateRun(cfg *config.Config, replicas []int) runEstimate {
	nTrain, nTest, classes := dataSizes(cfg)
	stages := StageConfigs(cfg)
	e := runEstimate{replicas: replicas}
	dataSet := pipeline.Memory{}
	dataSet.Add("the data set", pipeline.Float32Bytes(nTrain+nTest, cfg.DBN.Layers[0]))
	after := afterPretraining(cfg, stages, nTrain, classes)

	var pretraining pipeline.Memory
	cl := cfg.Cluster
	if cfg.Pretrain.Mode == config.Greedy {
		pretraining = pipeline.GreedyMemory(nTrain, stages)
		for _, s := range stages {
			if t := s.TrainerMemory().Total(); t > e.rbmMem {
				e.rbm, e.rbmMem = s.Index, t
			}
		}
	} else {
		e.inProcess = cl.Transport == config.Memory
		e.local = !e.inProcess && cl.Slaves == 0
		f := pipeline.Flow{
			RBMs: len(stages), Rows: nTrain, Credits: cl.Credits,
			CheckpointEvery: cfg.Reliability.CheckpointEvery, Wire: !e.inProcess,
			RBMReplicas: replicas, SyncEvery: cl.SyncEvery,
		}
		for _, s := range stages {
			f.LinkCredits = append(f.LinkCredits, protocol.LinkCredits(cl.Credits, s, nTrain))
		}
		pretraining = pipeline.MasterMemory(stages, f)
		if f.CheckpointEvery > 0 && cfg.Reliability.SaveEvery > 0 {
			pretraining.Add("refreshing weights.npz from the latest checkpoints", npzWriting(stages, nil))
		}
		for i, s := range stages {
			fs := f
			fs.Replicas, fs.OutLinks = e.copies(i), e.copies(i+1)
			if i > 0 {
				fs.InLinks = e.copies(i - 1)
			}
			m := s.SlaveMemory(fs)
			if !e.inProcess {
				m.Add("the slave process itself", memlimit.ProcessOverhead)
			}
			e.slaves = append(e.slaves, m)
			if t := m.Total(); t > e.rbmMem {
				e.rbm, e.rbmMem = s.Index, t
			}
		}
		if e.inProcess {
			for i, s := range e.slaves {
				pretraining.AddMemory(fmt.Sprintf("slave %d: ", i+1), s)
			}
		}
	}
	if cfg.Pretrain.Probe.Rows > 0 {
		var snaps int64
		for _, s := range stages {
			snaps = sat.Add(snaps, pipeline.Float32Bytes(probePoints, s.Visible*s.Hidden+s.Visible+s.Hidden))
		}
		// Kept through pre-training and measured after it.
		pretraining.Add("the probe's snapshots (pretrain.probe)", snaps)
		after.Add("the probe's snapshots (pretrain.probe)", snaps)
	}
	e.master.Add("the process itself", memlimit.ProcessOverhead)
	e.master.AddMemory("", dataSet)
	e.master.AddMemory("", pipeline.Peak(pretraining, after))
	return e
}

// afterPretraining is what the master holds once pre-training is done:
// the trained RBMs and the largest of what comes next: measuring the final
// reconstruction errors (a trainer on a copy of each RBM in turn), writing
// weights.npz, fine-tuning and writing weights.npz again.
func afterPretraining(cfg *config.Config, stages []pipeline.StageConfig, nTrain, classes int) pipeline.Memory {
	var m pipeline.Memory
	var rbms int64
	for _, s := range stages {
		rbms = sat.Add(rbms, pipeline.Float32Bytes(s.Visible*s.Hidden+s.Visible+s.Hidden))
	}
	m.Add("the trained RBMs", rbms)

	var recon pipeline.Memory
	n := min(nTrain, finalReconRows)
	for _, s := range stages {
		c := s
		c.BatchSize = 500 // finalRecon's
		var r pipeline.Memory
		r.AddMemory("measuring the final reconstruction errors: ", c.TrainerMemory())
		// The input of RBM_i (but the data's) and of RBM_i+1.
		width := s.Hidden
		if s.Index > 1 {
			width += s.Visible
		}
		r.Add(fmt.Sprintf("the final reconstruction errors' input of RBM_%d and RBM_%d", s.Index, s.Index+1), pipeline.Float32Bytes(n, width))
		recon = pipeline.Peak(recon, r)
	}
	var save pipeline.Memory
	save.Add("writing weights.npz", npzWriting(stages, nil))

	var ft, ftSave pipeline.Memory
	f := cfg.Finetune
	if f.Epochs > 0 {
		sizes := cfg.DBN.Layers
		net := finetuneParams(sizes, classes)
		copies := int64(3) // the network, its momentum, its best epoch
		if f.AverageLast > 0 {
			copies += 3 // the float64 sum of the last epochs, and their mean
		}
		ft.Add("fine-tuning (the network, its momentum and best epoch)", sat.Mul(copies, net))
		widths := classes
		for _, h := range sizes[1:] {
			widths += h
		}
		// A training mini-batch (its input, with input dropout's noise,
		// activations and deltas), two evaluators' batches of activations,
		// the shuffled order.
		buf := sat.Add(pipeline.Float32Bytes(f.BatchSize, 2*sizes[0]+2*widths), pipeline.Float32Bytes(2*finetune.EvalBatch, widths))
		ft.Add("fine-tuning's buffers", sat.Add(buf, pipeline.Float32Bytes(2, nTrain)))
		ftSave.Add("the fine-tuned network", net)
		ftSave.Add("writing weights.npz after fine-tuning", npzWriting(stages, &net))
	}
	m.AddMemory("", pipeline.Peak(recon, save, ft, ftSave))
	return m
}

// finetuneParams is the bytes of the parameters of the classifier
// unrolled from a DBN of sizes, with classes outputs.
func finetuneParams(sizes []int, classes int) int64 {
	var b int64
	for i := 1; i < len(sizes); i++ {
		b = sat.Add(b, pipeline.Float32Bytes(sizes[i-1]*sizes[i]+sizes[i]))
	}
	top := sizes[len(sizes)-1]
	return sat.Add(b, pipeline.Float32Bytes(top*classes+classes))
}

// npzWriting is what writeWeights holds while it writes the RBMs' arrays
// (and, with finetuned, that many bytes more of the fine-tuned network's):
// the archive, deflated into a buffer that, as it grows, may hold three
// times its length (the old buffer and the new, twice as long), and the
// largest array twice more, copied into rows and encoded.
func npzWriting(stages []pipeline.StageConfig, finetuned *int64) int64 {
	var arrays, largest int64
	for _, s := range stages {
		a := pipeline.Float32Bytes(s.Visible*s.Hidden + s.Visible + s.Hidden)
		arrays, largest = sat.Add(arrays, a), max(largest, a)
	}
	if finetuned != nil {
		arrays = sat.Add(arrays, *finetuned)
	}
	return sat.Add(sat.Mul(3, arrays), sat.Mul(2, largest))
}

// check refuses the run if it needs more than lim (known: ok).
func (e runEstimate) check(cfg *config.Config, lim memlimit.Limit, ok bool, log hclog.Logger) error {
	stages := StageConfigs(cfg)
	who := "the master (greedy pre-training and fine-tuning in this process)"
	worker := "RBM_%d (%dx%d)"
	switch {
	case cfg.Pretrain.Mode == config.Greedy:
	case e.inProcess:
		who = fmt.Sprintf("the master and its %s in this process (cluster.transport: memory)", plural(len(stages), "slave", "slaves"))
		worker = "RBM_%d's slave (%dx%d)"
	case e.local:
		slaves := 0
		for i := range stages {
			slaves += e.copies(i)
		}
		who = fmt.Sprintf("the master and its %s", plural(slaves, "local slave process", "local slave processes"))
		worker = "RBM_%d's slave (%dx%d)"
	default:
		who = "the master"
	}
	total, largest := e.total(), e.largest()
	if !ok || total <= lim.Bytes {
		// At debug level: a run refused later, for bad data, must stay one
		// line on stderr.
		log.Debug("memory estimate", "needs", memlimit.BytesText(total), "who", who, "limit", memlimit.BytesText(lim.Bytes), "limit_from", lim.From, "master", e.master.String())
		if !e.inProcess && !e.local {
			// A slave elsewhere learns its RBM only on assignment.
			for i, s := range e.slaves {
				c := stages[i]
				log.Debug("a slave will need memory", "rbm", c.Index, "size", fmt.Sprintf("%dx%d", c.Visible, c.Hidden), "needs", memlimit.BytesText(s.Total()))
			}
		}
		if ok && total > lim.Bytes/2 {
			log.Warn("the run needs more than half the memory available: Go's garbage collector may let a process grow to twice what it holds; GOMEMLIMIT bounds it",
				"needs", memlimit.BytesText(total), "limit", memlimit.BytesText(lim.Bytes), "limit_from", lim.From)
		}
		return nil
	}
	needs := fmt.Sprintf("%s needs about %s", who, memlimit.BytesText(total))
	if e.rbm > 0 && (e.inProcess || e.local || cfg.Pretrain.Mode == config.Greedy) {
		c := stages[e.rbm-1]
		needs = fmt.Sprintf(worker+" needs about %s, %s about %s in all", c.Index, c.Visible, c.Hidden, memlimit.BytesText(e.rbmMem), who, memlimit.BytesText(total))
	}
	return fmt.Errorf("config %s: dbn.layers = %s: %s (the largest part: %s, %s); %s",
		cfg.File, layersText(cfg.DBN.Layers), needs, largest.What, memlimit.BytesText(largest.Bytes), lim.Text())
}

// checkMessages refuses a pipelined run that must send a message longer
// than its transport carries: over NATS a window, a checkpoint or an RBM's
// weights longer than natsMaxMessage; in memory a checkpoint or weights
// whose encoding for the store exceeds codecMaxBody. Over NATS it refuses
// too a run whose slaves (replicas[i-1] of RBM_i; nil: one each) may send
// the master more at once than it holds for messages arriving
// (natsMaxPending): those beyond it evict each other and never arrive.
func checkMessages(cfg *config.Config, replicas []int) error {
	if cfg.Pretrain.Mode != config.Pipelined {
		return nil
	}
	limit, over := int64(natsMaxMessage), "over NATS"
	if cfg.Cluster.Transport == config.Memory {
		limit, over = codecMaxBody, "in the in-memory store"
	}
	nTrain, _, _ := dataSizes(cfg)
	ck := cfg.Reliability.CheckpointEvery > 0
	// A message's fields besides its arrays (the reconstruction error of
	// every epoch among them).
	head := 512 + 8*int64(cfg.Pretrain.Epochs)
	var atOnce int64 // what the slaves may send the master at once
	for _, s := range StageConfigs(cfg) {
		size := fmt.Sprintf("RBM_%d (%dx%d)", s.Index, s.Visible, s.Hidden)
		params := pipeline.Float32Bytes(s.Visible*s.Hidden + s.Visible + s.Hidden)
		w := sat.Add(params, head)
		if w > limit {
			return fmt.Errorf("config %s: dbn.layers = %v: the trained weights of %s make a message of %s, more than the %s one may carry %s; use narrower layers, or pretrain.mode: greedy",
				cfg.File, layersText(cfg.DBN.Layers), size, memlimit.BytesText(w), memlimit.BytesText(limit), over)
		}
		if c := sat.Add(sat.Mul(2, params), head); ck && c > limit {
			return fmt.Errorf("config %s: dbn.layers = %v: a checkpoint of %s (W_%d, biases and momentum) makes a message of %s, more than the %s one may carry %s; set reliability.checkpoint_every: 0 (no checkpoints, no recovery), or use narrower layers",
				cfg.File, layersText(cfg.DBN.Layers), size, s.Index, memlimit.BytesText(c), memlimit.BytesText(limit), over)
		} else if ck {
			w = c // a slave's longest message to the master
		}
		copies := 1
		if s.Index <= len(replicas) {
			copies = max(replicas[s.Index-1], 1)
		}
		atOnce = sat.Add(atOnce, sat.Mul(int64(copies), messages.PendingBytes(w, messages.DefaultMaxPart)))
		if cfg.Cluster.Transport == config.Memory {
			continue // windows are handed over as they are
		}
		if w := sat.Add(pipeline.WindowBytes(pipeline.WindowRows(s.K, s.BatchSize, nTrain), s.Visible, true), head); w > limit {
			window := fmt.Sprintf("%d mini-batches of %d rows", s.K, s.BatchSize)
			if int64(s.K)*int64(s.BatchSize) > int64(nTrain) {
				window = fmt.Sprintf("the epoch's %d rows (fewer than %s)", nTrain, window)
			}
			return fmt.Errorf("config %s: pretrain.k_batches = %d: a window of %s of L_%d (%d values) makes a message of %s, more than the %s one may carry %s; lower pretrain.k_batches or pretrain.batch_size",
				cfg.File, cfg.Pretrain.KBatches, window, s.Index-1, s.Visible, memlimit.BytesText(w), memlimit.BytesText(limit), over)
		}
	}
	if cfg.Cluster.Transport != config.Memory && atOnce > natsMaxPending {
		what := "checkpoints"
		if !ck {
			what = "trained weights"
		}
		return fmt.Errorf("config %s: dbn.layers = %v: the %s the master may receive at once from its %s come to %s, more than the %s it holds of messages arriving over NATS (the rest would evict each other and never arrive); use fewer stage replicas (cluster.plan, cluster.max_replicas) or narrower layers",
			cfg.File, layersText(cfg.DBN.Layers), what, plural(totalCopies(len(cfg.DBN.Layers)-1, replicas), "slave", "slaves"), memlimit.BytesText(atOnce), memlimit.BytesText(natsMaxPending))
	}
	return nil
}

// totalCopies is the slaves of rbms RBMs with replicas (nil: one each).
func totalCopies(rbms int, replicas []int) int {
	n := 0
	for i := range rbms {
		if i < len(replicas) {
			n += max(replicas[i], 1)
		} else {
			n++
		}
	}
	return n
}

func plural(n int, one, many string) string {
	if n == 1 {
		return "1 " + one
	}
	return fmt.Sprintf("%d %s", n, many)
}

// layersText writes layer sizes as a config spells them: [784, 500].
func layersText(layers []int) string {
	s := make([]string, len(layers))
	for i, n := range layers {
		s[i] = strconv.Itoa(n)
	}
	return "[" + strings.Join(s, ", ") + "]"
}
