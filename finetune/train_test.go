package finetune

import (
	"context"
	"errors"
	"fmt"
	"math"
	"strings"
	"testing"

	"github.com/pipedbn/pipedbn/blas"
	"github.com/pipedbn/pipedbn/data"
)

// refParams is a float64 copy of a network's weights and biases, layer by
// layer (the output layer last), for the finite-difference check.
type refParams [][2][]float64

func toRef(n *Network) refParams {
	p := make(refParams, len(n.Hidden)+1)
	for i := range p {
		l := n.layer(i)
		for k, src := range [][]float32{l.W, l.B} {
			p[i][k] = make([]float64, len(src))
			for j, v := range src {
				p[i][k][j] = float64(v)
			}
		}
	}
	return p
}

// refLoss is the mean cross-entropy of the network n's shapes with
// parameters p on rows examples, all in float64 with the exact sigmoid,
// against the one-hot target or, with eps > 0, the label-smoothed one.
func refLoss(n *Network, p refParams, x []float32, labels []uint8, rows int, eps float64) float64 {
	var total float64
	in0 := n.Inputs()
	for r := range rows {
		in := make([]float64, in0)
		for j := range in {
			in[j] = float64(x[r*in0+j])
		}
		for i := 0; i <= len(n.Hidden); i++ {
			l := n.layer(i)
			w, b := p[i][0], p[i][1]
			out := make([]float64, l.Out)
			for j := range out {
				s := b[j]
				for k, v := range in {
					s += v * w[k*l.Out+j]
				}
				if i < len(n.Hidden) {
					s = 1 / (1 + math.Exp(-s))
				}
				out[j] = s
			}
			in = out
		}
		zmax := math.Inf(-1)
		for _, v := range in {
			zmax = max(zmax, v)
		}
		var sum float64
		for _, v := range in {
			sum += math.Exp(v - zmax)
		}
		for j, v := range in {
			target := eps / float64(len(in))
			if j == int(labels[r]) {
				target += 1 - eps
			}
			total += target * (math.Log(sum) - (v - zmax))
		}
	}
	return total / float64(rows)
}

// TestGradient checks back-propagation against central finite differences
// of a float64 reference loss. The analytic gradient is read off the
// momentum buffers after one backward pass with lr = 1 and momentum 0,
// where vel = -∂loss/∂param.
func TestGradient(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		sizes   []int
		classes int
		rows    int
		eps     float64 // label smoothing
	}{
		{"5-4, 3 classes", []int{5, 4}, 3, 4, 0},
		{"5-4-6, 3 classes", []int{5, 4, 6}, 3, 4, 0},
		{"softmax only", []int{5}, 3, 4, 0},
		{"one row", []int{6, 3, 5}, 4, 1, 0},
		{"label smoothing 0.1", []int{5, 4, 6}, 3, 4, 0.1},
		{"label smoothing 0.5, softmax only", []int{5}, 4, 3, 0.5},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			n := Random(tt.sizes, tt.classes, 11)
			// The default output init is tiny; larger weights make every
			// layer's gradient sizeable, so a wrong one cannot hide.
			for j := range n.Out.W {
				n.Out.W[j] *= 100
			}
			for i := 0; i <= len(n.Hidden); i++ {
				for j := range n.layer(i).B {
					n.layer(i).B[j] = float32(j%3) - 1
				}
			}
			tr := newTrainer(n, tt.rows)
			copy(tr.x, randomInputs(12, tt.rows, tt.sizes[0]))
			for r := range tr.labels {
				tr.labels[r] = uint8((r * 7) % tt.classes)
			}
			n.forward(tr.acts, tr.x, tt.rows)
			loss, _ := softmaxDeltas(tr.acts.logits, tt.rows, tt.classes, tr.labels, tt.eps)
			tr.backward(tt.rows, 1, 0)

			p := toRef(n)
			if want := refLoss(n, p, tr.x, tr.labels, tt.rows, tt.eps); math.Abs(loss-want) > 1e-5 {
				t.Fatalf("loss = %v; want %v", loss, want)
			}
			// float64 central differences with h = 1e-5 are accurate to
			// about 1e-10, so the differences measure the float32 analytic
			// gradient: each component is a short sum of products of
			// values of order 1, accurate to about 1e-7; 1e-6 absolute plus
			// 1e-4 relative leaves a margin yet catches any wrong term.
			const h = 1e-5
			worst := 0.0
			for i := range p {
				for k, name := range []string{"W", "B"} {
					vel := tr.velW[i]
					if k == 1 {
						vel = tr.velB[i]
					}
					for j := range p[i][k] {
						orig := p[i][k][j]
						p[i][k][j] = orig + h
						up := refLoss(n, p, tr.x, tr.labels, tt.rows, tt.eps)
						p[i][k][j] = orig - h
						down := refLoss(n, p, tr.x, tr.labels, tt.rows, tt.eps)
						p[i][k][j] = orig
						num := (up - down) / (2 * h)
						got := -float64(vel[j])
						err := math.Abs(got - num)
						worst = max(worst, err)
						if err > 1e-6+1e-4*math.Abs(num) {
							t.Errorf("layer %d %s[%d]: backprop gradient = %.8g; finite differences = %.8g", i, name, j, got, num)
						}
					}
				}
			}
			t.Logf("largest absolute gradient error %.2g", worst)
		})
	}
}

