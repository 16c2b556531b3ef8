package memnet

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/pipedbn/pipedbn/data"
	"github.com/pipedbn/pipedbn/finetune"
	"github.com/pipedbn/pipedbn/internal/narrow"
	"github.com/pipedbn/pipedbn/pipeline"
	"github.com/pipedbn/pipedbn/pipeline/protocol"
	"github.com/pipedbn/pipedbn/rbm"
)

// tiny is a run small enough to simulate hundreds of times a second: three
// RBMs, 18 windows each.
func tiny(checkpointEvery int) (protocol.MasterConfig, []string) {
	layers := []int{12, 8, 6, 4}
	const n = 48
	r := rand.New(rand.NewPCG(7, 7))
	x := make([]float32, n*layers[0])
	for i := range x {
		x[i] = r.Float32()
	}
	var stages []pipeline.StageConfig
	var slaves []string
	for i := 1; i < len(layers); i++ {
		stages = append(stages, pipeline.StageConfig{
			Index: i, Visible: layers[i-1], Hidden: layers[i], Units: rbm.Bernoulli, Epochs: 3, BatchSize: 4, K: 2, CDK: 1,
			Middle: rbm.Probabilities, LearningRate: [2]float64{0.1, 0.05}, Momentum: [2]float64{0.5, 0.9},
			WeightDecay: 2e-4, Seed: uint64(100 + i),
			// Both L-copy rules: RBM_2 takes every window's B_1,
			// RBM_3 the first window's B_2 only.
			LCopyOnce: i == 3,
		})
		slaves = append(slaves, fmt.Sprintf("local-%d", i))
	}
	// A settle phase of 8 windows after the epochs: RBM_2 trains 4 of
	// them, RBM_3 all 8. Set here rather than by PlanSettle, whose floor
	// of mini-batches would make it 40 windows at K = 2: the faults, not
	// the plan, are what these runs test.
	settle(stages, 8, 18)
	return protocol.MasterConfig{
		Run: protocol.Run{ID: "faults"}, Stages: stages, Data: x, N: n, ShuffleSeed: 3,
		Credits: 2, CheckpointEvery: checkpointEvery,
	}, slaves
}

// settle gives RBM_i (i > 1) the settle part that PlanSettle gives with
// F = 4 windows from window start on, at rate 0.1: windows after the
// epochs of 18, or 0 for the last 8 of them.
func settle(stages []pipeline.StageConfig, windows, start int) {
	for i := range stages {
		stages[i].Settle = pipeline.Settle{From: 18, Windows: windows, Start: start, Train: i * 4, LearningRate: 0.1}
	}
}

// tinyReplicas is tiny with stage replicas: RBM_1 on two (the master
// deals its data to them), RBM_2 on one (it gathers their middle results),
// RBM_3 on three (RBM_2 deals to them), averaging every two windows, and
// the settle phase in the last 8 of the epochs' 18 windows (the default
// schedule).
func tinyReplicas() (protocol.MasterConfig, []string) {
	cfg, _ := tiny(2)
	// Pixels, as the data package scales them: the data windows travel
	// as bytes.
	cfg.Data = quantized(cfg.Data, narrowUint8)
	cfg.DataPrecision = pipeline.ExactPrecision(cfg.Data)
	settle(cfg.Stages, 0, 10)
	cfg.Replicas, cfg.SyncEvery = []int{2, 1, 3}, 2
	var slaves []string
	for i, r := range cfg.Replicas {
		for k := range r {
			slaves = append(slaves, fmt.Sprintf("local-%d-%d", i+1, k))
		}
	}
	return cfg, slaves
}

