package pipeline

import (
	"context"
	"fmt"
	"math"
	"slices"
	"testing"

	"github.com/pipedbn/pipedbn/data"
	"github.com/pipedbn/pipedbn/rbm"
)

func testConfigs(layers []int, epochs, batch, k int) []StageConfig {
	var cfgs []StageConfig
	for i := 1; i < len(layers); i++ {
		cfgs = append(cfgs, StageConfig{
			Index: i, Visible: layers[i-1], Hidden: layers[i], Units: rbm.Bernoulli,
			Epochs: epochs, BatchSize: batch, K: k, CDK: 1, Middle: rbm.Probabilities,
			LearningRate: [2]float64{0.1, 0.05}, Momentum: [2]float64{0.5, 0.9},
			WeightDecay: 0.0002, Seed: uint64(100 + i),
		})
	}
	return cfgs
}

func TestSchedulesTrainEveryBatch(t *testing.T) {
	const n, epochs, batch, k = 250, 30, 32, 3 // 8 batches per epoch, the last one short
	layers := []int{36, 24, 16, 12}
	x := examples(1, n, layers[0])
	for _, mode := range []string{"greedy", "pipelined"} {
		t.Run(mode, func(t *testing.T) {
			cfgs := testConfigs(layers, epochs, batch, k)
			var stages []*Stage
			var err error
			if mode == "greedy" {
				stages, err = Greedy(context.Background(), x, n, cfgs, []uint64{7, 8, 9}, Hooks{})
			} else {
				stages, err = Pipelined(x, n, cfgs, 7)
			}
			if err != nil {
				t.Fatal(err)
			}
			for _, st := range stages {
				s := st.Stats()
				if want := epochs * BatchesPerEpoch(n, batch); s.Batches != want {
					t.Errorf("rbm %d: trained %d batches; want %d", s.Index, s.Batches, want)
				}
				if s.Rows != epochs*n {
					t.Errorf("rbm %d: trained %d rows; want %d", s.Index, s.Rows, epochs*n)
				}
				if len(s.Recon) != epochs {
					t.Fatalf("rbm %d: %d recon errors; want %d", s.Index, len(s.Recon), epochs)
				}
				if mode == "greedy" && s.Recon[epochs-1] >= s.Recon[0] {
					t.Errorf("rbm %d: recon error %v did not fall", s.Index, s.Recon)
				}
			}
			// In the pipelined schedule an upper RBM's input moves as the RBMs
			// below learn, so its per-epoch errors need not fall; judge every
			// RBM instead on the final input: the data transformed by the
			// trained RBMs below. Trained, it must beat its initial weights.
			in := x
			for i, st := range stages {
				c := cfgs[i]
				fresh := rbm.New(c.Visible, c.Hidden, c.Units, c.Seed)
				trainedErr, freshErr := recon(st.RBM(), in, n), recon(fresh, in, n)
				t.Logf("rbm %d: recon on final input %.5f, untrained %.5f", i+1, trainedErr, freshErr)
				if trainedErr >= 0.6*freshErr {
					t.Errorf("rbm %d: recon error on final input %.5f; want under 0.6 x the untrained %.5f", i+1, trainedErr, freshErr)
				}
				next := make([]float32, n*c.Hidden)
				st.RBM().HiddenProbs(next, in, n)
				in = next
			}
		})
	}
}

// RBM_1 sees the same shuffled data in both schedules, so it must come out
// bit-identical: the pipeline changes what the upper RBMs see, nothing else.
func TestGreedyAndPipelinedAgreeOnRBM1(t *testing.T) {
	const n = 200
	layers := []int{36, 20, 10}
	x := examples(2, n, layers[0])
	g, err := Greedy(context.Background(), x, n, testConfigs(layers, 3, 16, 2), []uint64{5, 6}, Hooks{})
	if err != nil {
		t.Fatal(err)
	}
	p, err := Pipelined(x, n, testConfigs(layers, 3, 16, 2), 5)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(g[0].RBM().W, p[0].RBM().W) || !slices.Equal(g[0].RBM().B, p[0].RBM().B) {
		t.Error("RBM_1 differs between greedy and pipelined schedules")
	}
	if slices.Equal(g[1].RBM().W, p[1].RBM().W) {
		t.Error("RBM_2 is identical in both schedules; want it trained on middle results in pipelined mode")
	}
}