// TestUpdateRule checks the step on top of the gradient: momentum through
// the GEMMs' beta, weight decay on weights but not biases.
func TestUpdateRule(t *testing.T) {
	t.Parallel()
	const (
		rows     = 6
		lr       = 0.5
		momentum = 0.9
		decay    = 0.01
	)
	n0 := Random([]int{5, 4}, 3, 2)
	x := randomInputs(3, rows, 5)
	labels := []uint8{0, 1, 2, 0, 1, 2}
	load := func(tr *trainer) {
		copy(tr.x, x)
		copy(tr.labels, labels)
	}
	// The gradient g at n0.
	g := newTrainer(n0.Clone(), rows)
	load(g)
	if _, _, ok := g.step(rows, 1, 0, 0); !ok {
		t.Fatal("gradient step diverged")
	}

	n := n0.Clone()
	tr := newTrainer(n, rows)
	load(tr)
	if _, _, ok := tr.step(rows, lr, momentum, lr*decay); !ok {
		t.Fatal("step diverged")
	}
	near := func(got, want float32) bool { return math.Abs(float64(got-want)) <= 1e-6*(1+math.Abs(float64(want))) }
	vel1 := make([][2][]float32, len(tr.velW))
	for i := range tr.velW {
		l0, l := n0.layer(i), n.layer(i)
		for j, w0 := range l0.W {
			// vel = -lr·g - lr·decay·w0 (no earlier velocity); w = w0 + vel.
			want := w0 + lr*g.velW[i][j] - lr*decay*w0
			if !near(l.W[j], want) {
				t.Fatalf("layer %d: W[%d] after one step = %v; want %v", i, j, l.W[j], want)
			}
		}
		for j, b0 := range l0.B {
			want := b0 + lr*g.velB[i][j] // no decay on biases
			if !near(l.B[j], want) {
				t.Fatalf("layer %d: B[%d] after one step = %v; want %v", i, j, l.B[j], want)
			}
		}
		vel1[i] = [2][]float32{append([]float32(nil), tr.velW[i]...), append([]float32(nil), tr.velB[i]...)}
	}
	// With lr 0 a second step only carries momentum: w += momentum·vel,
	// which the buffers hold since the first step (velCarry).
	if tr.velCarry != momentum {
		t.Fatalf("velCarry after a step of momentum %v = %v", float32(momentum), tr.velCarry)
	}
	n1 := n.Clone()
	if _, _, ok := tr.step(rows, 0, momentum, 0); !ok {
		t.Fatal("second step diverged")
	}
	for i := range tr.velW {
		l1, l := n1.layer(i), n.layer(i)
		for j := range l.W {
			if want := l1.W[j] + vel1[i][0][j]; !near(l.W[j], want) {
				t.Fatalf("layer %d: W[%d] after a momentum-only step = %v; want %v", i, j, l.W[j], want)
			}
		}
		for j := range l.B {
			if want := l1.B[j] + vel1[i][1][j]; !near(l.B[j], want) {
				t.Fatalf("layer %d: B[%d] after a momentum-only step = %v; want %v", i, j, l.B[j], want)
			}
		}
	}
}

func TestSoftmaxDeltasStable(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name     string
		z        []float32
		label    uint8
		wantLoss float64
	}{
		// exp(1000) overflows without the max subtraction.
		{"huge logits", []float32{1000, 1000 - float32(math.Ln2), 0}, 0, math.Log(1.5)},
		{"huge negative", []float32{-1000, -1000, -1000}, 2, math.Log(3)},
		{"uniform", []float32{0, 0, 0, 0}, 3, math.Log(4)},
		{"confident wrong", []float32{0, 50}, 0, 50},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			z := append([]float32(nil), tt.z...)
			loss, _ := softmaxDeltas(z, 1, len(z), []uint8{tt.label}, 0)
			if math.Abs(loss-tt.wantLoss) > 1e-4 {
				t.Errorf("loss = %v; want %v", loss, tt.wantLoss)
			}
			var sum float64
			for j, d := range z {
				if math.IsNaN(float64(d)) {
					t.Fatalf("delta[%d] = NaN", j)
				}
				sum += float64(d)
			}
			// softmax sums to 1, minus the one-hot's 1.
			if math.Abs(sum) > 1e-6 {
				t.Errorf("deltas sum to %v; want 0", sum)
			}
		})
	}
}

// syntheticTask is the fast learnable task of the training tests.
func syntheticTask() (train, test *data.Set) {
	return data.SyntheticPair(1, 1000, 300, 64, 4)
}

func quickConfig() Config {
	return Config{Epochs: 8, BatchSize: 32, LearningRate: 0.1, Momentum: 0.9, Seed: 5}
}

