package monitor

import (
	"encoding/json"
	"strings"
	"testing"
)

// The fine-tuning plan and the end-to-end seconds reach /api/status as
// recorded, and the status keeps a copy of the plan of its own.
func TestFinetunePlanAndEndToEnd(t *testing.T) {
	r, _ := newTestRun("pipelined")
	if b := string(must(json.Marshal(r.Status()))); strings.Contains(b, "end_to_end_seconds") {
		t.Errorf("status before the end = %s; want no end_to_end_seconds", b)
	}
	r.FineTuning(3)
	sync := 4
	p := FinetunePlan{Workers: 2, SyncEvery: &sync, BatchPerWorker: 64, CPUs: 0.5, Threads: 1}
	r.FinetunePlanned(p)
	sync = 9 // the run keeps a copy
	r.EndToEnd(12.5)
	s := r.Status()
	*s.Finetuning.Plan.SyncEvery = 7 // the caller may change it
	b := string(must(json.Marshal(r.Status())))
	for _, want := range []string{`"end_to_end_seconds":12.5`,
		`"plan":{"workers":2,"sync_every":4,"batch_per_worker":64,"cpus":0.5,"threads":1}`} {
		if !strings.Contains(b, want) {
			t.Errorf("status = %s; want %s", b, want)
		}
	}
}
