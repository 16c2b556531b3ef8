package finetune

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"time"

	"github.com/pipedbn/pipedbn/blas"
	"github.com/pipedbn/pipedbn/data"
)

// Config is how Train fine-tunes a network. The zero value is not valid:
// BatchSize and LearningRate must be set (DefaultConfig gives the
// defaults).
type Config struct {
	// Epochs is the number of passes over the training set; 0 trains
	// nothing. Default 10.
	Epochs int
	// BatchSize is the number of examples per mini-batch, >= 1; the last
	// mini-batch of an epoch may be short. Default 128.
	BatchSize int
	// LearningRate is the SGD step size of the first epoch, > 0. Default 0.1.
	LearningRate float64
	// LearningRateFinal, when > 0, is the step size of the last epoch: the
	// rate moves linearly from LearningRate to it, one value per epoch. 0
	// keeps LearningRate throughout (the default).
	LearningRateFinal float64
	// Momentum, in [0, 1), is the fraction of the previous update carried
	// into the next; 0 is plain SGD. Default 0.9.
	Momentum float64
	// WeightDecay, >= 0, is the L2 penalty on weights (not biases): each
	// update also subtracts LearningRate·WeightDecay·W. Default 0.
	WeightDecay float64
	// Patience, >= 0, stops training after this many epochs in a row without
	// a better validation accuracy; 0 never stops early. It needs a
	// validation set and is ignored without one.
	Patience int
	// Seed drives the per-epoch shuffling of the training set.
	Seed uint64
	// Threads, >= 0, is passed to blas.SetThreads before training (a
	// process-wide setting); 0 leaves the BLAS thread count as it is.
	Threads int
	// Dropout, in [0, 1), is the probability that a hidden unit is dropped
	// from a training mini-batch (inverted dropout: kept units are scaled
	// by 1/(1-Dropout), so evaluation uses the network as it is); 0 turns
	// it off. Default 0.
	Dropout float64
	// InputDropout, in [0, 1), is the probability that an input value of a
	// training example is dropped from its mini-batch (set to 0; the kept
	// values are scaled by 1/(1-InputDropout), so evaluation uses the
	// inputs as they are): the input-layer dropout of Hinton et al. 2012, a
	// regulariser drawn afresh for every mini-batch, not extra examples.
	// 0 turns it off. Default 0.
	InputDropout float64
	// AverageLast, in [0, Epochs], turns on weight averaging (Polyak
	// averaging over epochs, as in stochastic weight averaging): Train keeps
	// the running mean of every weight and bias at the end of each of the
	// last AverageLast epochs and, when training completes, leaves that mean
	// in the network instead of the best or last epoch's weights. It then
	// replaces best-epoch selection: a validation set is still measured
	// after every epoch (EpochStats.ValidAccuracy) but chooses nothing, and
	// it cannot be combined with Patience. 0 turns it off (the default); 1
	// keeps the last epoch's weights, even with a validation set.
	AverageLast int
	// MaxNorm, >= 0, is the max-norm constraint of Srivastava et al. 2014,
	// used with dropout: after every update, each unit's incoming weight
	// vector (a column of W, bias excluded) whose L2 norm exceeds MaxNorm is
	// scaled back onto the ball of radius MaxNorm, in every layer, the
	// output layer included. It bounds the weights however large the
	// learning rate, in place of weight decay. 0 turns it off (the default).
	MaxNorm float64
	// LabelSmoothing, in [0, 1), trains against a softened target: the
	// label gets 1-LabelSmoothing and every class LabelSmoothing/classes
	// more (Szegedy et al. 2016), which keeps the logits from growing
	// without bound on examples already classified right. The reported
	// loss is the cross-entropy against that target. 0 turns it off (the
	// default).
	LabelSmoothing float64
}

// DefaultConfig returns the fine-tuning defaults, those of the config's
// finetune keys too (config.Defaults takes them from here): 10 epochs,
// batches of 128, learning rate 0.1, momentum 0.9, no weight decay, no early
// stopping, seed 1.
func DefaultConfig() Config {
	return Config{Epochs: 10, BatchSize: 128, LearningRate: 0.1, Momentum: 0.9, Seed: 1}
}

