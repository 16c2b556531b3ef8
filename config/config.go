// Package config is pipedbn's one typed, validated configuration: defaults in
// one place, then the YAML file, then PIPEDBN_* environment variables, then
// --set overrides, then one Validate pass that reports every problem at once
// with its key, its value and, unless the file set it, where the value came
// from. It is the only package that imports viper.
package config

import (
	"path/filepath"
	"time"

	"github.com/pipedbn/pipedbn/data"
	"github.com/pipedbn/pipedbn/finetune"
	"github.com/pipedbn/pipedbn/pipeline"
	"github.com/pipedbn/pipedbn/pipeline/protocol"
	"github.com/pipedbn/pipedbn/rbm"
)

// Config is one experiment: data, network, pre-training, cluster,
// fine-tuning and output. The zero values of fields are never used directly:
// Defaults holds the values a config that does not name a key gets. A
// field's read tag says which runs read its key, or section (readWhen);
// one without it, every run.
type Config struct {
	// Name names the run and, by default, its output folder runs/<name>.
	// Default: the config file's base name without extension.
	Name string `mapstructure:"name"`
	// Seed is the root of all randomness. Default 1.
	Seed     uint64   `mapstructure:"seed"`
	Data     Data     `mapstructure:"data"`
	DBN      DBN      `mapstructure:"dbn"`
	Pretrain Pretrain `mapstructure:"pretrain"`
	Cluster  Cluster  `mapstructure:"cluster"`
	Finetune Finetune `mapstructure:"finetune"`
	Output   Output   `mapstructure:"output"`
	// Reliability configures checkpoints, failure detection and saving.
	Reliability Reliability `mapstructure:"reliability" read:"pipelined"`
	// Sweep is only read by `master sweep`; `master run` ignores it.
	Sweep Sweep `mapstructure:"sweep"`
	// Monitor says where the master serves its live state. It changes
	// nothing the run computes, so it is kept out of the config's JSON:
	// the resume hash (run-state.json) and the sweep stamps ignore it.
	Monitor Monitor `mapstructure:"monitor" json:"-"`

	// File is the path the config was read from ("" when built in code).
	File string `mapstructure:"-"`
}

// Data says where the examples come from.
type Data struct {
	// Source is fashion-mnist, idx or synthetic. Default fashion-mnist.
	Source Source `mapstructure:"source"`
	// Dir holds the four IDX files for fashion-mnist and idx.
	// Default data.FashionMNISTDir, /usr/share/datasets/fashion-mnist
	// (Debian's dataset-fashion-mnist).
	Dir string `mapstructure:"dir"`
	// TrainLimit keeps the first N training examples; 0 keeps all (for
	// synthetic data, 0 means SyntheticTrain). It may not exceed the
	// examples of an IDX training set.
	TrainLimit int `mapstructure:"train_limit"`
	// TestLimit keeps the first N test examples; 0 keeps all (synthetic:
	// SyntheticTest). It may not exceed the examples of an IDX test set.
	TestLimit int `mapstructure:"test_limit"`

	// A data set of one's own (see userdata.go): Path is the .npz archive
	// of source npz (arrays x_train, y_train, x_test, y_test); Train and
	// Test the features of source npy or csv, TrainLabels and TestLabels
	// the labels of npy (optional, both or neither).
	Path        string `mapstructure:"path"`
	Train       string `mapstructure:"train"`
	Test        string `mapstructure:"test"`
	TrainLabels string `mapstructure:"train_labels"`
	TestLabels  string `mapstructure:"test_labels"`
	// Header says a csv file's first row names its columns; LabelColumn
	// is the column of the labels (a name, or a column index from 0), ""
	// none.
	Header      bool   `mapstructure:"header"`
	LabelColumn string `mapstructure:"label_column"`
	// Scale is how features are scaled, fitted on the training set:
	// none (default), unit or standardize.
	Scale data.Scale `mapstructure:"scale"`
}

// The sizes of a synthetic data set whose limits are 0.
const (
	SyntheticTrain = 2000
	SyntheticTest  = 500
)

