package protocol

import (
	"encoding/json"
	"testing"
	"time"
)

// A Recovery is written as a run's results hold it, and read back.
func TestRecoveryJSON(t *testing.T) {
	t.Parallel()
	r := Recovery{RBM: 2, Lost: "a", Replacement: "b", Silent: 4500 * time.Millisecond, ResumedAtWindow: 10, ResumedAtBatch: 40, LostAtBatch: 47, Redone: 7}
	b, err := json.Marshal(r)
	if err != nil {
		t.Fatal(err)
	}
	const want = `{"rbm":2,"lost":"a","replacement":"b","silent_seconds":4.5,"resumed_at_window":10,"resumed_at_batch":40,"lost_at_batch":47,"redone_batches":7}`
	if string(b) != want {
		t.Errorf("json.Marshal(%+v) = %s; want %s", r, b, want)
	}
	var got Recovery
	if err := json.Unmarshal(b, &got); err != nil || got != r {
		t.Errorf("json.Unmarshal(%s) = %+v, %v; want %+v", b, got, err, r)
	}
}
