package natsnet

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/nats-io/nats.go"
	"go.uber.org/goleak"

	"github.com/pipedbn/pipedbn/blas"
	"github.com/pipedbn/pipedbn/data"
	"github.com/pipedbn/pipedbn/internal/memlimit"
	"github.com/pipedbn/pipedbn/internal/testbin"
	"github.com/pipedbn/pipedbn/pipeline"
	"github.com/pipedbn/pipedbn/pipeline/driver"
	"github.com/pipedbn/pipedbn/pipeline/protocol"
	"github.com/pipedbn/pipedbn/rbm"
)

var slaveBin string

func TestMain(m *testing.M) {
	var err error
	if slaveBin, err = testbin.Build("github.com/pipedbn/pipedbn/cmd/slave"); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	code := m.Run()
	// Every master, slave, endpoint and embedded server a test started has
	// ended with it: no goroutine of theirs lives on. Ignored: nats.go
	// v1.55's object store Put (jetstream/object.go) cleans up its
	// publisher before the goroutine newAsyncReply starts has read its
	// status channel, which then waits on a nil channel for ever: one
	// goroutine now and then per stored checkpoint, upstream's.
	if code == 0 {
		if err := goleak.Find(goleak.IgnoreTopFunction("github.com/nats-io/nats.go/jetstream.(*jetStream).resetPendingAcksOnReconnect")); err != nil {
			fmt.Fprintln(os.Stderr, "goroutines leaked:", err)
			code = 1
		}
	}
	os.Exit(code)
}

func stageConfigs(layers []int, epochs, batch, k int) []pipeline.StageConfig {
	var cfgs []pipeline.StageConfig
	for i := 1; i < len(layers); i++ {
		cfgs = append(cfgs, pipeline.StageConfig{
			Index: i, Visible: layers[i-1], Hidden: layers[i], Units: rbm.Bernoulli,
			Epochs: epochs, BatchSize: batch, K: k, CDK: 1, Middle: rbm.Probabilities,
			LearningRate: [2]float64{0.1, 0.05}, Momentum: [2]float64{0.5, 0.9},
			WeightDecay: 0.0002, Seed: uint64(1000 + i),
		})
	}
	return cfgs
}

func testLogger(t *testing.T) hclog.Logger {
	return hclog.New(&hclog.LoggerOptions{Output: hclog.DefaultOutput, Level: hclog.Warn, Name: t.Name()})
}

// TestSlaveProcessesMatchInMemory runs a pipelined pre-training with an
// embedded nats-server and three separate slave processes, and checks that
// the weights are bit-identical to the in-memory schedule with the same
// seeds: the transport changes nothing, whether the middle results travel
// as float32, rounded to float16 and uint8, or as bits (samples).
func TestSlaveProcessesMatchInMemory(t *testing.T) {
	const n, epochs, batch, k = 300, 3, 16, 4 // 19 batches an epoch, the last short
	layers := []int{49, 32, 24, 16}
	x := examples(1, n, layers[0])
	var plainOut int64 // RBM_1's bytes out as float32
	for _, tc := range []struct {
		name string
		set  func(cfgs []pipeline.StageConfig)
	}{
		{"float32", func([]pipeline.StageConfig) {}},
		{"float16 and uint8", func(cfgs []pipeline.StageConfig) {
			cfgs[0].MiddlePrecision, cfgs[1].MiddlePrecision = pipeline.Float16, pipeline.Uint8
		}},
		{"bits", func(cfgs []pipeline.StageConfig) {
			cfgs[0].Middle, cfgs[1].MiddlePrecision = rbm.Samples, pipeline.Uint8
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfgs := stageConfigs(layers, epochs, batch, k)
			pipeline.PlanSettle(cfgs, n, 0.1, 0.05, pipeline.SettleAfter) // F = 1, raised to the floor of pipeline.MinSettleBatches mini-batches
			tc.set(cfgs)
			got := slaveProcessesMatch(t, x, n, cfgs)
			if len(got) == 0 {
				return
			}
			t.Logf("rbm 1 sent %d bytes, rbm 2 %d", got[0].BytesOut, got[1].BytesOut)
			if tc.name == "float32" {
				plainOut = got[0].BytesOut
			} else if got[0].BytesOut >= plainOut*6/10 {
				t.Errorf("rbm 1 sent %d bytes; want under 0.6 x the %d it sends as float32", got[0].BytesOut, plainOut)
			}
		})
	}
}

