package protocol_test

import (
	"fmt"
	"time"

	"github.com/pipedbn/pipedbn/messages"
	"github.com/pipedbn/pipedbn/pipeline"
	"github.com/pipedbn/pipedbn/pipeline/protocol"
)

// window is a window of one mini-batch of one row of two values, with
// the producer's two hidden biases.
func window() *pipeline.Window {
	return &pipeline.Window{Rows: []int{1}, X: []float32{0.25, 0.75}, Bias: []float32{0, 0}}
}

func show(e protocol.Envelope) string {
	if c, ok := e.Msg.(*messages.Chunk); ok {
		return fmt.Sprintf("%v (seq %d)", e, c.Seq)
	}
	return e.String()
}

// A producer sends only within its consumer's credit, keeps what the
// consumer's checkpoints do not cover, and sends it again on request.
func ExampleProducer() {
	run := protocol.Run{ID: "demo"}
	p := protocol.NewProducer(run, "s1", 1, "s2", 0)
	fmt.Println("can send before any credit:", p.CanSend())

	// s2 grants credit for windows 0 and 1.
	p.OnCredit(0, "s2", &messages.Credit{RunID: "demo", RBM: 1, UpTo: 2})
	for p.CanSend() {
		fmt.Println(show(p.Send(0, window())))
	}
	fmt.Println(show(p.Close(0)))

	// Window 1 was lost on the way, and s2's checkpoint covers window 0:
	// window 1 and the end of the stream are sent again, window 0 is
	// forgotten.
	again, _ := p.OnCredit(0, "s2", &messages.Credit{RunID: "demo", RBM: 1, UpTo: 3, Next: 1, Durable: 1, Resend: true})
	for _, e := range again {
		fmt.Println("again:", show(e))
	}
	_, err := p.OnCredit(0, "s2", &messages.Credit{RunID: "demo", RBM: 1, UpTo: 3, Resend: true})
	fmt.Println(err)

	// Output:
	// can send before any credit: false
	// s1 -> s2 chunk (seq 0)
	// s1 -> s2 chunk (seq 1)
	// s1 -> s2 end-of-stream
	// again: s1 -> s2 chunk (seq 1)
	// again: s1 -> s2 end-of-stream
	// rbm 1: s2 asks for window 0 again, but rbm 1 keeps only the windows from 1 on
}

// A consumer accepts windows strictly in order: after a gap it asks its
// producer for the missing ones, and it grants one more window for every
// window trained.
func ExampleConsumer() {
	run := protocol.Run{ID: "demo"}
	t := protocol.DefaultTiming(time.Minute, 10*time.Second)
	p := protocol.NewProducer(run, "s1", 1, "s2", 0)
	c := protocol.NewConsumer(run, "s2", "s1", 1, 2, 2, 0, true, t)
	now := 5 * time.Second
	credit := func(e protocol.Envelope) []protocol.Envelope {
		cr := e.Msg.(*messages.Credit)
		fmt.Printf("%v: up to %d, next %d, resend %t\n", e, cr.UpTo, cr.Next, cr.Resend)
		again, _ := p.OnCredit(0, e.From, cr)
		return again
	}
	deliver := func(e protocol.Envelope) []protocol.Envelope { return c.OnChunk(now, e.From, e.Msg.(*messages.Chunk)) }

	credit(c.Start(now))
	p.Send(0, window()) // window 0 is lost on the way
	for _, e := range deliver(p.Send(0, window())) {
		for _, a := range credit(e) {
			deliver(a)
		}
	}
	for c.Ready() {
		w := c.Take()
		fmt.Println("train window", w.Seq)
		credit(c.Trained(now))
	}
	fmt.Println("rejected:", c.Stats().Rejected)

	// Output:
	// s2 -> s1 credit: up to 2, next 0, resend false
	// s2 -> s1 credit: up to 2, next 0, resend true
	// train window 0
	// s2 -> s1 credit: up to 3, next 2, resend false
	// train window 1
	// s2 -> s1 credit: up to 4, next 2, resend false
	// rejected: gap=1
}
