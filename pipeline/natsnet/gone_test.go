package natsnet

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/pipedbn/pipedbn/pipeline"
	"github.com/pipedbn/pipedbn/pipeline/driver"
	"github.com/pipedbn/pipedbn/pipeline/protocol"
)

// A slave started by hand whose master is killed in the middle of a run
// exits, with status 3 and a line saying that its master is gone, within
// --master-gone-after (plus the time it takes to leave a checkpoint no one
// stores): whether the NATS server went with the master (the embedded
// one, whose passwords and port a restarted master makes anew) or stays up
// with no master listening (a server of one's own, secured as `make
// compose-secrets` makes it, so that the slaves' reports cross accounts).
func TestSlaveExitsWhenMasterGone(t *testing.T) {
	for _, c := range []struct {
		name   string
		server bool // the NATS server goes too
	}{{"nats gone", true}, {"master gone", false}} {
		t.Run(c.name, func(t *testing.T) {
			masterGone(t, c.server)
		})
	}
}

func masterGone(t *testing.T, serverToo bool) {
	c := newChaosSetup(t)
	names := []string{"g1", "g2", "g3"}
	srv, ids := securedEmbedded(t, "", names...)
	pool := filepath.Join(t.TempDir(), "slaves.creds")
	if err := WriteCredentials(pool, "", ids.Slaves); err != nil {
		t.Fatal(err)
	}
	nc, err := Connect(srv.URL(), "pipedbn-master", ids.Master.Option())
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	const bound = 2 * time.Second
	ps := newProcs(t, srv.URL())
	defer ps.stop()
	for _, n := range names {
		if err := ps.start(n, "--credentials", pool, "--master-gone-after", bound.String()); err != nil {
			t.Fatal(err)
		}
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	killed := make(chan time.Time, 1)
	var once sync.Once
	ran := make(chan error, 1)
	go func() {
		_, err := NewMaster(nc, testLogger(t)).Run(ctx, driver.Plan{
			MasterConfig: protocol.MasterConfig{
				Run:             protocol.Run{ID: "gone"},
				Stages:          c.cfgs,
				Data:            c.x,
				N:               c.n,
				ShuffleSeed:     77,
				Credits:         c.credits,
				CheckpointEvery: c.every,
				Timing:          protocol.Timing{JoinTimeout: 30 * time.Second},
				Observer: protocol.Observer{
					Hooks: pipeline.Hooks{Window: func(s pipeline.Stats) {
						if s.Index == 3 && s.Batches >= 10 {
							once.Do(func() {
								// As kill -9 does: the master's connection ends
								// with no word to the slaves, and the server's
								// with it where it was the master's own.
								if serverToo {
									srv.Shutdown()
								}
								nc.Close()
								killed <- time.Now()
							})
						}
					}},
				},
			},
		})
		ran <- err
	}()
	var at time.Time
	select {
	case at = <-killed:
	case err := <-ran:
		ps.dumpLogs()
		t.Fatalf("the run ended (%v) before its master was killed", err)
	case <-time.After(60 * time.Second):
		ps.dumpLogs()
		t.Fatal("RBM_3 trained no 10 mini-batches within 60 s")
	}
	cancel()
	<-ran
	// The slaves' windows since (at most 1.5 s), then the bound, then
	// DrainGrace (3 s) for the checkpoint's acknowledgement, and slack.
	limit := 1500*time.Millisecond + bound + 3*time.Second + 5*time.Second
	exited := make(chan struct{})
	go func() { ps.wg.Wait(); close(exited) }()
	select {
	case <-exited:
	case <-time.After(limit):
		ps.dumpLogs()
		t.Fatalf("slaves still run %s after their master was killed, with --master-gone-after %s", limit, bound)
	}
	t.Logf("every slave exited %s after its master was killed", time.Since(at).Round(10*time.Millisecond))
	ps.mu.Lock()
	defer ps.mu.Unlock()
	for _, n := range names {
		code, log := ps.cmds[n].ProcessState.ExitCode(), ps.logs[n].String()
		if code != 3 {
			t.Errorf("slave %s exited with status %d; want 3\n%s", n, code, log)
		}
		if want := "slave: the master is gone: "; !strings.Contains(log, want) {
			t.Errorf("slave %s's log has no %q:\n%s", n, want, lastLines(log, 10))
		}
	}
}

// A serving slave (--serve) whose master is killed and started again on
// the same NATS server before --master-gone-after rejoins it: the resumed
// master stops the slave of its earlier incarnation, which registers again
// and trains on from the checkpoints, and the run ends with the weights
// of an uninterrupted one. No slave exits meanwhile.
func TestServingSlaveRejoinsRestartedMaster(t *testing.T) {
	c := newChaosSetup(t)
	opts := EmbeddedOptions{Port: freePort(t), StoreDir: t.TempDir()}
	srv, err := StartEmbeddedWith(opts)
	if err != nil {
		t.Fatal(err)
	}
	var smu sync.Mutex
	defer func() { smu.Lock(); srv.Shutdown(); smu.Unlock() }()
	nc, err := Connect(srv.URL(), "pipedbn-master")
	if err != nil {
		t.Fatal(err)
	}
	store, err := OpenJetStreamStore(context.Background(), nc, "back")
	if err != nil {
		t.Fatal(err)
	}
	ps := newProcs(t, srv.URL())
	defer ps.stop()
	names := []string{"b1", "b2", "b3"}
	for _, n := range names {
		if err := ps.start(n, "--serve", "--master-gone-after", "30s"); err != nil {
			t.Fatal(err)
		}
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	plan := driver.Plan{
		MasterConfig: protocol.MasterConfig{
			Run:             protocol.Run{ID: "back"},
			Stages:          c.cfgs,
			Data:            c.x,
			N:               c.n,
			ShuffleSeed:     77,
			Credits:         c.credits,
			CheckpointEvery: c.every,
			Timing:          protocol.Timing{JoinTimeout: 30 * time.Second},
		},
		Store: store,
	}
	var once sync.Once
	killed := make(chan struct{})
	plan.Observer.Hooks = pipeline.Hooks{Window: func(s pipeline.Stats) {
		if s.Index == 3 && s.Batches >= 20 {
			// The master and its connection end at once, and with them the
			// server for a moment (a NATS restart too): no slave hears of it.
			once.Do(func() {
				smu.Lock()
				srv.Shutdown()
				smu.Unlock()
				nc.Close()
				cancel()
				close(killed)
			})
		}
	}}
	first := make(chan error, 1)
	go func() {
		// What is left of the killed master, on its closed connection,
		// reaches no one; it ends before the test does.
		_, err := NewMaster(nc, hclog.NewNullLogger()).Run(ctx, plan)
		first <- err
	}()
	select {
	case <-killed:
	case err := <-first:
		t.Fatalf("the first master ended (%v) before it was killed", err)
	}
	defer func() {
		if err := <-first; err == nil {
			t.Error("the killed master finished the run")
		}
	}()
	time.Sleep(time.Second)
	smu.Lock()
	srv, err = StartEmbeddedWith(opts)
	smu.Unlock()
	if err != nil {
		t.Fatal(err)
	}
	nc2, err := Connect(srv.URL(), "pipedbn-master")
	if err != nil {
		t.Fatal(err)
	}
	defer nc2.Close()
	again := plan
	if again.Store, err = OpenJetStreamStore(context.Background(), nc2, "back"); err != nil {
		t.Fatal(err)
	}
	again.Resume, again.Observer.Hooks = true, pipeline.Hooks{}
	got, err := NewMaster(nc2, testLogger(t)).Run(context.Background(), again)
	if err != nil {
		ps.dumpLogs()
		t.Fatal(err)
	}
	c.check(t, got)
	var gone []string
	ps.mu.Lock()
	for _, n := range names {
		if err := ps.cmds[n].Process.Signal(syscall.Signal(0)); err != nil {
			gone = append(gone, n)
		}
	}
	ps.mu.Unlock()
	ps.stop() // before the logs are read: they are written until then
	if len(gone) > 0 {
		ps.dumpLogs()
		t.Errorf("slaves %v exited while their master came back", gone)
	}
	for _, n := range names {
		if log := ps.logs[n].String(); strings.Contains(log, "the master is gone") {
			t.Errorf("slave %s gave its master up, back within --master-gone-after:\n%s", n, lastLines(log, 12))
		}
	}
	t.Logf("b1's log ends:\n%s", lastLines(ps.logs["b1"].String(), 12))
}

// A serving slave with no NATS server to reach says once that it waits for
// a master, not at each of its tries a second.
func TestServingSlaveSaysItWaits(t *testing.T) {
	t.Parallel()
	var log strings.Builder
	var mu sync.Mutex
	logger := hclog.New(&hclog.LoggerOptions{Output: writerFunc(func(p []byte) (int, error) {
		mu.Lock()
		defer mu.Unlock()
		return log.Write(p)
	}), Level: hclog.Info})
	ctx, cancel := context.WithTimeout(context.Background(), 3500*time.Millisecond)
	defer cancel()
	url := fmt.Sprintf("nats://127.0.0.1:%d", freePort(t))
	if err := ServeSlave(ctx, SlaveOptions{URL: url, SlaveOptions: driver.SlaveOptions{Name: "w1", Threads: 1, Logger: logger}}); err != context.DeadlineExceeded {
		t.Fatalf("ServeSlave = %v; want %v", err, context.DeadlineExceeded)
	}
	mu.Lock()
	defer mu.Unlock()
	if n := strings.Count(log.String(), "\n"); n != 1 || !strings.Contains(log.String(), "no master yet; still waiting") {
		t.Errorf("in 3.5 s of tries a second the slave logged %d lines; want 1, that it waits:\n%s", n, log.String())
	}
}

type writerFunc func([]byte) (int, error)

func (f writerFunc) Write(p []byte) (int, error) { return f(p) }
