package driver

import (
	"testing"
	"time"

	"github.com/pipedbn/pipedbn/pipeline/protocol"
)

// Defaults fill in what is unset and keep what is set; a negative
// MasterGoneAfter (never) stays.
func TestSlaveOptionsDefaults(t *testing.T) {
	o := SlaveOptions{Threads: 3, MasterGoneAfter: -1}
	o.Defaults()
	if o.Threads != 3 || o.MasterGoneAfter != -1 || o.JoinTimeout != protocol.DefaultJoinTimeout || o.Logger == nil || o.MemoryLimit == nil {
		t.Errorf("Defaults: %+v", o)
	}
	o = SlaveOptions{}
	o.Defaults()
	if o.Threads < 1 || o.MasterGoneAfter != DefaultMasterGoneAfter {
		t.Errorf("Defaults of zero options: threads %d, master gone after %v", o.Threads, o.MasterGoneAfter)
	}
}

// A slave's loop sleeps WindowDelay after every window and then tells
// AfterWindow the window's time and the bytes pending.
func TestSlaveOptionsLoop(t *testing.T) {
	var busy time.Duration
	var pending int
	o := SlaveOptions{WindowDelay: 20 * time.Millisecond, AfterWindow: func(b time.Duration, p int) { busy, pending = b, p }}
	l := o.Loop(nil, nil, func() int { return 7 })
	l.AfterJob(time.Now())
	if busy < o.WindowDelay || pending != 7 {
		t.Errorf("AfterWindow got %v, %d; want at least %v, 7", busy, pending, o.WindowDelay)
	}
}