// Validate reports every invalid field of c at once, each naming the field
// and its value.
func (c Config) Validate() error {
	var errs []error
	bad := func(field string, v any, want string) {
		errs = append(errs, fmt.Errorf("finetune: %s = %v; want %s", field, v, want))
	}
	finite := func(v float64) bool { return !math.IsNaN(v) && !math.IsInf(v, 0) }
	if c.Epochs < 0 {
		bad("Epochs", c.Epochs, ">= 0")
	}
	if c.BatchSize < 1 {
		bad("BatchSize", c.BatchSize, ">= 1")
	}
	if !(c.LearningRate > 0) || !finite(c.LearningRate) {
		bad("LearningRate", c.LearningRate, "a finite value > 0")
	}
	if !(c.LearningRateFinal >= 0) || !finite(c.LearningRateFinal) {
		bad("LearningRateFinal", c.LearningRateFinal, "a finite value >= 0 (0: constant rate)")
	}
	if !(c.Momentum >= 0 && c.Momentum < 1) {
		bad("Momentum", c.Momentum, "a value in [0, 1)")
	}
	if !(c.WeightDecay >= 0) || !finite(c.WeightDecay) {
		bad("WeightDecay", c.WeightDecay, "a finite value >= 0")
	}
	if c.Patience < 0 {
		bad("Patience", c.Patience, ">= 0 (0: never stop early)")
	}
	if c.Threads < 0 {
		bad("Threads", c.Threads, ">= 0 (0: leave as is)")
	}
	if !(c.Dropout >= 0 && c.Dropout < 1) {
		bad("Dropout", c.Dropout, "a probability in [0, 1)")
	}
	if !(c.InputDropout >= 0 && c.InputDropout < 1) {
		bad("InputDropout", c.InputDropout, "a probability in [0, 1)")
	}
	if !(c.MaxNorm >= 0) || !finite(c.MaxNorm) {
		bad("MaxNorm", c.MaxNorm, "a finite value >= 0 (0: no constraint)")
	}
	if !(c.LabelSmoothing >= 0 && c.LabelSmoothing < 1) {
		bad("LabelSmoothing", c.LabelSmoothing, "a value in [0, 1)")
	}
	if c.AverageLast < 0 || c.AverageLast > max(c.Epochs, 0) {
		bad("AverageLast", c.AverageLast, fmt.Sprintf("a number of epochs in [0, Epochs = %d] (0: no averaging)", c.Epochs))
	}
	if c.AverageLast > 0 && c.Patience > 0 {
		bad("AverageLast", c.AverageLast, fmt.Sprintf("0 when Patience (%d) is set: averaging replaces best-epoch selection and early stopping", c.Patience))
	}
	return errors.Join(errs...)
}

// Rate returns the learning rate of epoch e (from 1): LearningRate, or with
// LearningRateFinal set, the linear schedule from it to LearningRateFinal.
func (c Config) Rate(e int) float64 {
	if c.LearningRateFinal == 0 || c.Epochs <= 1 {
		return c.LearningRate
	}
	return c.LearningRate + (c.LearningRateFinal-c.LearningRate)*float64(e-1)/float64(c.Epochs-1)
}

// EpochStats describes one epoch of Train.
type EpochStats struct {
	// Epoch is the epoch's number, from 1.
	Epoch int
	// LearningRate is the step size used in this epoch.
	LearningRate float64
	// Loss is the mean cross-entropy (nats) over the epoch's training
	// examples, each measured just before its mini-batch's update.
	Loss float64
	// TrainAccuracy is the fraction of the epoch's training examples
	// classified correctly, measured like Loss: a cheap running figure, not
	// a separate pass with the epoch's final weights.
	TrainAccuracy float64
	// ValidAccuracy is the validation accuracy with the weights at the end
	// of the epoch; 0 without a validation set.
	ValidAccuracy float64
	// Improved reports that Train kept this epoch's weights as the best so
	// far: its validation accuracy beat every earlier epoch's, or there is
	// no validation set (then every epoch is kept).
	Improved bool
	// Seconds is the epoch's wall-clock time, validation included.
	Seconds float64
}

