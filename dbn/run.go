package dbn

import (
	"context"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/pipedbn/pipedbn/blas"
	"github.com/pipedbn/pipedbn/config"
	"github.com/pipedbn/pipedbn/data"
	"github.com/pipedbn/pipedbn/internal/atomicfile"
	"github.com/pipedbn/pipedbn/monitor"
	"github.com/pipedbn/pipedbn/pipeline"
	"github.com/pipedbn/pipedbn/pipeline/protocol"
	"github.com/pipedbn/pipedbn/rbm"
)

// The files a run writes to its output folder (docs/results-schema.md).
const (
	// ResultFile is the run's result: a Result as JSON.
	ResultFile = "result.json"
	// WeightsFile is the trained network, a NumPy .npz archive.
	WeightsFile = "weights.npz"
)

// Options are the parts of a run that are not in its config.
type Options struct {
	// Logger receives the run's log lines; nil discards them.
	Logger hclog.Logger
	// Progress receives the live progress display; nil shows none.
	Progress io.Writer
	// Terminal says Progress is a terminal: the display redraws in place
	// instead of printing periodic lines.
	Terminal bool
	// OutDir overrides the config's output folder (cfg.OutDir()).
	OutDir string
	// SlaveCommand starts a local slave (its flags are appended); default:
	// this executable with the argument "slave".
	SlaveCommand []string
	// Monitor, if set, sees the run's phases, every RBM's reports and the
	// cluster's events, and Run writes its URL to the output folder
	// (monitor.URLFile). nil: nobody watches.
	Monitor *monitor.Run
}

// seedFor derives the seed of each purpose from the root seed, so that
// adding a consumer of randomness does not shift the others.
func seedFor(root uint64, purpose uint64, i int) uint64 {
	z := root ^ purpose*0x9e3779b97f4a7c15 ^ uint64(i)*0xbf58476d1ce4e5b9
	// splitmix64 finaliser
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9
	z = (z ^ (z >> 27)) * 0x94d049bb133111eb
	return z ^ (z >> 31)
}

const (
	seedRBM uint64 = iota + 1
	seedShuffle
	seedData
	seedFinetune
)

// LoadData loads the train and test sets a config names.
func LoadData(cfg *config.Config) (train, test *data.Set, err error) {
	d := cfg.Data
	switch d.Source {
	case config.FashionMNIST:
		train, test, err = data.FashionMNIST(d.Dir, d.TrainLimit, d.TestLimit)
	case config.IDX:
		train, test, err = data.LoadIDXDir(d.Dir, "idx", d.TrainLimit, d.TestLimit)
	case config.Synthetic:
		nTrain, nTest := d.SyntheticSizes()
		train, test = data.SyntheticPair(seedFor(cfg.Seed, seedData, 0), nTrain, nTest, cfg.DBN.Layers[0], 10)
	case config.NPZ, config.NPY, config.CSV:
		train, test, err = loadUserData(cfg)
	default:
		err = fmt.Errorf("config %s: data.source = %q: unknown source", cfg.File, d.Source)
	}
	if err != nil {
		return nil, nil, err
	}
	if train.Dim != cfg.DBN.Layers[0] {
		return nil, nil, fmt.Errorf("config %s: dbn.layers[0] = %d: the data (%s) has %d values per example", cfg.File, cfg.DBN.Layers[0], train.Name, train.Dim)
	}
	return train, test, nil
}

