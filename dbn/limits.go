package dbn

// Limits before work (issue 13, item 3): a run is refused, in one line
// naming dbn.layers, before it loads its data or allocates an RBM, when its
// estimated memory (pipeline.Memory) does not fit what this machine has, or
// a message it must send exceeds what its transport carries.

import (
	"bufio"
	"errors"
	"fmt"
	"io/fs"
	"math"
	"os"
	"path"
	"strconv"
	"strings"

	"github.com/hashicorp/go-hclog"

	"github.com/pipedbn/pipedbn/config"
	"github.com/pipedbn/pipedbn/data"
	"github.com/pipedbn/pipedbn/finetune"
	"github.com/pipedbn/pipedbn/messages"
	"github.com/pipedbn/pipedbn/pipeline"
	"github.com/pipedbn/pipedbn/pipeline/protocol"
)

// processOverhead is what a pipedbn process holds beyond its estimate: the
// Go runtime, the program, OpenBLAS's buffers, an embedded NATS server.
// Measured: a tiny greedy run peaks at 27 MiB resident, a tiny pipelined
// master with its embedded server at 35 MiB.
const processOverhead = 64 << 20

// Message limits. natsMaxMessage is the longest message a NATS endpoint
// takes in (natsnet's reassemblers have the default limits); a longer one
// is dropped as unreadable, and a run whose weights are dropped so never
// ends. codecMaxBody is the longest body the wire codec encodes (a uint32
// length): an in-memory run encodes its checkpoints and weights into its
// store.
const (
	natsMaxMessage = messages.DefaultMaxMessage
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
	est := estimateRun(cfg)
	lim, ok := readMemoryLimit(os.DirFS("/"))
	if err := est.check(cfg, lim, ok, log); err != nil {
		return err
	}
	return checkMessages(cfg)
}

// runEstimate is the memory of a run on this machine.
type runEstimate struct {
	// master is this process; slaves are one per RBM, in this process
	// (inProcess), in processes of their own on this machine (local), or
	// elsewhere.
	master           pipeline.Memory
	slaves           []pipeline.Memory
	inProcess, local bool
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
		for _, s := range e.slaves {
			t = satAdd(t, s.Total())
		}
	}
	return t
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

func satAdd(a, b int64) int64 {
	if s := a + b; s >= a {
		return s
	}
	return math.MaxInt64
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
func estimateRun(cfg *config.Config) runEstimate {
	nTrain, nTest, classes := dataSizes(cfg)
	stages := StageConfigs(cfg)
	var e runEstimate
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
		}
		for _, s := range stages {
			f.LinkCredits = append(f.LinkCredits, protocol.LinkCredits(cl.Credits, s, nTrain))
		}
		pretraining = pipeline.MasterMemory(stages, f)
		if f.CheckpointEvery > 0 && cfg.Reliability.SaveEvery > 0 {
			pretraining.Add("refreshing weights.npz from the latest checkpoints", npzWriting(stages, nil))
		}
		for _, s := range stages {
			m := s.SlaveMemory(f)
			if !e.inProcess {
				m.Add("the slave process itself", processOverhead)
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
			snaps = satAdd(snaps, pipeline.Float32Bytes(probePoints, s.Visible*s.Hidden+s.Visible+s.Hidden))
		}
		// Kept through pre-training and measured after it.
		pretraining.Add("the probe's snapshots (pretrain.probe)", snaps)
		after.Add("the probe's snapshots (pretrain.probe)", snaps)
	}
	e.master.Add("the process itself", processOverhead)
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
		rbms = satAdd(rbms, pipeline.Float32Bytes(s.Visible*s.Hidden+s.Visible+s.Hidden))
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
		ft.Add("fine-tuning (the network, its momentum and best epoch)", satMul(copies, net))
		widths := classes
		for _, h := range sizes[1:] {
			widths += h
		}
		// A training mini-batch (its input, with input dropout's noise,
		// activations and deltas), two evaluators' batches of activations,
		// the shuffled order.
		const evalBatch = 256
		buf := satAdd(pipeline.Float32Bytes(f.BatchSize, 2*sizes[0]+2*widths), pipeline.Float32Bytes(2*evalBatch, widths))
		ft.Add("fine-tuning's buffers", satAdd(buf, pipeline.Float32Bytes(2, nTrain)))
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
		b = satAdd(b, pipeline.Float32Bytes(sizes[i-1]*sizes[i]+sizes[i]))
	}
	top := sizes[len(sizes)-1]
	return satAdd(b, pipeline.Float32Bytes(top*classes+classes))
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
		arrays, largest = satAdd(arrays, a), max(largest, a)
	}
	if finetuned != nil {
		arrays = satAdd(arrays, *finetuned)
	}
	return satAdd(satMul(3, arrays), satMul(2, largest))
}

func satMul(a, b int64) int64 {
	if a != 0 && b > math.MaxInt64/a {
		return math.MaxInt64
	}
	return a * b
}

