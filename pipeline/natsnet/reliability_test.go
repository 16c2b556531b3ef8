package natsnet

import (
	"bytes"
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"net"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/pipedbn/pipedbn/blas"
	"github.com/pipedbn/pipedbn/messages"
	"github.com/pipedbn/pipedbn/pipeline"
	"github.com/pipedbn/pipedbn/pipeline/driver"
	"github.com/pipedbn/pipedbn/pipeline/protocol"
	"github.com/pipedbn/pipedbn/rbm"
)

// chaosSetup is the small pipelined run the reliability tests interrupt: 3
// RBMs, 2 epochs of 30 windows of K = 2 mini-batches, slaves slowed to ~25 ms
// a window so that a run lasts a few seconds.
type chaosSetup struct {
	n, epochs, batch, k, credits, every int
	layers                              []int
	x                                   []float32
	cfgs                                []pipeline.StageConfig
	want                                []*pipeline.Stage
}

func newChaosSetup(t *testing.T) *chaosSetup {
	c := &chaosSetup{n: 600, epochs: 2, batch: 10, k: 2, credits: 2, every: 3, layers: []int{49, 32, 24, 16}}
	c.x = examples(5, c.n, c.layers[0])
	c.cfgs = stageConfigs(c.layers, c.epochs, c.batch, c.k)
	blas.SetThreads(1)
	var err error
	// The uninterrupted run, in memory: the NATS transport is bit-identical
	// to it (TestSlaveProcessesMatchInMemory).
	c.want, err = pipeline.Pipelined(c.x, c.n, c.cfgs, 77)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// check compares a run's RBMs with the uninterrupted run: every mini-batch
// trained exactly once (a lost window would leave fewer, a window applied
// twice more) and the weights bit-identical, since a replacement replays the
// same windows from a checkpoint holding the whole training state.
func (c *chaosSetup) check(t *testing.T, got []protocol.Trained) {
	t.Helper()
	wantBatches := c.epochs * pipeline.BatchesPerEpoch(c.n, c.batch)
	for i, tr := range got {
		if tr.Stats.Batches != wantBatches {
			t.Errorf("rbm %d: %d mini-batches trained; want %d (lost or applied twice)", i+1, tr.Stats.Batches, wantBatches)
		}
		w := c.want[i].RBM()
		if !slices.Equal(tr.RBM.W, w.W) || !slices.Equal(tr.RBM.A, w.A) || !slices.Equal(tr.RBM.B, w.B) {
			t.Errorf("rbm %d: weights differ from the uninterrupted run", i+1)
		}
		if !slices.Equal(tr.Stats.Recon, c.want[i].Stats().Recon) {
			t.Errorf("rbm %d: recon errors %v; uninterrupted %v", i+1, tr.Stats.Recon, c.want[i].Stats().Recon)
		}
	}
}

// procs runs slave processes and restarts them on request.
type procs struct {
	t      *testing.T
	url    string
	rename bool
	mu     sync.Mutex
	cmds   map[string]*exec.Cmd
	logs   map[string]*bytes.Buffer
	wg     sync.WaitGroup
}

func newProcs(t *testing.T, url string) *procs {
	return &procs{t: t, url: url, cmds: map[string]*exec.Cmd{}, logs: map[string]*bytes.Buffer{}}
}

func (p *procs) start(name string, extra ...string) error {
	args := append([]string{"--nats", p.url, "--name", name, "--threads", "1", "--join-timeout", "30s", "--window-delay", "25ms", "--status-every", "100ms"}, extra...)
	cmd := exec.Command(slaveBin, args...)
	var log bytes.Buffer
	cmd.Stderr = &log
	cmd.Env = append(os.Environ(), "GOMAXPROCS=1")
	if err := cmd.Start(); err != nil {
		return err
	}
	p.mu.Lock()
	p.cmds[name], p.logs[name] = cmd, &log
	p.mu.Unlock()
	p.wg.Add(1)
	go func() { defer p.wg.Done(); cmd.Wait() }()
	return nil
}

// startAll starts n slaves named prefix1..prefixN.
func (p *procs) startAll(t *testing.T, prefix string, n int) {
	for i := 1; i <= n; i++ {
		if err := p.start(fmt.Sprintf("%s%d", prefix, i)); err != nil {
			t.Fatal(err)
		}
	}
}

func (p *procs) kill(name string) {
	p.mu.Lock()
	cmd := p.cmds[name]
	p.mu.Unlock()
	cmd.Process.Signal(syscall.SIGKILL)
}

// respawn is the Plan's Respawn: a new process under the lost one's name,
// or with rename under a new name (as a new slave of a cluster joins), which
// makes the master relink the lost slave's neighbours to it.
func (p *procs) respawn(_ context.Context, _ int, lost string) error {
	p.kill(lost)
	if p.rename {
		return p.start(lost + "-r")
	}
	return p.start(lost)
}

func (p *procs) stop() {
	p.mu.Lock()
	for _, c := range p.cmds {
		c.Process.Signal(syscall.SIGTERM)
	}
	p.mu.Unlock()
	p.wg.Wait()
}

func (p *procs) dumpLogs() {
	p.mu.Lock()
	defer p.mu.Unlock()
	for n, l := range p.logs {
		p.t.Logf("log of %s:\n%s", n, l.String())
	}
}

// TestChaosKilledSlavesAreReplaced SIGKILLs a random slave process at a
// random point of a run, again and again (PIPEDBN_CHAOS_RUNS runs, default
// 2; the closing note of issue 7 quotes 5): every run completes, the loss is
// detected within 5 s with the default LostAfter, the replacement redoes at
// most C x K mini-batches, and the weights equal the uninterrupted run's bit
// for bit.
func TestChaosKilledSlavesAreReplaced(t *testing.T) {
	runs := 2
	if s := os.Getenv("PIPEDBN_CHAOS_RUNS"); s != "" {
		runs, _ = strconv.Atoi(s)
	}
	c := newChaosSetup(t)
	rng := rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), 7))
	total := c.epochs * pipeline.WindowsPerEpoch(c.n, c.batch, c.k)
	for run := 1; run <= runs; run++ {
		victim := 1 + rng.IntN(len(c.cfgs))
		// A random window past the first checkpoint and before the end.
		at := c.every + rng.IntN(total-3*c.every)
		// Every other replacement joins under a new name.
		rename := run%2 == 0
		t.Run(fmt.Sprintf("run%d-rbm%d-window%d-rename=%v", run, victim, at, rename), func(t *testing.T) {
			srv, err := StartEmbeddedWith(EmbeddedOptions{StoreDir: t.TempDir()})
			if err != nil {
				t.Fatal(err)
			}
			defer srv.Shutdown()
			nc, err := nats.Connect(srv.URL())
			if err != nil {
				t.Fatal(err)
			}
			defer nc.Close()
			store, err := OpenJetStreamStore(context.Background(), nc, "chaos"+strconv.Itoa(run))
			if err != nil {
				t.Fatal(err)
			}
			ps := newProcs(t, srv.URL())
			ps.rename = rename
			defer ps.stop()
			ps.startAll(t, "c", len(c.cfgs))
			var (
				mu       sync.Mutex
				killedAt time.Time
				detected time.Duration
				recs     []protocol.Recovery
			)
			var victimName string
			got, err := NewMaster(nc, testLogger(t)).Run(context.Background(), driver.Plan{
				MasterConfig: protocol.MasterConfig{
					Run:             protocol.Run{ID: "chaos" + strconv.Itoa(run)},
					Stages:          c.cfgs,
					Data:            c.x,
					N:               c.n,
					ShuffleSeed:     77,
					Credits:         c.credits,
					CheckpointEvery: c.every,
					Timing:          protocol.Timing{JoinTimeout: 30 * time.Second},
					Observer: protocol.Observer{
						Hooks: pipeline.Hooks{Window: func(s pipeline.Stats) {
							mu.Lock()
							defer mu.Unlock()
							if s.Index == victim && killedAt.IsZero() && s.Batches >= at*c.k && s.State != pipeline.Done {
								victimName = s.Worker
								ps.kill(victimName)
								killedAt = time.Now()
							}
						}},
						Lost: func(rbm int, slave string, silent time.Duration) {
							mu.Lock()
							defer mu.Unlock()
							if rbm == victim && slave == victimName && detected == 0 {
								detected = time.Since(killedAt)
							}
						},
						Recovered: func(r protocol.Recovery) { mu.Lock(); recs = append(recs, r); mu.Unlock() },
					},
				},
				Store:   store,
				Respawn: ps.respawn,
			})
			if err != nil {
				ps.dumpLogs()
				t.Fatal(err)
			}
			c.check(t, got)
			mu.Lock()
			defer mu.Unlock()
			if killedAt.IsZero() {
				t.Fatalf("the run ended before rbm %d reached window %d", victim, at)
			}
			if detected <= 0 || detected > 5*time.Second {
				t.Errorf("loss of %s detected %s after the kill; want within 5s", victimName, detected)
			}
			if len(recs) != 1 {
				t.Fatalf("%d recoveries %+v; want 1", len(recs), recs)
			}
			r := recs[0]
			if wantName := victimName + map[bool]string{true: "-r"}[rename]; r.Replacement != wantName || got[victim-1].Slave != wantName {
				t.Errorf("rbm %d replaced by %s and finished by %s; want %s", victim, r.Replacement, got[victim-1].Slave, wantName)
			}
			if r.Redone > c.every*c.k {
				t.Errorf("replacement redid %d mini-batches; want <= C x K = %d", r.Redone, c.every*c.k)
			}
			t.Logf("killed %s at >= batch %d; detected after %s; resumed at window %d (batch %d); redone >= %d batches (C x K = %d)",
				victimName, r.LostAtBatch, detected.Round(10*time.Millisecond), r.ResumedAtWindow, r.ResumedAtBatch, r.Redone, c.every*c.k)
		})
	}
}

