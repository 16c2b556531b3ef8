package natsnet

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/pipedbn/pipedbn/messages"
	"github.com/pipedbn/pipedbn/pipeline/driver"
	"github.com/pipedbn/pipedbn/pipeline/protocol"
)

// hugeClaim is a well-formed 33-byte fragment that claims a payload of
// almost 256 MiB: the last, one-byte part of 16,384 parts of 16,384
// bytes. A receiver that believes the claim allocates all of it.
func hugeClaim(id uint64) []byte {
	const count, size = 1 << 14, 1 << 14
	return badFrag([]byte{0}, id, count-1, count, (count-1)*size+1, 0)
}

// TestRegistrationFlood: a client floods the registration subject of a
// running master with thousands of 33-byte fragments, each claiming a
// 256 MiB message. The master refuses each before allocating for it (a
// registration is small), counts it, holds next to nothing for incomplete
// messages, and the run, whose slaves register meanwhile, completes.
func TestRegistrationFlood(t *testing.T) {
	t.Parallel()
	const flood = 3000
	srv, nc := serve(t)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	hostile, err := Connect(srv.URL(), "hostile")
	if err != nil {
		t.Fatal(err)
	}
	defer hostile.Close()
	cfgs := stageConfigs([]int{9, 6, 4}, 2, 4, 1)
	var wg sync.WaitGroup
	defer wg.Wait()
	m := NewMaster(nc, testLogger(t))
	got, err := m.Run(ctx, driver.Plan{
		MasterConfig: protocol.MasterConfig{
			Run:     protocol.Run{ID: "flood"},
			Stages:  cfgs,
			Data:    examples(4, 64, 9),
			N:       64,
			Credits: 2,
			Timing:  protocol.Timing{JoinTimeout: 20 * time.Second},
		},
		Listening: func() {
			// The flood goes first, so that the slaves register into it.
			for id := range uint64(flood) {
				if err := hostile.Publish(registerSubject("flooder"), hugeClaim(id)); err != nil {
					t.Error(err)
					return
				}
			}
			if err := hostile.Flush(); err != nil {
				t.Error(err)
			}
			for i := range cfgs {
				wg.Add(1)
				go func() {
					defer wg.Done()
					if err := RunSlave(ctx, SlaveOptions{URL: srv.URL(), SlaveOptions: driver.SlaveOptions{Name: fmt.Sprintf("fl%d", i+1), Threads: 1, JoinTimeout: 20 * time.Second, StatusEvery: 50 * time.Millisecond, Logger: testLogger(t)}}); err != nil {
						t.Errorf("slave fl%d: %v", i+1, err)
					}
				}()
			}
		},
	})
	if err != nil {
		t.Fatalf("the run under the flood: %v", err)
	}
	if len(got) != len(cfgs) {
		t.Fatalf("%d RBMs trained; want %d", len(got), len(cfgs))
	}
	re := m.ep.Load().reassembly()
	if re.Rejected < flood {
		t.Errorf("the master's reassemblers refused %d fragments; want the %d of the flood", re.Rejected, flood)
	}
	// A registration in parts is at most messages.MaxSmall: the master
	// holds no more than two of those, and the reports' few parts.
	if limit := int64(1 << 20); re.Peak > limit {
		t.Errorf("the master held up to %d bytes of incomplete messages; want at most %d", re.Peak, limit)
	}
	if r := m.Rejected(); r[messages.RejectCorrupt] < flood {
		t.Errorf("master rejected %v; want the %d fragments of the flood counted", r, flood)
	}
}

