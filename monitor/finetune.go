package monitor

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
