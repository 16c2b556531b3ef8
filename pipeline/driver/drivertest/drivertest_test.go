package drivertest_test

import (
	"sync"
	"testing"
	"time"

	"github.com/pipedbn/pipedbn/pipeline/driver"
	"github.com/pipedbn/pipedbn/pipeline/driver/drivertest"
	"github.com/pipedbn/pipedbn/pipeline/protocol"
)

// hub is the least transport: a channel per node, which Send fills.
type hub struct {
	mu    sync.Mutex
	boxes map[string]chan driver.Delivery
}

type port struct{ h *hub }

func (p port) Send(_ string, e protocol.Envelope) {
	p.h.mu.Lock()
	box := p.h.boxes[e.To]
	p.h.mu.Unlock()
	if box != nil {
		box <- driver.Delivery{Env: e}
	}
}

func (port) Now() time.Duration { return 0 }

// The scripts pass over a transport that only moves envelopes: what they
// ask of a transport is no more than that.
func TestScriptsOverAHub(t *testing.T) {
	h := &hub{boxes: map[string]chan driver.Delivery{}}
	drivertest.Run(t, func(t *testing.T, name string) (driver.Transport, <-chan driver.Delivery) {
		box := make(chan driver.Delivery, 16)
		h.mu.Lock()
		h.boxes[name] = box
		h.mu.Unlock()
		return port{h}, box
	})
}
