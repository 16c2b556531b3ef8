package messages_test

import (
	"fmt"

	"github.com/pipedbn/pipedbn/messages"
)

// A sender hands each fragment to its transport as it is made; here the
// transport is the receiver's Reassembler itself.
func ExampleEncodeEach() {
	var r messages.Reassembler
	sent := &messages.Stop{RunID: "demo", Reason: "done"}
	parts := 0
	err := messages.EncodeEach(sent, 48, 1, func(part []byte) error {
		// part is valid only until this returns: Add, like
		// nats.Conn.Publish, copies it.
		parts++
		payload, err := r.Add(part)
		if err != nil || payload == nil {
			return err
		}
		m, err := messages.Decode(payload)
		if err != nil {
			return err
		}
		fmt.Printf("parts: %d, %v: %q\n", parts, m.Kind(), m.(*messages.Stop).Reason)
		return nil
	})
	if err != nil {
		fmt.Println(err)
	}
	// Output:
	// parts: 3, stop: "done"
}