func TestTrainSynthetic(t *testing.T) {
	t.Parallel()
	train, test := syntheticTask()
	tests := []struct {
		name string
		net  func() *Network
	}{
		{"random 64-32", func() *Network { return Random([]int{64, 32}, 4, 1) }},
		{"pretrained-shaped 64-32-16", func() *Network { return FromPretrained(randomLayers(2, []int{64, 32, 16}, 0.1), 4, 1) }},
		{"softmax regression", func() *Network { return Random([]int{64}, 4, 1) }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			n := tt.net()
			if acc := n.Evaluate(test).Accuracy; acc > 0.5 {
				t.Fatalf("untrained accuracy %.3f; the task is too easy to test anything", acc)
			}
			stats, err := Train(context.Background(), n, train, nil, quickConfig(), Hooks{})
			if err != nil {
				t.Fatalf("Train: %v", err)
			}
			if len(stats) != 8 {
				t.Fatalf("Train ran %d epochs; want 8", len(stats))
			}
			if first, last := stats[0].Loss, stats[len(stats)-1].Loss; !(last < first/2) {
				t.Errorf("loss went from %.4f to %.4f; want it at least halved", first, last)
			}
			acc := n.Evaluate(test).Accuracy
			t.Logf("test accuracy %.4f after %d epochs (loss %.4f)", acc, len(stats), stats[len(stats)-1].Loss)
			// Chance is 0.25; the classes' prototypes are far apart, so a
			// working trainer gets nearly everything right.
			if acc < 0.95 {
				t.Errorf("test accuracy = %.4f; want >= 0.95", acc)
			}
		})
	}
}

func TestTrainDeterministic(t *testing.T) {
	t.Parallel()
	train, test := syntheticTask()
	run := func() *Network {
		n := Random([]int{64, 16}, 4, 1)
		if _, err := Train(context.Background(), n, train, test, quickConfig(), Hooks{}); err != nil {
			t.Fatalf("Train: %v", err)
		}
		return n
	}
	if d := diffNetworks(run(), run()); d != "" {
		t.Errorf("two runs with one seed differ: %s", d)
	}
}

// snapshots records the network after every epoch through Hooks.
type snapshots map[int]*Network

func (s snapshots) hook(n *Network) Hooks {
	return Hooks{Epoch: func(st EpochStats) { s[st.Epoch] = n.Clone() }}
}

// TestTrainKeepsBest checks that Train ends with the weights of the best
// validation epoch. The validation set comes from other prototypes than
// the training set, so its accuracy wanders from epoch to epoch and the
// best epoch is not the last.
func TestTrainKeepsBest(t *testing.T) {
	t.Parallel()
	train, _ := syntheticTask()
	_, valid := data.SyntheticPair(77, 0, 200, 64, 4)
	tests := []struct {
		name     string
		patience int
	}{
		{"no early stopping", 0},
		{"patience 2", 2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			n := Random([]int{64, 16}, 4, 3)
			cfg := quickConfig()
			cfg.Epochs, cfg.Patience, cfg.LearningRate = 12, tt.patience, 0.5
			snaps := snapshots{}
			stats, err := Train(context.Background(), n, train, valid, cfg, snaps.hook(n))
			if err != nil {
				t.Fatalf("Train: %v", err)
			}
			best := 0
			for i, st := range stats {
				if st.ValidAccuracy > stats[best].ValidAccuracy {
					best = i
				}
				if want := i == best; st.Improved != want {
					t.Errorf("epoch %d: Improved = %v; want %v (valid accuracy %.3f, best %.3f)", st.Epoch, st.Improved, want, st.ValidAccuracy, stats[best].ValidAccuracy)
				}
			}
			bestEpoch := stats[best].Epoch
			if bestEpoch == len(stats) {
				t.Fatalf("best epoch is the last (%d): the setup does not exercise keeping an earlier one", bestEpoch)
			}
			if d := diffNetworks(n, snaps[bestEpoch]); d != "" {
				t.Errorf("weights after Train differ from epoch %d's (best, valid accuracy %.3f): %s", bestEpoch, stats[best].ValidAccuracy, d)
			}
			want := cfg.Epochs
			if tt.patience > 0 {
				// Earlier improvements could only stop it later: the first
				// run of `patience` epochs without one ends it.
				want = 0
				since := 0
				for _, st := range stats {
					want++
					if st.Improved {
						since = 0
					} else if since++; since == tt.patience {
						break
					}
				}
				if since != tt.patience && len(stats) != cfg.Epochs {
					t.Errorf("stopped after %d epochs with %d without improvement; want %d or all %d epochs", len(stats), since, tt.patience, cfg.Epochs)
				}
			}
			if len(stats) != want {
				t.Errorf("Train ran %d epochs; want %d", len(stats), want)
			}
			t.Logf("valid accuracies: %v; best epoch %d", validAccuracies(stats), bestEpoch)
		})
	}
}

