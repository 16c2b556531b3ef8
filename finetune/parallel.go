package finetune

import (
	"context"
	"errors"
	"fmt"
	"math"

	"github.com/pipedbn/pipedbn/blas"
	"github.com/pipedbn/pipedbn/data"
)

// LRRule is how TrainParallel sets the replicas' learning rate from
// Config's.
type LRRule int

const (
	// LRConstant steps every replica at Config's rate, the rule of local
	// SGD (Lin et al. 2020): each replica is an ordinary SGD run between
	// averagings.
	LRConstant LRRule = iota
	// LRLinear steps every replica at W times Config's rate, reached by a
	// linear ramp over Parallel.WarmupEpochs (Goyal et al. 2017): with
	// averaging every step, W replicas of batch b are one SGD run of batch
	// W·b, and the linear scaling rule keeps its progress per example that
	// of batch b.
	LRLinear
	// LRSqrt steps every replica at sqrt(W) times Config's rate, reached
	// by the same ramp: a compromise for many replicas, whose W times the
	// rate a brief run cannot bear.
	LRSqrt
)

// String returns the rule's name, as ParseLRRule reads it.
func (r LRRule) String() string {
	switch r {
	case LRConstant:
		return "constant"
	case LRLinear:
		return "linear"
	case LRSqrt:
		return "sqrt"
	}
	return fmt.Sprintf("LRRule(%d)", int(r))
}

// ParseLRRule reads a rule's name: "constant", "linear" or "sqrt".
func ParseLRRule(s string) (LRRule, error) {
	switch s {
	case "constant":
		return LRConstant, nil
	case "linear":
		return LRLinear, nil
	case "sqrt":
		return LRSqrt, nil
	}
	return 0, fmt.Errorf("finetune: learning-rate rule %q; want constant, linear or sqrt", s)
}

// Parallel is how TrainParallel spreads fine-tuning over W replicas of the
// network (data-parallel, local SGD with periodic averaging). The zero
// value is not valid: Workers must be set.
type Parallel struct {
	// Workers is W, the number of replicas, >= 1; 1 is Train.
	Workers int
	// SyncEvery is S, the number of local steps (mini-batches of each
	// replica) between two averagings of the replicas' parameters, >= 0:
	// 1 averages after every step (synchronous SGD), 0 only at the end of
	// each epoch. The replicas are averaged at the end of every epoch
	// whatever S, so that every epoch ends with one network to validate;
	// the count starts afresh with each epoch.
	SyncEvery int
	// LR is the learning-rate rule.
	LR LRRule
	// WarmupEpochs, in [0, Epochs], is how long LRLinear (LRSqrt) ramps
	// the rate from Config's to W (sqrt(W)) times it, linearly, a step at
	// a time; 0 starts there. It must be 0 with LRConstant.
	WarmupEpochs int
	// Overlap lets the replicas train on while their parameters are
	// averaged (overlap local SGD, Wang, Liang and Joshi 2020): at each
	// averaging within an epoch a replica takes the previous averaging's
	// mean plus what it learned since it gave its parameters for it,
	// x <- mean + (x - sent), and gives its parameters for the next; the
	// end of an epoch averages as without it. So a worker need not wait
	// for an average while it travels, at the price of taking each one an
	// averaging late. It needs SyncEvery > 0.
	Overlap bool
	// BlockMomentum is beta of block momentum (block-wise model-update
	// filtering, Chen and Huo 2016), in [0, 1): each averaging is a step
	// of the whole network from x0, where the replicas started at the last
	// averaging, toward their mean m, with heavy-ball momentum over those
	// steps, d <- beta*d + (m - x0) and x <- x0 + d; 0 takes the mean as it
	// is. It can make up for the steps local SGD loses to averaging; with
	// small SyncEvery it adds to the replicas' own momentum. It needs
	// Overlap off.
	BlockMomentum float64
}