// check refuses the run if it needs more than lim (known: ok).
func (e runEstimate) check(cfg *config.Config, lim memoryLimit, ok bool, log hclog.Logger) error {
	stages := StageConfigs(cfg)
	who := "the master (greedy pre-training and fine-tuning in this process)"
	worker := "RBM_%d (%dx%d)"
	switch {
	case cfg.Pretrain.Mode == config.Greedy:
	case e.inProcess:
		who = fmt.Sprintf("the master and its %s in this process (cluster.transport: memory)", plural(len(stages), "slave", "slaves"))
		worker = "RBM_%d's slave (%dx%d)"
	case e.local:
		who = fmt.Sprintf("the master and its %s", plural(len(stages), "local slave process", "local slave processes"))
		worker = "RBM_%d's slave (%dx%d)"
	default:
		who = "the master"
	}
	total, largest := e.total(), e.largest()
	if !ok || total <= lim.bytes {
		// At debug level: a run refused later, for bad data, must stay one
		// line on stderr.
		log.Debug("memory estimate", "needs", bytesText(total), "who", who, "limit", bytesText(lim.bytes), "limit_from", lim.from, "master", e.master.String())
		if !e.inProcess && !e.local {
			// A slave elsewhere learns its RBM only on assignment.
			for i, s := range e.slaves {
				c := stages[i]
				log.Debug("a slave will need memory", "rbm", c.Index, "size", fmt.Sprintf("%dx%d", c.Visible, c.Hidden), "needs", bytesText(s.Total()))
			}
		}
		if ok && total > lim.bytes/2 {
			log.Warn("the run needs more than half the memory available: Go's garbage collector may let a process grow to twice what it holds; GOMEMLIMIT bounds it",
				"needs", bytesText(total), "limit", bytesText(lim.bytes), "limit_from", lim.from)
		}
		return nil
	}
	needs := fmt.Sprintf("%s needs about %s", who, bytesText(total))
	if e.rbm > 0 && (e.inProcess || e.local || cfg.Pretrain.Mode == config.Greedy) {
		c := stages[e.rbm-1]
		needs = fmt.Sprintf(worker+" needs about %s, %s about %s in all", c.Index, c.Visible, c.Hidden, bytesText(e.rbmMem), who, bytesText(total))
	}
	return fmt.Errorf("config %s: dbn.layers = %s: %s (the largest part: %s, %s); %s",
		cfg.File, layersText(cfg.DBN.Layers), needs, largest.What, bytesText(largest.Bytes), lim.text())
}

// checkMessages refuses a pipelined run that must send a message longer
// than its transport carries: over NATS a window, a checkpoint or an RBM's
// weights longer than natsMaxMessage; in memory a checkpoint or weights
// whose encoding for the store exceeds codecMaxBody.
func checkMessages(cfg *config.Config) error {
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
	for _, s := range StageConfigs(cfg) {
		size := fmt.Sprintf("RBM_%d (%dx%d)", s.Index, s.Visible, s.Hidden)
		params := pipeline.Float32Bytes(s.Visible*s.Hidden + s.Visible + s.Hidden)
		if w := satAdd(params, head); w > limit {
			return fmt.Errorf("config %s: dbn.layers = %v: the trained weights of %s make a message of %s, more than the %s one may carry %s; use narrower layers, or pretrain.mode: greedy",
				cfg.File, layersText(cfg.DBN.Layers), size, bytesText(w), bytesText(limit), over)
		}
		if c := satAdd(satMul(2, params), head); ck && c > limit {
			return fmt.Errorf("config %s: dbn.layers = %v: a checkpoint of %s (W_%d, biases and momentum) makes a message of %s, more than the %s one may carry %s; set reliability.checkpoint_every: 0 (no checkpoints, no recovery), or use narrower layers",
				cfg.File, layersText(cfg.DBN.Layers), size, s.Index, bytesText(c), bytesText(limit), over)
		}
		if cfg.Cluster.Transport == config.Memory {
			continue // windows are handed over as they are
		}
		rows := min(cfg.Pretrain.KBatches*cfg.Pretrain.BatchSize, nTrain)
		if w := satAdd(pipeline.Float32Bytes(rows*s.Visible+s.Visible), head); w > limit {
			return fmt.Errorf("config %s: pretrain.k_batches = %d: a window of %d mini-batches of %d rows of L_%d (%d values) makes a message of %s, more than the %s one may carry %s; lower pretrain.k_batches or pretrain.batch_size",
				cfg.File, cfg.Pretrain.KBatches, cfg.Pretrain.KBatches, cfg.Pretrain.BatchSize, s.Index-1, s.Visible, bytesText(w), bytesText(limit), over)
		}
	}
	return nil
}

// MemoryLimit returns what this process may use: the smaller of this
// machine's MemAvailable and its cgroup's memory limit; false when neither
// is known. CheckLimits compares its estimates with it; a command may make
// it the Go runtime's soft limit (debug.SetMemoryLimit), so that a heap the
// estimate fits does not grow to twice that before it is collected.
func MemoryLimit() (int64, bool) {
	lim, ok := readMemoryLimit(os.DirFS("/"))
	return lim.bytes, ok
}

// memoryLimit is what this process may use, and where that figure comes
// from.
type memoryLimit struct {
	bytes int64
	// from names the source: "MemAvailable" or a cgroup's limit file.
	from string
}

