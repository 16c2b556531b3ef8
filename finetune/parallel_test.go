package finetune

import (
	"context"
	"errors"
	"math"
	"math/rand/v2"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/pipedbn/pipedbn/data"
)

// withoutSeconds zeroes the wall-clock times of stats, the one field two
// identical runs need not share.
func withoutSeconds(stats []EpochStats) []EpochStats {
	out := slices.Clone(stats)
	for i := range out {
		out[i].Seconds = 0
	}
	return out
}

// TestTrainParallelOneWorkerIsTrain checks that one replica is Train, bit
// for bit, in its weights, its stats and its errors, whatever the
// options.
func TestTrainParallelOneWorkerIsTrain(t *testing.T) {
	t.Parallel()
	train, test := syntheticTask()
	valid := test.Limit(150)
	base := quickConfig()
	base.Epochs = 4
	with := func(f func(*Config)) Config { c := base; f(&c); return c }
	tests := []struct {
		name  string
		cfg   Config
		p     Parallel
		valid *data.Set
	}{
		{"plain", base, Parallel{Workers: 1, SyncEvery: 1}, nil},
		{"validation and patience", with(func(c *Config) { c.Patience = 1 }), Parallel{Workers: 1}, valid},
		{"dropout", with(func(c *Config) { c.Dropout, c.InputDropout = 0.2, 0.1 }), Parallel{Workers: 1, SyncEvery: 3}, valid},
		{"decay, schedule, max-norm", with(func(c *Config) { c.WeightDecay, c.LearningRateFinal, c.MaxNorm = 1e-3, 0.01, 2 }), Parallel{Workers: 1}, nil},
		{"average last, smoothing", with(func(c *Config) { c.AverageLast, c.LabelSmoothing, c.Momentum = 2, 0.1, 0 }), Parallel{Workers: 1}, valid},
		{"linear rule", base, Parallel{Workers: 1, LR: LRLinear, WarmupEpochs: 2}, nil},
		{"diverges", with(func(c *Config) { c.LearningRate = 1e4 }), Parallel{Workers: 1}, valid},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			want, got := Random([]int{64, 32, 16}, 4, 3), Random([]int{64, 32, 16}, 4, 3)
			wantStats, wantErr := Train(context.Background(), want, train, tt.valid, tt.cfg, Hooks{})
			var hooked []EpochStats
			gotStats, gotErr := TrainParallel(context.Background(), got, train, tt.valid, tt.cfg, tt.p,
				Hooks{Epoch: func(s EpochStats) { hooked = append(hooked, s) }})
			if tt.name == "diverges" && !errors.Is(gotErr, ErrDiverged) {
				t.Fatalf("TrainParallel error %v; want a divergence", gotErr)
			}
			if !reflect.DeepEqual(gotErr, wantErr) {
				t.Fatalf("TrainParallel error %v; Train's %v", gotErr, wantErr)
			}
			if !reflect.DeepEqual(withoutSeconds(gotStats), withoutSeconds(wantStats)) {
				t.Errorf("TrainParallel stats\n%+v\nTrain's\n%+v", gotStats, wantStats)
			}
			if len(hooked) != len(gotStats) || (len(hooked) > 0 && !reflect.DeepEqual(withoutSeconds(hooked), withoutSeconds(gotStats))) {
				t.Errorf("the hook saw %d epochs; TrainParallel returned %d", len(hooked), len(gotStats))
			}
			if d := diffNetworks(got, want); d != "" {
				t.Errorf("TrainParallel's network differs from Train's: %s", d)
			}
		})
	}
}