// slaveProcessesMatch runs cfgs on three slave processes over NATS, checks
// that they train what Pipelined does, bit for bit, and that each RBM took
// the bytes the one below sent, and returns what they trained.
func slaveProcessesMatch(t *testing.T, x []float32, n int, cfgs []pipeline.StageConfig) []protocol.Trained {
	blas.SetThreads(1)
	want, err := pipeline.Pipelined(x, n, cfgs, 77)
	if err != nil {
		t.Fatal(err)
	}
	srv, nc := serve(t)

	var wg sync.WaitGroup
	logs := make([]bytes.Buffer, len(cfgs))
	for i := range cfgs {
		cmd := exec.Command(slaveBin, "--nats", srv.URL(), "--name", "proc-"+strconv.Itoa(i+1), "--threads", "1", "--join-timeout", "30s")
		cmd.Stderr = &logs[i]
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := cmd.Wait(); err != nil {
				t.Errorf("slave %d: %v\n%s", i+1, err, logs[i].String())
			}
		}()
	}
	var mu sync.Mutex
	statuses := 0
	got, err := NewMaster(nc, testLogger(t)).Run(context.Background(), driver.Plan{
		MasterConfig: protocol.MasterConfig{
			Run:         protocol.Run{ID: "e2e"},
			Stages:      cfgs,
			Data:        x,
			N:           n,
			ShuffleSeed: 77,
			Credits:     2,
			Timing:      protocol.Timing{JoinTimeout: 30 * time.Second},
			Observer: protocol.Observer{
				Hooks: pipeline.Hooks{Window: func(pipeline.Stats) { mu.Lock(); statuses++; mu.Unlock() }},
			},
		},
	})
	wg.Wait()
	if err != nil {
		t.Fatal(err)
	}
	for i, tr := range got {
		w := want[i].RBM()
		if !slices.Equal(tr.RBM.W, w.W) || !slices.Equal(tr.RBM.A, w.A) || !slices.Equal(tr.RBM.B, w.B) {
			t.Errorf("rbm %d: weights over NATS differ from the in-memory run", i+1)
		}
		if wantB := cfgs[i].Batches(n); tr.Stats.Batches != wantB {
			t.Errorf("rbm %d: %d batches; want %d", i+1, tr.Stats.Batches, wantB)
		}
		if !slices.Equal(tr.Stats.Recon, want[i].Stats().Recon) {
			t.Errorf("rbm %d: recon %v; want %v", i+1, tr.Stats.Recon, want[i].Stats().Recon)
		}
		if tr.BytesIn == 0 || (i+1 < len(got) && tr.BytesOut == 0) {
			t.Errorf("rbm %d: bytes in %d, out %d; want traffic counted", i+1, tr.BytesIn, tr.BytesOut)
		}
		// Each window once at its wire length, whatever NATS did with
		// it: what one RBM sent, the next took.
		if i+1 < len(got) && tr.BytesOut != got[i+1].BytesIn {
			t.Errorf("rbm %d sent %d bytes, rbm %d took %d; want them equal", i+1, tr.BytesOut, i+2, got[i+1].BytesIn)
		}
		if tr.Slave != "proc-"+strconv.Itoa(i+1) && tr.Slave == "" {
			t.Errorf("rbm %d: slave name %q", i+1, tr.Slave)
		}
	}
	return got
}