// SyntheticSizes returns how many training and test examples a synthetic
// source makes: the limits, or SyntheticTrain and SyntheticTest for those
// that are 0.
func (d Data) SyntheticSizes() (train, test int) {
	train, test = d.TrainLimit, d.TestLimit
	if train == 0 {
		train = SyntheticTrain
	}
	if test == 0 {
		test = SyntheticTest
	}
	return train, test
}

// DBN is the network: its layer sizes and the kind of its visible units.
type DBN struct {
	// Layers lists unit counts, visible first; each adjacent pair is one RBM.
	// Default [784, 500, 500, 2000].
	Layers []int `mapstructure:"layers"`
	// Visible is bernoulli or gaussian: the units of RBM_1's visible layer.
	// Default bernoulli.
	Visible rbm.Units `mapstructure:"visible"`
}

// Schedule is a per-epoch value going from Initial (first epoch) to Final
// (last epoch).
type Schedule struct {
	Initial float64 `mapstructure:"initial"`
	Final   float64 `mapstructure:"final"`
}

// Pretrain configures the layer-wise pre-training of the RBMs.
type Pretrain struct {
	// Mode is greedy (Algorithm 1) or pipelined (Algorithm 2). Default pipelined.
	Mode Mode `mapstructure:"mode"`
	// Epochs each RBM trains for. Default 20.
	Epochs int `mapstructure:"epochs"`
	// BatchSize is the mini-batch size. Default 256.
	BatchSize int `mapstructure:"batch_size"`
	// KBatches is K: a slave publishes middle results and its hidden biases
	// every K mini-batches. Default 10.
	KBatches int `mapstructure:"k_batches" read:"pipelined"`
	// CDK is the number of Gibbs steps of contrastive divergence. Default 1.
	CDK int `mapstructure:"cd_k"`
	// Middle is what a slave streams as its middle result: probabilities or
	// samples. Default probabilities.
	Middle rbm.Middle `mapstructure:"middle"`
	// MiddlePrecision is what a slave rounds its middle result of
	// probabilities to, and sends it as: float32 (as computed), float16
	// or uint8; samples travel as bits whatever it says. Default uint8,
	// the narrowest that left every RBM's error within 1% of float32's
	// (experiments/results/wire_precision/).
	MiddlePrecision pipeline.Precision `mapstructure:"middle_precision" read:"pipelined"`
	// LCopy is when RBM_i+1's visible biases take the B_i of a window:
	// first_window (the default) or every_window (the paper's rule).
	LCopy LCopy `mapstructure:"l_copy" read:"pipelined"`
	// LearningRate goes from 0.015 to 0.002 by default (the paper's Table
	// 1); both in (0, MaxLearningRate].
	LearningRate Schedule `mapstructure:"learning_rate"`
	// Momentum goes from 0.5 to 0.9 by default; both in [0, 1).
	Momentum Schedule `mapstructure:"momentum"`
	// WeightDecay is the L2 penalty on weights (not biases), in [0, 1).
	// Default 0.0002.
	WeightDecay float64 `mapstructure:"weight_decay"`
	// Settle is the pipelined schedule's settle phase (greedy ignores it).
	Settle Settle `mapstructure:"settle" read:"pipelined"`
	// Probe diagnoses the schedule: snapshots of the RBMs over time,
	// measured on a probe set at the end (result.json rbms[].probe).
	Probe Probe `mapstructure:"probe"`
	// Weights, when set, is the weights.npz of an earlier run of the same
	// DBN: its RBMs are taken as they are and pre-training is skipped, so
	// that one pre-training serves many fine-tunings. Default "" (train).
	Weights string `mapstructure:"weights"`
}

// Probe configures the probe of pre-training over wall time.
type Probe struct {
	// Rows is the probe set, the first rows of the training set, at most
	// MaxProbeRows; 0 (the default) takes no snapshots.
	Rows int `mapstructure:"rows"`
}

// MaxProbeRows bounds pretrain.probe.rows.
const MaxProbeRows = 10000