func TestAverage(t *testing.T) {
	t.Parallel()
	a := []float32{1, 2, 3}
	b := []float32{3, 6, -3}
	c := []float32{100, 100, 100}
	dst := make([]float32, 3)
	Average(dst, [][]float32{a, b}, nil)
	if want := []float32{2, 4, 0}; !slices.Equal(dst, want) {
		t.Errorf("equal weights: %v; want %v", dst, want)
	}
	// c trained on nothing since the last averaging: weight 0 leaves it out.
	Average(dst, [][]float32{a, b, c}, []float64{3, 1, 0})
	if want := []float32{1.5, 3, 1.5}; !slices.Equal(dst, want) {
		t.Errorf("weights 3, 1, 0: %v; want %v", dst, want)
	}
	// One vector is itself, bit for bit, and dst may be a source.
	odd := []float32{math.Nextafter32(1, 2), -1e-30, 3.0000002}
	one := slices.Clone(odd)
	Average(one, [][]float32{one}, []float64{7})
	if !slices.Equal(one, odd) {
		t.Errorf("one vector averaged to %v; want %v", one, odd)
	}
	// float64 sums: the mean of many equal vectors is the vector.
	many := make([][]float32, 8)
	for i := range many {
		many[i] = odd
	}
	Average(dst, many, nil)
	if !slices.Equal(dst, odd) {
		t.Errorf("8 equal vectors averaged to %v; want %v", dst, odd)
	}
	for name, f := range map[string]func(){
		"no vectors":      func() { Average(dst, nil, nil) },
		"length":          func() { Average(dst, [][]float32{{1, 2}}, nil) },
		"weights' count":  func() { Average(dst, [][]float32{a, b}, []float64{1}) },
		"negative weight": func() { Average(dst, [][]float32{a, b}, []float64{1, -1}) },
		"zero total":      func() { Average(dst, [][]float32{a, b}, []float64{0, 0}) },
		"NaN weight":      func() { Average(dst, [][]float32{a}, []float64{math.NaN()}) },
	} {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("%s: Average did not panic", name)
				}
			}()
			f()
		}()
	}
}

// TestShard checks Shard's rule: the shards cover the epoch's order once,
// differ by at most a mini-batch, and step k of worker i is mini-batch
// k·W+i of the order.
func TestShard(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(1, 2))
	for _, c := range []struct{ n, batch, workers int }{
		{1000, 32, 1}, {1000, 32, 3}, {1000, 32, 4}, {1024, 32, 8}, {7, 2, 4}, {5, 10, 1}, {33, 1, 5},
	} {
		perm := make([]int, c.n)
		data.Permutation(rng, c.n, perm)
		var all []int
		sizes := make([]int, c.workers)
		for w := range c.workers {
			s := Shard(nil, perm, c.batch, c.workers, w)
			sizes[w] = len(s)
			for k := 0; k*c.batch < len(s); k++ {
				j := k*c.workers + w
				got := s[k*c.batch : min((k+1)*c.batch, len(s))]
				want := perm[j*c.batch : min((j+1)*c.batch, c.n)]
				if !slices.Equal(got, want) {
					t.Errorf("%+v: worker %d's step %d is %v; want mini-batch %d, %v", c, w, k, got, j, want)
				}
			}
			all = append(all, s...)
		}
		slices.Sort(all)
		for i, v := range all {
			if v != i {
				t.Fatalf("%+v: the shards hold %d examples, sorted %v...; want 0..%d once each", c, len(all), all[:min(len(all), 10)], c.n-1)
			}
		}
		if len(all) != c.n {
			t.Errorf("%+v: the shards hold %d examples; want %d", c, len(all), c.n)
		}
		if lo, hi := slices.Min(sizes), slices.Max(sizes); hi-lo > c.batch {
			t.Errorf("%+v: shard sizes %v differ by more than a mini-batch", c, sizes)
		}
	}
}

// maxParamDiff returns the largest absolute difference between a's and
// b's parameters.
func maxParamDiff(a, b *Network) float64 {
	pa, pb := a.Params(nil), b.Params(nil)
	d := 0.0
	for i := range pa {
		d = max(d, math.Abs(float64(pa[i])-float64(pb[i])))
	}
	return d
}

