package config

import (
	"fmt"
	"io"
	"reflect"
	"slices"
	"strings"

	"go.yaml.in/yaml/v3"
)

// KeyDoc is the reference entry of one config key: what `master config
// --doc` prints and docs/configuration.md holds.
type KeyDoc struct {
	// Key is the dotted key: pretrain.k_batches.
	Key string
	// Default is the default as YAML spells it: 10, [784, 500, 500, 2000];
	// in parentheses, a sentence for a default that is no fixed value.
	Default string
	// Allowed is the values the key takes: the values of an enum, or a
	// range such as [0, 1) or >= 1, maybe followed by a note.
	Allowed string
	// Env is the environment variable that overrides the key.
	Env string
	// Text says what the key does.
	Text string
}

// keyDoc is the hand-written part of a KeyDoc.
type keyDoc struct {
	// allowed starts with the interval the key's values lie in, when they
	// are numbers ([0, 1), (0, 10], >= 1: TestReferenceRanges checks it
	// against Validate), then any note; "" for an enum, whose values come
	// from enums.
	allowed string
	// text says what the key does.
	text string
	// def replaces the default shown, for a key whose default is not a
	// value, in parentheses: name's is the config file's base name.
	def string
}

// sectionDocs says what each section of keys is for, in the reference.
var sectionDocs = map[string]string{
	"":            "Top-level keys: the run's name and the root of its randomness.",
	"data":        "Where the examples come from: Fashion-MNIST, any IDX files, a synthetic set, or a data set of one's own (.npz, .npy or .csv).",
	"dbn":         "The network: its layer sizes, visible first (each adjacent pair is one RBM), and the kind of its visible units.",
	"pretrain":    "Layer-wise pre-training of the RBMs with contrastive divergence, greedy (the paper's Algorithm 1) or pipelined (Algorithm 2).",
	"cluster":     "Where the workers are: the NATS server, the slaves, the CPUs they may use and how a pipelined run's RBMs are laid out on them.",
	"finetune":    "Supervised fine-tuning of the pre-trained DBN with backprop, as a classifier with a softmax layer on top.",
	"output":      "Where a run writes result.json, weights.npz and its logs.",
	"reliability": "How a pipelined run survives the loss of a slave, a NATS restart or its own interruption.",
	"monitor":     "Where the master serves its live state while it works. It changes nothing a run computes.",
	"sweep":       "A grid of experiments, read only by `master sweep`: every combination of the listed values runs, each `repeats` times.",
}