func validAccuracies(stats []EpochStats) []string {
	s := make([]string, len(stats))
	for i, st := range stats {
		s[i] = fmt.Sprintf("%.3f", st.ValidAccuracy)
	}
	return s
}

func TestTrainWithoutValidKeepsLast(t *testing.T) {
	t.Parallel()
	train, _ := syntheticTask()
	for _, valid := range []*data.Set{nil, {Dim: 64, Classes: 4, Name: "empty"}} {
		n := Random([]int{64, 16}, 4, 3)
		snaps := snapshots{}
		cfg := quickConfig()
		cfg.Epochs, cfg.Patience = 3, 1 // patience has no effect without validation
		stats, err := Train(context.Background(), n, train, valid, cfg, snaps.hook(n))
		if err != nil {
			t.Fatalf("Train: %v", err)
		}
		if len(stats) != 3 {
			t.Fatalf("Train ran %d epochs; want 3", len(stats))
		}
		for _, st := range stats {
			if !st.Improved || st.ValidAccuracy != 0 {
				t.Errorf("epoch %d: Improved = %v, ValidAccuracy = %v; want true, 0", st.Epoch, st.Improved, st.ValidAccuracy)
			}
		}
		if d := diffNetworks(n, snaps[3]); d != "" {
			t.Errorf("weights after Train differ from the last epoch's: %s", d)
		}
		if d := diffNetworks(n, snaps[2]); d == "" {
			t.Errorf("epochs 2 and 3 have the same weights: did training happen?")
		}
	}
}

func TestTrainLearningRateSchedule(t *testing.T) {
	t.Parallel()
	tests := []struct {
		lr, final float64
		epochs    int
		want      []float64
	}{
		{0.1, 0, 3, []float64{0.1, 0.1, 0.1}},
		{0.1, 0.01, 4, []float64{0.1, 0.07, 0.04, 0.01}},
		{0.1, 0.5, 1, []float64{0.1}},
	}
	train, _ := syntheticTask()
	train = train.Limit(64)
	for _, tt := range tests {
		cfg := Config{Epochs: tt.epochs, BatchSize: 32, LearningRate: tt.lr, LearningRateFinal: tt.final}
		stats, err := Train(context.Background(), Random([]int{64}, 4, 1), train, nil, cfg, Hooks{})
		if err != nil {
			t.Fatalf("Train: %v", err)
		}
		for i, st := range stats {
			if math.Abs(st.LearningRate-tt.want[i]) > 1e-12 {
				t.Errorf("lr %v → %v over %d epochs: epoch %d rate = %v; want %v", tt.lr, tt.final, tt.epochs, st.Epoch, st.LearningRate, tt.want[i])
			}
		}
	}
}

func allFinite(n *Network) bool {
	for i := 0; i <= len(n.Hidden); i++ {
		l := n.layer(i)
		for _, s := range [][]float32{l.W, l.B} {
			for _, v := range s {
				if math.IsNaN(float64(v)) || math.IsInf(float64(v), 0) {
					return false
				}
			}
		}
	}
	return true
}

func TestTrainDiverges(t *testing.T) {
	t.Parallel()
	train, test := syntheticTask()
	tests := []struct {
		name  string
		lr    float64
		valid *data.Set
	}{
		{"lr 1e6", 1e6, nil},
		{"lr 1e6 with validation", 1e6, test},
		{"lr 1e30", 1e30, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			n := Random([]int{64, 32}, 4, 1)
			snaps := snapshots{0: n.Clone()}
			cfg := quickConfig()
			cfg.LearningRate = tt.lr
			stats, err := Train(context.Background(), n, train, tt.valid, cfg, snaps.hook(n))
			var de *DivergenceError
			if !errors.As(err, &de) || !errors.Is(err, ErrDiverged) {
				t.Fatalf("Train with lr %g: err = %v; want a *DivergenceError", tt.lr, err)
			}
			if msg := err.Error(); !strings.Contains(msg, fmt.Sprintf("epoch %d, batch %d", de.Epoch, de.Batch)) || de.Epoch < 1 || de.Batch < 1 {
				t.Errorf("error %q (epoch %d, batch %d); want it to name the epoch and batch", msg, de.Epoch, de.Batch)
			}
			if len(stats) != de.Epoch-1 {
				t.Errorf("%d epochs of stats; want %d, those before the divergence", len(stats), de.Epoch-1)
			}
			if !allFinite(n) {
				t.Fatal("weights are not finite after divergence")
			}
			if d := diffNetworks(n, snaps[de.KeptEpoch]); d != "" {
				t.Errorf("weights differ from epoch %d's, which the error says it kept: %s", de.KeptEpoch, d)
			}
			t.Logf("%v", err)
		})
	}
}

