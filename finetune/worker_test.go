package finetune

import (
	"context"
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"

	"github.com/pipedbn/pipedbn/data"
)

// workerConfig trains with every regulariser Step applies: dropout, input
// dropout (unless off), max-norm, label smoothing, weight decay and a
// learning-rate schedule.
func workerConfig(inputDropout float64) Config {
	c := quickConfig()
	c.Epochs = 2
	c.Dropout, c.InputDropout = 0.2, inputDropout
	c.MaxNorm, c.LabelSmoothing, c.WeightDecay, c.LearningRateFinal = 3, 0.05, 1e-3, 0.05
	return c
}

// A Worker of replica 0 fed Train's mini-batches in Train's order at
// Config.Rate is Train without validation, bit for bit: weights and loss.
// The 1000 examples in mini-batches of 32 end each epoch with a short one.
func TestWorkerIsTrain(t *testing.T) {
	t.Parallel()
	train, _ := syntheticTask()
	for _, in := range []float64{0.1, 0} { // 0: Step reads the caller's rows
		cfg := workerConfig(in)
		want := Random([]int{64, 32, 16}, 4, 3)
		stats, err := Train(context.Background(), want, train, nil, cfg, Hooks{})
		if err != nil {
			t.Fatalf("input dropout %v: Train: %v", in, err)
		}
		w := NewWorker(Random([]int{64, 32, 16}, 4, 3), cfg, 0, cfg.BatchSize)
		rng := rand.New(rand.NewPCG(cfg.Seed, streamShuffle))
		perm := make([]int, train.N)
		x, labels := make([]float32, cfg.BatchSize*train.Dim), make([]uint8, cfg.BatchSize)
		for e := 1; e <= cfg.Epochs; e++ {
			data.Permutation(rng, train.N, perm)
			var lossSum float64
			for lo := 0; lo < train.N; lo += cfg.BatchSize {
				idx := perm[lo:min(lo+cfg.BatchSize, train.N)]
				train.Gather(x, idx)
				train.GatherLabels(labels, idx)
				loss, _, ok := w.Step(x, labels, len(idx), cfg.Rate(e))
				if !ok {
					t.Fatalf("input dropout %v: epoch %d: Step diverged", in, e)
				}
				lossSum += loss * float64(len(idx))
			}
			if got := lossSum / float64(train.N); got != stats[e-1].Loss {
				t.Errorf("input dropout %v: epoch %d: loss %v; Train's %v", in, e, got, stats[e-1].Loss)
			}
		}
		if d := diffNetworks(w.Network(), want); d != "" {
			t.Errorf("input dropout %v: the worker's network differs from Train's: %s", in, d)
		}
	}
}

// workerSteps trains w on k mini-batches of train taken in order from
// example first on, at a rate that decays with the step.
func workerSteps(t *testing.T, w *Worker, train *data.Set, batch, first, k int) {
	t.Helper()
	idx := make([]int, batch)
	x, labels := make([]float32, batch*train.Dim), make([]uint8, batch)
	orig := make([]float32, len(x))
	for s := range k {
		for j := range idx {
			idx[j] = (first + s*batch + j) % train.N
		}
		train.Gather(x, idx)
		train.GatherLabels(labels, idx)
		if _, _, ok := w.Step(x, labels, batch, 0.1/float64(1+s)); !ok {
			t.Fatalf("step %d diverged", s)
		}
		train.Gather(orig, idx)
		if !reflect.DeepEqual(x, orig) {
			t.Fatalf("step %d changed the mini-batch it was given", s)
		}
	}
}