// Validate reports every invalid field of p at once, for a run of epochs
// epochs.
func (p Parallel) Validate(epochs int) error {
	var errs []error
	bad := func(field string, v any, want string) {
		errs = append(errs, fmt.Errorf("finetune: %s = %v; want %s", field, v, want))
	}
	if p.Workers < 1 {
		bad("Workers", p.Workers, ">= 1")
	}
	if p.SyncEvery < 0 {
		bad("SyncEvery", p.SyncEvery, ">= 0 local steps (0: once per epoch)")
	}
	if p.LR != LRConstant && p.LR != LRLinear && p.LR != LRSqrt {
		bad("LR", p.LR, "LRConstant, LRLinear or LRSqrt")
	}
	if p.WarmupEpochs < 0 || p.WarmupEpochs > max(epochs, 0) {
		bad("WarmupEpochs", p.WarmupEpochs, fmt.Sprintf("a number of epochs in [0, Epochs = %d]", epochs))
	}
	if p.Overlap && p.SyncEvery == 0 {
		bad("Overlap", p.Overlap, "false with SyncEvery = 0: no averaging within an epoch to overlap")
	}
	if p.BlockMomentum < 0 || p.BlockMomentum >= 1 {
		bad("BlockMomentum", p.BlockMomentum, "a momentum in [0, 1)")
	}
	if p.BlockMomentum != 0 && p.Overlap {
		bad("BlockMomentum", p.BlockMomentum, "0 with Overlap: a late mean is no step from where the replicas started")
	}
	if p.WarmupEpochs > 0 && p.LR != LRLinear && p.LR != LRSqrt {
		bad("WarmupEpochs", p.WarmupEpochs, fmt.Sprintf("0 with LR %v: the warm-up ramps a scaled rate", p.LR))
	}
	return errors.Join(errs...)
}

// RateScale is the factor of Config's rate at step (round) r of the whole
// run, counting from 0, when the warm-up lasts warm rounds: from the end
// of the warm-up on, W times with LRLinear, sqrt(W) times with LRSqrt, 1
// with LRConstant.
func (p Parallel) RateScale(r, warm int) float64 {
	if p.LR == LRConstant || p.Workers == 1 {
		return 1
	}
	w := float64(p.Workers)
	if p.LR == LRSqrt {
		w = math.Sqrt(w)
	}
	if r >= warm {
		return w
	}
	return 1 + (w-1)*float64(r)/float64(warm)
}

// Blocks is the number of mini-batches of batch examples an epoch of n
// examples is cut into, the last one possibly short.
func Blocks(n, batch int) int { return (n + batch - 1) / batch }

// Shard appends to dst the examples of worker w (from 0) of workers in an
// epoch whose order is perm, and returns it. The rule: perm is cut into
// consecutive mini-batches of batch examples (the last one possibly
// short), and mini-batch j goes to worker j mod workers, which trains on
// its mini-batches in that order. So one epoch trains on every example
// once, the shards differ by at most one mini-batch, and step k of every
// worker together is mini-batch k of an SGD run of batch workers·batch on
// the same order, the equivalence that makes averaging every step
// synchronous SGD.
func Shard(dst, perm []int, batch, workers, w int) []int {
	if batch < 1 || workers < 1 || w < 0 || w >= workers {
		panic(fmt.Sprintf("finetune: Shard of worker %d of %d, batch %d", w, workers, batch))
	}
	for lo := w * batch; lo < len(perm); lo += workers * batch {
		dst = append(dst, perm[lo:min(lo+batch, len(perm))]...)
	}
	return dst
}

// Average sets dst to the weighted mean of params, each a replica's flat
// parameter vector (Network.Params), weights[i] the weight of params[i]:
// the number of examples replica i trained on since the last averaging, so
// that a replica whose last mini-batch was short, or that had none, counts
// for what it saw. nil weights weigh the replicas equally. The sums are
// taken in float64 and dst may be one of params. It panics if the lengths
// disagree, a weight is negative or the weights sum to 0.
func Average(dst []float32, params [][]float32, weights []float64) {
	if len(params) == 0 || (weights != nil && len(weights) != len(params)) {
		panic(fmt.Sprintf("finetune: Average of %d vectors with %d weights", len(params), len(weights)))
	}
	var total float64
	for i, p := range params {
		if len(p) != len(dst) {
			panic(fmt.Sprintf("finetune: Average: vector %d has %d values; dst %d", i, len(p), len(dst)))
		}
		w := 1.0
		if weights != nil {
			w = weights[i]
		}
		if !(w >= 0) {
			panic(fmt.Sprintf("finetune: Average: weight %d = %v; want >= 0", i, w))
		}
		total += w
	}
	if !(total > 0) {
		panic("finetune: Average: the weights sum to 0")
	}
	for j := range dst {
		var s float64
		for i, p := range params {
			if weights == nil {
				s += float64(p[j])
			} else if weights[i] != 0 {
				s += weights[i] * float64(p[j])
			}
		}
		dst[j] = float32(s / total)
	}
}

// NumParams returns the number of weights and biases of n, the length of
// its flat parameter vector.
func (n *Network) NumParams() int { return n.numParams() }

// Params writes n's flat parameter vector into dst, which it grows if it
// is shorter than NumParams, and returns it: every layer's W (row-major)
// then its B, input side first, the output layer last. One vector is what
// one message carries between the master and a worker.
func (n *Network) Params(dst []float32) []float32 {
	p := n.numParams()
	if cap(dst) < p {
		dst = make([]float32, p)
	}
	dst = dst[:p]
	n.saveParams(dst)
	return dst
}

