package config

import (
	"fmt"
	"math"
	"net"
	"os"
	"slices"
	"strconv"
	"strings"
	"unicode"

	"github.com/pipedbn/pipedbn/data"
)

// Problem is one invalid value: its key, the value found, where the value
// came from and what is wrong.
type Problem struct {
	// Key is the key at fault (dbn.layers[1] for an item of a list), or ""
	// for a problem with no key: a --set that is not key=value, or an
	// environment variable that names no key (Source names it).
	Key string
	// Value is the value found.
	Value any
	// Source is where the value came from: "" for the config file (or a
	// Config built in code), "env PIPEDBN_<KEY>", "--set <key>" or
	// "default".
	Source string
	// Reason says what is wrong, or what the value must be.
	Reason string
}

// String is one line: "key = value: reason", with " (from env
// PIPEDBN_X)", " (from --set key)" or " (default)" after the value unless it
// came from the config file.
func (p Problem) String() string {
	var s string
	switch {
	case p.Key == "" && p.Source == "":
		s = p.Reason
	case p.Key == "":
		s = p.Source + ": " + p.Reason
	default:
		s = fmt.Sprintf("%s = %v", p.Key, format(p.Value))
		switch p.Source {
		case "":
		case "default":
			s += " (default)"
		default:
			s += " (from " + p.Source + ")"
		}
		s += ": " + p.Reason
	}
	// Keys and values may hold line breaks; the report stays one line.
	return lineBreaks.Replace(s)
}

var lineBreaks = strings.NewReplacer("\n", `\n`, "\r", `\r`)

func format(v any) any {
	if s, ok := v.(string); ok {
		return fmt.Sprintf("%q", s)
	}
	return v
}

// Problems is every problem Validate found; its Error is one line.
type Problems []Problem

func (ps Problems) Error() string {
	parts := make([]string, len(ps))
	for i, p := range ps {
		parts[i] = p.String()
	}
	return strings.Join(parts, "; ")
}

// Bounds of values that would otherwise be absurd.
const (
	// MaxLearningRate bounds every learning rate: rates are in (0, 10].
	MaxLearningRate = 10
	// MaxCPUsPerWorker bounds cluster.cpus_per_worker.
	MaxCPUsPerWorker = 4096
	// MaxSize bounds every size a BLAS call takes (dbn.layers, the batch
	// sizes: OpenBLAS takes them as 32-bit ints and would wrap a larger
	// one) and the counts that multiply with them, so that no product of
	// two overflows 64 bits: pretrain.k_batches and the rows of a window
	// (pretrain.k_batches x pretrain.batch_size), pretrain.epochs, the data
	// limits (32-bit in IDX headers anyway). A product of sizes may exceed
	// it: OpenBLAS indexes a W of more than 2^31 values in 64 bits.
	MaxSize = math.MaxInt32
)

// Validate checks every value and reports all problems at once (a Problems
// error), or nil. Every float must be finite; learning rates are in
// (0, MaxLearningRate], momenta and weight decays in [0, 1). A data
// limit must not exceed the examples of the IDX files it limits (their
// headers are read).
func (c *Config) Validate() error {
	v := &validation{c: c}
	v.name()
	v.data()
	v.dbn()
	v.pretrain()
	v.cluster()
	v.reliability()
	v.finetune()
	if reason := httpAddrReason(c.Monitor.HTTP); reason != "" {
		v.bad("monitor.http", c.Monitor.HTTP, "%s", reason)
	}
	v.sweep()
	if len(v.ps) == 0 {
		return nil
	}
	return v.ps
}

// validation is one pass of Validate: the config checked and the problems
// found so far, in the order of the sections that find them. Its methods
// are the kinds of test (bad, atLeast, size, rate, ...) and one method per
// section.
type validation struct {
	c  *Config
	ps Problems
}

// bad records a problem with key = val, the reason formatted from args.
func (v *validation) bad(key string, val any, reason string, args ...any) {
	v.ps = append(v.ps, Problem{Key: key, Value: val, Reason: fmt.Sprintf(reason, args...)})
}