// TestSlowSlaveLosesNothing makes the middle slave ten times slower than the
// others: the fast producer below must wait for credit (nothing dropped,
// every batch trained) and the slow slave's pending input must stay within
// its credits.
func TestSlowSlaveLosesNothing(t *testing.T) {
	const n, epochs, batch, k, credits = 400, 2, 10, 2, 3
	layers := []int{49, 40, 30, 20}
	x := examples(2, n, layers[0])
	cfgs := stageConfigs(layers, epochs, batch, k)
	srv, nc := serve(t)

	var maxPending int
	var pmu sync.Mutex
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var wg sync.WaitGroup
	for i := range cfgs {
		opt := SlaveOptions{URL: srv.URL(), SlaveOptions: driver.SlaveOptions{Name: fmt.Sprintf("s%d", i+1), Threads: 1, JoinTimeout: 20 * time.Second, Logger: testLogger(t)}}
		if i == 1 {
			// Ten times slower: sleep nine times the window's training time.
			opt.AfterWindow = func(busy time.Duration, pending int) {
				time.Sleep(9*busy + 2*time.Millisecond)
				pmu.Lock()
				maxPending = max(maxPending, pending)
				pmu.Unlock()
			}
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := RunSlave(ctx, opt); err != nil {
				t.Errorf("slave %d: %v", i+1, err)
			}
		}()
	}
	got, err := NewMaster(nc, testLogger(t)).Run(ctx, driver.Plan{
		MasterConfig: protocol.MasterConfig{
			Run:         protocol.Run{ID: "slow"},
			Stages:      cfgs,
			Data:        x,
			N:           n,
			ShuffleSeed: 3,
			Credits:     credits,
			Timing:      protocol.Timing{JoinTimeout: 20 * time.Second},
		},
	})
	wg.Wait()
	if err != nil {
		t.Fatal(err)
	}
	for i, tr := range got {
		if wantB := epochs * pipeline.BatchesPerEpoch(n, batch); tr.Stats.Batches != wantB {
			t.Errorf("rbm %d: %d batches; want %d (windows dropped?)", i+1, tr.Stats.Batches, wantB)
		}
	}
	if got[0].Stats.WaitCredit == 0 && got[0].Stats.WaitInput == 0 {
		t.Errorf("rbm 1 never waited; want it held back by the slow rbm 2")
	}
	windowBytes := batch * k * layers[1] * 4
	if bound := (credits + 1) * (windowBytes + 4096); maxPending > bound {
		t.Errorf("slow slave's pending input peaked at %d bytes; want <= %d (credits %d x window %d bytes)", maxPending, bound, credits, windowBytes)
	}
	t.Logf("slow slave's pending input peaked at %d bytes (window %d bytes, %d credits)", maxPending, windowBytes, credits)
}

func TestSlaveErrors(t *testing.T) {
	t.Parallel()
	// Nothing listens on this port: a clear error, fast.
	err := RunSlave(context.Background(), SlaveOptions{URL: "nats://127.0.0.1:1", SlaveOptions: driver.SlaveOptions{Name: "x", JoinTimeout: time.Second}})
	if err == nil || !bytes.Contains([]byte(err.Error()), []byte("cannot reach NATS at nats://127.0.0.1:1")) {
		t.Errorf("RunSlave(no server) = %v; want a 'cannot reach NATS' error", err)
	}
	srv, err := StartEmbedded()
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Shutdown()
	err = RunSlave(context.Background(), SlaveOptions{URL: srv.URL(), SlaveOptions: driver.SlaveOptions{Name: "lonely", JoinTimeout: 1500 * time.Millisecond}})
	if err == nil || !bytes.Contains([]byte(err.Error()), []byte("no master answered")) {
		t.Errorf("RunSlave(no master) = %v; want a 'no master answered' error", err)
	}
	err = RunSlave(context.Background(), SlaveOptions{URL: srv.URL(), SlaveOptions: driver.SlaveOptions{Name: "bad name"}})
	if err == nil {
		t.Error("RunSlave(name with a space) = nil; want an error")
	}
}