// The L_{i-1}-copy: when a window arrives, the stage's visible biases become
// the received B_{i-1}, and its own updates to them last only until then.
func TestLCopyBiasesFollowReceivedB(t *testing.T) {
	cfg := testConfigs([]int{8, 6}, 2, 4, 1)[0]
	cfg.Index = 2
	st := NewStage(cfg)
	x := examples(4, 4, 8)
	bias := []float32{1, 2, 3, 4, 5, 6, 7, 8}
	w := &Window{Epoch: 0, Seq: 0, Rows: []int{4}, X: x, Bias: bias}
	if err := st.Train(w, nil); err != nil {
		t.Fatal(err)
	}
	a := st.RBM().A
	if slices.Equal(a, bias) {
		t.Fatal("visible biases were not updated by training")
	}
	for j := range a {
		if d := a[j] - bias[j]; d > 0.5 || d < -0.5 {
			t.Fatalf("visible bias %d = %v; want near the received %v", j, a[j], bias[j])
		}
	}
	bias2 := []float32{-1, -1, -1, -1, -1, -1, -1, -1}
	w2 := &Window{Epoch: 0, Seq: 1, Rows: []int{4}, X: x, Bias: bias2}
	out := &Window{X: make([]float32, 4*6)}
	if err := st.Train(w2, out); err != nil {
		t.Fatal(err)
	}
	for j := range a {
		if d := a[j] - bias2[j]; d > 0.5 || d < -0.5 {
			t.Fatalf("visible bias %d = %v after a new window; want near %v", j, a[j], bias2[j])
		}
	}
	if !slices.Equal(out.Bias, st.RBM().B) || out.Seq != 1 || !slices.Equal(out.Rows, []int{4}) {
		t.Errorf("middle-result window = {seq %d rows %v bias %v}; want seq 1, rows [4], B_i %v", out.Seq, out.Rows, out.Bias, st.RBM().B)
	}
}

// With LCopyOnce (pretrain.l_copy: first_window) the L_{i-1}-copy takes
// the B_{i-1} of the first window only: what later windows carry changes
// nothing, and the stage learns its visible biases on, as greedy's does.
func TestLCopyOnceTakesTheFirstB(t *testing.T) {
	cfg := testConfigs([]int{8, 6}, 2, 4, 1)[0]
	cfg.Index, cfg.LCopyOnce = 2, true
	x := examples(4, 4, 8)
	train := func(first, second []float32) *Stage {
		st := NewStage(cfg)
		for seq, b := range [][]float32{first, second} {
			if err := st.Train(&Window{Epoch: 0, Seq: seq, Rows: []int{4}, X: x, Bias: b}, nil); err != nil {
				t.Fatal(err)
			}
		}
		return st
	}
	ones, twos := slices.Repeat([]float32{1}, 8), slices.Repeat([]float32{2}, 8)
	a := train(ones, ones).RBM()
	if b := train(ones, twos).RBM(); !slices.Equal(a.A, b.A) || !slices.Equal(a.W, b.W) {
		t.Error("the second window's B_1 changed the stage; want it ignored")
	}
	if b := train(twos, ones).RBM(); slices.Equal(a.A, b.A) {
		t.Error("the first window's B_1 did not set the visible biases")
	}
	cfg.LCopyOnce = false // the paper's rule, for contrast
	if b := train(ones, twos).RBM(); slices.Equal(a.A, b.A) {
		t.Error("every_window: the second window's B_1 changed nothing; want it to overwrite the visible biases")
	}
}

// recon is r's mean squared reconstruction error on x (n rows), measured by a
// CD-1 step with a zero learning rate, which leaves r unchanged.
func recon(r *rbm.RBM, x []float32, n int) float64 {
	tr := rbm.NewTrainer(r.Clone(), n, 1, 99)
	sse, err := tr.Step(x, n, rbm.Params{}, nil, rbm.Probabilities)
	if err != nil {
		panic(err)
	}
	return sse / float64(n*r.Visible)
}