// Hooks are optional callbacks of Train; nil fields are skipped.
type Hooks struct {
	// Epoch is called after each epoch, while the network holds that
	// epoch's weights (it may read them, e.g. Clone the network, but must
	// not change them).
	Epoch func(EpochStats)
}

// maxLoss is the mean cross-entropy (nats per example) of a mini-batch above
// which Train declares divergence. A network at chance scores ln(classes),
// at most ln 256 ≈ 5.5; a mean of 1000 means the true class gets e^-1000 on
// average, which happens only when the weights have blown up. Without this
// bound a diverging sigmoid network often never reaches Inf: its units
// saturate, their gradients vanish, and the loss stays huge but finite.
const maxLoss = 1000

// ErrDiverged is what a *DivergenceError matches with errors.Is.
var ErrDiverged = errors.New("finetune: training diverged")

// DivergenceError reports that Train stopped because the loss or the
// weights stopped being usable: a mini-batch's loss was NaN, infinite or
// above 1000 nats per example, or an update made a weight non-finite.
type DivergenceError struct {
	// Epoch (from 1) and Batch (from 1, within the epoch) say where.
	Epoch, Batch int
	// Loss is the mini-batch's mean loss (finite when the weights were the
	// trouble).
	Loss float64
	// KeptEpoch is the epoch whose weights the network holds now: the best
	// before the divergence, 0 for the initial weights.
	KeptEpoch int
}

// Error implements error.
func (e *DivergenceError) Error() string {
	what := fmt.Sprintf("mean loss %.4g", e.Loss)
	if !math.IsNaN(e.Loss) && !math.IsInf(e.Loss, 0) && e.Loss <= maxLoss {
		what = "non-finite weights"
	}
	return fmt.Sprintf("finetune: training diverged at epoch %d, batch %d (%s); kept the weights of epoch %d; try a lower learning rate", e.Epoch, e.Batch, what, e.KeptEpoch)
}

// Is makes errors.Is(err, ErrDiverged) true.
func (e *DivergenceError) Is(target error) bool { return target == ErrDiverged }

// checkSet returns an error unless s is a well-formed set of n's input width
// whose labels are all below n's classes.
func checkSet(what string, s *data.Set, n *Network) error {
	if s.Dim != n.Inputs() {
		return fmt.Errorf("finetune: %s %q has %d features per example; the network takes %d", what, s.Name, s.Dim, n.Inputs())
	}
	if s.N < 0 || len(s.X) < s.N*s.Dim || len(s.Labels) < s.N {
		return fmt.Errorf("finetune: %s %q: %d examples of %d features but len(X) = %d, len(Labels) = %d", what, s.Name, s.N, s.Dim, len(s.X), len(s.Labels))
	}
	c := n.Classes()
	for i, l := range s.Labels[:s.N] {
		if int(l) >= c {
			return fmt.Errorf("finetune: %s %q: example %d has label %d; the network has %d classes", what, s.Name, i, l, c)
		}
	}
	return nil
}

