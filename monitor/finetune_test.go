package monitor

import (
	"bytes"
	"encoding/json"
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/pipedbn/pipedbn/pipeline"
	"github.com/pipedbn/pipedbn/pipeline/protocol"
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

// The workers of data-parallel fine-tuning reach /api/status as they last
// reported, by name, and /metrics as counters summed from their reports:
// a lost worker keeps its row, marked lost, with RBM_1 untouched; its
// replacement gets a row of its own and counts from the checkpoint it
// resumed from.
func TestFinetuneWorkers(t *testing.T) {
	r, _ := newTestRun("pipelined")
	r.FineTuning(3)
	if b := string(must(json.Marshal(r.Status()))); strings.Contains(b, `"workers"`) {
		t.Errorf("status before any worker reported = %s; want no workers", b)
	}
	report := func(name string, epoch, batches int, busy, wait, loss float64, state pipeline.State) {
		r.FinetuneWorker(pipeline.Stats{Index: 1, Worker: name, Epoch: epoch, Batches: batches, Rows: 20 * batches,
			Busy: secs(busy), WaitInput: secs(wait), LastRecon: loss, Recon: []float64{0.9}, State: state})
	}
	report("w1", 0, 10, 2, 0.5, 0.9, pipeline.Training)
	report("w0", 1, 12, 3, 1, 0.7, pipeline.WaitingAverage)
	report("w1", 1, 14, 4, 1, 0.6, pipeline.Training)
	want := []FinetuneWorker{
		{Name: "w0", State: "waiting_average", Epoch: 2, Epochs: 3, Batches: 12, Samples: 240, Loss: 0.7, SamplesPerSecond: 80, BusySeconds: 3, WaitSeconds: 1},
		{Name: "w1", State: "training", Epoch: 2, Epochs: 3, Batches: 14, Samples: 280, Loss: 0.6, SamplesPerSecond: 70, BusySeconds: 4, WaitSeconds: 1},
	}
	if got := r.Status().Finetuning.Workers; !reflect.DeepEqual(got, want) {
		t.Errorf("workers = %+v; want %+v", got, want)
	}
	b := string(must(json.Marshal(r.Status())))
	if w := `"workers":[{"name":"w0","state":"waiting_average","epoch":2,"epochs":3,"batches":12,"samples":240,"loss":0.7,` +
		`"samples_per_second":80,"busy_seconds":3,"wait_seconds":1},`; !strings.Contains(b, w) {
		t.Errorf("status = %s; want %s", b, w)
	}

	r.Lost(1, "w1", 3*time.Second)
	r.Recovered(protocol.Recovery{RBM: 1, Lost: "w1", Replacement: "w2", ResumedAtBatch: 8, LostAtBatch: 14, Redone: 6})
	report("w2", 1, 11, 5, 1.5, 0.5, pipeline.Training) // resumed at 8: 3 more
	s := r.Status()
	var rows []string
	for _, w := range s.Finetuning.Workers {
		rows = append(rows, fmt.Sprintf("%s %s %d", w.Name, w.State, w.Batches))
	}
	if fmt.Sprint(rows) != "[w0 waiting_average 12 w1 lost 14 w2 training 11]" || len(s.Recoveries) != 1 || s.RBMs[0].State != "idle" {
		t.Errorf("after w1's loss: workers %v, %d recoveries, RBM 1 %s; want w1 lost, w2 training, 1 recovery, RBM 1 idle",
			rows, len(s.Recoveries), s.RBMs[0].State)
	}
	compare(t, r, `
# HELP pipedbn_finetune_worker_batches_trained_total Mini-batches the data-parallel fine-tuning worker trained (redone ones after a replacement counted again).
# TYPE pipedbn_finetune_worker_batches_trained_total counter
pipedbn_finetune_worker_batches_trained_total{worker="w0"} 12
pipedbn_finetune_worker_batches_trained_total{worker="w1"} 14
pipedbn_finetune_worker_batches_trained_total{worker="w2"} 3
# HELP pipedbn_finetune_worker_samples_trained_total Training examples the data-parallel fine-tuning worker trained on.
# TYPE pipedbn_finetune_worker_samples_trained_total counter
pipedbn_finetune_worker_samples_trained_total{worker="w0"} 240
pipedbn_finetune_worker_samples_trained_total{worker="w1"} 280
pipedbn_finetune_worker_samples_trained_total{worker="w2"} 60
# HELP pipedbn_finetune_worker_busy_seconds_total Seconds the data-parallel fine-tuning worker spent training.
# TYPE pipedbn_finetune_worker_busy_seconds_total counter
pipedbn_finetune_worker_busy_seconds_total{worker="w0"} 3
pipedbn_finetune_worker_busy_seconds_total{worker="w1"} 4
pipedbn_finetune_worker_busy_seconds_total{worker="w2"} 1
# HELP pipedbn_finetune_worker_wait_seconds_total Seconds the data-parallel fine-tuning worker spent waiting, for its windows or for the workers' average.
# TYPE pipedbn_finetune_worker_wait_seconds_total counter
pipedbn_finetune_worker_wait_seconds_total{worker="w0"} 1
pipedbn_finetune_worker_wait_seconds_total{worker="w1"} 1
pipedbn_finetune_worker_wait_seconds_total{worker="w2"} 0.5
# HELP pipedbn_finetune_worker_epoch Epoch the data-parallel fine-tuning worker is training, 1-based (the last once done).
# TYPE pipedbn_finetune_worker_epoch gauge
pipedbn_finetune_worker_epoch{worker="w0"} 2
pipedbn_finetune_worker_epoch{worker="w1"} 2
pipedbn_finetune_worker_epoch{worker="w2"} 2
# HELP pipedbn_finetune_worker_loss Mean loss of the data-parallel fine-tuning worker's latest window.
# TYPE pipedbn_finetune_worker_loss gauge
pipedbn_finetune_worker_loss{worker="w0"} 0.7
pipedbn_finetune_worker_loss{worker="w1"} 0.6
pipedbn_finetune_worker_loss{worker="w2"} 0.5
# HELP pipedbn_slaves_lost_total Times the RBM's slave was declared lost.
# TYPE pipedbn_slaves_lost_total counter
pipedbn_slaves_lost_total{rbm="1"} 0
pipedbn_slaves_lost_total{rbm="2"} 0
`, "pipedbn_finetune_worker_batches_trained_total", "pipedbn_finetune_worker_samples_trained_total",
		"pipedbn_finetune_worker_busy_seconds_total", "pipedbn_finetune_worker_wait_seconds_total",
		"pipedbn_finetune_worker_epoch", "pipedbn_finetune_worker_loss", "pipedbn_slaves_lost_total")
	// The states, one line each, in the order pipedbn_rbm_state has them.
	var states bytes.Buffer
	states.WriteString("# HELP pipedbn_finetune_worker_state 1 for the state the data-parallel fine-tuning worker is in " +
		"(idle, training, waiting_input, waiting_average, done, failed, lost), 0 for the others.\n" +
		"# TYPE pipedbn_finetune_worker_state gauge\n")
	for _, w := range [][2]string{{"w0", "waiting_average"}, {"w1", "lost"}, {"w2", "training"}} {
		for _, st := range []string{"idle", "training", "waiting_input", "waiting_average", "done", "failed", "lost"} {
			fmt.Fprintf(&states, "pipedbn_finetune_worker_state{state=%q,worker=%q} %d\n", st, w[0], map[bool]int{true: 1}[st == w[1]])
		}
	}
	compare(t, r, states.String(), "pipedbn_finetune_worker_state")
}