func TestJoinTimeoutNamesWhoCame(t *testing.T) {
	t.Parallel()
	srv, nc := serve(t)
	ctx, cancel := context.WithCancel(context.Background())
	slaveDone := make(chan error, 1)
	go func() {
		slaveDone <- RunSlave(ctx, SlaveOptions{URL: srv.URL(), SlaveOptions: driver.SlaveOptions{Name: "early", JoinTimeout: 5 * time.Second}})
	}()
	defer func() { cancel(); <-slaveDone }() // before serve's cleanup stops the server
	_, err := NewMaster(nc, nil).Run(ctx, driver.Plan{MasterConfig: protocol.MasterConfig{Run: protocol.Run{ID: "wait"}, Stages: stageConfigs([]int{4, 3, 2}, 1, 2, 1), Data: make([]float32, 8), N: 2, Credits: 1, Timing: protocol.Timing{JoinTimeout: 1500 * time.Millisecond}}})
	if err == nil || !bytes.Contains([]byte(err.Error()), []byte("1 of 2 slaves joined (early)")) {
		t.Errorf("Run with one slave of two = %v; want a join timeout naming 'early'", err)
	}
}

// A slave the master does not need (a spare beyond the L it waits for)
// leaves with a clear line and no error: exit status 0 for `slave`.
func TestSpareSlaveIsNotAnError(t *testing.T) {
	t.Parallel()
	srv, nc := serve(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	const slaves = 3 // one more than the RBMs
	cfgs := stageConfigs([]int{9, 6, 4}, 1, 4, 1)
	ran := make(chan error, 1)
	go func() {
		_, err := NewMaster(nc, testLogger(t)).Run(ctx, driver.Plan{MasterConfig: protocol.MasterConfig{Run: protocol.Run{ID: "spare"}, Stages: cfgs, Data: examples(3, 16, 9), N: 16, Credits: 2, Timing: protocol.Timing{JoinTimeout: 20 * time.Second}}})
		ran <- err
	}()
	// The master listens before the slaves register, and the run lasts
	// past their next registration: the spare is answered, not left to
	// time out on a master that is gone.
	time.Sleep(300 * time.Millisecond)
	errs := make(chan error, slaves)
	for i := range slaves {
		go func() {
			errs <- RunSlave(ctx, SlaveOptions{URL: srv.URL(), SlaveOptions: driver.SlaveOptions{Name: fmt.Sprintf("sp%d", i+1), Threads: 1, JoinTimeout: 20 * time.Second, WindowDelay: 300 * time.Millisecond}})
		}()
	}
	if err := <-ran; err != nil {
		t.Fatal(err)
	}
	for range slaves {
		if err := <-errs; err != nil {
			t.Errorf("a slave of a run of %d RBMs with %d slaves: %v; want nil for the spare too", len(cfgs), slaves, err)
		}
	}
}

// examples returns n rows of dim values in [0,1]: data.Synthetic's noisy
// prototypes, which an RBM learns quickly.
func examples(seed uint64, n, dim int) []float32 {
	return data.Synthetic(seed, n, dim, 4).X
}

// A slave process killed mid-run is declared lost within LostAfter, and the
// run stops with an error naming it instead of waiting forever.
func TestKilledSlaveIsDeclaredLost(t *testing.T) {
	const n = 4000
	layers := []int{49, 40, 30}
	x := examples(6, n, layers[0])
	cfgs := stageConfigs(layers, 50, 10, 1) // long enough to be killed mid-run
	srv, nc := serve(t)
	var cmds []*exec.Cmd
	for i := range cfgs {
		cmd := exec.Command(slaveBin, "--nats", srv.URL(), "--name", fmt.Sprintf("k%d", i+1), "--threads", "1")
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		cmds = append(cmds, cmd)
	}
	defer func() {
		for _, c := range cmds {
			c.Process.Kill()
			c.Wait()
		}
	}()
	var once sync.Once
	var killedAt atomic.Int64 // unix nanoseconds
	hooks := pipeline.Hooks{Window: func(s pipeline.Stats) {
		if s.Index == 2 && s.Batches > 0 {
			once.Do(func() {
				killedAt.Store(time.Now().UnixNano())
				for _, c := range cmds {
					// The slave of RBM 2 is whichever process is named in s.Worker.
					if c.Args[4] == s.Worker {
						c.Process.Kill()
					}
				}
			})
		}
	}}
	_, err := NewMaster(nc, testLogger(t)).Run(context.Background(), driver.Plan{
		MasterConfig: protocol.MasterConfig{
			Run:         protocol.Run{ID: "kill"},
			Stages:      cfgs,
			Data:        x,
			N:           n,
			ShuffleSeed: 1,
			Credits:     2,
			Timing:      protocol.Timing{JoinTimeout: 20 * time.Second, LostAfter: 2 * time.Second},
			Observer: protocol.Observer{
				Hooks: hooks,
			},
		},
	})
	if !errors.Is(err, protocol.ErrSlaveLost) {
		t.Fatalf("Run with a killed slave = %v; want ErrSlaveLost", err)
	}
	if d := time.Since(time.Unix(0, killedAt.Load())); d > 10*time.Second {
		t.Errorf("loss declared %s after the kill; want it soon after LostAfter (2s): within 10s even on a loaded machine", d)
	}
	if !strings.Contains(err.Error(), "rbm 2") {
		t.Errorf("error %q does not name rbm 2", err)
	}
}

// serve starts an embedded nats-server on a random port and connects the
// test's master to it; both end with the test.
func serve(t *testing.T) (*Embedded, *nats.Conn) {
	t.Helper()
	return serveWith(t, EmbeddedOptions{})
}

// serveWith is serve of a server started with opts.
func serveWith(t *testing.T, opts EmbeddedOptions) (*Embedded, *nats.Conn) {
	t.Helper()
	srv, err := StartEmbeddedWith(opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Shutdown)
	nc, err := Connect(srv.URL(), "test-master")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	return srv, nc
}

// A slave on a machine too small for the RBM it is assigned refuses it,
// and the master's run fails with the slave's reason, in one line.
func TestSlaveTooSmallFailsTheRun(t *testing.T) {
	t.Parallel()
	srv, nc := serve(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	small := func() (memlimit.Limit, bool) {
		return memlimit.Limit{Bytes: 1 << 20, From: "/sys/fs/cgroup/small/memory.max"}, true
	}
	slaveDone := make(chan error, 1)
	go func() {
		slaveDone <- RunSlave(ctx, SlaveOptions{URL: srv.URL(), SlaveOptions: driver.SlaveOptions{Name: "tiny", Threads: 1, JoinTimeout: 20 * time.Second, MemoryLimit: small}})
	}()
	_, err := NewMaster(nc, testLogger(t)).Run(ctx, driver.Plan{MasterConfig: protocol.MasterConfig{Run: protocol.Run{ID: "small"}, Stages: stageConfigs([]int{9, 6}, 1, 4, 1), Data: examples(3, 16, 9), N: 16, Credits: 2, Timing: protocol.Timing{JoinTimeout: 20 * time.Second}}})
	want := "rbm 1 on slave tiny: assignment: cannot hold RBM_1 (9x6): it needs about "
	if err == nil || !strings.Contains(err.Error(), want) || !strings.Contains(err.Error(), "this process's cgroup allows 1.00 MiB (/sys/fs/cgroup/small/memory.max)") || strings.Contains(err.Error(), "\n") {
		t.Errorf("Run with a slave too small = %v; want one line holding %q and the limit", err, want)
	}
	if err := <-slaveDone; err == nil || !strings.Contains(err.Error(), "cannot hold RBM_1") {
		t.Errorf("the slave too small: %v; want its refusal", err)
	}
}