// freePort returns a TCP port nothing listens on now.
func freePort(t *testing.T) int {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// TestNATSRestartLosesNothing stops the NATS server in the middle of a run
// and starts it again a second later on the same port and store: the
// windows in flight are lost by core NATS, asked for again and sent again
// from what the producers keep; the checkpoints are in the JetStream store,
// which the restart keeps; the run completes with the uninterrupted run's
// weights.
func TestNATSRestartLosesNothing(t *testing.T) {
	c := newChaosSetup(t)
	opts := EmbeddedOptions{Port: freePort(t), StoreDir: t.TempDir()}
	srv, err := StartEmbeddedWith(opts)
	if err != nil {
		t.Fatal(err)
	}
	var smu sync.Mutex
	defer func() { smu.Lock(); srv.Shutdown(); smu.Unlock() }()
	nc, err := Connect(srv.URL(), "master")
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	store, err := OpenJetStreamStore(context.Background(), nc, "restart")
	if err != nil {
		t.Fatal(err)
	}
	ps := newProcs(t, srv.URL())
	defer ps.stop()
	ps.startAll(t, "n", len(c.cfgs))
	var once sync.Once
	restarted := make(chan error, 1)
	got, err := NewMaster(nc, testLogger(t)).Run(context.Background(), driver.Plan{
		MasterConfig: protocol.MasterConfig{
			Run:             protocol.Run{ID: "restart"},
			Stages:          c.cfgs,
			Data:            c.x,
			N:               c.n,
			ShuffleSeed:     77,
			Credits:         c.credits,
			CheckpointEvery: c.every,
			Timing:          protocol.Timing{JoinTimeout: 30 * time.Second},
			Observer: protocol.Observer{
				Hooks: pipeline.Hooks{Window: func(s pipeline.Stats) {
					if s.Index == 2 && s.Batches >= 20 {
						once.Do(func() {
							go func() {
								smu.Lock()
								defer smu.Unlock()
								srv.Shutdown()
								time.Sleep(time.Second)
								srv, err = StartEmbeddedWith(opts)
								restarted <- err
							}()
						})
					}
				}},
			},
		},
		Store: store,
	})
	if err != nil {
		ps.dumpLogs()
		t.Fatal(err)
	}
	select {
	case err := <-restarted:
		if err != nil {
			t.Fatal(err)
		}
	default:
		t.Fatal("the run ended before the server was restarted")
	}
	c.check(t, got)
	if os.Getenv("PIPEDBN_TEST_LOGS") != "" {
		ps.dumpLogs()
	}
	names, err := store.List(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("store after the run: %v", names)
}

// TestMasterRestartResumes interrupts the master in the middle of a run (as
// SIGINT does): the slaves leave checkpoints, the master stores them and
// stops. Then the server restarts on the same store, as the embedded one
// does with a restarted master, and a new master with Resume and new slave
// processes finishes the run, with the uninterrupted run's weights.
func TestMasterRestartResumes(t *testing.T) {
	c := newChaosSetup(t)
	opts := EmbeddedOptions{StoreDir: t.TempDir()}
	srv, err := StartEmbeddedWith(opts)
	if err != nil {
		t.Fatal(err)
	}
	nc, err := nats.Connect(srv.URL())
	if err != nil {
		t.Fatal(err)
	}
	store, err := OpenJetStreamStore(context.Background(), nc, "resume")
	if err != nil {
		t.Fatal(err)
	}
	ps := newProcs(t, srv.URL())
	ps.startAll(t, "a", len(c.cfgs))
	ctx, cancel := context.WithCancel(context.Background())
	plan := driver.Plan{
		MasterConfig: protocol.MasterConfig{
			Run:             protocol.Run{ID: "resume"},
			Stages:          c.cfgs,
			Data:            c.x,
			N:               c.n,
			ShuffleSeed:     77,
			Credits:         c.credits,
			CheckpointEvery: c.every,
			Timing:          protocol.Timing{JoinTimeout: 30 * time.Second},
			Observer: protocol.Observer{
				Hooks: pipeline.Hooks{Window: func(s pipeline.Stats) {
					if s.Index == 3 && s.Batches >= 30 {
						cancel()
					}
				}},
			},
		},
		Store: store,
	}
	_, err = NewMaster(nc, testLogger(t)).Run(ctx, plan)
	if err == nil {
		t.Fatal("the first master finished the run; want it interrupted")
	}
	ps.wg.Wait() // the slaves stop on the master's word
	names, _ := store.List(context.Background())
	t.Logf("interrupted (%v); store holds %v", err, names)
	nc.Close()
	srv.Shutdown()

	srv, err = StartEmbeddedWith(opts)
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Shutdown()
	nc, err = nats.Connect(srv.URL())
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	if plan.Store, err = OpenJetStreamStore(context.Background(), nc, "resume"); err != nil {
		t.Fatal(err)
	}
	ps = newProcs(t, srv.URL())
	defer ps.stop()
	ps.startAll(t, "b", len(c.cfgs))
	plan.Resume = true
	var first []int
	var fmu sync.Mutex
	plan.Observer.Hooks = pipeline.Hooks{Window: func(s pipeline.Stats) {
		fmu.Lock()
		if len(first) < s.Index {
			first = append(first, make([]int, s.Index-len(first))...)
		}
		if first[s.Index-1] == 0 {
			first[s.Index-1] = s.Batches
		}
		fmu.Unlock()
	}}
	got, err := NewMaster(nc, testLogger(t)).Run(context.Background(), plan)
	if err != nil {
		ps.dumpLogs()
		t.Fatal(err)
	}
	c.check(t, got)
	fmu.Lock()
	t.Logf("resumed run's first reported mini-batch counts per RBM: %v (of %d)", first, c.epochs*pipeline.BatchesPerEpoch(c.n, c.batch))
	fmu.Unlock()
}

// TestDivergenceStopsKeepingTheLastCheckpoint makes RBM_1 explode (Gaussian
// visible units, learning rate 0.5: NaN after about 40 mini-batches): the
// run stops with an error saying so, and the store keeps the last good
// checkpoints, all finite, to resume from with a better learning rate.
func TestDivergenceStopsKeepingTheLastCheckpoint(t *testing.T) {
	cfgs := stageConfigs([]int{49, 32, 24}, 3, 10, 2)
	cfgs[0].Units = rbm.Gaussian
	cfgs[0].LearningRate = [2]float64{0.5, 0.5}
	x := examples(5, 600, 49)
	for i := range x {
		x[i] = x[i]*4 - 2
	}
	srv, nc := serve(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var wg sync.WaitGroup
	for i := range cfgs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			RunSlave(ctx, SlaveOptions{URL: srv.URL(), SlaveOptions: driver.SlaveOptions{Name: fmt.Sprintf("d%d", i+1), Threads: 1, JoinTimeout: 20 * time.Second, Logger: testLogger(t)}})
		}()
	}
	store := protocol.NewMemStore()
	_, err := NewMaster(nc, testLogger(t)).Run(ctx, driver.Plan{
		MasterConfig: protocol.MasterConfig{
			Run:             protocol.Run{ID: "diverge"},
			Stages:          cfgs,
			Data:            x,
			N:               600,
			ShuffleSeed:     7,
			Credits:         2,
			CheckpointEvery: 3,
			Timing:          protocol.Timing{JoinTimeout: 20 * time.Second},
		},
		Store: store,
	})
	cancel()
	wg.Wait()
	if err == nil || !strings.Contains(err.Error(), "diverged") {
		t.Fatalf("Run() = %v; want the divergence of rbm 1", err)
	}
	names, _ := store.List(context.Background())
	var last int
	for _, n := range names {
		i, w, ok := protocol.ParseCheckpointName(n)
		if !ok || i.RBM != 1 {
			continue
		}
		b, _ := store.Get(context.Background(), n)
		m, err := messages.Decode(b)
		if err != nil {
			t.Fatal(err)
		}
		for _, v := range m.(*messages.Checkpoint).W {
			if math.IsNaN(float64(v)) || math.IsInf(float64(v), 0) {
				t.Fatalf("checkpoint %s holds %v", n, v)
			}
		}
		last = max(last, w)
	}
	if last == 0 {
		t.Fatalf("no checkpoint of rbm 1 kept: %v", names)
	}
	t.Logf("%v; last checkpoint of rbm 1 at window %d", err, last)
}

// TestStoppedSlaveLeavesCheckpoint sends SIGTERM to one slave in the middle
// of a run: it stops at a window boundary with a checkpoint and says so, the
// master replaces it at once, and the replacement redoes little.
func TestStoppedSlaveLeavesCheckpoint(t *testing.T) {
	c := newChaosSetup(t)
	srv, nc := serve(t)
	ps := newProcs(t, srv.URL())
	defer ps.stop()
	ps.startAll(t, "t", len(c.cfgs))
	var (
		mu       sync.Mutex
		stopped  time.Time
		detected time.Duration
		recs     []protocol.Recovery
	)
	got, err := NewMaster(nc, testLogger(t)).Run(context.Background(), driver.Plan{
		MasterConfig: protocol.MasterConfig{
			Run:             protocol.Run{ID: "sigterm"},
			Stages:          c.cfgs,
			Data:            c.x,
			N:               c.n,
			ShuffleSeed:     77,
			Credits:         c.credits,
			CheckpointEvery: c.every,
			Timing:          protocol.Timing{JoinTimeout: 30 * time.Second},
			Observer: protocol.Observer{
				Hooks: pipeline.Hooks{Window: func(s pipeline.Stats) {
					mu.Lock()
					defer mu.Unlock()
					if s.Index == 2 && stopped.IsZero() && s.Batches >= 40 {
						ps.mu.Lock()
						ps.cmds[s.Worker].Process.Signal(syscall.SIGTERM)
						ps.mu.Unlock()
						stopped = time.Now()
					}
				}},
				Lost: func(int, string, time.Duration) {
					mu.Lock()
					detected = time.Since(stopped)
					mu.Unlock()
				},
				Recovered: func(r protocol.Recovery) { mu.Lock(); recs = append(recs, r); mu.Unlock() },
			},
		},
		Respawn: ps.respawn,
	})
	if err != nil {
		ps.dumpLogs()
		t.Fatal(err)
	}
	c.check(t, got)
	mu.Lock()
	defer mu.Unlock()
	// Its replacement restarts at RBM_2's keep point: its checkpoint at
	// the stop, or an earlier one if RBM_3 has not checkpointed past it
	// yet (RBM_3 lags by up to credits + 1 windows, and checkpoints every
	// C).
	maxRedone := (c.every + c.credits + 1) * c.k
	if len(recs) != 1 || recs[0].Redone > maxRedone || recs[0].Silent > time.Second {
		t.Fatalf("recoveries %+v; want one, declared at once (silent < 1s), redoing at most %d batches", recs, maxRedone)
	}
	t.Logf("stopped at batch %d, replaced after %s, resumed at window %d", recs[0].LostAtBatch, detected.Round(10*time.Millisecond), recs[0].ResumedAtWindow)
}

// TestSpareSlaveTakesOver runs a cluster with one slave more than RBMs, all
// serving (`slave --serve`), and no Respawn: when a slave is SIGKILLed, the
// spare, which kept asking to join, takes over its RBM under its own name.
func TestSpareSlaveTakesOver(t *testing.T) {
	c := newChaosSetup(t)
	srv, nc := serve(t)
	ps := newProcs(t, srv.URL())
	defer ps.stop()
	for i := 1; i <= len(c.cfgs)+1; i++ {
		if err := ps.start(fmt.Sprintf("s%d", i), "--serve"); err != nil {
			t.Fatal(err)
		}
	}
	got, killed, recs := c.runKilling(t, nc, ps, "spare", nil, func(s pipeline.Stats) bool {
		return s.Index == 2 && s.Batches >= 30
	})
	if len(recs) != 1 || recs[0].Replacement == killed || got[1].Slave != recs[0].Replacement {
		t.Fatalf("killed %s; recoveries %+v, rbm 2 finished by %s; want the spare to take over", killed, recs, got[1].Slave)
	}
	t.Logf("killed %s; spare %s resumed rbm 2 at window %d", killed, recs[0].Replacement, recs[0].ResumedAtWindow)
}

// TestLostBeforeFirstCheckpoint kills a slave before it ever checkpointed:
// its replacement starts RBM_i from the beginning, its producer having kept
// every window since the first, and the run still ends bit-identical.
func TestLostBeforeFirstCheckpoint(t *testing.T) {
	c := newChaosSetup(t)
	c.every = 20
	srv, nc := serve(t)
	ps := newProcs(t, srv.URL())
	defer ps.stop()
	ps.startAll(t, "f", len(c.cfgs))
	_, killed, recs := c.runKilling(t, nc, ps, "early", ps.respawn, func(s pipeline.Stats) bool {
		return s.Index == 2 && s.Batches >= 4 && s.Batches < c.every*c.k
	})
	if killed == "" || len(recs) != 1 || recs[0].ResumedAtWindow != 0 {
		t.Fatalf("killed %q; recoveries %+v; want one resumed from window 0", killed, recs)
	}
	t.Logf("killed %s at batch %d; replacement started over", killed, recs[0].LostAtBatch)
}

// runKilling runs the setup with the slaves of ps, SIGKILLs the slave of
// the first status report for which when holds, and returns the trained
// RBMs, the killed slave and the recoveries. respawn may be nil (a spare
// must take over).
func (c *chaosSetup) runKilling(t *testing.T, nc *nats.Conn, ps *procs, runID string, respawn func(context.Context, int, string) error, when func(pipeline.Stats) bool) ([]protocol.Trained, string, []protocol.Recovery) {
	t.Helper()
	var (
		mu     sync.Mutex
		killed string
		recs   []protocol.Recovery
	)
	got, err := NewMaster(nc, testLogger(t)).Run(context.Background(), driver.Plan{
		MasterConfig: protocol.MasterConfig{
			Run:             protocol.Run{ID: runID},
			Stages:          c.cfgs,
			Data:            c.x,
			N:               c.n,
			ShuffleSeed:     77,
			Credits:         c.credits,
			CheckpointEvery: c.every,
			Timing:          protocol.Timing{JoinTimeout: 30 * time.Second},
			Observer: protocol.Observer{
				Hooks: pipeline.Hooks{Window: func(s pipeline.Stats) {
					mu.Lock()
					defer mu.Unlock()
					if killed == "" && when(s) {
						killed = s.Worker
						ps.kill(killed)
					}
				}},
				Recovered: func(r protocol.Recovery) { mu.Lock(); recs = append(recs, r); mu.Unlock() },
			},
		},
		Respawn: respawn,
	})
	if err != nil {
		ps.dumpLogs()
		t.Fatal(err)
	}
	c.check(t, got)
	mu.Lock()
	defer mu.Unlock()
	return got, killed, recs
}