// Train fine-tunes net in place on train with mini-batch SGD: momentum,
// weight decay on the weights, and the cross-entropy loss of the softmax
// output, back-propagated through every sigmoid layer. Each epoch visits the
// training set in a new order drawn from cfg.Seed.
//
// After each epoch it measures the accuracy on valid and keeps a copy of the
// best epoch's weights (the first of equals); when it returns, net holds
// them. With valid nil or empty it keeps the last epoch instead. Early
// stopping (cfg.Patience) ends training once the validation accuracy has not
// improved for that many epochs. With cfg.AverageLast > 0 it instead leaves
// the mean of the weights and biases at the end of the last cfg.AverageLast
// epochs in net when training completes (EpochStats.Improved still tracks the
// best validation epoch, which is only kept on cancellation or divergence).
//
// It returns the statistics of the epochs it completed. Bad config or data
// is an error before any training. Cancelling ctx stops between
// mini-batches with ctx.Err(); divergence stops with a *DivergenceError
// (errors.Is ErrDiverged) naming the epoch and mini-batch. Either way net
// holds the best weights so far (the initial ones if no epoch completed).
func Train(ctx context.Context, net *Network, train, valid *data.Set, cfg Config, hooks Hooks) ([]EpochStats, error) {
	net.check()
	valid, err := checkTrain(net, train, valid, cfg)
	if err != nil {
		return nil, err
	}
	if cfg.Epochs == 0 {
		return nil, nil
	}
	if cfg.Threads > 0 {
		blas.SetThreads(cfg.Threads)
	}
	t := newTrainerFor(net, cfg, min(cfg.BatchSize, train.N), 0)
	return trainEpochs(ctx, net, train, valid, cfg, hooks, func(perm []int, e, kept int) (EpochStats, error) {
		return t.epoch(ctx, train, perm, e, cfg.Rate(e), cfg, kept)
	})
}

// trainEpochs runs the epochs of Train and TrainParallel over net: each
// shuffles the training set, trains it with epoch (given the permutation,
// the epoch from 1 and the best epoch so far), validates, keeps the best
// weights or the average of the last, and stops early without progress.
// On an error net holds the best weights so far.
func trainEpochs(ctx context.Context, net *Network, train, valid *data.Set, cfg Config, hooks Hooks, epoch func(perm []int, e, kept int) (EpochStats, error)) ([]EpochStats, error) {
	var ev *evaluator
	if valid != nil {
		ev = newEvaluator(net)
	}
	k := newKeeper(net, cfg.AverageLast)
	rng := rand.New(rand.NewPCG(cfg.Seed, streamShuffle))
	perm := make([]int, train.N)
	stats := make([]EpochStats, 0, cfg.Epochs)
	for e := 1; e <= cfg.Epochs; e++ {
		start := time.Now()
		data.Permutation(rng, train.N, perm)
		st, err := epoch(perm, e, k.bestEpoch)
		if err != nil {
			net.loadParams(k.best)
			return stats, err
		}
		if ev != nil {
			st.ValidAccuracy = float64(ev.run(valid, nil)) / float64(valid.N)
			st.Improved = st.ValidAccuracy > k.bestAcc
		} else {
			st.Improved = true
		}
		k.endEpoch(net, st, e > cfg.Epochs-cfg.AverageLast)
		st.Seconds = time.Since(start).Seconds()
		stats = append(stats, st)
		if hooks.Epoch != nil {
			hooks.Epoch(st)
		}
		if ev != nil && cfg.Patience > 0 && k.sinceBest >= cfg.Patience {
			break
		}
	}
	k.load(net)
	return stats, nil
}

// checkTrain checks cfg and the sets Train is given for net, and returns
// the validation set to use: nil for none or an empty one.
func checkTrain(net *Network, train, valid *data.Set, cfg Config) (*data.Set, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if train == nil || train.N == 0 {
		return nil, errors.New("finetune: empty training set")
	}
	if err := checkSet("training set", train, net); err != nil {
		return nil, err
	}
	if valid != nil && valid.N == 0 {
		return nil, nil
	}
	if valid != nil {
		if err := checkSet("validation set", valid, net); err != nil {
			return nil, err
		}
	}
	return valid, nil
}

// newTrainerFor is the trainer of replica replica of net for cfg, for
// mini-batches of at most batch rows: cfg's dropout, label smoothing and
// max-norm constraint. Replica 0 draws Train's dropout streams and replica
// i > 0 streams of its own: identical masks on every replica of
// data-parallel training would be one mask W times over.
func newTrainerFor(net *Network, cfg Config, batch, replica int) *trainer {
	t := newTrainer(net, batch)
	mix := uint64(replica) << 32
	if cfg.Dropout > 0 {
		t.dropout = float32(cfg.Dropout)
		t.rng = blas.NewRNG(cfg.Seed ^ streamDropout ^ mix)
	}
	if cfg.InputDropout > 0 {
		t.inputDropout = float32(cfg.InputDropout)
		t.inputRNG = blas.NewRNG(cfg.Seed ^ streamInputDropout ^ mix)
	}
	t.smoothing = cfg.LabelSmoothing
	if cfg.MaxNorm > 0 {
		t.maxNorm = float32(cfg.MaxNorm)
		widest := net.Out.Out
		for _, l := range net.Hidden {
			widest = max(widest, l.Out)
		}
		t.norms = make([]float32, widest)
	}
	return t
}