// SetParams loads the flat parameter vector src (Params's layout) into n.
// It panics unless len(src) is NumParams.
func (n *Network) SetParams(src []float32) {
	if p := n.numParams(); len(src) != p {
		panic(fmt.Sprintf("finetune: SetParams of %d values; the network has %d", len(src), p))
	}
	n.loadParams(src)
}

// TrainParallel fine-tunes net like Train, but as W = p.Workers replicas
// trained side by side in one goroutine (local SGD with periodic
// averaging): each epoch's order is drawn as in Train and cut into shards
// by Shard's rule, each replica takes one step per mini-batch of its
// shard, a round of W steps at a time, and after every p.SyncEvery rounds
// and at the end of each epoch every replica's parameters are replaced by
// their Average weighted by the examples each saw since the last one (with
// p.Overlap, within an epoch, an averaging late: Parallel.Overlap).
// Replica 0 is net itself.
//
// Momentum: each replica keeps its own momentum buffers, which are never
// averaged (local momentum, as in Lin et al.), so an averaging moves only
// parameters. With S = 1 and equal mini-batches the mean of the replicas'
// velocities follows the recursion of the velocity of one SGD run of batch
// W·b, so S = 1 is that run, momentum included; a round whose mini-batches
// differ in size (the last of an epoch whose size is not a multiple of
// W·b) is exact only without momentum.
//
// Each replica has its own dropout streams (replica 0 Train's). The
// replicas are stepped at Config's rate scaled by p.LR; EpochStats's
// LearningRate is the rate of the epoch's last round, its Loss and
// TrainAccuracy those of every replica's mini-batches, and a
// DivergenceError's Batch the mini-batch's number in the epoch's order.
// Validation, best-epoch keeping, early stopping, weight averaging,
// cancellation and divergence are Train's, on the averaged network. With
// W = 1 the result is Train's, bit for bit.
func TrainParallel(ctx context.Context, net *Network, train, valid *data.Set, cfg Config, p Parallel, hooks Hooks) ([]EpochStats, error) {
	net.check()
	valid, err := checkTrain(net, train, valid, cfg)
	if err = errors.Join(err, p.Validate(cfg.Epochs)); err != nil {
		return nil, err
	}
	if blocks := Blocks(train.N, min(cfg.BatchSize, train.N)); p.Workers > blocks {
		return nil, fmt.Errorf("finetune: Workers = %d; an epoch of %d examples in mini-batches of %d has %d, one for each worker at most", p.Workers, train.N, cfg.BatchSize, blocks)
	}
	if cfg.Epochs == 0 {
		return nil, nil
	}
	if cfg.Threads > 0 {
		blas.SetThreads(cfg.Threads)
	}
	rs := newReplicas(net, cfg, p, train.N)
	return trainEpochs(ctx, net, train, valid, cfg, hooks, func(perm []int, e, kept int) (EpochStats, error) {
		return rs.epoch(ctx, train, perm, e, cfg, kept)
	})
}

// replicas are the W trainers of TrainParallel and what averaging needs.
type replicas struct {
	p  Parallel
	ts []*trainer // ts[0] trains the caller's network
	// vecs[i] is replica i's flat parameter vector at an averaging, avg
	// their mean; seen[i] counts the examples replica i trained on since
	// the last averaging, its weight.
	vecs [][]float32
	avg  []float32
	seen []float64
	// With Parallel.Overlap, pending says that avg is an averaging's mean
	// the replicas have not taken yet, vecs what each gave for it; cur is
	// room for a replica's parameters.
	pending bool
	cur     []float32
	// With Parallel.BlockMomentum, origin is the network the replicas
	// started from at the last averaging and step the last step from the
	// one before.
	origin, step []float32
	// round counts the rounds of the whole run, for the warm-up; warm is
	// the warm-up's length in rounds.
	round, warm int
}

// newReplicas makes W trainers, the first of net and the others of clones
// of it, each with its own dropout streams, for an epoch of n examples.
func newReplicas(net *Network, cfg Config, p Parallel, n int) *replicas {
	rs := &replicas{p: p, seen: make([]float64, p.Workers)}
	for i := range p.Workers {
		m := net
		if i > 0 {
			m = net.Clone()
		}
		rs.ts = append(rs.ts, newTrainerFor(m, cfg, min(cfg.BatchSize, n), i))
	}
	if p.Workers > 1 {
		rs.vecs = make([][]float32, p.Workers)
		for i := range rs.vecs {
			rs.vecs[i] = make([]float32, net.numParams())
		}
		rs.avg = make([]float32, net.numParams())
		if p.Overlap {
			rs.cur = make([]float32, net.numParams())
		}
		if p.BlockMomentum != 0 {
			rs.origin = net.Params(nil)
			rs.step = make([]float32, net.numParams())
		}
	}
	rs.warm = p.WarmupEpochs * rs.rounds(n)
	return rs
}