// TestSyncEveryStepIsLargeBatch checks that W replicas of batch b averaged
// after every step are one SGD run of batch W·b on the same examples: at
// Config's rate with LRConstant, at W times it with LRLinear and no
// warm-up. Without momentum it holds for any epoch size, the weighted
// average making the short last round exact; with momentum it needs
// rounds of equal mini-batches. Averaging every other step is not that
// run, which shows the tolerance discriminates.
func TestSyncEveryStepIsLargeBatch(t *testing.T) {
	t.Parallel()
	full, _ := syntheticTask()
	const tol = 2e-5
	tests := []struct {
		name      string
		n, w      int
		momentum  float64
		rule      LRRule
		syncEvery int
		same      bool
	}{
		// 1000 examples in 32 mini-batches of 32 (the last of 8): 4
		// replicas' last round holds 32, 32, 32 and 8 examples.
		{"W=4, uneven last round", 1000, 4, 0, LRConstant, 1, true},
		// 3 replicas: the last round has 2 mini-batches, one replica none.
		{"W=3, a replica idle in the last round", 1000, 3, 0, LRConstant, 1, true},
		{"W=4, linear rule", 1000, 4, 0, LRLinear, 1, true},
		{"W=4, momentum, equal rounds", 896, 4, 0.9, LRConstant, 1, true},
		{"W=8, momentum, linear rule", 768, 8, 0.9, LRLinear, 1, true},
		{"W=4, averaged every 2 steps", 1000, 4, 0, LRConstant, 2, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			train := full.Limit(tt.n)
			cfg := Config{Epochs: 3, BatchSize: 32, LearningRate: 0.1, Momentum: tt.momentum, WeightDecay: 1e-4, Seed: 9}
			big := cfg
			big.BatchSize *= tt.w
			if tt.rule == LRLinear {
				big.LearningRate *= float64(tt.w)
			}
			want, got := Random([]int{64, 32, 16}, 4, 2), Random([]int{64, 32, 16}, 4, 2)
			if _, err := Train(context.Background(), want, train, nil, big, Hooks{}); err != nil {
				t.Fatalf("Train: %v", err)
			}
			p := Parallel{Workers: tt.w, SyncEvery: tt.syncEvery, LR: tt.rule}
			if _, err := TrainParallel(context.Background(), got, train, nil, cfg, p, Hooks{}); err != nil {
				t.Fatalf("TrainParallel: %v", err)
			}
			d := maxParamDiff(got, want)
			t.Logf("largest parameter difference %.3g", d)
			if tt.same && d > tol {
				t.Errorf("TrainParallel %+v and Train at batch %d differ by %.3g; want <= %g", p, big.BatchSize, d, tol)
			}
			if !tt.same && d <= tol {
				t.Errorf("TrainParallel %+v and Train at batch %d differ by %.3g only; want more than %g", p, big.BatchSize, d, tol)
			}
		})
	}
}

// TestTrainParallelLearns checks that local SGD learns the synthetic task
// as Train does, and that a run is a function of its seed.
func TestTrainParallelLearns(t *testing.T) {
	t.Parallel()
	train, test := syntheticTask()
	for _, p := range []Parallel{
		{Workers: 4, SyncEvery: 4},
		{Workers: 3, SyncEvery: 0},
		{Workers: 4, SyncEvery: 1, LR: LRLinear, WarmupEpochs: 2},
		{Workers: 4, SyncEvery: 2, LR: LRLinear, WarmupEpochs: 2, Overlap: true},
		{Workers: 4, SyncEvery: 4, LR: LRLinear, WarmupEpochs: 2, BlockMomentum: 0.5},
	} {
		run := func() (*Network, []EpochStats) {
			n := Random([]int{64, 32}, 4, 1)
			cfg := quickConfig()
			cfg.Dropout = 0.1
			stats, err := TrainParallel(context.Background(), n, train, test.Limit(100), cfg, p, Hooks{})
			if err != nil {
				t.Fatalf("%+v: TrainParallel: %v", p, err)
			}
			return n, stats
		}
		n, stats := run()
		if acc := n.Evaluate(test).Accuracy; acc < 0.95 {
			t.Errorf("%+v: test accuracy %.4f; want >= 0.95", p, acc)
		}
		if first, last := stats[0].Loss, stats[len(stats)-1].Loss; !(last < first/2) {
			t.Errorf("%+v: loss went from %.4f to %.4f; want it at least halved", p, first, last)
		}
		if n2, _ := run(); diffNetworks(n, n2) != "" {
			t.Errorf("%+v: two runs with one seed differ: %s", p, diffNetworks(n, n2))
		}
	}
}

// TestRateScale checks the scaled rules' warm-up: Config's rate at the
// first step, W (sqrt(W)) times it from the end of the warm-up on.
func TestRateScale(t *testing.T) {
	t.Parallel()
	lin := Parallel{Workers: 5, LR: LRLinear}
	for _, c := range []struct {
		p        Parallel
		r, warm  int
		want     float64
		describe string
	}{
		{lin, 0, 10, 1, "first step of the warm-up"},
		{lin, 5, 10, 3, "half way"},
		{lin, 10, 10, 5, "warm-up over"},
		{lin, 0, 0, 5, "no warm-up"},
		{Parallel{Workers: 5}, 7, 10, 1, "constant rule"},
		{Parallel{Workers: 1, LR: LRLinear}, 0, 0, 1, "one worker"},
		{Parallel{Workers: 16, LR: LRSqrt}, 8, 8, 4, "square-root rule, warm-up over"},
		{Parallel{Workers: 16, LR: LRSqrt}, 4, 8, 2.5, "square-root rule, half way"},
	} {
		if got := c.p.RateScale(c.r, c.warm); got != c.want {
			t.Errorf("%s: RateScale(%d, %d) = %v; want %v", c.describe, c.r, c.warm, got, c.want)
		}
	}
}