// Settle configures the settle phase of pipelined pre-training: at the end
// of the run each RBM above the first restarts its learning rate and
// anneals to the final one, ending its training on the final (or, in the
// epochs, all but final) middle results of the RBM below it, as greedy's
// do (pipeline.Settle).
type Settle struct {
	// Fraction is the settle phase's length, as a fraction of the run's
	// windows: F = Fraction x windows / (L-1) a stage, at least the
	// windows that hold pipeline.MinSettleBatches mini-batches, the top RBM
	// annealing over (L-1)·F; in [0, 1]; 0 turns it off (the paper's
	// schedule). Default 0.2.
	Fraction float64 `mapstructure:"fraction"`
	// LearningRate is the rate each RBM's settle phase restarts at, falling
	// linearly to pretrain.learning_rate.final on its last settle
	// mini-batch; in (0, MaxLearningRate]. Default 0.09.
	LearningRate float64 `mapstructure:"learning_rate"`
	// Schedule is where the settle windows lie: the last of the epochs
	// (in_epochs), which costs no time, or more windows after them (after),
	// which a run too brief for in_epochs gets anyway. Default in_epochs.
	Schedule pipeline.SettleSchedule `mapstructure:"schedule"`
}

// Cluster says where the workers are.
type Cluster struct {
	// NatsURL is the NATS server; "" starts an embedded one. Default "".
	NatsURL string `mapstructure:"nats_url" read:"nats"`
	// Slaves is how many slaves to wait for; 0 runs one local slave per RBM.
	Slaves int `mapstructure:"slaves" read:"nats"`
	// JoinTimeout bounds the wait for slaves, and a local slave's wait for
	// its master. Default protocol.DefaultJoinTimeout, 60s.
	JoinTimeout time.Duration `mapstructure:"join_timeout" read:"nats"`
	// CPUsPerWorker caps every worker (the greedy trainer, each slave, and
	// the master while it fine-tunes) at this many CPUs, fractions allowed
	// (0.5: half a core), emulating a cluster of equal machines on one box;
	// 0 means no cap. At most MaxCPUsPerWorker.
	CPUsPerWorker float64 `mapstructure:"cpus_per_worker"`
	// Colocate puts all local slaves in one CPU group of CPUsPerWorker CPUs
	// instead of one group each: pipelined pre-training on one machine (the
	// middle row of the paper's Table 3), against which the greedy trainer
	// on the same CPUs is compared. It only matters for local slaves
	// (Slaves 0, transport nats) with CPUsPerWorker > 0. Default false.
	Colocate bool `mapstructure:"colocate" read:"colocate"`
	// Credits bounds the windows in flight on each link between stages: a
	// producer waits while its consumer holds this many. Default 4.
	Credits int `mapstructure:"credits" read:"pipelined"`
	// Transport of pipelined runs: nats (default; embedded server when
	// NatsURL is empty) or memory (all stages in the master process, for a
	// quick single-machine run).
	Transport Transport `mapstructure:"transport" read:"pipelined"`
	// Plan lays a pipelined run's RBMs out on its local slave processes:
	// auto (default: the planner of pipeline/plan picks stage groups, one
	// process training several consecutive RBMs, and their stage replicas,
	// processes that train a group data-parallel, for the local slaves'
	// machines), one-per-rbm (the paper's mapping), or explicit stage
	// groups like "1-2,3x2" (see StageGroups). Slaves started by hand, and
	// the memory transport, train one RBM each.
	Plan string `mapstructure:"plan" read:"pipelined"`
	// LocalSlaves is how many local slave processes (machines, with
	// CPUsPerWorker) the plan may use; 0 decides by the plan: one per
	// explicit group and replica, one per RBM for one-per-rbm or with
	// CPUsPerWorker (one emulated machine each), and for auto on an
	// uncapped box (or colocated slaves) one process with every CPU.
	LocalSlaves int `mapstructure:"local_slaves" read:"pipelined"`
	// MachineCPUs gives each local slave process (machine) its own CPUs,
	// for unequal machines: [0.45, 0.45, 0.45, 0.225] is four processes,
	// the last at half the others' speed, and the plan decides what each
	// trains. Empty (the default): every process has CPUsPerWorker CPUs.
	// It needs the local slaves (Slaves 0, transport nats) and no
	// Colocate; greedy pre-training stays on CPUsPerWorker CPUs.
	MachineCPUs []float64 `mapstructure:"machine_cpus" read:"pipelined"`
	// SyncEvery is how many windows each stage replica trains between two
	// averages of its group's parameters. It must divide
	// reliability.checkpoint_every. Default 1: replicas that train apart
	// for longer drift apart, and averaging every window costs little time
	// (docs/results.md, "Stage replicas").
	SyncEvery int `mapstructure:"sync_every" read:"pipelined"`
	// MaxReplicas is how many stage replicas cluster.plan = auto may give
	// a stage group. Default 8: since replicas take a step per sub-batch,
	// a replicated RBM ends where one slave's does, and a machine more than
	// the RBMs trains a replica rather than idling; with a cap of 4, plans
	// for 8 machines ran about 10% slower (measured in
	// experiments/results/README.md, "Up to 8 replicas by default").
	MaxReplicas int `mapstructure:"max_replicas" read:"pipelined"`
	// Replicate is which groups those replicas may go to: any (default:
	// the fastest plans, which may replicate the RBMs below the top too) or
	// top (the top RBM alone, in a group of its own). Since replicas take a
	// step per sub-batch neither costs quality where measured, and any is
	// the faster (experiments/results/replicas_any4/).
	Replicate Replicate `mapstructure:"replicate" read:"pipelined"`
	// ReplicaTolerance is how much slower, as a fraction of the fastest
	// plan's predicted time per window, a plan with fewer stage replicas
	// may be and still be chosen by cluster.plan = auto: replicas change
	// what an RBM trains on, which the planner's time model does not see.
	// 0 (the default) takes the fastest plan: since replicas take a step
	// per sub-batch they cost no quality where measured, and a tolerance
	// lets the calibration's noise pick a slower plan with fewer copies
	// (measured in experiments/results/machines8/).
	ReplicaTolerance float64 `mapstructure:"replica_tolerance" read:"pipelined"`
}