// examples returns n rows of dim values in [0,1]: data.Synthetic's noisy
// prototypes, which an RBM learns quickly.
func examples(seed uint64, n, dim int) []float32 {
	return data.Synthetic(seed, n, dim, 4).X
}

// TestSettlePhase: after its epochs, the pipelined schedule deals windows
// of more epochs; RBM_1 only forwards them (it ends as without a settle
// phase, bit for bit), RBM_i+1 trains (i)·F of them and is frozen for the
// rest, and its reconstruction error gets an entry for each epoch it
// trained in. In its epochs, no more windows: RBM_i+1 settles on (i)·F of
// the last (L-1)·F windows of the epochs.
func TestSettlePhase(t *testing.T) {
	const n, epochs, batch, k = 250, 14, 32, 2 // 8 batches, 4 windows an epoch
	const w = epochs * 4                       // the epochs' windows
	layers := []int{36, 24, 16, 12}
	x := examples(1, n, layers[0])
	plain := testConfigs(layers, epochs, batch, k)
	base, err := Pipelined(x, n, plain, 7)
	if err != nil {
		t.Fatal(err)
	}
	const f = MinSettleBatches / k // F = round(0.2·56/2) = 6, raised to MinSettleBatches' worth; 2F <= 0.75·56
	var settled, inEpochs []StageConfig
	for _, tc := range []struct {
		schedule SettleSchedule
		windows  int // after the epochs
		start    int // the first settle window of every RBM above the first
	}{
		{SettleInEpochs, 0, w - 2*f},
		{SettleAfter, 2 * f, w},
	} {
		settled = testConfigs(layers, epochs, batch, k)
		PlanSettle(settled, n, 0.2, 0.2, tc.schedule)
		for i, c := range settled {
			if want := (Settle{From: w, Windows: tc.windows, Start: tc.start, Train: i * f, LearningRate: 0.2}); c.Settle != want {
				t.Fatalf("schedule %d, rbm %d: settle %+v; want %+v", tc.schedule, i+1, c.Settle, want)
			}
		}
		if tc.schedule == SettleInEpochs {
			inEpochs = settled
		}
		got, err := Pipelined(x, n, settled, 7)
		if err != nil {
			t.Fatal(err)
		}
		if r, b := got[0].RBM(), base[0].RBM(); !slices.Equal(r.W, b.W) || !slices.Equal(r.B, b.B) || !slices.Equal(r.A, b.A) {
			t.Errorf("schedule %d: RBM_1 changed in the settle phase, where it only forwards", tc.schedule)
		}
		for i, st := range got {
			s := st.Stats()
			wantBatches := epochs * 8
			if tc.windows > 0 {
				wantBatches += i * f * k
			}
			if s.Batches != wantBatches || settled[i].Batches(n) != wantBatches {
				t.Errorf("schedule %d, rbm %d: trained %d mini-batches, planned %d; want %d", tc.schedule, i+1, s.Batches, settled[i].Batches(n), wantBatches)
			}
			// After the epochs, RBM_i's (i-1)·F settle windows, 4 an
			// epoch, from window w on.
			if wantRecon := epochs + min(tc.windows, 1)*(i*f+3)/4; len(s.Recon) != wantRecon {
				t.Errorf("schedule %d, rbm %d: %d reconstruction errors; want %d", tc.schedule, i+1, len(s.Recon), wantRecon)
			}
			if st.Windows() != w+tc.windows {
				t.Errorf("schedule %d, rbm %d: handled %d windows; want %d", tc.schedule, i+1, st.Windows(), w+tc.windows)
			}
		}
		for i := 1; i < 3; i++ {
			if slices.Equal(got[i].RBM().W, base[i].RBM().W) {
				t.Errorf("schedule %d: RBM_%d trained as without a settle phase", tc.schedule, i+1)
			}
		}
	}

	// In its epochs, RBM_2 restarts on window w-2F at the settle phase's
	// rate, anneals over its F windows and trains on at the final rate and
	// momentum past them; RBM_3 restarts on the same window and anneals
	// over 2·F, to the last: each window trains as a Trainer stepped at
	// those rates does, to the bit.
	for _, tc := range []struct {
		rbm, seq       int
		rate, momentum float64
	}{
		{2, w - 2*f - 1, rbm.Schedule(0.1, 0.05, (w-2*f-1)/4, epochs), rbm.Schedule(0.5, 0.9, (w-2*f-1)/4, epochs)}, // before its part: its epoch's
		{2, w - 2*f, -1, 0.9}, // its first settle window: the ramp
		{2, w - f, 0.05, 0.9}, // past its part: the final rate
		{3, w - f - 1, -1, 0.9},
		{3, w - 1, -1, 0.9},
	} {
		c := inEpochs[tc.rbm-1]
		stage := NewStage(c)
		r := stage.RBM().Clone()
		tr := newTrainer(r, c)
		v := examples(uint64(tc.seq), k*batch, c.Visible)
		if err := stage.Train(&Window{Epoch: tc.seq / 4, Seq: tc.seq, Rows: []int{batch, batch}, X: v}, nil); err != nil {
			t.Fatal(err)
		}
		for b := range k {
			rate := tc.rate
			if rate < 0 {
				rate = c.Settle.rate((tc.seq-c.Settle.Start)*k+b, c.Settle.Train*k, 0.05)
			}
			p := rbm.Params{LearningRate: float32(rate), Momentum: float32(tc.momentum), WeightDecay: float32(c.WeightDecay)}
			if _, err := tr.Step(v[b*batch*c.Visible:(b+1)*batch*c.Visible], batch, p, nil, c.Middle); err != nil {
				t.Fatal(err)
			}
		}
		if !slices.Equal(stage.RBM().W, r.W) {
			t.Errorf("in epochs, RBM_%d's window %d trained otherwise than at rate %g, momentum %g", tc.rbm, tc.seq, tc.rate, tc.momentum)
		}
	}
	if r := inEpochs[2].Settle.rate(2*f*k-1, 2*f*k, 0.05); r != 0.05 {
		t.Errorf("in epochs, RBM_3's last mini-batch trains at %g; want the final rate 0.05", r)
	}

	// A frozen stage's forward pass is its hidden probabilities, and it
	// learns nothing more: RBM_2, past its window, hands on exactly what
	// HiddenProbs computes.
	v := examples(2, 5, 24)
	st := NewStage(settled[1])
	past := settled[1].Settle.From + settled[1].Settle.Train // RBM_2's first frozen window
	in := &Window{Epoch: epochs, Seq: past, Rows: []int{5}, X: v, Bias: make([]float32, 24)}
	out := &Window{X: make([]float32, 5*16)}
	if err := st.Train(&Window{Epoch: 0, Seq: 0, Rows: []int{5}, X: v}, nil); err != nil {
		t.Fatal(err)
	}
	before := append([]float32(nil), st.RBM().W...)
	if err := st.Train(in, out); err != nil {
		t.Fatal(err)
	}
	want := make([]float32, 5*16)
	st.RBM().HiddenProbs(want, v, 5)
	if !slices.Equal(out.X, want) || !slices.Equal(st.RBM().W, before) || out.Seq != past || len(out.Bias) != 16 {
		t.Errorf("frozen forward: middle result %v, weights changed %v, seq %d; want HiddenProbs, unchanged, %d", out.X[:4], !slices.Equal(st.RBM().W, before), out.Seq, past)
	}
	for _, bad := range []*Window{
		{Epoch: epochs + 2, Seq: w + 2*f, Rows: []int{5}, X: v}, // past the settle phase
		{Epoch: epochs, Seq: w - 1, Rows: []int{5}, X: v},       // before the settle phase
	} {
		if err := st.Train(bad, nil); err == nil {
			t.Errorf("window of epoch %d, seq %d: trained; want an error", bad.Epoch, bad.Seq)
		}
	}
	if err := NewStage(plain[1]).Train(&Window{Epoch: epochs, Seq: w, Rows: []int{5}, X: v}, nil); err == nil {
		t.Error("a stage without a settle phase trained a window of epoch Epochs")
	}

	// The floor of settle windows is those that hold MinSettleBatches.
	for k, want := range map[int]int{1: 40, 4: 10, 8: 5, 9: 5, 10: 4, 11: 4, 20: 2, 40: 1, 50: 1, 200: 1} {
		if got := minSettleWindows(k); got != want {
			t.Errorf("K = %d: at least %d settle windows; want %d", k, got, want)
		}
	}

	// Settle windows that would take more than MaxInEpochs of the epochs
	// go after them: w windows of the w, a settle phase longer than an
	// epoch, 14 more epochs of 4 windows.
	long := testConfigs(layers, epochs, batch, k)
	PlanSettle(long, n, 1, 0.2, SettleInEpochs)
	if long[2].Settle.Windows != w || long[2].LastEpoch(n) != 2*epochs-1 {
		t.Fatalf("settle %+v, last epoch %d; want %d windows, epoch %d", long[2].Settle, long[2].LastEpoch(n), w, 2*epochs-1)
	}
	got, err := Pipelined(x, n, long, 7)
	if err != nil {
		t.Fatal(err)
	}
	for i, st := range got {
		if s := st.Stats(); s.Batches != long[i].Batches(n) || s.Batches != epochs*8+i*w/2*k {
			t.Errorf("rbm %d: trained %d mini-batches, planned %d; want %d", i+1, s.Batches, long[i].Batches(n), epochs*8+i*w/2*k)
		}
	}
}