// TestSlaveLimitsFollowAssign: a slave's control subject takes only small
// messages until its Assign comes; then it takes the checkpoint of the RBM
// it was assigned, and its input link the windows of that RBM, and refuses
// anything longer.
func TestSlaveLimitsFollowAssign(t *testing.T) {
	t.Parallel()
	srv, nc := serve(t)
	master, err := Connect(srv.URL(), "master")
	if err != nil {
		t.Fatal(err)
	}
	defer master.Close()
	ep := newEndpoint(nc, "s2", hclog.NewNullLogger())
	defer ep.close()
	if err := ep.subscribe(ctlSubject("s2"), controls, controls.limits()); err != nil {
		t.Fatal(err)
	}
	if err := nc.Flush(); err != nil { // the server has the subscription before the master publishes
		t.Fatal(err)
	}
	publish := func(subject string, m messages.Message, id uint64) {
		t.Helper()
		parts, err := messages.EncodeParts(m, 64<<10, id)
		if err != nil {
			t.Fatal(err)
		}
		for _, p := range parts {
			if err := master.Publish(subject, p); err != nil {
				t.Fatal(err)
			}
		}
	}
	// await reads deliveries until one carries a message of kind k, and
	// returns the rejections before it.
	await := func(k messages.Kind) (rejected int) {
		t.Helper()
		timeout := time.After(10 * time.Second)
		for {
			select {
			case d := <-ep.in.C:
				ep.in.Take(d)
				switch {
				case d.Rejected:
					rejected++
				case d.Env.Msg != nil && d.Env.Msg.Kind() == k:
					return rejected
				case d.Env.Msg != nil:
					t.Fatalf("a %v came; want a %v", d.Env.Msg.Kind(), k)
				}
			case <-timeout:
				t.Fatalf("no %v came (%d rejections)", k, rejected)
			}
		}
	}
	const v, h = 2000, 80
	cp := &messages.Checkpoint{RunID: "r", RBM: 2, Visible: v, Hidden: h, Windows: 4,
		W: make([]float32, v*h), A: make([]float32, v), B: make([]float32, h),
		VelW: make([]float32, v*h), VelA: make([]float32, v), VelB: make([]float32, h),
		RNG: make([]uint32, messages.CheckpointRNGWords)}
	// Before the Assign the checkpoint is more than a control message may
	// be; after it, what the slave's RBM makes.
	publish(ctlSubject("s2"), cp, 1)
	a := &messages.Assign{RunID: "r", RBM: 2, RBMs: 3, Visible: v, Hidden: h, Units: messages.UnitsBernoulli, Epochs: 2, BatchSize: 10, K: 3, CDK: 1,
		Middle: messages.MiddleProbabilities, BatchesPerEpoch: 10, RowsPerEpoch: 100, Upstream: []string{"s1"}, Downstream: []string{"s3"}, Credits: 1, Replicas: 1}
	publish(ctlSubject("s2"), a, 2)
	if n := await(messages.KindAssign); n == 0 {
		t.Error("a checkpoint before the Assign was taken; want it refused")
	}
	publish(ctlSubject("s2"), cp, 3)
	if n := await(messages.KindCheckpoint); n != 0 {
		t.Errorf("%d rejections before the checkpoint after the Assign; want none", n)
	}

	// The input link takes windows of K mini-batches of L_1, and refuses
	// one of 4K, before the window that follows it.
	link := dataSubject("r", "s1", "s2")
	if err := ep.Follow("r", []string{"s1"}, nil); err != nil {
		t.Fatal(err)
	}
	if err := nc.Flush(); err != nil { // the server has the subscription before the master publishes
		t.Fatal(err)
	}
	chunk := func(batches int) *messages.Chunk {
		rows := make([]int, batches)
		for i := range rows {
			rows[i] = a.BatchSize
		}
		n := batches * a.BatchSize
		return &messages.Chunk{RunID: "r", RBM: 1, Rows: n, Cols: v, Data: make([]float32, n*v), BatchRows: rows, Bias: make([]float32, v)}
	}
	publish(link, chunk(a.K), 4)
	if n := await(messages.KindChunk); n != 0 {
		t.Errorf("%d rejections before a window of K mini-batches; want none", n)
	}
	publish(link, chunk(4*a.K), 5)
	publish(link, chunk(a.K), 6)
	if n := await(messages.KindChunk); n == 0 {
		t.Error("a window of 4K mini-batches was taken; want it refused")
	}
}