// StageConfigs cuts the DBN of cfg into one StageConfig per RBM.
func StageConfigs(cfg *config.Config) []pipeline.StageConfig {
	p := cfg.Pretrain
	var cfgs []pipeline.StageConfig
	for i := 1; i < len(cfg.DBN.Layers); i++ {
		// Only RBM_1 sees the data; the RBMs above it see probabilities.
		u := rbm.Bernoulli
		if i == 1 {
			u = cfg.DBN.Visible
		}
		cfgs = append(cfgs, pipeline.StageConfig{
			Index:           i,
			Visible:         cfg.DBN.Layers[i-1],
			Hidden:          cfg.DBN.Layers[i],
			Units:           u,
			Epochs:          p.Epochs,
			BatchSize:       p.BatchSize,
			K:               p.KBatches,
			CDK:             p.CDK,
			Middle:          p.Middle,
			MiddlePrecision: p.MiddlePrecision,
			LCopyOnce:       p.LCopy == config.FirstWindow,
			LearningRate:    [2]float64{p.LearningRate.Initial, p.LearningRate.Final},
			Momentum:        [2]float64{p.Momentum.Initial, p.Momentum.Final},
			WeightDecay:     p.WeightDecay,
			Seed:            seedFor(cfg.Seed, seedRBM, i),
		})
	}
	return cfgs
}

// Stages is StageConfigs for a run on n training examples: pipelined, with
// its settle phase planned (pretrain.settle).
func Stages(cfg *config.Config, n int) []pipeline.StageConfig {
	stages := StageConfigs(cfg)
	if cfg.Pretrain.Mode == config.Pipelined {
		PlanSettle(stages, cfg, n)
	}
	return stages
}

// PlanSettle plans the settle phase of cfg's pipelined schedule over n
// examples into stages (pretrain.settle).
func PlanSettle(stages []pipeline.StageConfig, cfg *config.Config, n int) {
	s := cfg.Pretrain.Settle
	pipeline.PlanSettle(stages, n, s.Fraction, s.LearningRate, s.Schedule)
}

// Run runs the experiment cfg describes and writes result.json and
// weights.npz to its output folder: the pre-trained network as soon as
// pre-training ends, then again with the fine-tuned one.
//
// Run uses the BLAS threads and GOMAXPROCS of the process as it finds them:
// they belong to the process, and its command sets them (WorkerThreads).
// Only while the master is itself the one worker of a phase (the greedy
// trainer, fine-tuning) with cluster.cpus_per_worker > 0 does Run set the
// BLAS threads to WorkerThreads, and put them back after it.
func Run(ctx context.Context, cfg *config.Config, opt Options) (res *Result, err error) {
	defer func() {
		if err != nil {
			opt.Monitor.Failed(err)
		} else {
			opt.Monitor.Done()
		}
	}()
	if opt.Logger == nil {
		opt.Logger = hclog.NewNullLogger()
	}
	log := opt.Logger
	out := opt.OutDir
	if out == "" {
		out = cfg.OutDir()
	}
	d, err := prepareRun(cfg, opt, out)
	if err != nil {
		return nil, err
	}
	stageCfgs := Stages(cfg, d.train.N)
	if st := stageCfgs[0].Settle; cfg.Pretrain.Settle.Schedule == pipeline.SettleInEpochs && st.Windows > 0 {
		log.Info("the settle phase's windows would take more than this brief run can spare of its epochs: they go after them, as pretrain.settle.schedule after has them",
			"windows", st.Windows, "epochs_windows", st.From, "most_in_epochs", pipeline.MaxInEpochs)
	}
	res = newResult(cfg, d)
	trained, err := pretrainOrLoad(ctx, cfg, opt, out, d.train, stageCfgs, res)
	if err != nil {
		return nil, err
	}
	var weights []array
	for i, r := range trained.rbms {
		weights = append(weights, rbmArrays(i+1, r.Visible, r.Hidden, r.W, r.A, r.B)...)
	}
	weights = append(weights, d.input...)
	log.Info("pre-training done", "seconds", res.PretrainSeconds)
	if cfg.Finetune.Epochs == 0 {
		res.endToEnd(opt.Monitor)
	}
	// Save the pre-trained network now: a failure in fine-tuning loses none
	// of it.
	if err := saveRun(out, res, weights); err != nil {
		return nil, err
	}
	if cfg.Finetune.Epochs > 0 {
		opt.Monitor.FineTuning(cfg.Finetune.Epochs)
		ft, net, err := finetuneNet(ctx, cfg, opt, out, d.train, d.test, trained.rbms)
		if err != nil {
			return nil, err
		}
		res.Finetune = ft
		res.endToEnd(opt.Monitor)
		opt.Monitor.Finetuned(monitorFinetune(ft))
		weights = append(weights, finetuneArrays(net)...)
		if err := saveRun(out, res, weights); err != nil {
			return nil, err
		}
	}
	if err := runDone(out); err != nil {
		return nil, err
	}
	log.Info("results written", "dir", out)
	return res, nil
}