func TestTrainCancel(t *testing.T) {
	t.Parallel()
	train, _ := syntheticTask()
	tests := []struct {
		name        string
		cancelAfter int // epochs; 0 cancels before Train starts
	}{
		{"before start", 0},
		{"after epoch 2", 2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			if tt.cancelAfter == 0 {
				cancel()
			}
			n := Random([]int{64, 16}, 4, 1)
			snaps := snapshots{0: n.Clone()}
			hooks := Hooks{Epoch: func(st EpochStats) {
				snaps[st.Epoch] = n.Clone()
				if st.Epoch == tt.cancelAfter {
					cancel()
				}
			}}
			stats, err := Train(ctx, n, train, nil, quickConfig(), hooks)
			if !errors.Is(err, context.Canceled) {
				t.Fatalf("Train: err = %v; want context.Canceled", err)
			}
			if len(stats) != tt.cancelAfter {
				t.Errorf("%d epochs of stats; want %d", len(stats), tt.cancelAfter)
			}
			if d := diffNetworks(n, snaps[tt.cancelAfter]); d != "" {
				t.Errorf("weights differ from epoch %d's: %s", tt.cancelAfter, d)
			}
		})
	}
}

func TestTrainBadInput(t *testing.T) {
	t.Parallel()
	train, _ := syntheticTask()
	badLabel := *train.Limit(10)
	badLabel.Labels = append([]uint8(nil), badLabel.Labels...)
	badLabel.Labels[7] = 4
	tests := []struct {
		name  string
		train *data.Set
		valid *data.Set
		cfg   func(*Config)
		want  []string
	}{
		{"every config problem at once", train, nil, func(c *Config) {
			*c = Config{Epochs: -1, LearningRate: math.NaN(), LearningRateFinal: -1, Momentum: 1, WeightDecay: -1, Patience: -1, Threads: -2}
		}, []string{"Epochs = -1", "BatchSize = 0", "LearningRate = NaN", "LearningRateFinal = -1", "Momentum = 1", "WeightDecay = -1", "Patience = -1", "Threads = -2"}},
		{"nil training set", nil, nil, nil, []string{"empty training set"}},
		{"wrong width", data.Synthetic(1, 10, 32, 4), nil, nil, []string{"training set", "32 features", "takes 64"}},
		{"label out of range", &badLabel, nil, nil, []string{"example 7 has label 4", "4 classes"}},
		{"wrong validation width", train, data.Synthetic(1, 10, 8, 4), nil, []string{"validation set", "8 features"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			cfg := quickConfig()
			if tt.cfg != nil {
				tt.cfg(&cfg)
			}
			n := Random([]int{64, 8}, 4, 1)
			before := n.Clone()
			_, err := Train(context.Background(), n, tt.train, tt.valid, cfg, Hooks{})
			if err == nil {
				t.Fatalf("Train: err = nil; want one containing %q", tt.want)
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("Train: err = %q; want it to contain %q", err, w)
				}
			}
			if d := diffNetworks(n, before); d != "" {
				t.Errorf("bad input changed the network: %s", d)
			}
		})
	}
}

// TestStepAllocs checks that a training step, mini-batch gathering
// included, allocates nothing.
func TestStepAllocs(t *testing.T) {
	train, _ := syntheticTask()
	n := Random([]int{64, 32, 16}, 4, 1)
	tr := newTrainer(n, 32)
	idx := make([]int, 32)
	for i := range idx {
		idx[i] = i * 3
	}
	allocs := testing.AllocsPerRun(20, func() {
		train.Gather(tr.x, idx)
		train.GatherLabels(tr.labels, idx)
		tr.step(len(idx), 0.01, 0.9, 1e-5)
	})
	if allocs != 0 {
		t.Errorf("a training step allocates %v times; want 0", allocs)
	}
	tr.dropout, tr.rng = 0.2, blas.NewRNG(1)
	tr.inputDropout, tr.inputRNG = 0.1, blas.NewRNG(2)
	allocs = testing.AllocsPerRun(20, func() {
		train.Gather(tr.x, idx)
		train.GatherLabels(tr.labels, idx)
		tr.step(len(idx), 0.01, 0.9, 1e-5)
	})
	if allocs != 0 {
		t.Errorf("a training step with dropout and input dropout allocates %v times; want 0", allocs)
	}
}

// Dropout: training still learns the synthetic task, and a bad probability
// is refused (TestDropoutBackward checks a dropout step's gradient).
func TestDropout(t *testing.T) {
	train, test := data.SyntheticPair(5, 1000, 300, 64, 4)
	net := Random([]int{64, 32}, 4, 1)
	cfg := Config{Epochs: 8, BatchSize: 32, LearningRate: 0.2, Momentum: 0.9, Seed: 2, Dropout: 0.3}
	if _, err := Train(context.Background(), net, train, nil, cfg, Hooks{}); err != nil {
		t.Fatal(err)
	}
	if acc := net.Evaluate(test).Accuracy; acc < 0.9 {
		t.Errorf("accuracy with dropout 0.3 = %.3f; want >= 0.9", acc)
	}
	for _, p := range []float64{-0.1, 1, math.NaN()} {
		if err := (Config{Epochs: 1, BatchSize: 1, LearningRate: 0.1, Dropout: p}).Validate(); err == nil {
			t.Errorf("Validate(Dropout %v) = nil; want an error", p)
		}
	}
}