// tinyFinetune is a run of data-parallel fine-tuning small enough to
// simulate hundreds of times a second: a 12-8-3 network on three replicas,
// averaging every two windows, 3 epochs of 48 labelled rows in windows of
// two mini-batches of 4, and dropout, so that a replica that trains a
// window again must draw the same masks; its replicas take the averages
// with block momentum beta.
func tinyFinetune(beta float64) (protocol.MasterConfig, []string) {
	cfg, _ := tiny(2)
	const classes = 3
	labels := make([]uint8, cfg.N)
	for r := range labels {
		x := cfg.Data[r*12 : r*12+classes] // a learnable rule: the largest of the first three inputs
		labels[r] = uint8(slices.Index(x, slices.Max(x)))
	}
	sizes := []int{12, 8, classes}
	init := finetune.Random(sizes[:2], classes, 5).Params(nil)
	cfg.Stages = []pipeline.StageConfig{{
		Index: 1, Visible: 12, Hidden: classes, Units: rbm.Bernoulli, Epochs: 3, BatchSize: 4, K: 2, CDK: 1,
		Middle: rbm.Probabilities, LearningRate: [2]float64{0.2, 0.05}, Momentum: [2]float64{0.9, 0.9}, Seed: 11, Replicas: 3,
		Net: &pipeline.NetConfig{Sizes: sizes, Init: init, Dropout: 0.2, LR: finetune.LRLinear, WarmupWindows: 2, BlockMomentum: beta},
	}}
	cfg.Labels, cfg.Run.ID = labels, "faults-ft"
	cfg.Replicas, cfg.SyncEvery = []int{3}, 2
	return cfg, []string{"worker-0", "worker-1", "worker-2"}
}

// sameParams reports whether two runs trained the same weights, bit for
// bit: RBM_i's W, A and B, or a network's flat vector.
func sameParams(a, b protocol.Trained) bool {
	if a.RBM == nil || b.RBM == nil {
		return a.RBM == b.RBM && len(a.Params) > 0 && slices.Equal(a.Params, b.Params)
	}
	return slices.Equal(a.RBM.W, b.RBM.W) && slices.Equal(a.RBM.A, b.RBM.A) && slices.Equal(a.RBM.B, b.RBM.B)
}

// simTiming is the protocol's timing, scaled down so that a simulated run
// with faults lasts seconds of simulated time.
func simTiming() protocol.Timing {
	t := protocol.DefaultTiming(10*time.Second, time.Second)
	t.RegisterEvery, t.StatusEvery, t.RegrantEvery, t.ResendAfter = 250*time.Millisecond, 250*time.Millisecond, 125*time.Millisecond, 250*time.Millisecond
	t.DrainGrace, t.WeightsEvery, t.FinishTimeout = time.Second, time.Second, time.Minute
	return t
}

// simulate runs cfg on a simulated network with the given faults (nil:
// none), and returns the trained RBMs, the simulated time it took and the
// transcript of the run.
func simulate(cfg protocol.MasterConfig, slaves []string, faults *Schedule) ([]protocol.Trained, time.Duration, []string, error) {
	var transcript []string
	var net *Network
	logs := hclog.New(&hclog.LoggerOptions{Level: hclog.Info, Output: writerFunc(func(p []byte) (int, error) {
		transcript = append(transcript, fmt.Sprintf("%8.3fs %s", net.now.Seconds(), strings.TrimSpace(string(p))))
		return len(p), nil
	}), DisableTime: true})
	net = New(cfg, slaves, Options{
		Timing: simTiming(), Simulated: true, Encode: true, Faults: faults, Logger: logs,
		Trace: func(format string, args ...any) { transcript = append(transcript, fmt.Sprintf(format, args...)) },
	})
	trained, err := net.Run(context.Background())
	return trained, net.now, transcript, err
}

type writerFunc func([]byte) (int, error)

func (f writerFunc) Write(p []byte) (int, error) { return f(p) }

func envInt(t *testing.T, key string, def uint64) uint64 {
	v := os.Getenv(key)
	if v == "" {
		return def
	}
	n, err := strconv.ParseUint(v, 10, 64)
	if err != nil {
		t.Fatalf("%s = %q: want a non-negative integer", key, v)
	}
	return n
}