func TestTrainParallelBadConfig(t *testing.T) {
	t.Parallel()
	train, _ := syntheticTask()
	err := Parallel{Workers: 0, SyncEvery: -1, LR: 7, WarmupEpochs: 9}.Validate(8)
	for _, want := range []string{"Workers = 0", "SyncEvery = -1", "LR = LRRule(7)", "WarmupEpochs = 9; want a number of epochs in [0, Epochs = 8]", "the warm-up ramps a scaled rate"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("Validate error %v; want it to mention %q", err, want)
		}
	}
	if err := (Parallel{Workers: 2, Overlap: true}).Validate(8); err == nil || !strings.Contains(err.Error(), "Overlap = true") {
		t.Errorf("Overlap without SyncEvery: Validate error %v; want Overlap named", err)
	}
	for _, p := range []Parallel{{Workers: 2, BlockMomentum: 1}, {Workers: 2, BlockMomentum: -0.1}, {Workers: 2, SyncEvery: 1, Overlap: true, BlockMomentum: 0.5}} {
		if err := p.Validate(8); err == nil || !strings.Contains(err.Error(), "BlockMomentum = ") {
			t.Errorf("%+v: Validate error %v; want BlockMomentum named", p, err)
		}
	}
	n := Random([]int{64, 8}, 4, 1)
	before := n.Clone()
	cfg := quickConfig()
	cfg.BatchSize = 0
	if _, err := TrainParallel(context.Background(), n, train, nil, cfg, Parallel{Workers: 0}, Hooks{}); err == nil ||
		!strings.Contains(err.Error(), "BatchSize = 0") || !strings.Contains(err.Error(), "Workers = 0") {
		t.Errorf("bad Config and Parallel: error %v; want both named", err)
	}
	cfg = quickConfig()
	if _, err := TrainParallel(context.Background(), n, train.Limit(100), nil, cfg, Parallel{Workers: 5}, Hooks{}); err == nil ||
		!strings.Contains(err.Error(), "has 4, one for each worker at most") {
		t.Errorf("5 workers on 4 mini-batches: error %v; want the mini-batch count named", err)
	}
	if d := diffNetworks(n, before); d != "" {
		t.Errorf("a rejected config changed the network: %s", d)
	}
	if _, err := ParseLRRule("cosine"); err == nil {
		t.Error(`ParseLRRule("cosine") gave no error`)
	}
	for _, r := range []LRRule{LRConstant, LRLinear} {
		if got, err := ParseLRRule(r.String()); err != nil || got != r {
			t.Errorf("ParseLRRule(%q) = %v, %v; want %v", r.String(), got, err, r)
		}
	}
}

func TestTrainParallelCancel(t *testing.T) {
	t.Parallel()
	train, _ := syntheticTask()
	n := Random([]int{64, 8}, 4, 1)
	ctx, cancel := context.WithCancel(context.Background())
	stats, err := TrainParallel(ctx, n, train, nil, quickConfig(), Parallel{Workers: 4, SyncEvery: 2},
		Hooks{Epoch: func(s EpochStats) {
			if s.Epoch == 2 {
				cancel()
			}
		}})
	if !errors.Is(err, context.Canceled) || len(stats) != 2 {
		t.Errorf("cancelled after epoch 2: %d epochs, error %v; want 2 and context.Canceled", len(stats), err)
	}
}

func TestParamsRoundTrip(t *testing.T) {
	t.Parallel()
	a, b := Random([]int{6, 5, 4}, 3, 1), Random([]int{6, 5, 4}, 3, 2)
	v := a.Params(make([]float32, 2))
	if len(v) != a.NumParams() || a.NumParams() != 6*5+5+5*4+4+4*3+3 {
		t.Fatalf("Params gave %d values, NumParams %d; want %d", len(v), a.NumParams(), 6*5+5+5*4+4+4*3+3)
	}
	if v[0] != a.Hidden[0].W[0] || v[6*5] != a.Hidden[0].B[0] || v[len(v)-1] != a.Out.B[2] {
		t.Errorf("Params's layout is not W1 b1 ... Wout bout")
	}
	b.SetParams(v)
	if d := diffNetworks(a, b); d != "" {
		t.Errorf("SetParams(Params) differs: %s", d)
	}
	defer func() {
		if recover() == nil {
			t.Error("SetParams of a short vector did not panic")
		}
	}()
	b.SetParams(v[1:])
}