// oneOf records a problem unless val is one of allowed.
func (v *validation) oneOf(key, val string, allowed ...string) {
	if !slices.Contains(allowed, val) {
		v.bad(key, val, "must be one of %s", strings.Join(allowed, ", "))
	}
}

// enumOK records the problem of the enum key, if its value names none of
// its values.
func (v *validation) enumOK(key string) {
	i := slices.IndexFunc(enums, func(e enum) bool { return e.key == key })
	if p := enums[i].check(v.c); p != nil {
		v.ps = append(v.ps, *p)
	}
}

// atLeast records a problem if val < min.
func (v *validation) atLeast(key string, val, min int) {
	if val < min {
		v.bad(key, val, "must be >= %d", min)
	}
}

// size is atLeast with MaxSize above; what says why MaxSize bounds it.
func (v *validation) size(key string, val, min int, what string) {
	if val > MaxSize {
		v.bad(key, val, "must be at most %d: %s", MaxSize, what)
	} else {
		v.atLeast(key, val, min)
	}
}

const blasSize = "BLAS takes 32-bit sizes"

// rate records a problem unless val is a learning rate in (0,
// MaxLearningRate]; note follows the range in the reason. Each float test
// is written !(in range) so that NaN, for which every comparison is false,
// is refused too: every float must be finite.
func (v *validation) rate(key string, val float64, note string) {
	if !(val > 0 && val <= MaxLearningRate) {
		v.bad(key, val, "must be in (0, %g]%s", float64(MaxLearningRate), note)
	}
}

// fraction records a problem unless val is in [0, 1).
func (v *validation) fraction(key string, val float64) {
	if !(val >= 0 && val < 1) {
		v.bad(key, val, "must be in [0, 1)")
	}
}