// TestFaultSchedules runs the protocol through random fault schedules (from
// PIPEDBN_FAULT_SEED, PIPEDBN_FAULT_RUNS schedules) and checks that every
// run completes with the weights of the fault-free run, bit for bit, each
// RBM having trained every mini-batch exactly once in the lineage that
// survived. A failing schedule prints the command that replays it and the
// end of its transcript.
func TestFaultSchedules(t *testing.T) {
	cfg, slaves := tiny(2)
	runSchedules(t, "TestFaultSchedules", cfg, slaves, envInt(t, "PIPEDBN_FAULT_SEED", 1), 0, envInt(t, "PIPEDBN_FAULT_RUNS", 200), false)
}

// TestFaultSchedulesWithReplicas runs random fault schedules (half as
// many, from other seeds) on tinyReplicas: every run ends with the weights
// of the fault-free run, bit for bit, each RBM's replicas together having
// trained every mini-batch exactly once.
func TestFaultSchedulesWithReplicas(t *testing.T) {
	cfg, slaves := tinyReplicas()
	runs := max(1, envInt(t, "PIPEDBN_FAULT_RUNS", 200)/2)
	runSchedules(t, "TestFaultSchedulesWithReplicas", cfg, slaves, envInt(t, "PIPEDBN_FAULT_SEED", 1), replicaSeeds, runs, false)
}

// TestFaultSchedulesWithFinetune runs random fault schedules (half as
// many, from other seeds) on tinyFinetune: every run ends with the network
// of the fault-free run, bit for bit, its replicas together having trained
// every mini-batch exactly once.
func TestFaultSchedulesWithFinetune(t *testing.T) {
	cfg, slaves := tinyFinetune(0)
	runs := max(1, envInt(t, "PIPEDBN_FAULT_RUNS", 200)/2)
	runSchedules(t, "TestFaultSchedulesWithFinetune", cfg, slaves, envInt(t, "PIPEDBN_FAULT_SEED", 1), finetuneSeeds, runs, false)
}

// TestFaultSchedulesWithBlockMomentum is TestFaultSchedulesWithFinetune
// with block momentum, whose last step a restarted replica must take
// from its checkpoint.
func TestFaultSchedulesWithBlockMomentum(t *testing.T) {
	cfg, slaves := tinyFinetune(0.5)
	runs := max(1, envInt(t, "PIPEDBN_FAULT_RUNS", 200)/2)
	runSchedules(t, "TestFaultSchedulesWithBlockMomentum", cfg, slaves, envInt(t, "PIPEDBN_FAULT_SEED", 1), blockSeeds, runs, false)
}

// TestMasterRestartWithFinetune is TestMasterRestart on tinyFinetune,
// with and without block momentum.
func TestMasterRestartWithFinetune(t *testing.T) {
	for _, beta := range []float64{0, 0.5} {
		cfg, slaves := tinyFinetune(beta)
		masterRestarts(t, cfg, slaves)
	}
}

// A network trained over the protocol learns: its loss falls epoch by
// epoch, and it classifies the training rows better than chance.
func TestFinetuneLearns(t *testing.T) {
	cfg, slaves := tinyFinetune(0)
	got, _, transcript, err := simulate(cfg, slaves, nil)
	if err != nil {
		t.Fatalf("%v\n%s", err, strings.Join(transcript, "\n"))
	}
	blockCfg, _ := tinyFinetune(0.5)
	block, _, transcript, err := simulate(blockCfg, slaves, nil)
	if err != nil {
		t.Fatalf("with block momentum: %v\n%s", err, strings.Join(transcript, "\n"))
	}
	if sameParams(got[0], block[0]) {
		t.Error("block momentum 0.5 trained the network of block momentum 0: the replicas took the averages as they are")
	}
	loss := got[0].Stats.Recon
	if len(loss) != 3 || !(loss[2] < loss[0]) {
		t.Errorf("loss by epoch %v; want 3 epochs, falling", loss)
	}
	sizes := cfg.Stages[0].Net.Sizes
	net := finetune.Random(sizes[:2], sizes[2], 1)
	net.SetParams(got[0].Params)
	before := finetune.Random(sizes[:2], sizes[2], 1)
	before.SetParams(cfg.Stages[0].Net.Init)
	set := &data.Set{X: cfg.Data, Labels: cfg.Labels, N: cfg.N, Dim: 12, Classes: 3}
	if a, b := net.Evaluate(set).Accuracy, before.Evaluate(set).Accuracy; !(a > b) {
		t.Errorf("training accuracy %.3f after fine-tuning, %.3f before; want it higher", a, b)
	}
}