// With sampled middle results, a frozen stage forwards states sampled from
// its trainer's generator, as training would: the settle phase runs, and
// what RBM_2 hands on past its part is 0s and 1s.
func TestSettlePhaseSamples(t *testing.T) {
	t.Parallel()
	const n, epochs, batch, k = 250, 2, 32, 2
	layers := []int{36, 24, 16, 12}
	cfgs := testConfigs(layers, epochs, batch, k)
	for i := range cfgs {
		cfgs[i].Middle = rbm.Samples
	}
	PlanSettle(cfgs, n, 0.3, 0.2, SettleAfter)
	if _, err := Pipelined(examples(1, n, layers[0]), n, cfgs, 7); err != nil {
		t.Fatal(err)
	}
	st := NewStage(cfgs[1])
	s := cfgs[1].Settle
	v := examples(2, 5, 24)
	out := &Window{X: make([]float32, 5*16)}
	if err := st.Train(&Window{Epoch: epochs, Seq: s.From + s.Train, Rows: []int{5}, X: v, Bias: make([]float32, 24)}, out); err != nil {
		t.Fatal(err)
	}
	ones := 0
	for _, x := range out.X {
		if x != 0 && x != 1 {
			t.Fatalf("frozen forward of samples: %g; want 0 or 1", x)
		}
		ones += int(x)
	}
	if ones == 0 || ones == len(out.X) {
		t.Errorf("frozen forward of samples: %d ones of %d; want a mix", ones, len(out.X))
	}
}

