package driver

import (
	"testing"

	"github.com/pipedbn/pipedbn/messages"
	"github.com/pipedbn/pipedbn/pipeline/protocol"
)

// testPeer is a peer's inbox.
type testPeer struct {
	inbox chan Delivery
}

func newTestPeer(p *Peers, name string) *testPeer {
	tp := &testPeer{inbox: make(chan Delivery, 64)}
	p.Add(name, tp.inbox)
	return tp
}

// The slaves of a stage group hand each other their link messages in
// memory, in order; anything else, a slave outside the group, or a full
// inbox goes through the transport.
func TestPeersHand(t *testing.T) {
	t.Parallel()
	lp := NewPeers()
	newTestPeer(lp, "a")
	b := newTestPeer(lp, "b")
	chunk := &messages.Chunk{RunID: "r", RBM: 1, Rows: 2, Cols: 3, Data: make([]float32, 6), BatchRows: []int{2}, Bias: make([]float32, 3)}
	for _, m := range []messages.Message{chunk, &messages.Credit{RunID: "r", RBM: 1, UpTo: 4}, &messages.EndOfStream{RunID: "r", RBM: 1}} {
		if !lp.Hand("a", protocol.Envelope{From: "a", To: "b", Msg: m}) {
			t.Fatalf("hand(%v to b) = false; want it delivered in memory", m.Kind())
		}
		if d := <-b.inbox; d.Env.From != "a" || d.Env.To != "b" || d.Env.Msg != m {
			t.Fatalf("b received %+v; want %v from a", d.Env, m.Kind())
		}
	}
	if lp.Hand("a", protocol.Envelope{From: "a", To: "c", Msg: chunk}) {
		t.Error("hand to c, outside the group = true; want false: through the transport")
	}
	if lp.Hand("a", protocol.Envelope{From: "a", To: "b", Msg: &messages.Register{Name: "a"}}) {
		t.Error("hand of a registration = true; want false: only link messages skip the transport")
	}
	cp := &messages.Checkpoint{RunID: "r", RBM: 1, Visible: 3, Hidden: 2, W: make([]float32, 6)}
	if lp.Hand("a", protocol.Envelope{From: "a", To: "b", Msg: cp}) {
		t.Error("hand of a checkpoint to slave b = true; want false: a checkpoint skips the transport only to the master")
	}
	m := newTestPeer(lp, protocol.MasterName)
	if !lp.Hand("a", protocol.Envelope{From: "a", To: protocol.MasterName, Msg: cp}) {
		t.Fatal("hand of a checkpoint to the master in the group's process = false; want it delivered in memory")
	}
	if d := <-m.inbox; d.Env.From != "a" || d.Env.Msg != cp {
		t.Fatalf("the master received %+v; want the checkpoint from a", d.Env)
	}
	lp.Remove(protocol.MasterName, m.inbox)
	for range cap(b.inbox) {
		lp.Hand("a", protocol.Envelope{From: "a", To: "b", Msg: chunk})
	}
	if lp.Hand("a", protocol.Envelope{From: "a", To: "b", Msg: chunk}) {
		t.Error("hand to a full inbox = true; want false: the loop must never wait on a peer")
	}
	lp.Remove("b", b.inbox)
	if lp.Hand("a", protocol.Envelope{From: "a", To: "b", Msg: chunk}) {
		t.Error("hand to a slave that left = true; want false")
	}
}

// An inbox counts the bytes it holds until the loop takes them, and once
// closed drops, uncounted, what finds no room rather than waiting.
func TestInbox(t *testing.T) {
	in := NewInbox(1)
	in.Deliver(Delivery{Size: 5})
	if in.Queued() != 5 {
		t.Errorf("queued %d; want 5", in.Queued())
	}
	done := make(chan struct{})
	go func() {
		in.Deliver(Delivery{Size: 7}) // no room: waits until closed
		close(done)
	}()
	in.Take(<-in.C)
	<-in.C // the second, now that there is room
	in.Take(Delivery{Size: 7})
	<-done
	in.Deliver(Delivery{Size: 3})
	in.Close()
	in.Deliver(Delivery{Size: 4}) // no room: dropped
	if in.Queued() != 3 || len(in.C) != 1 {
		t.Errorf("closed: queued %d, %d held; want 3 bytes in 1", in.Queued(), len(in.C))
	}
}
