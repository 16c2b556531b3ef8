package monitor

import (
	"maps"
	"slices"

	"github.com/pipedbn/pipedbn/pipeline"
	"github.com/pipedbn/pipedbn/pipeline/protocol"
)

// FinetunePlan is how fine-tuning is laid out (result.json's
// finetune.plan): on how many workers, with which mini-batches, on how
// many CPUs.
type FinetunePlan struct {
	// Workers is W, the workers that fine-tune.
	Workers int `json:"workers"`
	// SyncEvery is S, the mini-batches each worker trains between two
	// averages of the workers' networks; absent with one worker.
	SyncEvery *int `json:"sync_every,omitempty"`
	// BatchPerWorker is the examples of each worker's mini-batch.
	BatchPerWorker int `json:"batch_per_worker"`
	// CPUs is the cap each worker runs under (0: none); Threads each
	// worker's BLAS threads.
	CPUs    float64 `json:"cpus"`
	Threads int     `json:"threads"`
}

// copyPlan returns a copy of p that shares nothing with it, or nil.
func copyPlan(p *FinetunePlan) *FinetunePlan {
	if p == nil {
		return nil
	}
	c := *p
	if p.SyncEvery != nil {
		s := *p.SyncEvery
		c.SyncEvery = &s
	}
	return &c
}

// FinetunePlanned records how fine-tuning is laid out, once planned.
func (r *Run) FinetunePlanned(p FinetunePlan) {
	if r == nil {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.finetuning == nil {
		r.finetuning = &FinetuneProgress{}
	}
	r.finetuning.Plan = copyPlan(&p)
}

// EndToEnd records the whole job's seconds (result.json's
// end_to_end_seconds), once the run's last phase ended.
func (r *Run) EndToEnd(seconds float64) {
	if r == nil {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.endToEnd = seconds
}

// FinetuneWorker is a worker of data-parallel fine-tuning as it last
// reported.
type FinetuneWorker struct {
	Name string `json:"name"`
	// State: idle, training, waiting_input, waiting_average (for the
	// workers' average), done, failed or lost (its replacement, if named
	// otherwise, has a row of its own).
	State string `json:"state"`
	// Epoch is the epoch being trained, 1-based (Epochs once done).
	Epoch  int `json:"epoch"`
	Epochs int `json:"epochs"`
	// Batches and Samples are the mini-batches and examples trained, as
	// the worker counts them: a replacement's from the checkpoint it
	// resumed from.
	Batches int `json:"batches"`
	Samples int `json:"samples"`
	// Loss is the mean loss of the latest window.
	Loss float64 `json:"loss"`
	// SamplesPerSecond is the examples trained per busy second.
	SamplesPerSecond float64 `json:"samples_per_second"`
	// BusySeconds training; WaitSeconds waiting, for windows and for the
	// workers' average (a worker reports them together).
	BusySeconds float64 `json:"busy_seconds"`
	WaitSeconds float64 `json:"wait_seconds"`
}

// ftWorker is what Run knows of one fine-tuning worker: its latest
// report, and the counters summed from its reports, as rbmState's.
type ftWorker struct {
	stats pipeline.Stats
	// base is the report the next one grows from: stats, or after a
	// replacement the lost worker's cut back to the checkpoint resumed.
	base                         pipeline.Stats
	batches, samples, busy, wait float64
}

// FinetuneWorker records a status report of a worker of data-parallel
// fine-tuning, named by s.Worker: its latest state, and what it trained
// and waited since the report before.
func (r *Run) FinetuneWorker(s pipeline.Stats) {
	if r == nil {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	w := r.finetuneWorker(s.Worker)
	b := w.base
	w.batches += grow(float64(b.Batches), float64(s.Batches))
	w.samples += grow(float64(b.Rows), float64(s.Rows))
	w.busy += grow(b.Busy.Seconds(), s.Busy.Seconds())
	w.wait += grow((b.WaitInput + b.WaitCredit).Seconds(), (s.WaitInput + s.WaitCredit).Seconds())
	s.Recon = nil // the epochs' losses reach the run through FinetuneEpoch
	w.stats, w.base = s, s
}

// finetuneWorker returns the fine-tuning worker name, added if new.
func (r *Run) finetuneWorker(name string) *ftWorker {
	if r.finetuning == nil {
		r.finetuning = &FinetuneProgress{}
	}
	if r.workers == nil {
		r.workers = map[string]*ftWorker{}
	}
	w := r.workers[name]
	if w == nil {
		w = &ftWorker{}
		r.workers[name] = w
	}
	return w
}

// workerLost marks the fine-tuning worker slave lost, if it reported.
func (r *Run) workerLost(slave string) {
	if w := r.workers[slave]; w != nil {
		w.stats.State = pipeline.Lost
	}
}

// handOver makes the replacement's next report grow from the checkpoint
// it resumed from: the lost worker's counters cut back to its mini-batches,
// so that those redone count again. The busy and waiting seconds of a
// checkpoint are not known: the replacement's count once past the lost
// worker's.
func (r *Run) handOver(rec protocol.Recovery) {
	lost := r.workers[rec.Lost]
	if lost == nil {
		return
	}
	b := lost.base
	if at := rec.ResumedAtBatch; at < b.Batches {
		b.Rows = b.Rows * max(at, 0) / b.Batches
		b.Batches = max(at, 0)
	}
	r.finetuneWorker(rec.Replacement).base = b
}

// finetuneWorkers returns the fine-tuning workers' rows, by name.
func (r *Run) finetuneWorkers(epochs int) []FinetuneWorker {
	var rows []FinetuneWorker
	for _, name := range slices.Sorted(maps.Keys(r.workers)) {
		x := r.workers[name].stats
		row := FinetuneWorker{
			Name: name, State: stateName(x.State), Epoch: epochOf(x, epochs), Epochs: epochs, Batches: x.Batches,
			Samples: x.Rows, Loss: x.LastRecon, BusySeconds: x.Busy.Seconds(), WaitSeconds: (x.WaitInput + x.WaitCredit).Seconds(),
		}
		if x.Busy > 0 {
			row.SamplesPerSecond = float64(x.Rows) / x.Busy.Seconds()
		}
		rows = append(rows, row)
	}
	return rows
}

// epochOf is the 1-based epoch x trains, of epochs (0: not known).
func epochOf(x pipeline.Stats, epochs int) int {
	if epochs > 0 {
		return min(x.Epoch+1, epochs)
	}
	return x.Epoch + 1
}
