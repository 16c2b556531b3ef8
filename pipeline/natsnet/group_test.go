package natsnet

import (
	"testing"

	"github.com/hashicorp/go-hclog"

	"github.com/pipedbn/pipedbn/messages"
	"github.com/pipedbn/pipedbn/pipeline/protocol"
)

// The slaves of a stage group hand each other their link messages in
// memory, in order; anything else, a slave outside the group, or a full
// inbox goes through the server.
func TestLocalPeersHand(t *testing.T) {
	t.Parallel()
	lp := NewPeers()
	a := newEndpoint(nil, "a", hclog.NewNullLogger())
	b := newEndpoint(nil, "b", hclog.NewNullLogger())
	lp.add("a", a)
	lp.add("b", b)
	chunk := &messages.Chunk{RunID: "r", RBM: 1, Rows: 2, Cols: 3, Data: make([]float32, 6), BatchRows: []int{2}, Bias: make([]float32, 3)}
	for _, m := range []messages.Message{chunk, &messages.Credit{RunID: "r", RBM: 1, UpTo: 4}, &messages.EndOfStream{RunID: "r", RBM: 1}} {
		if !lp.hand(a, protocol.Envelope{From: "a", To: "b", Msg: m}) {
			t.Fatalf("hand(%v to b) = false; want it delivered in memory", m.Kind())
		}
		if d := <-b.inbox; d.env.From != "a" || d.env.To != "b" || d.env.Msg != m {
			t.Fatalf("b received %+v; want %v from a", d.env, m.Kind())
		}
	}
	if in, _ := b.bytes(); in != 36 {
		t.Errorf("b counted %d window bytes in; want 36 (9 float32)", in)
	}
	if _, out := a.bytes(); out != 36 {
		t.Errorf("a counted %d window bytes out; want 36", out)
	}
	if lp.hand(a, protocol.Envelope{From: "a", To: "c", Msg: chunk}) {
		t.Error("hand to c, outside the group = true; want false: through the server")
	}
	if lp.hand(a, protocol.Envelope{From: "a", To: "b", Msg: &messages.Register{Name: "a"}}) {
		t.Error("hand of a registration = true; want false: only link messages skip the server")
	}
	cp := &messages.Checkpoint{RunID: "r", RBM: 1, Visible: 3, Hidden: 2, W: make([]float32, 6)}
	if lp.hand(a, protocol.Envelope{From: "a", To: "b", Msg: cp}) {
		t.Error("hand of a checkpoint to slave b = true; want false: a checkpoint skips the server only to the master")
	}
	m := newEndpoint(nil, MasterName, hclog.NewNullLogger())
	lp.add(MasterName, m)
	if !lp.hand(a, protocol.Envelope{From: "a", To: MasterName, Msg: cp}) {
		t.Fatal("hand of a checkpoint to the master in the group's process = false; want it delivered in memory")
	}
	if d := <-m.inbox; d.env.From != "a" || d.env.Msg != cp {
		t.Fatalf("the master received %+v; want the checkpoint from a", d.env)
	}
	if in, _ := m.bytes(); in != 0 {
		t.Errorf("the master counted %d window bytes in for a checkpoint; want 0", in)
	}
	lp.remove(MasterName, m)
	for range cap(b.inbox) {
		lp.hand(a, protocol.Envelope{From: "a", To: "b", Msg: chunk})
	}
	if lp.hand(a, protocol.Envelope{From: "a", To: "b", Msg: chunk}) {
		t.Error("hand to a full inbox = true; want false: the loop must never wait on a peer")
	}
	lp.remove("b", b)
	if lp.hand(a, protocol.Envelope{From: "a", To: "b", Msg: chunk}) {
		t.Error("hand to a slave that left = true; want false")
	}
}
