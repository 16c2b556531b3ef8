package protocol

import (
	"testing"
	"time"
)

// TestTimingWithDefaults checks that WithDefaults fills the zero periods
// from DefaultTiming and keeps the ones set.
func TestTimingWithDefaults(t *testing.T) {
	t.Parallel()
	def := DefaultTiming(DefaultJoinTimeout, DefaultLostAfter)
	if got := (Timing{}).WithDefaults(); got != def {
		t.Errorf("Timing{}.WithDefaults() = %+v; want %+v", got, def)
	}
	want := def
	want.JoinTimeout, want.StatusEvery = 20*time.Second, 50*time.Millisecond
	if got := (Timing{JoinTimeout: 20 * time.Second, StatusEvery: 50 * time.Millisecond}).WithDefaults(); got != want {
		t.Errorf("WithDefaults() = %+v; want %+v", got, want)
	}
	if got := def.WithDefaults(); got != def {
		t.Errorf("DefaultTiming().WithDefaults() = %+v; want it unchanged", got)
	}
}