// keyDocs documents every config key; TestReference fails for a key of
// Config without an entry here, or an entry without its text or range.
var keyDocs = map[string]keyDoc{
	"name": {allowed: "a non-empty name without `/`, `\\` or control characters", def: "(the config file's base name)",
		text: "Names the run and, by default, its output folder `runs/<name>`."},
	"seed": {allowed: ">= 0, an integer", text: "The root of all randomness: the same seed and config train the same network."},

	"data.source": {text: "Where the examples come from: `fashion-mnist` (the Fashion-MNIST IDX files in `data.dir`), " +
		"`idx` (any MNIST-style IDX training and test sets in `data.dir`), `synthetic` (a generated set of " +
		"`data.train_limit` and `data.test_limit` examples, 2000 and 500 when 0), or a data set of one's own: " +
		"`npz` (`data.path`), `npy` or `csv` (`data.train` and `data.test`)."},
	"data.dir": {allowed: "a readable folder (read with `fashion-mnist` and `idx`)",
		text: "The folder of the four IDX files (train and t10k images and labels, gzipped or not). The default is where Debian's dataset-fashion-mnist package installs them."},
	"data.train_limit": {allowed: "[0, 2147483647], at most the training examples there are",
		text: "Keeps the first N training examples; 0 keeps all (for `synthetic`, 0 makes 2000)."},
	"data.test_limit": {allowed: "[0, 2147483647], at most the test examples there are",
		text: "Keeps the first N test examples; 0 keeps all (for `synthetic`, 0 makes 500)."},
	"data.path": {allowed: "a readable .npz file (read with `npz` only)",
		text: "The .npz archive of `data.source: npz`, with the arrays `x_train` and `x_test` (features) and `y_train` and `y_test` (labels, which fine-tuning needs)."},
	"data.train": {allowed: "a readable .npy or .csv file (read with `npy` and `csv` only)",
		text: "The training features of `data.source: npy` or `csv`, one example a row."},
	"data.test": {allowed: "a readable .npy or .csv file (read with `npy` and `csv` only)",
		text: "The test features of `data.source: npy` or `csv`, one example a row."},
	"data.train_labels": {allowed: "a readable .npy file (read with `npy` only), given with `data.test_labels` or neither",
		text: "The training labels of `data.source: npy`, integers from 0; fine-tuning needs them."},
	"data.test_labels": {allowed: "a readable .npy file (read with `npy` only), given with `data.train_labels` or neither",
		text: "The test labels of `data.source: npy`, integers from 0."},
	"data.header": {allowed: "true or false (read with `csv` only)",
		text: "Says that a CSV file's first row names its columns."},
	"data.label_column": {allowed: "a column's name or its number from 0 (read with `csv` only); \"\": none",
		text: "The CSV column that holds the labels, left out of the features; fine-tuning needs it."},
	"data.scale": {text: "How features are scaled, fitted on the training set: `none` keeps them, `unit` maps each to [0, 1] " +
		"by its training range, `standardize` gives each mean 0 and standard deviation 1. A constant feature becomes 0."},

	"dbn.layers": {allowed: "at least 2 sizes, each in [1, 2147483647]; the first is the examples' width",
		text: "The unit counts of the layers, visible first; each adjacent pair is one RBM."},
	"dbn.visible": {text: "The units of RBM_1's visible layer: `bernoulli` (binary, for data in [0, 1]) or `gaussian` " +
		"(real with unit variance, for standardized data). The hidden units are Bernoulli."},

	"pretrain.mode": {text: "`greedy` trains RBM_1 to the end, then RBM_2 on its hidden activations, and so on (the paper's " +
		"Algorithm 1). `pipelined` trains all RBMs at once, RBM_i on the middle results RBM_{i-1} streams every K " +
		"mini-batches (Algorithm 2)."},
	"pretrain.epochs":     {allowed: "[1, 2147483647]", text: "The epochs each RBM trains for."},
	"pretrain.batch_size": {allowed: "[1, 2147483647]", text: "The mini-batch size of pre-training."},
	"pretrain.k_batches": {allowed: ">= 1; `k_batches` x `pretrain.batch_size`, the rows of a window, at most 2147483647",
		text: "K: a slave publishes its middle results and hidden biases every K mini-batches, a window."},
	"pretrain.cd_k": {allowed: ">= 1", text: "The Gibbs steps of contrastive divergence (CD-k)."},
	"pretrain.middle": {text: "What a slave streams to the next as its middle result: the hidden units' `probabilities` " +
		"or binary `samples` of them."},
	"pretrain.middle_precision": {text: "What a slave rounds its middle result of probabilities to before it sends it on, " +
		"and how narrow it travels: `float32` (as computed, 4 bytes a value), `float16` (IEEE half precision, 2 bytes) or " +
		"`uint8` (the nearest multiple of 1/255, 1 byte). With `pretrain.middle: samples` the states, 0 or 1, travel as " +
		"bits whatever it says. Every transport trains on the rounded values, so runs over NATS and in memory stay " +
		"identical; B_i travels as float32, and the master's data windows as narrow as their values are exact in (bytes for " +
		"pixels scaled to [0, 1], bits for binary data, float32 for other data), whatever this key says. `uint8` left every RBM's final reconstruction " +
		"error within 1% of `float32`'s on the quickstart DBN and on four 784-unit RBMs, with windows a quarter the " +
		"size (`experiments/results/wire_precision/`). Greedy pre-training ignores it."},
	"pretrain.l_copy": {text: "When RBM_i+1's L_i-copy, its visible layer, takes the hidden biases B_i that a window of " +
		"RBM_i's middle results carries: `first_window` only, after which RBM_i+1 learns its visible biases on as greedy's " +
		"does, or `every_window` (the paper's rule)."},
	"pretrain.learning_rate.initial": {allowed: "(0, 10]", text: "The learning rate of each RBM's first epoch; it goes linearly to `final` by the last (the paper's Table 1)."},
	"pretrain.learning_rate.final":   {allowed: "(0, 10]", text: "The learning rate of each RBM's last epoch."},
	"pretrain.momentum.initial":      {allowed: "[0, 1)", text: "The momentum of each RBM's first epoch; it goes linearly to `final` by the last."},
	"pretrain.momentum.final":        {allowed: "[0, 1)", text: "The momentum of each RBM's last epoch."},
	"pretrain.weight_decay":          {allowed: "[0, 1)", text: "The L2 penalty on the weights (not the biases)."},
	"pretrain.settle.fraction": {allowed: "[0, 1]; 0 turns the settle phase off (the paper's schedule)",
		text: "The length of the pipelined schedule's settle phase, as a fraction of the run's windows: at the end of the " +
			"run each RBM above the first restarts its learning rate and anneals it, ending its training on the final middle " +
			"results of the RBM below, as greedy's RBMs do. Greedy pre-training ignores it."},
	"pretrain.settle.learning_rate": {allowed: "(0, 10]",
		text: "The learning rate each RBM's settle phase restarts at, falling linearly to `pretrain.learning_rate.final` on its last settle mini-batch."},
	"pretrain.settle.schedule": {text: "Where the settle windows lie: `in_epochs`, the last windows of the epochs (no extra " +
		"time), or `after`, more windows after them (which a run too short for `in_epochs` gets anyway)."},
	"pretrain.probe.rows": {allowed: "[0, 10000]",
		text: "The probe set, the first rows of the training set, on which snapshots of the RBMs taken during pre-training " +
			"are measured at the end (result.json `rbms[].probe`); 0 takes no snapshots."},
	"pretrain.weights": {allowed: "\"\", or the path of a readable file",
		text: "The `weights.npz` of an earlier run of the same `dbn.layers`: its RBMs are taken as they are and pre-training " +
			"is skipped (result.json `pretrained_from` names the file, `pretrain_seconds` is 0), so that one pre-training serves " +
			"many fine-tunings, a sweep over `finetune.*` for one. \"\" pre-trains."},

	"cluster.nats_url": {allowed: "\"\", or URLs with scheme nats, tls, ws or wss, separated by commas",
		text: "The NATS server, or the servers of a NATS cluster; \"\" starts one embedded in the master."},
	"cluster.slaves": {allowed: ">= 0; when > 0, at least one per RBM",
		text: "How many slaves to wait for, started by hand (`slave --nats URL`); 0: the master starts its local slaves itself."},
	"cluster.join_timeout": {allowed: "a duration > 0, like 60s",
		text: "How long the master waits for its slaves, and a local slave for its master."},
	"cluster.cpus_per_worker": {allowed: "[0, 4096]; 0: no cap",
		text: "Caps every worker (the greedy trainer, each slave, and the master while it fine-tunes) at this many CPUs, " +
			"fractions allowed (0.5: half a core), with as many BLAS threads as it has CPUs, rounded up: a cluster of equal " +
			"machines, emulated on one box. Where no cgroup can be made (not root, no cpu controller) the run warns and " +
			"runs uncapped; result.json `finetune.plan.cpus` says whether fine-tuning was capped."},
	"cluster.colocate": {allowed: "true or false",
		text: "Puts all local slaves in one CPU group of `cpus_per_worker` CPUs instead of one group each: pipelined " +
			"pre-training on one machine. It only matters for local slaves with `cpus_per_worker` > 0."},
	"cluster.credits": {allowed: ">= 1",
		text: "Bounds the windows in flight on each link between stages: a producer waits while its consumer holds this many."},
	"cluster.transport": {text: "How the stages of a pipelined run talk: `nats` (slave processes and a NATS server, embedded " +
		"when `nats_url` is empty) or `memory` (every stage inside the master, for a quick run on one machine)."},
	"cluster.plan": {allowed: "`auto`, `one-per-rbm`, or stage groups covering the RBMs in order, like `1-2,3x2`",
		text: "How a pipelined run's RBMs are laid out on its local slave processes: `auto` lets the planner choose " +
			"stage groups (one process training several consecutive RBMs) and stage replicas (processes training a group " +
			"data-parallel) for the machines; `one-per-rbm` is the paper's mapping; `1-2,3x2` trains RBM_1 and RBM_2 in " +
			"one process and RBM_3 on two replicas. `master plan` prints the plan without training. Slaves started by " +
			"hand, and the memory transport, train one RBM each."},
	"cluster.local_slaves": {allowed: ">= 0; with an explicit plan or `machine_cpus`, as many as they name",
		text: "How many local slave processes (machines, with `cpus_per_worker`) the plan may use; 0 lets the plan " +
			"decide: one per explicit group and replica, one per RBM for `one-per-rbm` or with `cpus_per_worker`, " +
			"else one process with every CPU."},
	"cluster.machine_cpus": {allowed: "a list of numbers in (0, 4096], one per local slave; not with `colocate`",
		text: "Gives each local slave process (machine) its own CPUs, for unequal machines: [0.45, 0.45, 0.225] is " +
			"three processes, the last at half the others' speed, and the plan decides what each trains. Empty: every " +
			"process has `cpus_per_worker` CPUs."},
	"cluster.sync_every": {allowed: ">= 1; it must divide `reliability.checkpoint_every` where a run may have stage replicas",
		text: "How many windows each stage replica trains between two averages of its group's parameters; replicas " +
			"that train apart for longer drift apart."},
	"cluster.max_replicas": {allowed: ">= 1; 1: no stage replicas",
		text: "How many stage replicas `cluster.plan: auto` may give a stage group."},
	"cluster.replicate": {text: "Which stage groups `cluster.plan: auto` may give replicas: `any` (the fastest plans) or " +
		"`top` (the top RBM alone, in a group of its own)."},
	"cluster.replica_tolerance": {allowed: ">= 0; 0: the fastest plan",
		text: "How much slower, as a fraction of the fastest plan's predicted time per window, a plan with fewer stage " +
			"replicas may be and still be chosen by `cluster.plan: auto`."},

	"finetune.epochs":     {allowed: ">= 0; 0 skips fine-tuning", text: "The epochs of fine-tuning; result.json's `finetune` is null when 0."},
	"finetune.batch_size": {allowed: "[1, 2147483647]", text: "The mini-batch size of fine-tuning."},
	"finetune.learning_rate": {allowed: "(0, 10]",
		text: "The learning rate of fine-tuning's SGD (of its first epoch when `learning_rate_final` is set)."},
	"finetune.momentum": {allowed: "[0, 1)", text: "The momentum of fine-tuning's SGD."},
	"finetune.learning_rate_final": {allowed: "[0, 10]; 0 keeps `finetune.learning_rate`",
		text: "The learning rate of the last epoch, reached linearly from `learning_rate`."},
	"finetune.weight_decay": {allowed: "[0, 1)", text: "The L2 penalty on the weights."},
	"finetune.validation": {allowed: "[0, 1)",
		text: "The fraction of the training examples (the last ones) held out to pick the best epoch; 0 keeps the last epoch."},
	"finetune.patience": {allowed: ">= 0; 0 never stops early",
		text: "Stops after this many epochs without a better validation accuracy."},
	"finetune.init": {allowed: "`pretrained` or `random`",
		text: "Starts from the DBN's weights (`pretrained`), or from random weights (`random`): the same network without pre-training, the baseline."},
	"finetune.dropout": {allowed: "[0, 1); 0 turns dropout off",
		text: "The probability of dropping a hidden unit from a training mini-batch."},
	"finetune.input_dropout": {allowed: "[0, 1); 0 turns it off",
		text: "The probability of dropping an input value of a training example from its mini-batch, drawn afresh for every mini-batch: a regulariser, not extra examples."},
	"finetune.average_last": {allowed: "[0, `finetune.epochs`]; 0 when `finetune.patience` is set",
		text: "Averages the weights and biases at the end of the last N epochs (Polyak averaging) and evaluates and saves " +
			"that mean network instead of the best epoch; 0 turns it off."},
	"finetune.max_norm": {allowed: ">= 0; 0 turns it off",
		text: "Bounds the L2 norm of every unit's incoming weights: after each update a longer weight vector is scaled back onto the bound (max-norm, used with dropout)."},
	"finetune.label_smoothing": {allowed: "[0, 1)",
		text: "Trains against a softened target: the label gets 1 - `label_smoothing`, and every class `label_smoothing` / classes more; 0 trains against the one-hot label."},
	"finetune.workers": {allowed: ">= 1; more than 1 needs `cluster.transport: nats`, `finetune.patience: 0` and `finetune.average_last: 0`",
		text: "W: 1 fine-tunes in the master; more fine-tune data-parallel on W workers (local slave processes, each capped like a machine with " +
			"`cluster.cpus_per_worker`; with `cluster.slaves` > 0, slaves that serve the next run), each on its own windows of `sync_every` " +
			"mini-batches, averaging their parameters through the master after every window. The network kept is the last average."},
	"finetune.sync_every": {allowed: ">= 1",
		text: "S: the mini-batches a worker trains between two averages of the workers' parameters (local SGD); 1 is synchronous SGD at " +
			"`workers` x `batch_size`. Larger S sends fewer parameters and loses more accuracy, most with many workers on a " +
			"brief run (docs/results.md, \"Fine-tuning on workers\")."},
	"finetune.lr_rule": {allowed: "`linear`, `sqrt` or `constant`",
		text: "How the learning rate scales with the workers: `linear` trains at `workers` times `learning_rate`, `sqrt` at " +
			"sqrt(`workers`) times it, each reached linearly over `warmup_epochs`; `constant` keeps it."},
	"finetune.warmup_epochs": {allowed: "[0, `finetune.epochs`]",
		text: "The linear rule's warm-up, in epochs: the rate rises from `learning_rate` to `workers` times it over them."},
	"finetune.block_momentum": {allowed: "[0, 1)",
		text: "Block momentum: every worker steps from where the last average left it toward the new one, plus `block_momentum` " +
			"times the step before (Chen and Huo's block-wise model-update filtering); 0 takes each average as it is. On long runs " +
			"averaging every 8-16 mini-batches it makes up for the steps local SGD loses to averaging; on brief runs averaging every few " +
			"mini-batches it adds to the workers' own momentum and overshoots (docs/results.md, \"Fine-tuning on workers\")."},

	"output.dir": {allowed: "a folder; \"\": `runs/<name>`",
		text: "The folder a run writes result.json, weights.npz and its logs to; `--out DIR` overrides it."},

	"reliability.checkpoint_every": {allowed: ">= 0; 0 turns checkpoints off (a lost slave then fails the run)",
		text: "C: every slave checkpoints its RBM after every C windows into a JetStream object store; the replacement " +
			"of a lost slave, or a resumed run, starts from there, redoing at most C x K mini-batches."},
	"reliability.lost_after": {allowed: "a duration > 0, like 4s",
		text: "Declares a slave lost when the master has heard nothing from it for this long (slaves report every second)."},
	"reliability.save_every": {allowed: "a duration >= 0, like 5m; 0 saves only at the end",
		text: "How often a pipelined pre-training refreshes weights.npz from the latest checkpoints."},

	"monitor.http": {allowed: "host:port (port 0: a free one; an empty host: every interface), or \"\" to serve nothing",
		text: "The address where the master serves a live status page (/), /api/status (JSON) and /metrics " +
			"(Prometheus) while it works; the URL is logged and written to the output folder. `--http ADDR` overrides it."},

	"sweep.repeats": {allowed: ">= 1", text: "How many times each combination of values runs."},
	"sweep.vary": {allowed: "a list of `{key, values}`: a config key outside `sweep`, and a non-empty list of its values",
		text: "The keys to vary and their values (a list, because map keys would be split on dots). Every combination " +
			"is one `master run`; sweep.csv, report.md and its plots sum them up."},
}