// TestReplicaStallSchedules replays the replica schedules that once never
// ended: a replacement of RBM_2 restarted behind replicas of RBM_3 whose
// input had ended while they waited for their final average, and got no
// credit from them to produce again the windows that RBM_3's last replica
// still needed.
func TestReplicaStallSchedules(t *testing.T) {
	cfg, slaves := tinyReplicas()
	for _, seed := range []uint64{500575, 503811, 702891, 220171, 290515} {
		runSchedules(t, "TestReplicaStallSchedules", cfg, slaves, seed, 0, 1, false)
	}
}

// TestFaultSchedulesWithSpare runs random fault schedules (half as many,
// from other seeds) on a cluster with one slave more than the RBMs: the
// spare waits, takes over the first RBM whose slave is lost, and every run
// still ends with the fault-free weights, bit for bit.
func TestFaultSchedulesWithSpare(t *testing.T) {
	runs := max(1, envInt(t, "PIPEDBN_FAULT_RUNS", 200)/2)
	cfg, slaves := tiny(2)
	tookOver := runSchedules(t, "TestFaultSchedulesWithSpare", cfg, slaves, envInt(t, "PIPEDBN_FAULT_SEED", 1), spareSeeds, runs, true)
	t.Logf("the spare finished an RBM in %d of %d schedules", tookOver, runs)
	if runs >= 50 && tookOver == 0 {
		t.Errorf("the spare never took over an RBM in %d schedules; want the schedules to exercise it", runs)
	}
}

// spareSeeds and replicaSeeds set the seeds of the schedules with a spare
// and of those with replicas apart from the others.
const (
	spareSeeds    = 100_000
	replicaSeeds  = 200_000
	finetuneSeeds = 300_000
	blockSeeds    = 400_000
)

// runSchedules runs cfg on slaves (and a spare slave) through runs random
// fault schedules from seed+offset, checks each as TestFaultSchedules says,
// and returns in how many runs the spare finished an RBM.
func runSchedules(t *testing.T, test string, cfg protocol.MasterConfig, slaves []string, seed, offset, runs uint64, spare bool) (tookOver int) {
	t.Helper()
	want, horizon, _, err := simulate(cfg, slaves, nil)
	if err != nil {
		t.Fatalf("fault-free run: %v", err)
	}
	first := seed + offset
	if spare {
		slaves = append(slaves, "spare")
	}
	for i := range runs {
		s := RandomSchedule(first+i, slaves, horizon, simTiming())
		got, took, transcript, err := simulate(cfg, slaves, s)
		fail := func(format string, args ...any) {
			t.Helper()
			tail := transcript[max(0, len(transcript)-60):]
			t.Errorf("%s\n%s\nreplay: PIPEDBN_FAULT_SEED=%d PIPEDBN_FAULT_RUNS=1 go test ./pipeline/memnet -run '%s$' -v\nlast %d of %d events:\n%s",
				fmt.Sprintf(format, args...), s, seed+i, test, len(tail), len(transcript), strings.Join(tail, "\n"))
		}
		if path := os.Getenv("PIPEDBN_FAULT_TRACE"); path != "" && runs == 1 {
			os.WriteFile(path, []byte(strings.Join(transcript, "\n")+"\n"), 0o644)
		}
		if err != nil {
			fail("run failed after %s: %v", took, err)
			continue
		}
		for j, tr := range got {
			if batches := cfg.Stages[j].Batches(cfg.N); tr.Stats.Batches != batches {
				fail("rbm %d trained %d mini-batches, want %d", j+1, tr.Stats.Batches, batches)
			}
			if !sameParams(tr, want[j]) {
				fail("rbm %d: weights differ from the fault-free run", j+1)
			}
			if tr.Slave == "spare" {
				tookOver++
			}
		}
		if testing.Verbose() && runs == 1 {
			t.Logf("%s: completed in %s of simulated time (fault-free: %s)\n%s", s, took, horizon, strings.Join(transcript, "\n"))
		}
	}
	return tookOver
}

