package protocol

import (
	"fmt"
	"math/rand/v2"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/pipedbn/pipedbn/messages"
	"github.com/pipedbn/pipedbn/pipeline"
	"github.com/pipedbn/pipedbn/rbm"
)

// The helpers the tests of this package share: a run, its timing, tiny
// RBMs that train in microseconds (as memnet's tiny()), and ways to read an
// Output.

var testRun = Run{ID: "r1", Incarnation: 2}

// testTiming is DefaultTiming with a join timeout of 10s and a lost-after
// of 5s: register and status every 1s, regrant every 500ms, resend after
// 1s, drain grace 3s, weights every 5s, finish timeout 10m.
func testTiming() Timing { return DefaultTiming(10*time.Second, 5*time.Second) }

const (
	testRows  = 8 // rows of data: two windows of one mini-batch of 4 per epoch
	testBatch = 4
)

// testLayers are the layer sizes of the test DBNs: RBM_i is
// testLayers[i-1] x testLayers[i].
var testLayers = []int{6, 4, 3, 2}

// testStages returns the first l tiny stages of testLayers, trained for
// epochs epochs on testRows rows, in windows of one mini-batch.
func testStages(l, epochs int) []pipeline.StageConfig {
	var stages []pipeline.StageConfig
	for i := 1; i <= l; i++ {
		stages = append(stages, pipeline.StageConfig{
			Index: i, Visible: testLayers[i-1], Hidden: testLayers[i], Units: rbm.Bernoulli, Epochs: epochs,
			BatchSize: testBatch, K: 1, CDK: 1, Middle: rbm.Probabilities,
			LearningRate: [2]float64{0.1, 0.05}, Momentum: [2]float64{0.5, 0.9}, WeightDecay: 2e-4, Seed: uint64(100 + i),
		})
	}
	return stages
}

// testData returns n rows of dim values in [0, 1).
func testData(n, dim int) []float32 {
	r := rand.New(rand.NewPCG(7, 7))
	x := make([]float32, n*dim)
	for i := range x {
		x[i] = r.Float32()
	}
	return x
}

// dataWindows returns the first n data windows the master deals to RBM_1
// of a run on stages.
func dataWindows(stages []pipeline.StageConfig, n int) []*pipeline.Window {
	c := stages[0]
	src := pipeline.NewSource(testData(testRows, c.Visible), testRows, c.Visible, c.BatchSize, c.K, 3)
	var ws []*pipeline.Window
	for range n {
		w, ok := src.Next(c.Epochs)
		if !ok {
			panic("dataWindows: the source ran dry")
		}
		ws = append(ws, w)
	}
	return ws
}

// dataChunk is window w as the master sends it to RBM_1: Seq seq.
func dataChunk(w *pipeline.Window, seq uint64) *messages.Chunk {
	rows := w.TotalRows()
	return &messages.Chunk{
		RunID: testRun.ID, Incarnation: testRun.Incarnation, RBM: 0, Epoch: w.Epoch, Seq: seq,
		Rows: rows, Cols: len(w.X) / rows, Data: w.X, BatchRows: w.Rows,
	}
}

// trainStage trains a fresh stage of c on ws, as the pipelined schedule
// does: what a slave must compute, bit for bit.
func trainStage(t *testing.T, c pipeline.StageConfig, ws []*pipeline.Window) *pipeline.Stage {
	t.Helper()
	st := pipeline.NewStage(c)
	for _, w := range ws {
		out := &pipeline.Window{X: make([]float32, w.TotalRows()*c.Hidden)}
		if err := st.Train(w, out); err != nil {
			t.Fatalf("Train(window %d) = %v; want nil", w.Seq, err)
		}
	}
	return st
}

// fakeCheckpoint is a checkpoint of RBM c.Index after windows windows and
// batches mini-batches that passes Check: zero parameters of the right
// shapes.
func fakeCheckpoint(c pipeline.StageConfig, windows, batches int) *messages.Checkpoint {
	v, h := c.Visible, c.Hidden
	return &messages.Checkpoint{
		RunID: testRun.ID, Incarnation: testRun.Incarnation, RBM: c.Index, Visible: v, Hidden: h,
		Windows: windows, Batches: batches, Rows: batches * c.BatchSize,
		W: make([]float32, v*h), A: make([]float32, v), B: make([]float32, h),
		VelW: make([]float32, v*h), VelA: make([]float32, v), VelB: make([]float32, h),
		RNG: make([]uint32, messages.CheckpointRNGWords),
	}
}

// fakeWeights is a consistent Weights message for RBM c.Index.
func fakeWeights(c pipeline.StageConfig, fill float32) *messages.Weights {
	v, h := c.Visible, c.Hidden
	w := &messages.Weights{
		RunID: testRun.ID, Incarnation: testRun.Incarnation, RBM: c.Index, Visible: v, Hidden: h,
		W: make([]float32, v*h), A: make([]float32, v), B: make([]float32, h), Batches: 4,
	}
	for i := range w.W {
		w.W[i] = fill
	}
	return w
}

// describe lists envelopes as "to kind" lines, the shape of an output, for
// comparing against a want list.
func describe(envs []Envelope) string {
	var b []string
	for _, e := range envs {
		b = append(b, e.To+" "+e.Msg.Kind().String())
	}
	return strings.Join(b, ", ")
}

// wantShape fails unless envs, described, read want.
func wantShape(t *testing.T, what string, envs []Envelope, want string) {
	t.Helper()
	if got := describe(envs); got != want {
		t.Fatalf("%s sends [%s]; want [%s]", what, got, want)
	}
}

// msg returns the n-th envelope's message as a T, failing if it is not.
func msg[T messages.Message](t *testing.T, envs []Envelope, n int) T {
	t.Helper()
	if n >= len(envs) {
		t.Fatalf("want a %T as message %d of [%s]", *new(T), n, describe(envs))
	}
	m, ok := envs[n].Msg.(T)
	if !ok {
		t.Fatalf("message %d of [%s] is a %T; want a %T", n, describe(envs), envs[n].Msg, *new(T))
	}
	return m
}

// only returns the messages of envs of kind k.
func only(envs []Envelope, k messages.Kind) []Envelope {
	var out []Envelope
	for _, e := range envs {
		if e.Msg.Kind() == k {
			out = append(out, e)
		}
	}
	return out
}

func sec(s float64) time.Duration { return time.Duration(s * float64(time.Second)) }

func errText(err error) string {
	if err == nil {
		return "<nil>"
	}
	return fmt.Sprint(err)
}

// knownBug skips a test that shows a bug of this package, so that the
// suite stays green, unless PIPEDBN_PROTOCOL_BUGS is set: then the test
// runs, and fails until the bug is fixed.
func knownBug(t *testing.T, why string) {
	t.Helper()
	if os.Getenv("PIPEDBN_PROTOCOL_BUGS") == "" {
		t.Skip("BUG: " + why)
	}
}

// names is the neighbours of one replica each: [name], or none for "".
func names(name string) []string {
	if name == "" {
		return nil
	}
	return []string{name}
}