// configKeys lists the keys of Config in the order of its fields, each with
// its field's value in c.
func configKeys(c *Config) (keys []string, values []reflect.Value) {
	var walk func(prefix string, v reflect.Value)
	walk = func(prefix string, v reflect.Value) {
		t := v.Type()
		for i := range t.NumField() {
			tag := t.Field(i).Tag.Get("mapstructure")
			if tag == "" || tag == "-" {
				continue
			}
			key := prefix + tag
			if f := v.Field(i); f.Kind() == reflect.Struct && !isValue(f) {
				walk(key+".", f)
			} else {
				keys = append(keys, key)
				values = append(values, f)
			}
		}
	}
	walk("", reflect.ValueOf(c).Elem())
	return keys, values
}

// isValue reports whether v, a struct, is one value rather than a section
// of keys.
func isValue(v reflect.Value) bool {
	_, ok := v.Interface().(interface{ MarshalText() ([]byte, error) })
	return ok
}

// Reference documents every config key, in the order of the Config
// struct.
func Reference() []KeyDoc {
	def := Default()
	keys, values := configKeys(def)
	docs := make([]KeyDoc, len(keys))
	for i, k := range keys {
		d := keyDocs[k]
		kd := KeyDoc{Key: k, Default: d.def, Allowed: d.allowed, Env: EnvVar(k), Text: d.text}
		if kd.Default == "" {
			kd.Default = inlineYAML(values[i])
		}
		if j := slices.IndexFunc(enums, func(e enum) bool { return e.key == k }); j >= 0 && kd.Allowed == "" {
			names := make([]string, len(enums[j].values))
			for n, v := range enums[j].values {
				names[n] = "`" + v.String() + "`"
			}
			kd.Allowed = strings.Join(names, ", ")
		}
		docs[i] = kd
	}
	return docs
}