// Reliability configures how a pipelined run survives the loss of a
// slave, a NATS restart or its own interruption.
type Reliability struct {
	// CheckpointEvery is C: every slave checkpoints its RBM (weights,
	// momentum, generator, stream position) after every C windows of K
	// mini-batches, into a JetStream object store; a replacement of a lost
	// slave resumes there, redoing at most C x K mini-batches. 0 turns
	// checkpoints off: a lost slave then fails the run. Default 5.
	CheckpointEvery int `mapstructure:"checkpoint_every"`
	// LostAfter declares a slave lost when the master heard nothing from
	// it for this long (slaves report every second). Default
	// protocol.DefaultLostAfter, 4s.
	LostAfter time.Duration `mapstructure:"lost_after"`
	// SaveEvery refreshes weights.npz from the latest checkpoints this
	// often during a pipelined pre-training; 0 only saves at the end.
	// Default 5m.
	SaveEvery time.Duration `mapstructure:"save_every"`
}

// Finetune configures supervised fine-tuning with backprop.
type Finetune struct {
	// Epochs of fine-tuning; 0 skips it. Default 10.
	Epochs int `mapstructure:"epochs"`
	// BatchSize is the mini-batch size. Default 128.
	BatchSize int `mapstructure:"batch_size" read:"finetune"`
	// LearningRate of SGD, in (0, MaxLearningRate]. Default 0.1.
	LearningRate float64 `mapstructure:"learning_rate" read:"finetune"`
	// Momentum of SGD, in [0, 1). Default 0.9.
	Momentum float64 `mapstructure:"momentum" read:"finetune"`
	// LearningRateFinal, when > 0, is the learning rate of the last epoch,
	// reached linearly, in (0, MaxLearningRate]; 0 keeps LearningRate.
	// Default 0.
	LearningRateFinal float64 `mapstructure:"learning_rate_final" read:"finetune"`
	// WeightDecay is the L2 penalty on weights, in [0, 1). Default 0.
	WeightDecay float64 `mapstructure:"weight_decay" read:"finetune"`
	// Validation is the fraction of the training examples (the last ones)
	// held out to pick the best epoch; 0 keeps the last epoch. Default 0.1.
	Validation float64 `mapstructure:"validation" read:"finetune"`
	// Patience stops after this many epochs without a better validation
	// accuracy; 0 never stops early. Default 0.
	Patience int `mapstructure:"patience" read:"finetune"`
	// Init is pretrained (the DBN's weights) or random (the same network
	// from random weights: the no-pre-training baseline). Default pretrained.
	Init string `mapstructure:"init" read:"finetune"`
	// Dropout is the probability of dropping a hidden unit from a training
	// mini-batch; 0 (the default) turns dropout off.
	Dropout float64 `mapstructure:"dropout" read:"finetune"`
	// InputDropout is the probability of dropping an input value (a pixel)
	// of a training example from its mini-batch, drawn afresh for every
	// mini-batch (Hinton et al. 2012's input dropout: a regulariser, not
	// extra examples); 0 (the default) turns it off.
	InputDropout float64 `mapstructure:"input_dropout" read:"finetune"`
	// AverageLast, in [0, Epochs], averages the weights and biases at the
	// end of the last AverageLast epochs (Polyak averaging / stochastic
	// weight averaging) and evaluates and saves that mean network. It
	// replaces best-epoch selection (the validation set is still measured
	// every epoch but chooses nothing) and cannot be combined with
	// patience. 0 (the default) turns it off.
	AverageLast int `mapstructure:"average_last" read:"finetune"`
	// MaxNorm bounds the L2 norm of every unit's incoming weights: after
	// each update a longer weight vector is scaled back onto the bound
	// (Srivastava et al. 2014's max-norm, used with dropout). 0 (the
	// default) turns it off.
	MaxNorm float64 `mapstructure:"max_norm" read:"finetune"`
	// LabelSmoothing, in [0, 1), trains against a softened target: the
	// label gets 1-label_smoothing, every class label_smoothing/classes
	// more. 0 (the default) trains against the one-hot label.
	LabelSmoothing float64 `mapstructure:"label_smoothing" read:"finetune"`
	// Workers is W: 1 fine-tunes in the master; more fine-tune data-parallel
	// on W workers (local slave processes, or slaves that serve the next
	// run), each on its own windows of SyncEvery mini-batches, averaging
	// their parameters through the master after every window. Default 1.
	Workers int `mapstructure:"workers" read:"finetune"`
	// SyncEvery is S, the mini-batches a worker trains between two
	// averages. Default 16, the fastest of 8, 16 and 32 on 4 emulated
	// machines at no loss of accuracy (experiments/results/finetune_workers).
	SyncEvery int `mapstructure:"sync_every" read:"workers"`
	// LRRule scales the learning rate with the workers: linear (W times
	// it, reached over the first WarmupEpochs epochs), sqrt (sqrt(W) times
	// it, likewise) or constant. Default linear.
	LRRule string `mapstructure:"lr_rule" read:"workers"`
	// WarmupEpochs is the linear rule's warm-up. Default 1.
	WarmupEpochs int `mapstructure:"warmup_epochs" read:"workers"`
	// BlockMomentum, in [0, 1), is the momentum of the workers' steps from
	// one average to the next (block momentum): each worker goes from
	// where the last average left it toward the new one, plus
	// BlockMomentum times the step before. 0 takes each average as it is.
	BlockMomentum float64 `mapstructure:"block_momentum" read:"workers"`
}

