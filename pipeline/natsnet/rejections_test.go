package natsnet

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/pipedbn/pipedbn/messages"
	"github.com/pipedbn/pipedbn/pipeline"
	"github.com/pipedbn/pipedbn/pipeline/driver"
	"github.com/pipedbn/pipedbn/pipeline/protocol"
)

// A client on an open server forges input for the master and a slave
// during a run: garbage and reports of another run or an earlier
// incarnation on a report subject, garbage on a data subject. Nothing of it
// counts, the run completes, and every piece is counted by reason where
// it was dropped: the master's own counts, and the slave's as its RBM's
// (issue 13, item 2).
func TestForgedInputIsCounted(t *testing.T) {
	t.Parallel()
	srv, nc := serve(t)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cfgs := stageConfigs([]int{9, 6, 4}, 3, 4, 1)
	var wg sync.WaitGroup
	defer wg.Wait()
	for i := range cfgs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := RunSlave(ctx, SlaveOptions{URL: srv.URL(), SlaveOptions: driver.SlaveOptions{Name: fmt.Sprintf("f%d", i+1), Threads: 1, JoinTimeout: 20 * time.Second, StatusEvery: 50 * time.Millisecond, WindowDelay: 20 * time.Millisecond, Logger: testLogger(t)}}); err != nil {
				t.Errorf("slave f%d: %v", i+1, err)
			}
		}()
	}
	hostile, err := Connect(srv.URL(), "hostile")
	if err != nil {
		t.Fatal(err)
	}
	defer hostile.Close()
	forge := func(subject string, m messages.Message) {
		parts, err := messages.EncodeParts(m, 1<<20, 99)
		if err != nil {
			t.Error(err)
			return
		}
		for _, p := range parts {
			hostile.Publish(subject, p)
		}
	}
	var once sync.Once
	forged := make(chan struct{})
	m := NewMaster(nc, testLogger(t))
	got, err := m.Run(ctx, driver.Plan{
		MasterConfig: protocol.MasterConfig{
			Run:     protocol.Run{ID: "forged"},
			Stages:  cfgs,
			Data:    examples(3, 64, 9),
			N:       64,
			Credits: 2,
			Timing:  protocol.Timing{JoinTimeout: 20 * time.Second},
			Observer: protocol.Observer{
				Hooks: pipeline.Hooks{Window: func(s pipeline.Stats) {
					if s.Index != 1 || s.Batches < 4 {
						return
					}
					once.Do(func() {
						defer close(forged)
						first := s.Worker // RBM_1's slave, whose windows RBM_2's reads
						hostile.Publish(reportSubject("forged", first), []byte("garbage"))
						forge(reportSubject("forged", first), &messages.Status{RunID: "another", Incarnation: 1, RBM: 1, Slave: first, Batches: 999999})
						forge(reportSubject("forged", first), &messages.Error{RunID: "forged", Incarnation: 0, RBM: 1, Text: "forged"})
						for _, consumer := range []string{"f1", "f2"} {
							if consumer != first {
								hostile.Publish(dataSubject("forged", first, consumer), []byte("garbage"))
							}
						}
						hostile.Flush()
					})
				}},
			},
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	<-forged
	if r := m.Rejected(); r[messages.RejectCorrupt] < 1 || r[messages.RejectForeign] < 1 || r[messages.RejectStale] < 1 {
		t.Errorf("master rejected %v; want corrupt, foreign and stale input counted", r)
	}
	if r := got[1].Rejected; r[messages.RejectCorrupt] < 1 {
		t.Errorf("rbm 2's slave rejected %v; want the garbage on its input counted as corrupt", r)
	}
	if got[0].Stats.Batches != 3*16 {
		t.Errorf("rbm 1: %d batches; want 48 (a forged status counted?)", got[0].Stats.Batches)
	}
}