// inlineYAML is v as a config file spells it, on one line (lists are in
// flow style).
func inlineYAML(v reflect.Value) string {
	n, err := valueNode(v)
	if err == nil {
		var b []byte
		if b, err = yaml.Marshal(n); err == nil {
			return strings.TrimSpace(string(b))
		}
	}
	return fmt.Sprint(v.Interface())
}

// WriteReference writes the configuration reference as Markdown: every
// key with its default, the values it takes, its environment variable and
// what it does, section by section. `make docs` writes it to
// docs/configuration.md.
func WriteReference(w io.Writer) error {
	var b strings.Builder
	b.WriteString(referenceIntro)
	section := "-"
	for _, d := range Reference() {
		s := ""
		if i := strings.IndexByte(d.Key, '.'); i >= 0 {
			s = d.Key[:i]
		}
		if s != section {
			section = s
			title := "`" + s + "`"
			if s == "" {
				title = "Top level"
			}
			fmt.Fprintf(&b, "\n## %s\n\n%s\n", title, wrap(sectionDocs[s]))
		}
		fmt.Fprintf(&b, "\n### `%s`\n\n%s\n\n", d.Key, wrap(d.Text))
		def := "`" + d.Default + "`"
		if strings.HasPrefix(d.Default, "(") {
			def = strings.Trim(d.Default, "()")
		}
		fmt.Fprintf(&b, "- Default: %s\n- Allowed: %s\n- Environment: `%s`\n", def, d.Allowed, d.Env)
	}
	_, err := io.WriteString(w, b.String())
	return err
}