// A stage replica, one of r, trains each mini-batch as r sub-batches, a
// step each at the stage's rates: exactly what one slave does with a window
// of those sub-batches, middle results and biases included, a short last
// mini-batch split unevenly and a mini-batch of fewer rows than replicas
// one step a row.
func TestReplicaSteps(t *testing.T) {
	t.Parallel()
	const visible, hidden = 12, 8
	for _, tc := range []struct {
		replicas int
		rows     []int
		subs     []int
	}{
		{2, []int{8, 8, 5}, []int{4, 4, 4, 4, 3, 2}},
		{3, []int{8, 2}, []int{3, 3, 2, 1, 1}},
		{1, []int{8, 3}, []int{8, 3}},
	} {
		cfg := testConfigs([]int{visible, hidden}, 2, 8, len(tc.rows))[0]
		rows := 0
		for _, r := range tc.rows {
			rows += r
		}
		x := examples(3, rows, visible)
		replica := cfg
		replica.Replicas = tc.replicas
		a, b := NewStage(replica), NewStage(cfg)
		outA := &Window{X: make([]float32, rows*hidden)}
		outB := &Window{X: make([]float32, rows*hidden)}
		if err := a.Train(&Window{Rows: tc.rows, X: x}, outA); err != nil {
			t.Fatal(err)
		}
		if err := b.Train(&Window{Rows: tc.subs, X: x}, outB); err != nil {
			t.Fatal(err)
		}
		name := fmt.Sprintf("%d replicas, mini-batches %v", tc.replicas, tc.rows)
		if !slices.Equal(a.RBM().W, b.RBM().W) || !slices.Equal(a.RBM().B, b.RBM().B) || !slices.Equal(a.RBM().A, b.RBM().A) {
			t.Errorf("%s: weights differ from one slave's on sub-batches %v", name, tc.subs)
		}
		if !slices.Equal(outA.X, outB.X) || !slices.Equal(outA.Bias, outB.Bias) {
			t.Errorf("%s: middle result differs from one slave's on sub-batches %v", name, tc.subs)
		}
		if got := a.Stats().Batches; got != len(tc.rows) {
			t.Errorf("%s: %d mini-batches counted; want %d", name, got, len(tc.rows))
		}
	}
}

