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
	// parts: 5
	// window 0 of rbm 1 bias [-0.5 0.25]
	// mini-batch 0 [0.1 0.9 0.2 0.8 0.3 0.7]
	// mini-batch 1 [0.4 0.6 0.5 0.5 0.6 0.4]
}