// A worker restored mid-way (parameters through SetParams, the rest
// through Restore) into a fresh network trains on exactly as the original.
func TestWorkerStateRestore(t *testing.T) {
	t.Parallel()
	train, _ := syntheticTask()
	cfg := workerConfig(0.1)
	const batch, n, m = 16, 7, 6
	a := NewWorker(Random([]int{64, 32, 16}, 4, 3), cfg, 1, batch)
	workerSteps(t, a, train, batch, 0, n)
	params, st := a.Network().Params(nil), a.State()

	fresh := func() *Worker {
		w := NewWorker(Random([]int{64, 32, 16}, 4, 9), cfg, 1, batch)
		w.Network().SetParams(params)
		return w
	}
	b, unrestored := fresh(), fresh()
	if err := b.Restore(st); err != nil {
		t.Fatalf("Restore: %v", err)
	}
	if !reflect.DeepEqual(b.State(), st) {
		t.Fatalf("State after Restore differs from the state restored")
	}
	for _, w := range []*Worker{a, b, unrestored} {
		workerSteps(t, w, train, batch, n*batch, m)
	}
	if d := diffNetworks(b.Network(), a.Network()); d != "" {
		t.Errorf("the restored worker's network differs from the original's: %s", d)
	}
	if !reflect.DeepEqual(b.State(), a.State()) {
		t.Errorf("the restored worker's state differs from the original's")
	}
	// The state matters: without it the same parameters train elsewhere.
	if diffNetworks(unrestored.Network(), a.Network()) == "" {
		t.Errorf("a worker given only the parameters trains as the original: the test checks nothing")
	}
}

// Restore rejects a state that does not fit, changing nothing.
func TestWorkerRestoreRejects(t *testing.T) {
	t.Parallel()
	w := NewWorker(Random([]int{8, 5}, 3, 1), workerConfig(0.1), 0, 4)
	good := w.State()
	short := good
	short.Velocity = good.Velocity[:len(good.Velocity)-1]
	long := good
	long.Velocity = append(append([]float32(nil), good.Velocity...), 0)
	zeroRNG := good
	zeroRNG.RNG = [len(good.RNG)]uint32{}
	for _, c := range []struct {
		name string
		s    WorkerState
		want string
	}{
		{"short velocity", short, "velocity of 62 values for a network of 63 parameters"},
		{"long velocity", long, "velocity of 64 values"},
		{"all-zero generator", zeroRNG, "all-zero stream"},
	} {
		err := w.Restore(c.s)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: Restore error %v; want one containing %q", c.name, err, c.want)
		}
	}
	if !reflect.DeepEqual(w.State(), good) {
		t.Errorf("a rejected Restore changed the worker's state")
	}
}

// Step allocates nothing after its first call, even when that first call
// was a short mini-batch, with or without input dropout.
func TestWorkerStepAllocs(t *testing.T) {
	train, _ := syntheticTask()
	const batch = 16
	x, labels := make([]float32, batch*train.Dim), make([]uint8, batch)
	idx := make([]int, batch)
	for j := range idx {
		idx[j] = j
	}
	train.Gather(x, idx)
	train.GatherLabels(labels, idx)
	for _, in := range []float64{0.1, 0} {
		w := NewWorker(Random([]int{64, 32, 16}, 4, 3), workerConfig(in), 0, batch)
		calls := 0
		step := func() { // the first call, AllocsPerRun's warm-up, is short
			rows := batch
			if calls == 0 {
				rows = 3
			}
			calls++
			w.Step(x, labels, rows, 0.01)
		}
		// One measured run: AllocsPerRun rounds the mean down, which would
		// hide a buffer grown once.
		if a := testing.AllocsPerRun(1, step) + testing.AllocsPerRun(20, step); a != 0 {
			t.Errorf("input dropout %v: Step allocated %v times after its first call; want 0", in, a)
		}
	}
}

// Replica k's worker draws TrainParallel's replica k dropout streams.
func TestWorkerReplicaStreams(t *testing.T) {
	t.Parallel()
	cfg := workerConfig(0.1)
	net := Random([]int{8, 5}, 3, 1)
	rs := newReplicas(net, cfg, Parallel{Workers: 3}, 100)
	for k, rt := range rs.ts {
		w := NewWorker(net.Clone(), cfg, k, cfg.BatchSize)
		if w.t.rng.State() != rt.rng.State() || w.t.inputRNG.State() != rt.inputRNG.State() {
			t.Errorf("replica %d: the worker's dropout streams are not TrainParallel's", k)
		}
	}
	if rs.ts[1].rng.State() == rs.ts[0].rng.State() {
		t.Errorf("replicas 0 and 1 share a dropout stream")
	}
}
