package messages_test

import (
	"fmt"

	"github.com/pipedbn/pipedbn/messages"
)

// Slave 1 sends a window of its middle result (two mini-batches of three
// rows, hidden size 2) with its hidden biases B_1 to slave 2, in fragments
// small enough for the transport; slave 2 reassembles, decodes and checks
// it before training on it.
func ExampleEncodeParts() {
	sent := &messages.Chunk{
		RunID: "demo", RBM: 1, Epoch: 1, Seq: 0, FirstBatch: 0,
		Rows: 6, Cols: 2,
		Data:      []float32{0.1, 0.9, 0.2, 0.8, 0.3, 0.7, 0.4, 0.6, 0.5, 0.5, 0.6, 0.4},
		BatchRows: []int{3, 3},
		Bias:      []float32{-0.5, 0.25},
	}
	parts, err := messages.EncodeParts(sent, 64, 1)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println("parts:", len(parts))

	// The receiving side.
	var r messages.Reassembler
	for _, p := range parts {
		payload, err := r.Add(p)
		if err != nil || payload == nil {
			continue // a real receiver counts the errors
		}
		m, err := messages.Decode(payload)
		if err != nil {
			fmt.Println(err)
			return
		}
		c, ok := m.(*messages.Chunk)
		if !ok {
			fmt.Println("unexpected", m.Kind())
			return
		}
		if err := c.Check("demo", 1, 2); err != nil {
			fmt.Println("rejected:", err)
			return
		}
		fmt.Println("window", c.Seq, "of rbm", c.RBM, "bias", c.Bias)
		for j := range c.BatchRows {
			fmt.Println("mini-batch", c.FirstBatch+j, c.Batch(j))
		}
	}
	// Output:
	// parts: 6
	// window 0 of rbm 1 bias [-0.5 0.25]
	// mini-batch 0 [0.1 0.9 0.2 0.8 0.3 0.7]
	// mini-batch 1 [0.4 0.6 0.5 0.5 0.6 0.4]
}

// The master answers a slave's Register with an Admission: here it refuses
// a name that is taken, and the slave reads why.
func ExampleAdmission() {
	reg, err := messages.Encode(&messages.Register{Name: "slave-2", Host: "node07", CPUs: 4, PID: 4242, Protocol: messages.Version})
	if err != nil {
		fmt.Println(err)
		return
	}

	// The master.
	taken := map[string]bool{"slave-1": true, "slave-2": true}
	m, err := messages.Decode(reg)
	if err != nil {
		fmt.Println(err)
		return
	}
	r := m.(*messages.Register)
	answer := &messages.Admission{Slave: r.Name, Outcome: messages.Admitted}
	switch {
	case r.Protocol != messages.Version:
		answer.Outcome, answer.Reason = messages.Refused, fmt.Sprintf("protocol %d, the master speaks %d", r.Protocol, messages.Version)
	case taken[r.Name]:
		answer.Outcome, answer.Reason = messages.Refused, fmt.Sprintf("name %s is taken", r.Name)
	}
	reply, err := messages.Encode(answer)
	if err != nil {
		fmt.Println(err)
		return
	}

	// The slave.
	m, err = messages.Decode(reply)
	if err != nil {
		fmt.Println(err)
		return
	}
	a := m.(*messages.Admission)
	fmt.Println(a.Slave, a.Outcome, a.Reason)
	// Output:
	// slave-2 refused name slave-2 is taken
}

// A receiver drops what it cannot train on and counts it by reason, for its
// Status.
func ExampleReasonOf() {
	window := func(run string) []byte {
		b, err := messages.Encode(&messages.Chunk{RunID: run, RBM: 1, Rows: 1, Cols: 2, Data: []float32{0.5, 0.5}, BatchRows: []int{1}, Bias: []float32{0, 0}})
		if err != nil {
			panic(err)
		}
		return b
	}
	good, foreign := window("demo"), window("old-run")
	corrupt := append([]byte(nil), good...)
	corrupt[20] ^= 1

	var rejected messages.Rejections
	for _, b := range [][]byte{good, foreign, corrupt, good[:10]} {
		m, err := messages.Decode(b)
		if err == nil {
			err = m.(*messages.Chunk).Check("demo", 1, 2)
		}
		if err != nil {
			rejected.Add(messages.ReasonOf(err))
		}
	}
	for r, n := range rejected {
		if n > 0 {
			fmt.Println(messages.RejectReason(r), n)
		}
	}
	fmt.Println("total", rejected.Total())
	// Output:
	// corrupt 2
	// foreign 1
	// total 3
}