// TestFaultFreeMatchesInProcess checks the protocol against the in-process
// schedule: the same windows, the same weights.
func TestFaultFreeMatchesInProcess(t *testing.T) {
	cfg, slaves := tiny(2)
	matchesInProcess(t, "", cfg, slaves)
}

// matchesInProcess fails unless cfg run fault-free over the network ends
// with the weights of the in-process schedule (pipeline.Pipelined).
func matchesInProcess(t *testing.T, what string, cfg protocol.MasterConfig, slaves []string) {
	t.Helper()
	got, _, _, err := simulate(cfg, slaves, nil)
	if err != nil {
		t.Fatal(err)
	}
	want, err := pipeline.Pipelined(cfg.Data, cfg.N, cfg.Stages, cfg.ShuffleSeed)
	if err != nil {
		t.Fatal(err)
	}
	for i, st := range want {
		if w := st.RBM(); !slices.Equal(got[i].RBM.W, w.W) || !slices.Equal(got[i].RBM.B, w.B) {
			t.Errorf("%srbm %d: the protocol's weights differ from the in-process schedule's", what, i+1)
		}
	}
}

// TestNarrowLinksMatchInProcess checks middle results rounded and sent
// narrower (float16, uint8; samples as bits) against the in-process
// schedule: encoded on the network, through fault schedules too, the same
// weights, bit for bit.
func TestNarrowLinksMatchInProcess(t *testing.T) {
	for _, tc := range []struct {
		p      pipeline.Precision
		middle rbm.Middle
	}{{pipeline.Float16, rbm.Probabilities}, {pipeline.Uint8, rbm.Probabilities}, {pipeline.Uint8, rbm.Samples}} {
		cfg, slaves := tiny(2)
		for i := range cfg.Stages {
			cfg.Stages[i].MiddlePrecision, cfg.Stages[i].Middle = tc.p, tc.middle
		}
		matchesInProcess(t, fmt.Sprintf("%v %v: ", tc.p, tc.middle), cfg, slaves)
		runSchedules(t, "TestNarrowLinksMatchInProcess", cfg, slaves, 1, 0, 10, false)
	}
}

// Ways to make data exact in a narrow precision.
var (
	narrowUint8 = func(v float32) float32 { return narrow.FromUint8(narrow.Uint8(v)) }
	narrowBits  = func(v float32) float32 { return float32(narrow.Bit(v)) }
)

// quantized returns a copy of x with f applied to every value.
func quantized(x []float32, f func(float32) float32) []float32 {
	out := make([]float32, len(x))
	for i, v := range x {
		out[i] = f(v)
	}
	return out
}

// TestNarrowDataMatchesInProcess checks data windows sent at the narrow
// precision their values are exact in (bytes, bits): the weights of the
// in-process schedule, bit for bit, through fault schedules too, and RBM_1
// receives fewer bytes: of these tiny windows' messages, the values are
// half the bytes at float32 (so bytes save more than 2 times, bits 4).
func TestNarrowDataMatchesInProcess(t *testing.T) {
	for _, tc := range []struct {
		name  string
		f     func(float32) float32
		want  pipeline.Precision
		ratio float64
	}{{"uint8", narrowUint8, pipeline.Uint8, 2}, {"bits", narrowBits, pipeline.Binary, 4}} {
		cfg, slaves := tiny(2)
		cfg.Data = quantized(cfg.Data, tc.f)
		if p := pipeline.ExactPrecision(cfg.Data); p != tc.want {
			t.Fatalf("%s: ExactPrecision = %v; want %v", tc.name, p, tc.want)
		}
		wide, _, _, err := simulate(cfg, slaves, nil)
		if err != nil {
			t.Fatal(err)
		}
		cfg.DataPrecision = tc.want
		matchesInProcess(t, tc.name+" data: ", cfg, slaves)
		narrow, _, _, err := simulate(cfg, slaves, nil)
		if err != nil {
			t.Fatal(err)
		}
		if r := float64(wide[0].BytesIn) / float64(narrow[0].BytesIn); r <= tc.ratio {
			t.Errorf("%s data: RBM_1 received %d bytes, %d at float32: %.2f times fewer; want more than %v", tc.name, narrow[0].BytesIn, wide[0].BytesIn, r, tc.ratio)
		}
		runSchedules(t, "TestNarrowDataMatchesInProcess", cfg, slaves, 1, 0, 10, false)
	}
}

