package natsnet

import (
	"context"
	"errors"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/pipedbn/pipedbn/messages"
	"github.com/pipedbn/pipedbn/pipeline"
	"github.com/pipedbn/pipedbn/pipeline/driver"
	"github.com/pipedbn/pipedbn/pipeline/protocol"
)

// Two slaves started with one --name on an open server (issue 13, defect
// 8): the second is refused while the first is heard from, with an error
// naming the first's host and pid, and the run completes with one slave
// per RBM.
func TestDuplicateNameIsRefused(t *testing.T) {
	t.Parallel()
	srv, nc := serve(t)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cfgs := stageConfigs([]int{9, 6, 4}, 1, 4, 1)
	type exit struct {
		name string
		err  error
	}
	exits := make(chan exit, 3)
	start := func(name string) {
		go func() {
			err := RunSlave(ctx, SlaveOptions{URL: srv.URL(), SlaveOptions: driver.SlaveOptions{Name: name, Threads: 1, JoinTimeout: 20 * time.Second, Logger: testLogger(t)}})
			exits <- exit{name, err}
		}()
	}
	ran := make(chan error, 1)
	go func() {
		_, err := NewMaster(nc, testLogger(t)).Run(ctx, driver.Plan{MasterConfig: protocol.MasterConfig{Run: protocol.Run{ID: "dup"}, Stages: cfgs, Data: examples(3, 16, 9), N: 16, Credits: 2, Timing: protocol.Timing{JoinTimeout: 20 * time.Second}}})
		ran <- err
	}()
	start("dup")
	time.Sleep(300 * time.Millisecond)
	start("dup")
	// The namesake is refused at once; only then does the second slave
	// come, so that the run cannot start without the check.
	first := <-exits
	if !errors.Is(first.err, protocol.ErrNameInUse) || !strings.Contains(first.err.Error(), "slave dup is in the run already, on host ") ||
		!strings.Contains(first.err.Error(), "give every slave a name of its own") {
		t.Fatalf("the second slave named dup ended with %v; want the name in use, naming the first's host and pid", first.err)
	}
	start("other")
	if err := <-ran; err != nil {
		t.Fatal(err)
	}
	for range 2 {
		if e := <-exits; e.err != nil {
			t.Errorf("slave %s: %v", e.name, e.err)
		}
	}
}

// A slave that hangs (SIGSTOP) longer than LostAfter is declared lost;
// with no spare and no respawn, it is taken back when it speaks again
// (SIGCONT) and goes on where it was: nothing is redone, and the weights
// equal the uninterrupted run's bit for bit (issue 13, defect 3).
func TestHungSlaveIsTakenBack(t *testing.T) {
	c := newChaosSetup(t)
	srv, nc := serve(t)
	ps := newProcs(t, srv.URL())
	defer ps.stop()
	ps.startAll(t, "h", len(c.cfgs))
	var (
		mu      sync.Mutex
		stopped string
		lost    []string
		recs    []protocol.Recovery
	)
	hang := func(name string) {
		ps.mu.Lock()
		cmd := ps.cmds[name]
		ps.mu.Unlock()
		cmd.Process.Signal(syscall.SIGSTOP)
		time.AfterFunc(2500*time.Millisecond, func() { cmd.Process.Signal(syscall.SIGCONT) })
	}
	got, err := NewMaster(nc, testLogger(t)).Run(context.Background(), driver.Plan{
		MasterConfig: protocol.MasterConfig{
			Run:             protocol.Run{ID: "hung"},
			Stages:          c.cfgs,
			Data:            c.x,
			N:               c.n,
			ShuffleSeed:     77,
			Credits:         c.credits,
			CheckpointEvery: c.every,
			Timing:          protocol.Timing{JoinTimeout: 30 * time.Second, LostAfter: time.Second},
			Observer: protocol.Observer{
				Hooks: pipeline.Hooks{Window: func(s pipeline.Stats) {
					mu.Lock()
					defer mu.Unlock()
					if stopped == "" && s.Index == 2 && s.Batches >= 30 {
						stopped = s.Worker
						hang(stopped)
					}
				}},
				Lost:      func(_ int, slave string, _ time.Duration) { mu.Lock(); lost = append(lost, slave); mu.Unlock() },
				Recovered: func(r protocol.Recovery) { mu.Lock(); recs = append(recs, r); mu.Unlock() },
			},
		},
	})
	if err != nil {
		ps.dumpLogs()
		t.Fatal(err)
	}
	c.check(t, got)
	mu.Lock()
	defer mu.Unlock()
	if len(lost) == 0 || len(recs) != len(lost) {
		t.Fatalf("hung %s: lost %v, recoveries %+v; want it lost and taken back", stopped, lost, recs)
	}
	for _, r := range recs {
		if r.Lost != stopped || r.Replacement != stopped || r.Redone != 0 {
			t.Errorf("recovery %+v; want %s taken back, nothing redone", r, stopped)
		}
	}
	if got[1].Slave != stopped {
		t.Errorf("rbm 2 finished by %s; want %s", got[1].Slave, stopped)
	}
}

// TestListeningHearsTheFirstRegistration: Plan.Listening is called once the
// master listens for registrations, so that a slave started then (the
// master's own stage group) is heard at its first registration, not one
// RegisterEvery later. The registration is published once, from
// Listening: the run sees it join, or waits in vain.
func TestListeningHearsTheFirstRegistration(t *testing.T) {
	t.Parallel()
	srv, nc := serve(t)
	early, err := Connect(srv.URL(), "early")
	if err != nil {
		t.Fatal(err)
	}
	defer early.Close()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	calls, joined := 0, make(chan string, 1)
	_, err = NewMaster(nc, testLogger(t)).Run(ctx, driver.Plan{
		MasterConfig: protocol.MasterConfig{
			Run:     protocol.Run{ID: "listening"},
			Stages:  stageConfigs([]int{9, 6}, 1, 4, 1),
			Data:    examples(3, 16, 9),
			N:       16,
			Credits: 2,
			Timing:  protocol.Timing{JoinTimeout: 3 * time.Second},
			Observer: protocol.Observer{
				Joined: func(name, _ string, _ int) {
					joined <- name
					cancel() // nobody will train the RBM
				},
			},
		},
		Listening: func() {
			calls++
			parts, err := messages.EncodeParts(&messages.Register{Name: "early", Host: "test", CPUs: 1, Protocol: messages.Version, Process: 1}, 1<<20, 1)
			if err != nil {
				t.Error(err)
				return
			}
			for _, p := range parts {
				early.Publish(registerSubject("early"), p)
			}
			early.Flush()
		},
	})
	if calls != 1 {
		t.Errorf("Listening was called %d times; want 1", calls)
	}
	select {
	case name := <-joined:
		if name != "early" {
			t.Errorf("joined: %s; want early", name)
		}
	default:
		t.Fatalf("the registration published from Listening was not heard (Run: %v)", err)
	}
}