// With dropout the zeroed units pass no gradient down and the kept ones the
// gradient of their scaled output.
func TestDropoutBackward(t *testing.T) {
	net := Random([]int{5, 4}, 3, 7)
	tr := newTrainer(net, 4)
	tr.dropout = 0.5
	tr.rng = blas.NewRNG(3)
	for i := range tr.x {
		tr.x[i] = float32(i%7) / 7
	}
	copy(tr.labels, []uint8{0, 1, 2, 1})
	before := net.Clone()
	if _, _, ok := tr.step(4, 0.1, 0, 0); !ok {
		t.Fatal("step failed")
	}
	h := tr.acts.hidden[0][:4*4]
	zeros := 0
	for _, v := range h {
		if v == 0 {
			zeros++
		}
	}
	if zeros == 0 || zeros == len(h) {
		t.Fatalf("dropout 0.5 zeroed %d of %d units", zeros, len(h))
	}
	// A hidden unit dropped in every row gets no weight update below it.
	for j := 0; j < 4; j++ {
		dropped := true
		for r := 0; r < 4; r++ {
			dropped = dropped && h[r*4+j] == 0
		}
		if !dropped {
			continue
		}
		for i := 0; i < 5; i++ {
			if net.Hidden[0].W[i*4+j] != before.Hidden[0].W[i*4+j] {
				t.Errorf("unit %d, dropped in every row, had weight %d updated", j, i)
			}
		}
	}
}

// Input dropout: training still learns the synthetic task and differs from
// training without it, the same seed gives the same network, the data set is
// left as it was, and a bad probability is refused.
func TestInputDropout(t *testing.T) {
	train, test := data.SyntheticPair(5, 1000, 300, 64, 4)
	x0 := append([]float32(nil), train.X...)
	run := func(p float64) *Network {
		net := Random([]int{64, 32}, 4, 1)
		cfg := Config{Epochs: 8, BatchSize: 32, LearningRate: 0.2, Momentum: 0.9, Seed: 2, InputDropout: p}
		if _, err := Train(context.Background(), net, train, nil, cfg, Hooks{}); err != nil {
			t.Fatal(err)
		}
		return net
	}
	net := run(0.2)
	if acc := net.Evaluate(test).Accuracy; acc < 0.9 {
		t.Errorf("accuracy with input dropout 0.2 = %.3f; want >= 0.9", acc)
	}
	if d := diffNetworks(net, run(0.2)); d != "" {
		t.Errorf("two runs with input dropout and one seed differ: %s", d)
	}
	if diffNetworks(net, run(0)) == "" {
		t.Error("input dropout 0.2 trained the same network as no input dropout")
	}
	for i, v := range train.X {
		if v != x0[i] {
			t.Fatalf("input dropout changed the training set: X[%d] = %v, was %v", i, v, x0[i])
		}
	}
	for _, p := range []float64{-0.1, 1, math.NaN()} {
		err := (Config{Epochs: 1, BatchSize: 1, LearningRate: 0.1, InputDropout: p}).Validate()
		if err == nil || !strings.Contains(err.Error(), "InputDropout") {
			t.Errorf("Validate(InputDropout %v) = %v; want an error naming InputDropout", p, err)
		}
	}
}

// With input dropout a mini-batch's dropped values are 0 in the forward
// pass, the kept ones are scaled by 1/(1-p), and an input dropped in every
// row of the mini-batch changes none of its first-layer weights.
func TestInputDropoutStep(t *testing.T) {
	const rows, in, p = 4, 6, 0.75
	net := Random([]int{in, 3}, 2, 7)
	tr := newTrainer(net, rows)
	tr.inputDropout = p
	tr.inputRNG = blas.NewRNG(11)
	orig := make([]float32, rows*in)
	for i := range orig {
		orig[i] = 0.1 + float32(i%5)/5
	}
	copy(tr.x, orig)
	copy(tr.labels, []uint8{0, 1, 1, 0})
	before := net.Clone()
	if _, _, ok := tr.step(rows, 0.1, 0, 0); !ok {
		t.Fatal("step failed")
	}
	dropped, kept := 0, 0
	for i, v := range tr.x {
		switch {
		case v == 0:
			dropped++
		case math.Abs(float64(v)-float64(orig[i])/(1-p)) < 1e-6:
			kept++
		default:
			t.Errorf("x[%d] = %v after input dropout; want 0 or %v", i, v, orig[i]/(1-p))
		}
	}
	if dropped == 0 || kept == 0 {
		t.Fatalf("input dropout %v dropped %d and kept %d of %d values", p, dropped, kept, len(tr.x))
	}
	// The hidden layer saw the dropped inputs: recompute its first row.
	for j := 0; j < 3; j++ {
		s := float64(before.Hidden[0].B[j])
		for k := 0; k < in; k++ {
			s += float64(tr.x[k]) * float64(before.Hidden[0].W[k*3+j])
		}
		if h := float64(tr.acts.hidden[0][j]); math.Abs(h-1/(1+math.Exp(-s))) > 1e-5 {
			t.Errorf("hidden[0][%d] = %v; want sigmoid of the dropped input's sum, %v", j, h, 1/(1+math.Exp(-s)))
		}
	}
	checked := 0
	for k := 0; k < in; k++ {
		all := true
		for r := 0; r < rows; r++ {
			all = all && tr.x[r*in+k] == 0
		}
		if !all {
			continue
		}
		checked++
		for j := 0; j < 3; j++ {
			if net.Hidden[0].W[k*3+j] != before.Hidden[0].W[k*3+j] {
				t.Errorf("input %d, dropped in every row, had weight W[%d][%d] updated", k, k, j)
			}
		}
	}
	if checked == 0 {
		t.Errorf("no input was dropped in every row: the test checks nothing with this seed")
	}
}