// TestOverlapTakesTheMeanAnAveragingLate follows two replicas through
// overlap local SGD's averagings: the first gives the replicas' parameters
// and leaves them as they are; each later one moves every replica to the
// previous mean plus what it learned since (x <- mean + x - sent), then
// gives those parameters for the next mean; the end of an epoch (average)
// does the same, then averages at once.
func TestOverlapTakesTheMeanAnAveragingLate(t *testing.T) {
	t.Parallel()
	net := Random([]int{3, 2}, 2, 1)
	rs := newReplicas(net, quickConfig(), Parallel{Workers: 2, SyncEvery: 1, Overlap: true}, 100)
	n := net.NumParams()
	set := func(i int, f func(j int) float32) {
		v := make([]float32, n)
		for j := range v {
			v[j] = f(j)
		}
		rs.ts[i].net.SetParams(v)
	}
	get := func(i int) []float32 { return rs.ts[i].net.Params(nil) }
	want := func(what string, i int, f func(j int) float32) {
		t.Helper()
		got := get(i)
		for j := range got {
			if got[j] != f(j) {
				t.Fatalf("%s: replica %d parameter %d = %v; want %v", what, i, j, got[j], f(j))
			}
		}
	}
	// Small integers and halves: every sum below is exact in float32.
	set(0, func(j int) float32 { return float32(j) })
	set(1, func(j int) float32 { return float32(j + 2) })
	rs.seen[0], rs.seen[1] = 1, 1
	rs.exchange() // gives j and j+2: mean j+1, pending
	want("first averaging", 0, func(j int) float32 { return float32(j) })
	want("first averaging", 1, func(j int) float32 { return float32(j + 2) })

	set(0, func(j int) float32 { return float32(j) + 4 })   // learned +4
	set(1, func(j int) float32 { return float32(j+2) - 2 }) // learned -2
	rs.seen[0], rs.seen[1] = 1, 3
	rs.exchange() // takes j+1 plus what each learned, gives j+5 and j-1 weighted 1 and 3: mean j+0.5
	want("second averaging", 0, func(j int) float32 { return float32(j) + 5 })
	want("second averaging", 1, func(j int) float32 { return float32(j) - 1 })

	set(0, func(j int) float32 { return float32(j) + 5 + 1 })
	set(1, func(j int) float32 { return float32(j) - 1 })
	rs.seen[0], rs.seen[1] = 1, 1
	rs.average(false) // takes j+0.5 plus +1 and 0: j+1.5 and j+0.5, then their mean j+1
	for i := range 2 {
		want("end of the epoch", i, func(j int) float32 { return float32(j) + 1 })
	}
	if rs.pending {
		t.Error("a mean is still pending after the end of the epoch")
	}
}

// TestBlockStepIsHeavyBallOnTheMeans checks block momentum's step on
// numbers worked by hand: from origin 1 toward means 0.8 and then 0.5
// with beta 0.5 the steps are -0.2 and then -0.3 + 0.5*(-0.2).
func TestBlockStepIsHeavyBallOnTheMeans(t *testing.T) {
	origin, step := []float32{1}, []float32{0}
	mean := []float32{0.8}
	BlockStep(mean, origin, step, 0.5)
	if !near(step[0], -0.2) || !near(origin[0], 0.8) || mean[0] != origin[0] {
		t.Fatalf("first step: step %v origin %v mean %v; want -0.2, 0.8, 0.8", step[0], origin[0], mean[0])
	}
	mean[0] = 0.5 // the replicas moved -0.3 from 0.8
	BlockStep(mean, origin, step, 0.5)
	if !near(step[0], -0.4) || !near(origin[0], 0.4) || mean[0] != origin[0] {
		t.Fatalf("second step: step %v origin %v mean %v; want -0.4, 0.4, 0.4", step[0], origin[0], mean[0])
	}
}

func near(a, b float32) bool { return math.Abs(float64(a-b)) < 1e-6 }
