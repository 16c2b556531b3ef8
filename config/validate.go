package config

import (
	"fmt"
	"math"
	"net/url"
	"os"
	"slices"
	"strings"
	"unicode"
)

// Problem is one invalid value: its key, the value found and what is wrong.
type Problem struct {
	Key    string
	Value  any
	Reason string
}

func (p Problem) String() string {
	return fmt.Sprintf("%s = %v: %s", p.Key, format(p.Value), p.Reason)
}

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

// Validate checks every value and reports all problems at once (a Problems
// error), or nil.
func (c *Config) Validate() error {
	var ps Problems
	bad := func(key string, val any, reason string, args ...any) {
		ps = append(ps, Problem{key, val, fmt.Sprintf(reason, args...)})
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
	positive := func(key string, val float64) {
		if math.IsNaN(val) || math.IsInf(val, 0) || val <= 0 {
			bad(key, val, "must be a finite number > 0")
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
	atLeast("data.train_limit", c.Data.TrainLimit, 0)
	atLeast("data.test_limit", c.Data.TestLimit, 0)

	if len(c.DBN.Layers) < 2 {
		bad("dbn.layers", c.DBN.Layers, "needs at least 2 sizes (visible, then hidden): one RBM per adjacent pair")
	}
	for i, n := range c.DBN.Layers {
		if n < 1 {
			bad(fmt.Sprintf("dbn.layers[%d]", i), n, "must be >= 1")
		}
	}
	enumOK("dbn.visible")

	p := c.Pretrain
	enumOK("pretrain.mode")
	atLeast("pretrain.epochs", p.Epochs, 1)
	atLeast("pretrain.batch_size", p.BatchSize, 1)
	atLeast("pretrain.k_batches", p.KBatches, 1)
	atLeast("pretrain.cd_k", p.CDK, 1)
	enumOK("pretrain.middle")
	positive("pretrain.learning_rate.initial", p.LearningRate.Initial)
	positive("pretrain.learning_rate.final", p.LearningRate.Final)
	fraction("pretrain.momentum.initial", p.Momentum.Initial)
	fraction("pretrain.momentum.final", p.Momentum.Final)
	if math.IsNaN(p.WeightDecay) || math.IsInf(p.WeightDecay, 0) || p.WeightDecay < 0 {
		bad("pretrain.weight_decay", p.WeightDecay, "must be a finite number >= 0")
	}

	cl := c.Cluster
	if cl.NatsURL != "" {
		u, err := url.Parse(cl.NatsURL)
		if err != nil || u.Host == "" || (u.Scheme != "nats" && u.Scheme != "tls" && u.Scheme != "ws" && u.Scheme != "wss") {
			bad("cluster.nats_url", cl.NatsURL, "must be a URL like nats://host:4222")
		}
	}
	atLeast("cluster.slaves", cl.Slaves, 0)
	if rbms := len(c.DBN.Layers) - 1; cl.Slaves > 0 && cl.Slaves < rbms {
		bad("cluster.slaves", cl.Slaves, "the DBN has %d RBMs and each needs its own slave", rbms)
	}
	if cl.JoinTimeout <= 0 {
		bad("cluster.join_timeout", cl.JoinTimeout, "must be a duration > 0, like 60s")
	}
	if math.IsNaN(cl.CPUsPerWorker) || math.IsInf(cl.CPUsPerWorker, 0) || cl.CPUsPerWorker < 0 {
		bad("cluster.cpus_per_worker", cl.CPUsPerWorker, "must be a finite number >= 0 (0: no cap)")
	}
	atLeast("cluster.credits", cl.Credits, 1)
	enumOK("cluster.transport")

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
	atLeast("finetune.batch_size", f.BatchSize, 1)
	positive("finetune.learning_rate", f.LearningRate)
	fraction("finetune.momentum", f.Momentum)
	if f.LearningRateFinal != 0 {
		positive("finetune.learning_rate_final", f.LearningRateFinal)
	}
	if math.IsNaN(f.WeightDecay) || math.IsInf(f.WeightDecay, 0) || f.WeightDecay < 0 {
		bad("finetune.weight_decay", f.WeightDecay, "must be a finite number >= 0")
	}
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

// errText drops the path an *os.PathError repeats.
func errText(err error) string {
	if pe, ok := err.(*os.PathError); ok {
		return pe.Err.Error()
	}
	return err.Error()
}