// The settle phase's learning rate restarts at its LearningRate on a
// stage's first settle mini-batch and falls linearly to the final rate,
// reached on its last: every RBM ends its training annealed, as greedy's.
func TestSettleRate(t *testing.T) {
	t.Parallel()
	st := Settle{LearningRate: 0.09}
	for _, tc := range []struct {
		batches int
		want    []float64
	}{
		{1, []float64{0.002}},
		{2, []float64{0.09, 0.002}},
		{5, []float64{0.09, 0.068, 0.046, 0.024, 0.002, 0.002}}, // past the last: the final rate
	} {
		for b, want := range tc.want {
			if got := st.rate(b, tc.batches, 0.002); math.Abs(got-want) > 1e-12 {
				t.Errorf("%d settle mini-batches: mini-batch %d's rate %g; want %g", tc.batches, b, got, want)
			}
		}
	}

	// Train steps each settle mini-batch at its own rate: RBM_2's first
	// settle window trains as a Trainer stepped at those rates does, to
	// the bit.
	const n, batch, k = 40, 4, 2 // 10 mini-batches, 5 windows an epoch
	cfgs := testConfigs([]int{12, 8, 6}, 2, batch, k)
	PlanSettle(cfgs, n, 0.2, 0.09, SettleAfter)
	c := cfgs[1]
	stage := NewStage(c)
	r := stage.RBM().Clone()
	tr := newTrainer(r, c)
	x := examples(3, k*batch, c.Visible)
	in := &Window{Epoch: c.Epochs, Seq: c.Settle.From, Rows: []int{batch, batch}, X: x, Bias: make([]float32, c.Visible)}
	if err := stage.Train(in, nil); err != nil {
		t.Fatal(err)
	}
	clear(r.A)
	for b := range k {
		p := rbm.Params{LearningRate: float32(c.Settle.rate(b, c.Settle.Train*k, 0.05)), Momentum: 0.9, WeightDecay: float32(c.WeightDecay)}
		if _, err := tr.Step(x[b*batch*c.Visible:(b+1)*batch*c.Visible], batch, p, nil, c.Middle); err != nil {
			t.Fatal(err)
		}
	}
	if !slices.Equal(stage.RBM().W, r.W) {
		t.Error("a settle window trained otherwise than a mini-batch at a time at the settle rates")
	}
}

// TestSettleScheduleText checks the config spelling of each schedule both
// ways: config and result.json read and write it through these methods.
func TestSettleScheduleText(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		s    SettleSchedule
		text string
	}{{SettleAfter, "after"}, {SettleInEpochs, "in_epochs"}} {
		b, err := tc.s.MarshalText()
		if err != nil || string(b) != tc.text {
			t.Errorf("%d.MarshalText() = %q, %v; want %q", int(tc.s), b, err, tc.text)
		}
		var got SettleSchedule
		if err := got.UnmarshalText([]byte(tc.text)); err != nil || got != tc.s {
			t.Errorf("UnmarshalText(%q) = %v, %v; want %v", tc.text, got, err, tc.s)
		}
	}
	var s SettleSchedule
	if err := s.UnmarshalText([]byte("before")); err == nil {
		t.Errorf("UnmarshalText(%q) = nil error; want one", "before")
	}
	if got, want := SettleSchedule(7).String(), "SettleSchedule(7)"; got != want {
		t.Errorf("SettleSchedule(7).String() = %q; want %q", got, want)
	}
}