// runData is a run's data, prepared: the train and test sets scaled (and
// standardised), data.scale's fit, and the standardisation's arrays for
// weights.npz (nil: none).
type runData struct {
	train, test *data.Set
	scaler      *data.Scaler
	input       []array
}

// prepareRun checks that cfg's run fits, loads and prepares its data, and
// makes the output folder out with data.scale's fit and the monitor's URL
// in it.
func prepareRun(cfg *config.Config, opt Options, out string) (*runData, error) {
	log := opt.Logger
	// Refuse what cannot fit before the data is loaded or an RBM allocated.
	if err := CheckLimits(cfg, log); err != nil {
		return nil, err
	}
	t0 := time.Now()
	train, test, err := LoadData(cfg)
	if err != nil {
		return nil, err
	}
	d := &runData{train: train, test: test}
	if d.scaler, err = scaleData(cfg, train, test); err != nil {
		return nil, err
	}
	if cfg.DBN.Visible == rbm.Gaussian {
		// NumPy needs them to feed raw pixels to the network.
		d.input = inputArrays(standardize(train, test))
	}
	if err := os.MkdirAll(out, 0o755); err != nil {
		return nil, fmt.Errorf("output.dir = %q: %w", out, err)
	}
	if err := writeScaler(out, d.scaler); err != nil {
		return nil, err
	}
	if url := opt.Monitor.URL(); url != "" {
		// Now, not at the start: bad input stays one line on stderr.
		log.Info("watch this run at "+url, "status", url+"/api/status", "metrics", url+"/metrics")
		if err := monitor.WriteURL(out, url); err != nil {
			log.Warn("cannot write the monitor's URL", "file", filepath.Join(out, monitor.URLFile), "error", err)
		}
	}
	log.Info("data loaded", "source", train.Name, "train", train.N, "test", test.N, "dim", train.Dim, "seconds", time.Since(t0).Seconds())
	return d, nil
}

// newResult is the result of cfg's run on d before it trains.
func newResult(cfg *config.Config, d *runData) *Result {
	return &Result{
		Name: cfg.Name, Mode: cfg.Pretrain.Mode, Seed: cfg.Seed, Layers: cfg.DBN.Layers,
		Weights:       WeightsFile,
		Data:          DataInfo{Source: d.train.Name, Train: d.train.N, Test: d.test.N, Dim: d.train.Dim, Scale: scaleName(d.scaler, cfg)},
		BLAS:          blas.Name(),
		BLASCore:      blas.Core(),
		CPUsPerWorker: cfg.Cluster.CPUsPerWorker,
		Colocate:      cfg.Cluster.Colocate,
		Config:        cfg.File,
	}
}

// pretrainOrLoad pre-trains the stages on train and records what it gave
// in res, or, with pretrain.weights, reads the RBMs from there.
func pretrainOrLoad(ctx context.Context, cfg *config.Config, opt Options, out string, train *data.Set, stageCfgs []pipeline.StageConfig, res *Result) (*trained, error) {
	if prev := finishedPretraining(out, cfg, opt.Logger); prev != nil {
		// The master was interrupted while it fine-tuned: keep what its
		// pre-training gave, and fine-tune its network again.
		t, err := loadPretrained(cfg, filepath.Join(out, WeightsFile), opt.Logger)
		if err != nil {
			return nil, err
		}
		*res = *prev
		res.FinetuneRestarts++
		opt.Logger.Info("this output folder holds the run's finished pre-training; fine-tuning it again", "run_state", filepath.Join(out, RunStateFile), "restarts", res.FinetuneRestarts)
		return t, nil
	}
	if cfg.Pretrain.Weights != "" {
		t, err := loadPretrained(cfg, cfg.Pretrain.Weights, opt.Logger)
		if err != nil {
			return nil, err
		}
		opt.Logger.Info("pre-trained RBMs read; pre-training skipped", "pretrain.weights", cfg.Pretrain.Weights)
		res.PretrainedFrom = cfg.Pretrain.Weights
		res.record(cfg, t, nil, train)
		return t, nil
	}
	t, probe, err := pretrainShown(ctx, cfg, opt, out, train, stageCfgs, res)
	if err != nil {
		return nil, err
	}
	res.record(cfg, t, probe, train)
	res.recordOverhead(stageCfgs[0], train.N)
	return t, nil
}