// name checks the run's name: it names the output folder.
func (v *validation) name() {
	name := v.c.Name
	if name == "" || strings.ContainsAny(name, `/\`) || name == "." || name == ".." || strings.ContainsFunc(name, unicode.IsControl) {
		v.bad("name", name, "must be a non-empty name without path separators or control characters (it names the output folder)")
	}
}

// data checks data.*: the source, its directory or files, the scale, and
// the limits against the examples the files hold.
func (v *validation) data() {
	d := v.c.Data
	idx := d.Source == FashionMNIST || d.Source == IDX
	v.enumOK("data.source")
	if idx {
		if st, err := os.Stat(d.Dir); err != nil {
			hint := ""
			if d.Source == FashionMNIST {
				hint = " (install it with: apt-get install dataset-fashion-mnist)"
			}
			v.bad("data.dir", d.Dir, "not readable: %v%s", errText(err), hint)
		} else if !st.IsDir() {
			v.bad("data.dir", d.Dir, "is not a directory")
		}
	}
	v.userData()
	v.enumOK("data.scale")
	v.size("data.train_limit", d.TrainLimit, 0, "examples are counted in 32 bits")
	v.size("data.test_limit", d.TestLimit, 0, "examples are counted in 32 bits")
	if idx && (d.TrainLimit > 0 || d.TestLimit > 0) {
		// Only the headers are read; a bad file is reported when the data
		// is loaded.
		if train, test, err := data.IDXDirSizes(d.Dir); err == nil {
			if d.TrainLimit > train {
				v.bad("data.train_limit", d.TrainLimit, "must be at most %d, the examples of the training set in %s (0 keeps all)", train, d.Dir)
			}
			if d.TestLimit > test {
				v.bad("data.test_limit", d.TestLimit, "must be at most %d, the examples of the test set in %s (0 keeps all)", test, d.Dir)
			}
		}
	}
}

// dbn checks dbn.*: at least one RBM, each layer a BLAS size.
func (v *validation) dbn() {
	layers := v.c.DBN.Layers
	if len(layers) < 2 {
		v.bad("dbn.layers", layers, "needs at least 2 sizes (visible, then hidden): one RBM per adjacent pair")
	}
	for i, n := range layers {
		v.size(fmt.Sprintf("dbn.layers[%d]", i), n, 1, blasSize)
	}
	v.enumOK("dbn.visible")
}

// pretrain checks pretrain.*: sizes, a window's rows, rates, momenta,
// the settle phase and the probe.
func (v *validation) pretrain() {
	p := v.c.Pretrain
	v.enumOK("pretrain.mode")
	v.size("pretrain.epochs", p.Epochs, 1, "epochs x mini-batches per epoch are counted in 64 bits")
	v.size("pretrain.batch_size", p.BatchSize, 1, blasSize)
	const windowValues = "a window's values, rows x layer width, are counted in 64 bits"
	v.size("pretrain.k_batches", p.KBatches, 1, windowValues)
	if p.KBatches >= 1 && p.BatchSize >= 1 && p.KBatches <= MaxSize && p.BatchSize <= MaxSize && p.KBatches*p.BatchSize > MaxSize {
		v.bad("pretrain.k_batches", p.KBatches, "times pretrain.batch_size = %d gives %d rows per window: must be at most %d (%s)", p.BatchSize, p.KBatches*p.BatchSize, MaxSize, windowValues)
	}
	v.atLeast("pretrain.cd_k", p.CDK, 1)
	v.enumOK("pretrain.middle")
	v.enumOK("pretrain.middle_precision")
	v.enumOK("pretrain.l_copy")
	v.rate("pretrain.learning_rate.initial", p.LearningRate.Initial, "")
	v.rate("pretrain.learning_rate.final", p.LearningRate.Final, "")
	v.fraction("pretrain.momentum.initial", p.Momentum.Initial)
	v.fraction("pretrain.momentum.final", p.Momentum.Final)
	v.fraction("pretrain.weight_decay", p.WeightDecay)
	if !(p.Settle.Fraction >= 0 && p.Settle.Fraction <= 1) {
		v.bad("pretrain.settle.fraction", p.Settle.Fraction, "must be a fraction of the run's windows in [0, 1] (0: no settle phase)")
	}
	v.rate("pretrain.settle.learning_rate", p.Settle.LearningRate, "")
	if p.Probe.Rows < 0 || p.Probe.Rows > MaxProbeRows {
		v.bad("pretrain.probe.rows", p.Probe.Rows, "must be in [0, %d]: the first training examples the probe measures snapshots on (0: no probe)", MaxProbeRows)
	}
	if p.Weights != "" {
		if st, err := os.Stat(p.Weights); err != nil {
			v.bad("pretrain.weights", p.Weights, "not readable: %v (the weights.npz of an earlier run of this DBN)", errText(err))
		} else if !st.Mode().IsRegular() {
			v.bad("pretrain.weights", p.Weights, "is not a file (the weights.npz of an earlier run of this DBN)")
		}
		if v.c.Finetune.Init == "random" {
			v.bad("pretrain.weights", p.Weights, "is set, but finetune.init = random does not use pre-trained weights")
		}
	}
}

// cluster checks cluster.*: the NATS URLs, the slaves against the RBMs,
// the timeouts, and (validatePlan) the plan and the local machines.
func (v *validation) cluster() {
	cl := v.c.Cluster
	if cl.NatsURL != "" {
		if _, err := NATSURLs(cl.NatsURL); err != nil {
			v.bad("cluster.nats_url", cl.NatsURL, "%v", err)
		}
	}
	v.atLeast("cluster.slaves", cl.Slaves, 0)
	if rbms := len(v.c.DBN.Layers) - 1; cl.Slaves > 0 && cl.Slaves < rbms {
		v.bad("cluster.slaves", cl.Slaves, "the DBN of dbn.layers has %d RBMs and each needs its own slave", rbms)
	}
	if cl.JoinTimeout <= 0 {
		v.bad("cluster.join_timeout", cl.JoinTimeout, "must be a duration > 0, like 60s")
	}
	if !(cl.CPUsPerWorker >= 0 && cl.CPUsPerWorker <= MaxCPUsPerWorker) {
		v.bad("cluster.cpus_per_worker", cl.CPUsPerWorker, "must be a number of CPUs in [0, %d] (0: no cap)", MaxCPUsPerWorker)
	}
	v.atLeast("cluster.credits", cl.Credits, 1)
	v.enumOK("cluster.transport")
	v.c.validatePlan(v.bad)
}

// reliability checks reliability.*: checkpoints, loss detection, saves.
func (v *validation) reliability() {
	rl := v.c.Reliability
	v.atLeast("reliability.checkpoint_every", rl.CheckpointEvery, 0)
	if rl.LostAfter <= 0 {
		v.bad("reliability.lost_after", rl.LostAfter, "must be a duration > 0, like 4s (slaves report every second)")
	}
	if rl.SaveEvery < 0 {
		v.bad("reliability.save_every", rl.SaveEvery, "must be a duration >= 0, like 5m (0: save only at the end)")
	}
}

// finetune checks finetune.*: sizes, rates, the regularizers, and the
// averaging against early stopping.
func (v *validation) finetune() {
	f := v.c.Finetune
	v.atLeast("finetune.epochs", f.Epochs, 0)
	v.size("finetune.batch_size", f.BatchSize, 1, blasSize)
	v.rate("finetune.learning_rate", f.LearningRate, "")
	v.fraction("finetune.momentum", f.Momentum)
	if f.LearningRateFinal != 0 {
		v.rate("finetune.learning_rate_final", f.LearningRateFinal, " (0: keep finetune.learning_rate)")
	}
	v.fraction("finetune.weight_decay", f.WeightDecay)
	if !(f.Validation >= 0 && f.Validation < 1) {
		v.bad("finetune.validation", f.Validation, "must be a fraction in [0, 1)")
	}
	v.atLeast("finetune.patience", f.Patience, 0)
	v.oneOf("finetune.init", f.Init, "pretrained", "random")
	if !(f.Dropout >= 0 && f.Dropout < 1) {
		v.bad("finetune.dropout", f.Dropout, "must be a probability in [0, 1)")
	}
	if !(f.InputDropout >= 0 && f.InputDropout < 1) {
		v.bad("finetune.input_dropout", f.InputDropout, "must be a probability in [0, 1)")
	}
	if math.IsNaN(f.MaxNorm) || math.IsInf(f.MaxNorm, 0) || f.MaxNorm < 0 {
		v.bad("finetune.max_norm", f.MaxNorm, "must be a finite number >= 0 (0: no constraint)")
	}
	if !(f.LabelSmoothing >= 0 && f.LabelSmoothing < 1) {
		v.bad("finetune.label_smoothing", f.LabelSmoothing, "must be a value in [0, 1)")
	}
	if f.AverageLast < 0 || f.AverageLast > max(f.Epochs, 0) {
		v.bad("finetune.average_last", f.AverageLast, "must be a number of epochs in [0, finetune.epochs = %d] (0: no averaging)", f.Epochs)
	} else if f.AverageLast > 0 && f.Patience > 0 {
		v.bad("finetune.average_last", f.AverageLast, "must be 0 when finetune.patience is set: averaging replaces best-epoch selection and early stopping")
	}
	v.finetuneWorkers()
}

// finetuneWorkers checks the keys of data-parallel fine-tuning, and what
// it needs of the rest: workers over NATS, with local slaves or a server
// the slaves of the next run can reach, and no per-epoch selection.
func (v *validation) finetuneWorkers() {
	f := v.c.Finetune
	v.atLeast("finetune.workers", f.Workers, 1)
	v.atLeast("finetune.sync_every", f.SyncEvery, 1)
	v.oneOf("finetune.lr_rule", f.LRRule, "linear", "sqrt", "constant")
	v.atLeast("finetune.warmup_epochs", f.WarmupEpochs, 0)
	v.fraction("finetune.block_momentum", f.BlockMomentum)
	if f.Workers <= 1 {
		return
	}
	if f.Epochs > 0 && f.WarmupEpochs > f.Epochs { // no fine-tuning, no warm-up
		v.bad("finetune.warmup_epochs", f.WarmupEpochs, "must be a number of epochs in [0, finetune.epochs = %d]", f.Epochs)
	}
	const why = "must be 0 with finetune.workers = %d: the workers' network is the last average, with no per-epoch selection"
	if f.Patience > 0 {
		v.bad("finetune.patience", f.Patience, why, f.Workers)
	}
	if f.AverageLast > 0 {
		v.bad("finetune.average_last", f.AverageLast, why, f.Workers)
	}
	if c := v.c.Cluster; c.Transport != NATS {
		v.bad("cluster.transport", c.Transport, "must be nats with finetune.workers = %d: the workers are slaves", f.Workers)
	} else if c.Slaves > 0 && c.NatsURL == "" {
		v.bad("cluster.nats_url", c.NatsURL, "must name a server of your own with cluster.slaves = %d and finetune.workers = %d: the embedded server's identities change for the fine-tuning run, so slaves started by hand (slave --serve) could not join it", c.Slaves, f.Workers)
	}
}

// sweep checks sweep.*: the repeats, and that each varied key is a config
// key (not one of the sweep's own) with at least one value.
func (v *validation) sweep() {
	v.atLeast("sweep.repeats", v.c.Sweep.Repeats, 1)
	for i, a := range v.c.Sweep.Vary {
		key := fmt.Sprintf("sweep.vary[%d].key", i)
		if !knownKey(a.Key) || strings.HasPrefix(a.Key, "sweep") {
			v.bad(key, a.Key, "is not a config key")
		}
		if len(a.Values) == 0 {
			v.bad(fmt.Sprintf("sweep.vary[%d].values", i), a.Values, "must list at least one value")
		}
	}
}

// httpAddrReason says what is wrong with monitor.http = addr, or "": it
// must be "" or host:port, the port a number in [0, 65535] and the host
// empty, an IP address or a host name. Whether the port is free is
// known only when the master listens on it.
func httpAddrReason(addr string) string {
	if addr == "" {
		return ""
	}
	const want = "must be host:port (like 127.0.0.1:8080; port 0: a free one; an empty host: every interface), or \"\" to serve nothing"
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return want
	}
	if n, err := strconv.Atoi(port); err != nil || n < 0 || n > 65535 {
		return "the port must be a number in [0, 65535]: " + want
	}
	if host != "" && net.ParseIP(host) == nil && !hostName(host) {
		return "the host must be an IP address or a host name: " + want
	}
	return ""
}

// hostName reports whether s is a syntactically valid DNS host name.
func hostName(s string) bool {
	if len(s) > 253 {
		return false
	}
	for _, label := range strings.Split(strings.TrimSuffix(s, "."), ".") {
		if label == "" || len(label) > 63 || label[0] == '-' || label[len(label)-1] == '-' {
			return false
		}
		for _, r := range label {
			if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-' || r == '_') {
				return false
			}
		}
	}
	return true
}

// SetMonitorHTTP sets monitor.http to addr, the value of a command's
// --http flag, checked as Validate checks the key; its problem names the
// flag as where the value came from.
func (c *Config) SetMonitorHTTP(addr string) error {
	if reason := httpAddrReason(addr); reason != "" {
		return fmt.Errorf("config %s: %w", c.File, Problems{{Key: "monitor.http", Value: addr, Source: "--http", Reason: reason}})
	}
	c.Monitor.HTTP = addr
	return nil
}

// errText drops the path an *os.PathError repeats.
func errText(err error) string {
	if pe, ok := err.(*os.PathError); ok {
		return pe.Err.Error()
	}
	return err.Error()
}