// Output says where results go.
type Output struct {
	// Dir is the output folder; "" means runs/<name> (see OutDir).
	Dir string `mapstructure:"dir"`
}

// Monitor configures the HTTP server through which the master shows a run
// while it goes: /api/status (JSON) and /metrics (Prometheus).
type Monitor struct {
	// HTTP is the address the master serves on, host:port: a port of 0
	// picks a free one, an empty host listens on every interface. ""
	// serves nothing. Default DefaultMonitorHTTP, 127.0.0.1:0 (a free
	// loopback port; the URL is logged and written to the output folder).
	HTTP string `mapstructure:"http"`
}

// DefaultMonitorHTTP is monitor.http's default: a free port on loopback.
const DefaultMonitorHTTP = "127.0.0.1:0"

// OutDir returns the folder a run of c writes to: output.dir, or
// runs/<name> when that is empty.
func (c *Config) OutDir() string {
	if c.Output.Dir != "" {
		return c.Output.Dir
	}
	return filepath.Join("runs", c.Name)
}

// Sweep is a grid of experiments: every combination of Vary's values runs
// Repeats times.
type Sweep struct {
	// Repeats of each combination. Default 1.
	Repeats int `mapstructure:"repeats"`
	// Vary lists the keys to vary and their values.
	Vary []Axis `mapstructure:"vary"`
}