// TestImpossibleSchedules checks that a run that cannot complete fails
// with ErrSlaveLost, saying why: a crash without checkpoints, and a master
// cut off from every slave for longer than the join timeout.
func TestImpossibleSchedules(t *testing.T) {
	cfg, slaves := tiny(0)
	_, _, _, err := simulate(cfg, slaves, &Schedule{Faults: []Fault{{At: 200 * time.Millisecond, Kind: Crash, Node: slaves[1]}}})
	if !errors.Is(err, protocol.ErrSlaveLost) || !strings.Contains(err.Error(), "checkpoint_every = 0") {
		t.Errorf("crash without checkpoints: err = %v; want ErrSlaveLost naming reliability.checkpoint_every", err)
	}
	cfg, slaves = tiny(2)
	_, _, _, err = simulate(cfg, slaves, &Schedule{Faults: []Fault{{At: 200 * time.Millisecond, Kind: Isolate, Node: protocol.MasterName, For: time.Hour}}})
	if !errors.Is(err, protocol.ErrSlaveLost) || !strings.Contains(err.Error(), "join_timeout") {
		t.Errorf("master isolated for an hour: err = %v; want ErrSlaveLost naming cluster.join_timeout", err)
	}
}

// TestMasterRestart crashes the master early, midway and late in a run and
// restarts it half a second later: the new incarnation reads the store,
// stops the slaves of the old one when they speak, takes them back when
// their supervisors restart them, and completes the run with the weights
// of the fault-free run, bit for bit.
func TestMasterRestart(t *testing.T) {
	cfg, slaves := tiny(2)
	masterRestarts(t, cfg, slaves)
}

// TestMasterRestartWithReplicas is TestMasterRestart on tinyReplicas: the
// replicas of an RBM resume together, after an average.
func TestMasterRestartWithReplicas(t *testing.T) {
	cfg, slaves := tinyReplicas()
	masterRestarts(t, cfg, slaves)
}

func masterRestarts(t *testing.T, cfg protocol.MasterConfig, slaves []string) {
	want, horizon, _, err := simulate(cfg, slaves, nil)
	if err != nil {
		t.Fatalf("fault-free run: %v", err)
	}
	for _, at := range []time.Duration{horizon / 10, horizon / 2, horizon * 9 / 10} {
		s := &Schedule{Faults: []Fault{{At: at, Kind: MasterRestart, For: 500 * time.Millisecond}}}
		got, took, transcript, err := simulate(cfg, slaves, s)
		log := strings.Join(transcript, "\n")
		if err != nil {
			t.Fatalf("%s: %v\n%s", s, err, log)
		}
		for j, tr := range got {
			if !sameParams(tr, want[j]) {
				t.Errorf("%s: rbm %d: weights differ from the fault-free run", s, j+1)
			}
		}
		for _, event := range []string{"restart master (incarnation 1)", "the master restarted"} {
			if !strings.Contains(log, event) {
				t.Errorf("%s: no %q in the transcript:\n%s", s, event, log)
			}
		}
		t.Logf("%s: completed in %s of simulated time (fault-free: %s)", s, took, horizon)
	}
}