// rounds is the number of rounds of an epoch of n examples: W mini-batches
// each, the last round possibly with fewer.
func (rs *replicas) rounds(n int) int {
	return Blocks(Blocks(n, rs.ts[0].batch), rs.p.Workers)
}

// epoch trains epoch e on train in the order of perm, a round of one step
// per replica at a time, averaging the replicas every p.SyncEvery rounds
// and after the last, and returns its stats. It stops with ctx's error
// when ctx is cancelled, and with a *DivergenceError, keeping epoch kept's
// weights, when a step diverges.
func (rs *replicas) epoch(ctx context.Context, train *data.Set, perm []int, e int, cfg Config, kept int) (EpochStats, error) {
	var lossSum float64
	var lr float64
	correct := 0
	b, w := rs.ts[0].batch, rs.p.Workers
	blocks, rounds := Blocks(train.N, b), rs.rounds(train.N)
	for r := range rounds {
		if err := ctx.Err(); err != nil {
			return EpochStats{}, err
		}
		lr = cfg.Rate(e) * rs.p.RateScale(rs.round, rs.warm)
		for i, t := range rs.ts {
			j := r*w + i // the mini-batch's number in the epoch's order
			if j >= blocks {
				break
			}
			idx := perm[j*b : min((j+1)*b, train.N)]
			train.Gather(t.x, idx)
			train.GatherLabels(t.labels, idx)
			loss, c, ok := t.step(len(idx), float32(lr), float32(cfg.Momentum), float32(lr*cfg.WeightDecay))
			if !ok {
				return EpochStats{}, &DivergenceError{Epoch: e, Batch: j + 1, Loss: loss, KeptEpoch: kept}
			}
			lossSum += loss * float64(len(idx))
			correct += c
			rs.seen[i] += float64(len(idx))
		}
		rs.round++
		switch s := rs.p.SyncEvery; {
		case r == rounds-1:
			rs.average(e < cfg.Epochs)
		case s > 0 && (r+1)%s == 0 && rs.p.Overlap:
			rs.exchange()
		case s > 0 && (r+1)%s == 0:
			rs.average(true)
		}
	}
	return EpochStats{
		Epoch:         e,
		LearningRate:  lr,
		Loss:          lossSum / float64(train.N),
		TrainAccuracy: float64(correct) / float64(train.N),
	}, nil
}

// average replaces every replica's parameters by their mean weighted by
// the examples each saw since the last averaging, or with block momentum
// and block by the block step toward it (the last epoch's last averaging
// is the mean, as the workers' master gives it); one replica has nothing
// to average.
func (rs *replicas) average(block bool) {
	if len(rs.ts) > 1 {
		rs.takePending()
		for i, t := range rs.ts {
			t.net.saveParams(rs.vecs[i])
		}
		Average(rs.avg, rs.vecs, rs.seen)
		if rs.step != nil && block {
			BlockStep(rs.avg, rs.origin, rs.step, float32(rs.p.BlockMomentum))
		}
		for _, t := range rs.ts {
			t.net.loadParams(rs.avg)
		}
	}
	clear(rs.seen)
}

// BlockStep is block momentum's step of beta from origin, where the
// replicas started, toward mean, their mean now: step <- beta*step + (mean
// - origin), origin <- origin + step, and mean <- origin; beta = 0 gives
// mean, up to rounding.
func BlockStep(mean, origin, step []float32, beta float32) {
	for j, m := range mean {
		d := beta*step[j] + (m - origin[j])
		step[j] = d
		origin[j] += d
		mean[j] = origin[j]
	}
}

// exchange is an averaging of overlap local SGD: every replica takes the
// pending mean (takePending), then gives its parameters for the next,
// whose mean becomes pending. One replica has nothing to average.
func (rs *replicas) exchange() {
	if len(rs.ts) == 1 {
		clear(rs.seen)
		return
	}
	rs.takePending()
	for i, t := range rs.ts {
		t.net.saveParams(rs.vecs[i])
	}
	Average(rs.avg, rs.vecs, rs.seen)
	rs.pending = true
	clear(rs.seen)
}

// takePending moves every replica to the pending mean plus what it learned
// since it gave its parameters for it: x <- avg + (x - sent).
func (rs *replicas) takePending() {
	if !rs.pending {
		return
	}
	for i, t := range rs.ts {
		t.net.saveParams(rs.cur)
		for j, x := range rs.cur {
			rs.cur[j] = rs.avg[j] + (x - rs.vecs[i][j])
		}
		t.net.loadParams(rs.cur)
	}
	rs.pending = false
}