// pretrainShown pre-trains the stages on train (pretrain) with the
// progress display and the monitor following, and sets
// res.PretrainSeconds. It returns the probe, nil if pretrain.probe is off,
// to measure the trained RBMs.
func pretrainShown(ctx context.Context, cfg *config.Config, opt Options, out string, train *data.Set, stageCfgs []pipeline.StageConfig, res *Result) (*trained, *probe, error) {
	log := opt.Logger
	prog := newProgress(opt.Progress, opt.Terminal, log, stageCfgs, train.N)
	prog.mon = opt.Monitor
	prog.probe = newProbe(cfg.Pretrain.Probe.Rows, stageCfgs, train.N)
	defer prog.stop()
	opt.Monitor.Pretraining(stageCfgs, train.N)

	if note := blas.CoreNote(); note != "" {
		log.Info(note)
	}
	log.Info("pre-training", "mode", cfg.Pretrain.Mode, "layers", fmt.Sprint(cfg.DBN.Layers), "epochs", cfg.Pretrain.Epochs, "batch_size", cfg.Pretrain.BatchSize, "blas", blas.Name(), "blas_core", blas.Core(), "threads", blas.Threads())
	start := time.Now()
	if cfg.Pretrain.Mode == config.Pipelined {
		prog.phases = newPhaseClock(start, opt.Monitor)
	}
	prog.probe.started()
	t, err := pretrain(ctx, cfg, opt, out, train, stageCfgs, prog)
	prog.stop()
	if err != nil {
		return nil, nil, err
	}
	end := time.Now()
	res.PretrainSeconds = end.Sub(start).Seconds()
	res.PretrainPhases = prog.phases.phases(end)
	return t, prog.probe, nil
}

// record fills in what pre-training gave: each RBM's row (its settle
// phase's errors apart, the final reconstruction error on train, the
// probe's points), resumption and recoveries, the local slaves' plan.
func (res *Result) record(cfg *config.Config, t *trained, pr *probe, train *data.Set) {
	res.RBMs = t.results
	for i := range res.RBMs {
		if r := &res.RBMs[i]; len(r.ReconError) > cfg.Pretrain.Epochs {
			r.ReconError, r.SettleReconError = r.ReconError[:cfg.Pretrain.Epochs], r.ReconError[cfg.Pretrain.Epochs:]
		}
	}
	res.Resumed, res.Recoveries, res.MasterRejected = t.resumed, t.recoveries, t.masterRejected
	if t.layout != nil {
		res.Plan = t.layout.result(res.RBMs)
	}
	if cfg.Pretrain.Mode == config.Pipelined {
		res.CheckpointEvery = cfg.Reliability.CheckpointEvery
	}
	for i, e := range finalRecon(t.rbms, train.X, train.N) {
		res.RBMs[i].FinalReconError = e
	}
	if pr != nil {
		res.ProbeRows = pr.rows
		for i, pts := range pr.measure(t.rbms, train.X) {
			res.RBMs[i].Probe = pts
		}
	}
}

// saveRun writes weights to res.Weights and res to ResultFile in out.
func saveRun(out string, res *Result, weights []array) error {
	if err := writeWeights(filepath.Join(out, res.Weights), weights); err != nil {
		return err
	}
	return atomicfile.WriteJSON(filepath.Join(out, ResultFile), res)
}