// paramsOf returns a float64 copy of every weight and bias of n, in
// saveParams order.
func paramsOf(n *Network) []float64 {
	buf := make([]float32, n.numParams())
	n.saveParams(buf)
	out := make([]float64, len(buf))
	for i, v := range buf {
		out[i] = float64(v)
	}
	return out
}

// Weight averaging: with AverageLast = k the network Train returns holds the
// mean of the weights and biases at the end of the last k epochs (taken
// from the Epoch hook's snapshots), the training trajectory is the one
// without averaging, the validation set then chooses nothing, and bad
// values are refused.
func TestAverageLast(t *testing.T) {
	t.Parallel()
	train, _ := syntheticTask()
	_, valid := data.SyntheticPair(77, 0, 200, 64, 4)
	run := func(avg int) (*Network, snapshots, []EpochStats) {
		n := Random([]int{64, 16}, 4, 3)
		cfg := quickConfig()
		cfg.Epochs, cfg.LearningRate, cfg.AverageLast = 6, 0.5, avg
		snaps := snapshots{}
		stats, err := Train(context.Background(), n, train, valid, cfg, snaps.hook(n))
		if err != nil {
			t.Fatalf("Train(AverageLast %d): %v", avg, err)
		}
		if len(stats) != cfg.Epochs {
			t.Fatalf("Train(AverageLast %d) ran %d epochs; want %d", avg, len(stats), cfg.Epochs)
		}
		return n, snaps, stats
	}
	off, offSnaps, offStats := run(0)
	avg, avgSnaps, avgStats := run(3)

	// Averaging only reads the weights: every epoch is as without it.
	for e := 1; e <= 6; e++ {
		if d := diffNetworks(avgSnaps[e], offSnaps[e]); d != "" {
			t.Fatalf("epoch %d: weights with AverageLast 3 differ from those without: %s", e, d)
		}
		if avgStats[e-1].ValidAccuracy != offStats[e-1].ValidAccuracy || avgStats[e-1].Improved != offStats[e-1].Improved {
			t.Errorf("epoch %d: stats with AverageLast 3 %+v differ from those without %+v", e, avgStats[e-1], offStats[e-1])
		}
	}

	// The result is the mean of epochs 4, 5 and 6.
	want := make([]float64, avg.numParams())
	for e := 4; e <= 6; e++ {
		for i, v := range paramsOf(avgSnaps[e]) {
			want[i] += v / 3
		}
	}
	got := paramsOf(avg)
	for i := range got {
		if math.Abs(got[i]-want[i]) > 1e-6*(1+math.Abs(want[i])) {
			t.Fatalf("averaged parameter %d = %v; want the mean of epochs 4-6, %v", i, got[i], want[i])
		}
	}
	if diffNetworks(avg, avgSnaps[6]) == "" || diffNetworks(avg, avgSnaps[4]) == "" {
		t.Fatal("the averaged network equals one epoch's: the test does not exercise averaging")
	}

	// Off: the best validation epoch, as before.
	best := 0
	for i, st := range offStats {
		if st.Improved {
			best = i
		}
	}
	if d := diffNetworks(off, offSnaps[offStats[best].Epoch]); d != "" {
		t.Errorf("AverageLast 0: weights differ from the best epoch %d's: %s", offStats[best].Epoch, d)
	}

	// AverageLast 1 keeps the last epoch even when an earlier one had a
	// better validation accuracy.
	last, lastSnaps, _ := run(1)
	if d := diffNetworks(last, lastSnaps[6]); d != "" {
		t.Errorf("AverageLast 1: weights differ from the last epoch's: %s", d)
	}

	for _, c := range []Config{
		{Epochs: 5, BatchSize: 1, LearningRate: 0.1, AverageLast: -1},
		{Epochs: 5, BatchSize: 1, LearningRate: 0.1, AverageLast: 6},
		{Epochs: 5, BatchSize: 1, LearningRate: 0.1, AverageLast: 2, Patience: 3},
	} {
		if err := c.Validate(); err == nil || !strings.Contains(err.Error(), "AverageLast") {
			t.Errorf("Validate(AverageLast %d, Epochs %d, Patience %d) = %v; want an error naming AverageLast", c.AverageLast, c.Epochs, c.Patience, err)
		}
	}
	if err := (Config{Epochs: 5, BatchSize: 1, LearningRate: 0.1, AverageLast: 5}).Validate(); err != nil {
		t.Errorf("Validate(AverageLast 5, Epochs 5) = %v; want nil", err)
	}
}