const referenceIntro = `# Configuration reference

<!-- Generated from config/reference.go by ` + "`make docs`" + ` (` + "`master config --doc`" + `); edit that file, not this one. -->

A run is configured by one YAML file that names only what it changes: every key below has a default.
A value comes from, in increasing order of precedence:

1. the default;
2. the config file (` + "`--config FILE`" + `);
3. the environment variable ` + "`PIPEDBN_<SECTION>_<KEY>`" + ` (` + "`PIPEDBN_CLUSTER_NATS_URL`" + ` for ` + "`cluster.nats_url`" + `);
4. ` + "`--set key=value`" + ` on the command line, the value written as in YAML (` + "`--set dbn.layers=[784,500]`" + `).

An unknown key, a value of the wrong type or out of range is an error that names the file, the key,
the value and where the value came from; every such problem is reported at once.
` + "`master config --config FILE [--set key=value]...`" + ` prints the effective config of a run, every key
at its value, as a file that ` + "`--config`" + ` reads again.

A list of maps is written as a list (` + "`sweep.vary`" + `) because map keys would be split on dots.
`

// wrap breaks s into lines of at most 100 bytes at spaces.
func wrap(s string) string {
	var b strings.Builder
	n := 0
	for i, w := range strings.Fields(s) {
		switch {
		case i == 0:
		case n+1+len(w) > 100:
			b.WriteByte('\n')
			n = 0
		default:
			b.WriteByte(' ')
			n++
		}
		b.WriteString(w)
		n += len(w)
	}
	return b.String()
}