// monitorFinetune is what the monitor shows of fine-tuning.
func monitorFinetune(ft *FinetuneResult) monitor.Finetune {
	f := monitor.Finetune{Epochs: ft.Epochs, Seconds: ft.Seconds, TrainAccuracy: ft.TrainAccuracy,
		ValidationAccuracy: ft.ValidationAccuracy, TestAccuracy: ft.TestAccuracy}
	for _, e := range ft.History {
		f.History = append(f.History, monitor.FinetuneEpoch{Epoch: e.Epoch, Loss: e.Loss,
			TrainAccuracy: e.TrainAccuracy, ValidationAccuracy: e.ValidationAccuracy, Seconds: e.Seconds})
	}
	f.Confusion, f.PerClass, f.Classes = ft.Confusion, ft.PerClass, ft.Classes
	return f
}

// WorkerThreads is the number of BLAS threads, and with
// cluster.cpus_per_worker > 0 of GOMAXPROCS, that one worker of cfg's run
// gets: the process that runs the greedy trainer, the in-memory pipeline
// or fine-tuning, or one local slave of its own. Both are the process's to
// set, so the command does it, not Run.
func WorkerThreads(cfg *config.Config) int { return workerThreads(cfg.Cluster.CPUsPerWorker) }

// workerThreads is the number of BLAS threads (and GOMAXPROCS) of a worker
// allowed cpus CPUs (0: all of this machine's).
func workerThreads(cpus float64) int {
	if cpus <= 0 {
		return runtime.NumCPU()
	}
	return max(1, int(math.Ceil(cpus)))
}

// trained is the outcome of pre-training: every RBM and its report.
type trained struct {
	rbms    []*rbm.RBM
	results []RBMResult
	// resumed, recoveries and masterRejected: see Result.
	resumed        bool
	recoveries     []protocol.Recovery
	masterRejected map[string]uint64
	// layout of the local slaves, nil if none ran.
	layout *layout
}

// add records a trained RBM and its row of result.json.
func (t *trained) add(r *rbm.RBM, row RBMResult) {
	t.rbms = append(t.rbms, r)
	t.results = append(t.results, row)
}

// addTrained records an RBM a slave trained, with what its input link
// rejected.
func (t *trained) addTrained(r protocol.Trained) {
	row := rbmResult(r.RBM, r.Stats, r.Slave, r.BytesIn, r.BytesOut)
	row.Rejected = r.Rejected.ByReason()
	t.add(r.RBM, row)
}

// pretrain runs the pre-training schedule cfg names.
func pretrain(ctx context.Context, cfg *config.Config, opt Options, out string, train *data.Set, stageCfgs []pipeline.StageConfig, prog *progress) (*trained, error) {
	hooks := prog.hooks()
	seeds := make([]uint64, len(stageCfgs))
	for i := range seeds {
		seeds[i] = seedFor(cfg.Seed, seedShuffle, i+1)
	}
	var (
		stages []*pipeline.Stage
		err    error
	)
	switch {
	case cfg.Pretrain.Mode == config.Greedy:
		// The greedy trainer is the one worker: cap this process.
		w := asWorker(cfg.Cluster.CPUsPerWorker, "greedy", "the greedy trainer", opt.Logger)
		defer w.release()
		stages, err = pipeline.Greedy(ctx, train.X, train.N, stageCfgs, seeds, hooks)
	case cfg.Cluster.Transport == config.Memory:
		return pretrainMemory(ctx, cfg, opt, out, train, stageCfgs, seeds[0], prog)
	default:
		return pretrainNATS(ctx, cfg, opt, out, train, stageCfgs, seeds[0], prog)
	}
	if err != nil {
		return nil, err
	}
	t := &trained{}
	for _, st := range stages {
		t.add(st.RBM(), rbmResult(st.RBM(), st.Stats(), "master", 0, 0))
	}
	return t, nil
}
