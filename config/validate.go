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
	var ps Problems
	bad := func(key string, val any, reason string, args ...any) {
		ps = append(ps, Problem{Key: key, Value: val, Reason: fmt.Sprintf(reason, args...)})
	}
	oneOf := func(key, val string, allowed ...string) {
		if !slices.Contains(allowed, val) {
			bad(key, val, "must be one of %s", strings.Join(allowed, ", "))
		}
	}
	enumOK := func(key string) {
		i := slices.IndexFunc(enums, func(e enum) bool { return e.key == key })
		if p := enums[i].check(c); p != nil {
			ps = append(ps, *p)
		}
	}
	atLeast := func(key string, val, min int) {
		if val < min {
			bad(key, val, "must be >= %d", min)
		}
	}
	// size is atLeast with MaxSize above.
	size := func(key string, val, min int, what string) {
		if val > MaxSize {
			bad(key, val, "must be at most %d: %s", MaxSize, what)
		} else {
			atLeast(key, val, min)
		}
	}
	const blasSize = "BLAS takes 32-bit sizes"
	// Each test is written !(in range) so that NaN, for which every
	// comparison is false, is refused too: every float must be finite.
	rate := func(key string, val float64, note string) {
		if !(val > 0 && val <= MaxLearningRate) {
			bad(key, val, "must be in (0, %g]%s", float64(MaxLearningRate), note)
		}
	}
	fraction := func(key string, val float64) {
		if !(val >= 0 && val < 1) {
			bad(key, val, "must be in [0, 1)")
		}
	}

	if c.Name == "" || strings.ContainsAny(c.Name, `/\`) || c.Name == "." || c.Name == ".." || strings.ContainsFunc(c.Name, unicode.IsControl) {
		bad("name", c.Name, "must be a non-empty name without path separators or control characters (it names the output folder)")
	}

	enumOK("data.source")
	if c.Data.Source == FashionMNIST || c.Data.Source == IDX {
		if st, err := os.Stat(c.Data.Dir); err != nil {
			hint := ""
			if c.Data.Source == FashionMNIST {
				hint = " (install it with: apt-get install dataset-fashion-mnist)"
			}
			bad("data.dir", c.Data.Dir, "not readable: %v%s", errText(err), hint)
		} else if !st.IsDir() {
			bad("data.dir", c.Data.Dir, "is not a directory")
		}
	}
	ps = append(ps, c.validateUser()...)
	enumOK("data.scale")
	size("data.train_limit", c.Data.TrainLimit, 0, "examples are counted in 32 bits")
	size("data.test_limit", c.Data.TestLimit, 0, "examples are counted in 32 bits")
	if (c.Data.Source == FashionMNIST || c.Data.Source == IDX) && (c.Data.TrainLimit > 0 || c.Data.TestLimit > 0) {
		// Only the headers are read; a bad file is reported when the data
		// is loaded.
		if train, test, err := data.IDXDirSizes(c.Data.Dir); err == nil {
			if c.Data.TrainLimit > train {
				bad("data.train_limit", c.Data.TrainLimit, "must be at most %d, the examples of the training set in %s (0 keeps all)", train, c.Data.Dir)
			}
			if c.Data.TestLimit > test {
				bad("data.test_limit", c.Data.TestLimit, "must be at most %d, the examples of the test set in %s (0 keeps all)", test, c.Data.Dir)
			}
		}
	}

	if len(c.DBN.Layers) < 2 {
		bad("dbn.layers", c.DBN.Layers, "needs at least 2 sizes (visible, then hidden): one RBM per adjacent pair")
	}
	for i, n := range c.DBN.Layers {
		size(fmt.Sprintf("dbn.layers[%d]", i), n, 1, blasSize)
	}
	enumOK("dbn.visible")

	p := c.Pretrain
	enumOK("pretrain.mode")
	size("pretrain.epochs", p.Epochs, 1, "epochs x mini-batches per epoch are counted in 64 bits")
	size("pretrain.batch_size", p.BatchSize, 1, blasSize)
	const windowValues = "a window's values, rows x layer width, are counted in 64 bits"
	size("pretrain.k_batches", p.KBatches, 1, windowValues)
	if p.KBatches >= 1 && p.BatchSize >= 1 && p.KBatches <= MaxSize && p.BatchSize <= MaxSize && p.KBatches*p.BatchSize > MaxSize {
		bad("pretrain.k_batches", p.KBatches, "times pretrain.batch_size = %d gives %d rows per window: must be at most %d (%s)", p.BatchSize, p.KBatches*p.BatchSize, MaxSize, windowValues)
	}
	atLeast("pretrain.cd_k", p.CDK, 1)
	enumOK("pretrain.middle")
	enumOK("pretrain.l_copy")
	rate("pretrain.learning_rate.initial", p.LearningRate.Initial, "")
	rate("pretrain.learning_rate.final", p.LearningRate.Final, "")
	fraction("pretrain.momentum.initial", p.Momentum.Initial)
	fraction("pretrain.momentum.final", p.Momentum.Final)
	fraction("pretrain.weight_decay", p.WeightDecay)
	if !(p.Settle.Fraction >= 0 && p.Settle.Fraction <= 1) {
		bad("pretrain.settle.fraction", p.Settle.Fraction, "must be a fraction of the run's windows in [0, 1] (0: no settle phase)")
	}
	rate("pretrain.settle.learning_rate", p.Settle.LearningRate, "")
	if p.Probe.Rows < 0 || p.Probe.Rows > MaxProbeRows {
		bad("pretrain.probe.rows", p.Probe.Rows, "must be in [0, %d]: the first training examples the probe measures snapshots on (0: no probe)", MaxProbeRows)
	}

	cl := c.Cluster
	if cl.NatsURL != "" {
		if _, err := NATSURLs(cl.NatsURL); err != nil {
			bad("cluster.nats_url", cl.NatsURL, "%v", err)
		}
	}
	atLeast("cluster.slaves", cl.Slaves, 0)
	if rbms := len(c.DBN.Layers) - 1; cl.Slaves > 0 && cl.Slaves < rbms {
		bad("cluster.slaves", cl.Slaves, "the DBN of dbn.layers has %d RBMs and each needs its own slave", rbms)
	}
	if cl.JoinTimeout <= 0 {
		bad("cluster.join_timeout", cl.JoinTimeout, "must be a duration > 0, like 60s")
	}
	if !(cl.CPUsPerWorker >= 0 && cl.CPUsPerWorker <= MaxCPUsPerWorker) {
		bad("cluster.cpus_per_worker", cl.CPUsPerWorker, "must be a number of CPUs in [0, %d] (0: no cap)", MaxCPUsPerWorker)
	}
	atLeast("cluster.credits", cl.Credits, 1)
	enumOK("cluster.transport")
	c.validatePlan(bad)

	rl := c.Reliability
	atLeast("reliability.checkpoint_every", rl.CheckpointEvery, 0)
	if rl.LostAfter <= 0 {
		bad("reliability.lost_after", rl.LostAfter, "must be a duration > 0, like 4s (slaves report every second)")
	}
	if rl.SaveEvery < 0 {
		bad("reliability.save_every", rl.SaveEvery, "must be a duration >= 0, like 5m (0: save only at the end)")
	}

	f := c.Finetune
	atLeast("finetune.epochs", f.Epochs, 0)
	size("finetune.batch_size", f.BatchSize, 1, blasSize)
	rate("finetune.learning_rate", f.LearningRate, "")
	fraction("finetune.momentum", f.Momentum)
	if f.LearningRateFinal != 0 {
		rate("finetune.learning_rate_final", f.LearningRateFinal, " (0: keep finetune.learning_rate)")
	}
	fraction("finetune.weight_decay", f.WeightDecay)
	if !(f.Validation >= 0 && f.Validation < 1) {
		bad("finetune.validation", f.Validation, "must be a fraction in [0, 1)")
	}
	atLeast("finetune.patience", f.Patience, 0)
	oneOf("finetune.init", f.Init, "pretrained", "random")
	if !(f.Dropout >= 0 && f.Dropout < 1) {
		bad("finetune.dropout", f.Dropout, "must be a probability in [0, 1)")
	}
	if !(f.InputDropout >= 0 && f.InputDropout < 1) {
		bad("finetune.input_dropout", f.InputDropout, "must be a probability in [0, 1)")
	}
	if math.IsNaN(f.MaxNorm) || math.IsInf(f.MaxNorm, 0) || f.MaxNorm < 0 {
		bad("finetune.max_norm", f.MaxNorm, "must be a finite number >= 0 (0: no constraint)")
	}
	if !(f.LabelSmoothing >= 0 && f.LabelSmoothing < 1) {
		bad("finetune.label_smoothing", f.LabelSmoothing, "must be a value in [0, 1)")
	}
	if f.AverageLast < 0 || f.AverageLast > max(f.Epochs, 0) {
		bad("finetune.average_last", f.AverageLast, "must be a number of epochs in [0, finetune.epochs = %d] (0: no averaging)", f.Epochs)
	} else if f.AverageLast > 0 && f.Patience > 0 {
		bad("finetune.average_last", f.AverageLast, "must be 0 when finetune.patience is set: averaging replaces best-epoch selection and early stopping")
	}

	if reason := httpAddrReason(c.Monitor.HTTP); reason != "" {
		bad("monitor.http", c.Monitor.HTTP, "%s", reason)
	}

	atLeast("sweep.repeats", c.Sweep.Repeats, 1)
	for i, a := range c.Sweep.Vary {
		key := fmt.Sprintf("sweep.vary[%d].key", i)
		if !knownKey(a.Key) || strings.HasPrefix(a.Key, "sweep") {
			bad(key, a.Key, "is not a config key")
		}
		if len(a.Values) == 0 {
			bad(fmt.Sprintf("sweep.vary[%d].values", i), a.Values, "must list at least one value")
		}
	}

	if len(ps) == 0 {
		return nil
	}
	return ps
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