// Axis is one swept key with the values it takes.
type Axis struct {
	Key    string `mapstructure:"key"`
	Values []any  `mapstructure:"values"`
}

// Defaults returns the configuration a file that names nothing gets.
func Defaults() map[string]any {
	ft := finetune.DefaultConfig()
	return map[string]any{
		"name":                           "",
		"seed":                           1,
		"data.source":                    FashionMNIST,
		"data.dir":                       data.FashionMNISTDir,
		"data.train_limit":               0,
		"data.test_limit":                0,
		"data.path":                      "",
		"data.train":                     "",
		"data.test":                      "",
		"data.train_labels":              "",
		"data.test_labels":               "",
		"data.header":                    false,
		"data.label_column":              "",
		"data.scale":                     data.ScaleNone,
		"dbn.layers":                     []int{784, 500, 500, 2000},
		"dbn.visible":                    rbm.Bernoulli,
		"pretrain.mode":                  Pipelined,
		"pretrain.epochs":                20,
		"pretrain.batch_size":            256,
		"pretrain.k_batches":             10,
		"pretrain.cd_k":                  1,
		"pretrain.middle":                rbm.Probabilities,
		"pretrain.middle_precision":      pipeline.Uint8,
		"pretrain.l_copy":                FirstWindow,
		"pretrain.learning_rate.initial": 0.015,
		"pretrain.learning_rate.final":   0.002,
		"pretrain.momentum.initial":      0.5,
		"pretrain.momentum.final":        0.9,
		"pretrain.weight_decay":          0.0002,
		"pretrain.settle.fraction":       0.2,
		"pretrain.settle.learning_rate":  0.09,
		"pretrain.settle.schedule":       pipeline.SettleInEpochs,
		"pretrain.probe.rows":            0,
		"pretrain.weights":               "",
		"cluster.nats_url":               "",
		"cluster.slaves":                 0,
		"cluster.join_timeout":           protocol.DefaultJoinTimeout,
		"cluster.cpus_per_worker":        0,
		"cluster.colocate":               false,
		"cluster.credits":                4,
		"cluster.transport":              NATS,
		"cluster.plan":                   PlanAuto,
		"cluster.local_slaves":           0,
		"cluster.machine_cpus":           []float64{},
		"cluster.sync_every":             1,
		"cluster.max_replicas":           8,
		"cluster.replicate":              ReplicateAny,
		"cluster.replica_tolerance":      0.0,
		"finetune.epochs":                ft.Epochs,
		"finetune.batch_size":            ft.BatchSize,
		"finetune.learning_rate":         ft.LearningRate,
		"finetune.momentum":              ft.Momentum,
		"finetune.learning_rate_final":   ft.LearningRateFinal,
		"finetune.weight_decay":          ft.WeightDecay,
		"finetune.validation":            0.1,
		"finetune.patience":              ft.Patience,
		"finetune.init":                  "pretrained",
		"finetune.dropout":               ft.Dropout,
		"finetune.input_dropout":         ft.InputDropout,
		"finetune.average_last":          ft.AverageLast,
		"finetune.max_norm":              ft.MaxNorm,
		"finetune.label_smoothing":       ft.LabelSmoothing,
		"finetune.workers":               1,
		"finetune.sync_every":            16,
		"finetune.lr_rule":               "linear",
		"finetune.warmup_epochs":         1,
		"finetune.block_momentum":        0.0,
		"output.dir":                     "",
		"reliability.checkpoint_every":   5,
		"reliability.lost_after":         protocol.DefaultLostAfter,
		"reliability.save_every":         "5m",
		"monitor.http":                   DefaultMonitorHTTP,
		"sweep.repeats":                  1,
		"sweep.vary":                     []any{},
	}
}