// columnNorms returns the L2 norm of every column of the rows x cols w.
func columnNorms(w []float32, rows, cols int) []float64 {
	n := make([]float64, cols)
	for r := 0; r < rows; r++ {
		for j, v := range w[r*cols : (r+1)*cols] {
			n[j] += float64(v) * float64(v)
		}
	}
	for j := range n {
		n[j] = math.Sqrt(n[j])
	}
	return n
}

// clipColumns leaves a column within the bound as it is and scales a longer
// one onto the bound, keeping its direction.
func TestClipColumns(t *testing.T) {
	// Columns: norm 5 (3,4), norm 1 (0,1), norm 0.
	w := []float32{3, 0, 0, 4, 1, 0}
	clipColumns(w, 2, 3, 2, make([]float32, 3))
	want := []float32{1.2, 0, 0, 1.6, 1, 0}
	for i := range w {
		if math.Abs(float64(w[i]-want[i])) > 1e-6 {
			t.Fatalf("clipColumns = %v; want %v", w, want)
		}
	}
}

// With MaxNorm every unit's incoming weights stay within the bound through a
// training run at a large rate that drives them far beyond it without the
// constraint, the task is still learned, and a bad bound is refused.
func TestMaxNorm(t *testing.T) {
	train, test := syntheticTask()
	const bound = 1.0
	run := func(maxNorm float64) *Network {
		net := Random([]int{train.Dim, 32, 16}, train.Classes, 3)
		cfg := quickConfig()
		cfg.LearningRate, cfg.MaxNorm = 0.5, maxNorm
		if _, err := Train(context.Background(), net, train, nil, cfg, Hooks{}); err != nil {
			t.Fatal(err)
		}
		return net
	}
	largest := func(n *Network) float64 {
		m := 0.0
		for i := 0; i <= len(n.Hidden); i++ {
			l := n.layer(i)
			for _, v := range columnNorms(l.W, l.In, l.Out) {
				m = max(m, v)
			}
		}
		return m
	}
	if m := largest(run(0)); m <= bound {
		t.Fatalf("without max-norm the largest column norm is %.3f; the test needs one above %v", m, bound)
	}
	net := run(bound)
	if m := largest(net); m > bound*(1+1e-5) {
		t.Errorf("max-norm %v: largest column norm %.6f", bound, m)
	}
	if acc := net.Evaluate(test).Accuracy; acc < 0.9 {
		t.Errorf("accuracy with max-norm %v = %.3f; want >= 0.9", bound, acc)
	}
	for _, c := range []float64{-1, math.NaN(), math.Inf(1)} {
		err := (Config{Epochs: 1, BatchSize: 1, LearningRate: 0.1, MaxNorm: c}).Validate()
		if err == nil || !strings.Contains(err.Error(), "MaxNorm") {
			t.Errorf("Validate(MaxNorm %v) = %v; want an error naming MaxNorm", c, err)
		}
	}
}

// Label smoothing: training still learns the synthetic task, trains a
// different network from the one-hot target, keeps the logits smaller (the
// point of it), and a bad value is refused. TestGradient checks its loss and
// gradient.
func TestLabelSmoothing(t *testing.T) {
	train, test := syntheticTask()
	run := func(eps float64) *Network {
		net := Random([]int{train.Dim, 32}, train.Classes, 3)
		cfg := quickConfig()
		cfg.LabelSmoothing = eps
		if _, err := Train(context.Background(), net, train, nil, cfg, Hooks{}); err != nil {
			t.Fatal(err)
		}
		return net
	}
	largestLogit := func(n *Network) float64 {
		a := newActivations(n, test.N)
		n.forward(a, test.X, test.N)
		m := 0.0
		for _, z := range a.logits {
			m = max(m, math.Abs(float64(z)))
		}
		return m
	}
	plain, smooth := run(0), run(0.2)
	if acc := smooth.Evaluate(test).Accuracy; acc < 0.9 {
		t.Errorf("accuracy with label smoothing 0.2 = %.3f; want >= 0.9", acc)
	}
	if lp, ls := largestLogit(plain), largestLogit(smooth); !(ls < lp) {
		t.Errorf("largest |logit| with label smoothing %.3f, without %.3f; want smaller with it", ls, lp)
	}
	for _, eps := range []float64{-0.1, 1, math.NaN()} {
		err := (Config{Epochs: 1, BatchSize: 1, LearningRate: 0.1, LabelSmoothing: eps}).Validate()
		if err == nil || !strings.Contains(err.Error(), "LabelSmoothing") {
			t.Errorf("Validate(LabelSmoothing %v) = %v; want an error naming LabelSmoothing", eps, err)
		}
	}
}