func (l memoryLimit) text() string {
	if l.from == memAvailable {
		return fmt.Sprintf("this machine has %s available (MemAvailable in /proc/meminfo)", bytesText(l.bytes))
	}
	return fmt.Sprintf("this process's cgroup allows %s (%s)", bytesText(l.bytes), l.from)
}

const memAvailable = "MemAvailable"

// cgroupUnlimited is where cgroup v1 reports no limit (it says
// 9223372036854771712, the largest page multiple).
const cgroupUnlimited = 1 << 62

// readMemoryLimit returns the smaller of this machine's MemAvailable and
// the memory limit of this process's cgroup (cgroup v2 memory.max, or the
// v1 memory controller's memory.limit_in_bytes, of its own cgroup or the
// nearest ancestor that sets one), read from fsys (the root file system);
// false when neither is known.
func readMemoryLimit(fsys fs.FS) (memoryLimit, bool) {
	var lim memoryLimit
	ok := false
	if b, err := meminfoAvailable(fsys); err == nil {
		lim, ok = memoryLimit{bytes: b, from: memAvailable}, true
	}
	if b, file, found := cgroupLimit(fsys); found && (!ok || b < lim.bytes) {
		lim, ok = memoryLimit{bytes: b, from: "/" + file}, true
	}
	return lim, ok
}

// meminfoAvailable reads MemAvailable from /proc/meminfo.
func meminfoAvailable(fsys fs.FS) (int64, error) {
	f, err := fsys.Open("proc/meminfo")
	if err != nil {
		return 0, err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		rest, found := strings.CutPrefix(sc.Text(), "MemAvailable:")
		if !found {
			continue
		}
		fields := strings.Fields(rest)
		if len(fields) != 2 || fields[1] != "kB" {
			return 0, fmt.Errorf("/proc/meminfo: MemAvailable:%s: want a number of kB", rest)
		}
		kb, err := strconv.ParseInt(fields[0], 10, 64)
		if err != nil || kb < 0 {
			return 0, fmt.Errorf("/proc/meminfo: MemAvailable:%s: want a number of kB", rest)
		}
		return satMul(kb, 1024), nil
	}
	if err := sc.Err(); err != nil {
		return 0, err
	}
	return 0, errors.New("/proc/meminfo: no MemAvailable")
}

// cgroupLimit returns the memory limit of this process's cgroup and the
// file that sets it (relative to the root), or false for none. It reads
// /proc/self/cgroup: "0::/path" for cgroup v2, "N:memory:/path" (among
// other controllers) for v1; a limit file is looked up in the cgroup's
// folder, then in each parent up to the hierarchy's root (inside a
// container /proc/self/cgroup may name a path its /sys/fs/cgroup does not
// show), and the smallest limit found wins.
func cgroupLimit(fsys fs.FS) (int64, string, bool) {
	b, err := fs.ReadFile(fsys, "proc/self/cgroup")
	if err != nil {
		return 0, "", false
	}
	best, file, found := int64(0), "", false
	consider := func(root, p, name string) {
		dir := path.Join(root, p)
		if dir != root && !strings.HasPrefix(dir, root+"/") {
			dir = root // a path above the hierarchy's root (outside our namespace)
		}
		for {
			if v, ok := readCgroupValue(fsys, path.Join(dir, name)); ok && (!found || v < best) {
				best, file, found = v, path.Join(dir, name), true
			}
			if dir == root {
				return
			}
			dir = path.Dir(dir)
		}
	}
	for _, line := range strings.Split(string(b), "\n") {
		parts := strings.SplitN(line, ":", 3)
		if len(parts) != 3 {
			continue
		}
		switch {
		case parts[0] == "0" && parts[1] == "":
			consider("sys/fs/cgroup", parts[2], "memory.max")
		case contains(strings.Split(parts[1], ","), "memory"):
			consider("sys/fs/cgroup/memory", parts[2], "memory.limit_in_bytes")
		}
	}
	return best, file, found
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// readCgroupValue reads a limit file: a number of bytes, or "max" (or a
// v1 number beyond cgroupUnlimited) for none.
func readCgroupValue(fsys fs.FS, name string) (int64, bool) {
	b, err := fs.ReadFile(fsys, name)
	if err != nil {
		return 0, false
	}
	s := strings.TrimSpace(string(b))
	v, err := strconv.ParseInt(s, 10, 64)
	if err != nil || v < 0 || v >= cgroupUnlimited {
		return 0, false // "max", or unreadable: no limit known
	}
	return v, true
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

// bytesText writes b in binary units, to 3 significant digits: "876 GiB",
// "1.23 TiB", "512 B".
func bytesText(b int64) string {
	const units = "KMGTPE"
	if b < 1024 {
		return fmt.Sprintf("%d B", b)
	}
	v, u := float64(b)/1024, 0
	for v >= 1024 && u < len(units)-1 {
		v, u = v/1024, u+1
	}
	prec := 2
	switch {
	case v >= 100:
		prec = 0
	case v >= 10:
		prec = 1
	}
	return fmt.Sprintf("%.*f %ciB", prec, v, units[u])
}
