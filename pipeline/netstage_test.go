package pipeline

import (
	"slices"
	"strings"
	"testing"

	"github.com/pipedbn/pipedbn/finetune"
)

// netStageConfig is a 6-5-3 network stage over labelled windows of two
// mini-batches of 4, with dropout and momentum.
func netStageConfig() StageConfig {
	sizes := []int{6, 5, 3}
	return StageConfig{
		Index: 1, Visible: 6, Hidden: 3, Epochs: 2, BatchSize: 4, K: 2, LearningRate: [2]float64{0.3, 0.1},
		Momentum: [2]float64{0.9, 0.9}, WeightDecay: 1e-4, Seed: 3,
		Net: &NetConfig{Sizes: sizes, Init: finetune.Random(sizes[:2], 3, 9).Params(nil), Dropout: 0.25},
	}
}

func labelledWindows(t *testing.T, cfg StageConfig, n int) []*Window {
	t.Helper()
	x := examples(2, n, cfg.Visible)
	y := make([]uint8, n)
	for r := range y {
		y[r] = uint8(r % cfg.Hidden)
	}
	src := NewSource(x, n, cfg.Visible, cfg.BatchSize, cfg.K, 4).WithLabels(y)
	var ws []*Window
	for w, ok := src.Next(cfg.Epochs); ok; w, ok = src.Next(cfg.Epochs) {
		ws = append(ws, w)
	}
	return ws
}

// A network stage restored from a snapshot trains on exactly as the one
// it was taken of, dropout masks included, and its parameters travel as
// one flat vector.
func TestNetStageSnapshotRestore(t *testing.T) {
	t.Parallel()
	cfg := netStageConfig()
	ws := labelledWindows(t, cfg, 22) // 6 mini-batches, 3 windows an epoch, the last short
	if v, h := cfg.ParamShape(); v != (6+1)*5+(5+1)*3 || h != 0 {
		t.Fatalf("ParamShape() = %d, %d; want %d, 0", v, h, (6+1)*5+(5+1)*3)
	}
	a := NewNetStage(cfg)
	for _, w := range ws[:4] {
		if err := a.Train(w, nil); err != nil {
			t.Fatal(err)
		}
	}
	b, err := RestoreNetStage(cfg, a.Snapshot())
	if err != nil {
		t.Fatal(err)
	}
	for _, w := range ws[4:] {
		if err := a.Train(w, nil); err != nil {
			t.Fatal(err)
		}
		if err := b.Train(w, nil); err != nil {
			t.Fatal(err)
		}
	}
	a.EndEpoch()
	b.EndEpoch()
	pa, _, _ := a.Params()
	pb, _, _ := b.Params()
	if !slices.Equal(pa, pb) {
		t.Error("the restored stage's parameters differ after the same windows")
	}
	if ra, rb := a.Stats().Recon, b.Stats().Recon; len(ra) != 2 || !slices.Equal(ra, rb) {
		t.Errorf("losses by epoch %v and %v; want the same two", ra, rb)
	}
	if slices.Equal(pa, cfg.Net.Init) {
		t.Error("training left the initial parameters unchanged")
	}
}

// Train refuses what a network cannot train on, naming it.
func TestNetStageRejects(t *testing.T) {
	t.Parallel()
	cfg := netStageConfig()
	w := labelledWindows(t, cfg, 8)[0]
	for name, tc := range map[string]struct {
		in   func() *Window
		out  *Window
		want string
	}{
		"no labels":     {func() *Window { c := *w; c.Labels = nil; return &c }, nil, "0 labels for 8 rows"},
		"short data":    {func() *Window { c := *w; c.X = c.X[1:]; return &c }, nil, "holds 47 values"},
		"late epoch":    {func() *Window { c := *w; c.Epoch = 2; return &c }, nil, "epoch 2"},
		"middle result": {func() *Window { return w }, &Window{}, "no middle result"},
	} {
		err := NewNetStage(cfg).Train(tc.in(), tc.out)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: Train() = %v; want an error saying %q", name, err, tc.want)
		}
	}
	st := NewNetStage(cfg).Snapshot()
	st.W = st.W[1:]
	if _, err := RestoreNetStage(cfg, st); err == nil {
		t.Error("RestoreNetStage of a short parameter vector: no error")
	}
}

// With block momentum a replica takes each average as a block step
// (finetune.BlockStep) from where the last left it, and a replica restored
// from a snapshot taken at an average takes the next ones alike.
func TestNetStageBlockMomentum(t *testing.T) {
	t.Parallel()
	cfg := netStageConfig()
	cfg.Replicas, cfg.Net.BlockMomentum = 2, 0.5
	ws := labelledWindows(t, cfg, 22)
	a := NewNetStage(cfg)
	origin := slices.Clone(cfg.Net.Init)
	step := make([]float32, len(origin))
	avg := func(s *NetStage, j int) []float32 { // a made-up average: the stage's parameters, moved
		p, _, _ := s.Params()
		m := slices.Clone(p)
		for i := range m {
			m[i] += float32(j+1) / 100
		}
		return m
	}
	var b *NetStage
	for j, w := range ws {
		if err := a.Train(w, nil); err != nil {
			t.Fatal(err)
		}
		m := avg(a, j)
		a.SetParams(m, nil, nil)
		finetune.BlockStep(m, origin, step, 0.5)
		if p, _, _ := a.Params(); !slices.Equal(p, m) {
			t.Fatalf("after average %d: the parameters are not the block step toward it", j+1)
		}
		if b != nil {
			if err := b.Train(w, nil); err != nil {
				t.Fatal(err)
			}
			b.SetParams(avg(b, j), nil, nil)
			pa, _, _ := a.Params()
			if pb, _, _ := b.Params(); !slices.Equal(pa, pb) {
				t.Fatalf("after average %d: the restored replica differs", j+1)
			}
		}
		if j == 1 {
			var err error
			if b, err = RestoreNetStage(cfg, a.Snapshot()); err != nil {
				t.Fatal(err)
			}
		}
	}
	st := a.Snapshot()
	st.BlockStep = nil
	if _, err := RestoreNetStage(cfg, st); err == nil || !strings.Contains(err.Error(), "block step of 0 values") {
		t.Errorf("RestoreNetStage without the block step: %v; want an error naming it", err)
	}
}