// epoch trains epoch e at learning rate lr, one step per mini-batch of
// train in the order of perm, and returns its stats (loss and training
// accuracy). It stops with ctx's error when ctx is cancelled, and with a
// *DivergenceError, keeping epoch kept's weights, when a step diverges.
func (t *trainer) epoch(ctx context.Context, train *data.Set, perm []int, e int, lr float64, cfg Config, kept int) (EpochStats, error) {
	var lossSum float64
	correct := 0
	for b, lo := 1, 0; lo < train.N; b, lo = b+1, lo+t.batch {
		if err := ctx.Err(); err != nil {
			return EpochStats{}, err
		}
		idx := perm[lo:min(lo+t.batch, train.N)]
		train.Gather(t.x, idx)
		train.GatherLabels(t.labels, idx)
		loss, c, ok := t.step(len(idx), float32(lr), float32(cfg.Momentum), float32(lr*cfg.WeightDecay))
		if !ok {
			return EpochStats{}, &DivergenceError{Epoch: e, Batch: b, Loss: loss, KeptEpoch: kept}
		}
		lossSum += loss * float64(len(idx))
		correct += c
	}
	return EpochStats{
		Epoch:         e,
		LearningRate:  lr,
		Loss:          lossSum / float64(train.N),
		TrainAccuracy: float64(correct) / float64(train.N),
	}, nil
}

// keeper keeps the weights Train returns: the best epoch's (on the
// validation set; the last without one), or the mean of the last epochs'
// (finetune.average_last).
type keeper struct {
	best      []float32
	bestEpoch int
	bestAcc   float64
	// sinceBest counts the epochs since the best, for early stopping.
	sinceBest int
	// avgSum accumulates the parameters at the end of each of the last
	// cfg.AverageLast epochs, in float64 so that the mean of many epochs
	// loses no precision; avgN counts them. avgSum is nil without
	// averaging.
	avgSum []float64
	avgBuf []float32
	avgN   int
}

// newKeeper keeps net's initial weights as the best so far, and averages
// the last averageLast epochs (0: none).
func newKeeper(net *Network, averageLast int) *keeper {
	k := &keeper{best: make([]float32, net.numParams()), bestAcc: math.Inf(-1)}
	net.saveParams(k.best)
	if averageLast > 0 {
		k.avgSum = make([]float64, len(k.best))
		k.avgBuf = make([]float32, len(k.best))
	}
	return k
}

// endEpoch keeps net's weights after epoch st.Epoch if it improved, and
// adds them to the mean if average is set (one of the last epochs).
func (k *keeper) endEpoch(net *Network, st EpochStats, average bool) {
	if st.Improved {
		net.saveParams(k.best)
		k.bestEpoch, k.bestAcc, k.sinceBest = st.Epoch, st.ValidAccuracy, 0
	} else {
		k.sinceBest++
	}
	if k.avgSum != nil && average {
		net.saveParams(k.avgBuf)
		for i, v := range k.avgBuf {
			k.avgSum[i] += float64(v)
		}
		k.avgN++
	}
}

// load puts the kept weights into net: the mean of the averaged epochs if
// any, else the best.
func (k *keeper) load(net *Network) {
	if k.avgN == 0 {
		net.loadParams(k.best)
		return
	}
	inv := 1 / float64(k.avgN)
	for i, v := range k.avgSum {
		k.avgBuf[i] = float32(v * inv)
	}
	net.loadParams(k.avgBuf)
}
