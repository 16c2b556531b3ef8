package monitor

import (
	"context"
	"errors"
	"fmt"
	"math"
	"sync"
	"time"

	"github.com/pipedbn/pipedbn/pipeline"
	"github.com/pipedbn/pipedbn/pipeline/protocol"
)

// Phase is where a run is.
type Phase int

// The phases of a run, in order; it ends in Done or Failed.
const (
	Starting    Phase = iota // loading data, starting slaves
	Pretraining              // pre-training the RBMs
	FineTuning               // fine-tuning the unrolled network
	Done                     // finished; results written
	Failed                   // stopped by an error
	Interrupted              // stopped by Ctrl-C or SIGTERM (a pipelined run resumes)
	phaseEnd
)

var phaseNames = [...]string{"starting", "pre-training", "fine-tuning", "done", "failed", "interrupted"}

func (p Phase) String() string {
	if p < 0 || p >= phaseEnd {
		return fmt.Sprintf("Phase(%d)", int(p))
	}
	return phaseNames[p]
}

// MarshalText writes the phase's name: /api/status shows "pre-training".
func (p Phase) MarshalText() ([]byte, error) { return []byte(p.String()), nil }

// UnmarshalText reads a phase's name.
func (p *Phase) UnmarshalText(b []byte) error {
	for q := Starting; q < phaseEnd; q++ {
		if q.String() == string(b) {
			*p = q
			return nil
		}
	}
	return fmt.Errorf("monitor: unknown phase %q", b)
}

// stateNames are the names /api/status and /metrics give pipeline.State
// values: tokens, where State.String is a phrase for people.
var stateNames = map[pipeline.State]string{
	pipeline.Idle:           "idle",
	pipeline.Training:       "training",
	pipeline.WaitingInput:   "waiting_input",
	pipeline.WaitingCredit:  "waiting_credit",
	pipeline.Done:           "done",
	pipeline.Failed:         "failed",
	pipeline.Lost:           "lost",
	pipeline.WaitingAverage: "waiting_average",
}

// stateName is the token of s.
func stateName(s pipeline.State) string {
	if n, ok := stateNames[s]; ok {
		return n
	}
	return s.String()
}

// Status is one run as /api/status shows it (README, "Watching a run").
type Status struct {
	Name string `json:"name"`
	Mode string `json:"mode"`
	// State is the run's phase: starting, pre-training, fine-tuning, done,
	// failed or interrupted.
	State Phase `json:"state"`
	// Error says why a failed or interrupted run stopped.
	Error string `json:"error,omitempty"`
	// URL is where this status is served.
	URL string `json:"url,omitempty"`
	// Started is when the run started (RFC 3339), ElapsedSeconds how long
	// ago, or how long it took once it ended.
	Started        time.Time `json:"started"`
	ElapsedSeconds float64   `json:"elapsed_seconds"`
	// PretrainSeconds is the time pre-training took so far (all of it once
	// it ended).
	PretrainSeconds float64 `json:"pretrain_seconds"`
	// Batches and BatchesTotal count the mini-batches trained and planned,
	// all RBMs together.
	Batches      int `json:"batches"`
	BatchesTotal int `json:"batches_total"`
	// ETASeconds estimates the seconds pre-training has left, from the
	// rate of each RBM so far; null while unknown and once pre-training
	// ended.
	ETASeconds *float64 `json:"eta_seconds"`
	// Plan is the plan of a pipelined run's local slaves as the master
	// printed it (cluster.plan: stage groups, predicted seconds per
	// window); "" for other runs.
	Plan string `json:"plan,omitempty"`
	// PretrainPhases are the phases of a pipelined run's pre-training
	// passed so far, and the one it is in; absent for greedy runs.
	PretrainPhases []PretrainPhase `json:"pretrain_phases,omitempty"`
	// RBMs lists every RBM of the DBN, RBM_1 first.
	RBMs []RBMStatus `json:"rbms"`
	// Slaves lists the slaves that registered, in order.
	Slaves []SlaveStatus `json:"slaves"`
	// Recoveries lists every lost slave and its replacement.
	Recoveries []RecoveryStatus `json:"recoveries"`
	// Finetuning is fine-tuning as it goes, epoch by epoch: null until it
	// starts.
	Finetuning *FinetuneProgress `json:"finetuning"`
	// Finetune is null until fine-tuning ended.
	Finetune *Finetune `json:"finetune"`
	// EndToEndSeconds is the whole job, pre-training and fine-tuning
	// (result.json's end_to_end_seconds); absent until the run's last
	// phase ended.
	EndToEndSeconds float64 `json:"end_to_end_seconds,omitempty"`
}

// RBMStatus is one RBM's part of a Status.
type RBMStatus struct {
	Index   int `json:"index"`
	Visible int `json:"visible"`
	Hidden  int `json:"hidden"`
	// Worker names the process training it: a slave, or "master".
	Worker string `json:"worker"`
	// State: idle, training, waiting_input, waiting_credit, done, failed
	// or lost (waiting for a replacement).
	State string `json:"state"`
	// Epoch is the epoch being trained, 1-based (Epochs once done).
	Epoch  int `json:"epoch"`
	Epochs int `json:"epochs"`
	// Batches trained so far, BatchesTotal planned (epochs x mini-batches
	// per epoch).
	Batches      int `json:"batches"`
	BatchesTotal int `json:"batches_total"`
	// SamplesPerSecond is the rows trained per busy second.
	SamplesPerSecond float64 `json:"samples_per_second"`
	// BusySeconds training; WaitSeconds waiting, for input windows and for
	// credit, as WaitInputSeconds and WaitCreditSeconds (a slave reports
	// its waits together, as waiting for input).
	BusySeconds       float64 `json:"busy_seconds"`
	WaitSeconds       float64 `json:"wait_seconds"`
	WaitInputSeconds  float64 `json:"wait_input_seconds"`
	WaitCreditSeconds float64 `json:"wait_credit_seconds"`
	// LastReconError is the mean squared reconstruction error of the
	// latest window; ReconError that of each finished epoch (as in
	// result.json).
	LastReconError float64   `json:"last_recon_error"`
	ReconError     []float64 `json:"recon_error"`
	// ReconTrace is the latest window's error along the run, as reported:
	// [mini-batches trained, error] pairs, at most 256 (thinned evenly as
	// the run grows).
	ReconTrace [][2]float64 `json:"recon_trace"`
	// Rejected counts the messages its worker dropped on its input.
	Rejected uint64 `json:"rejected"`
	// Checkpoints stored, and the age of the newest (null: none yet).
	Checkpoints          int      `json:"checkpoints"`
	CheckpointAgeSeconds *float64 `json:"checkpoint_age_seconds"`
}

// SlaveStatus is a slave that registered with the master.
type SlaveStatus struct {
	Name string `json:"name"`
	Host string `json:"host"`
	CPUs int    `json:"cpus"`
	// AtSeconds is when it registered, in seconds since the run started.
	AtSeconds float64 `json:"at_seconds"`
}

// RecoveryStatus is a lost slave and its replacement.
type RecoveryStatus struct {
	RBM         int    `json:"rbm"`
	Lost        string `json:"lost"`
	Replacement string `json:"replacement"`
	// AtSeconds is when the replacement resumed, in seconds since the run
	// started; SilentSeconds how long the lost slave had said nothing.
	AtSeconds      float64 `json:"at_seconds"`
	SilentSeconds  float64 `json:"silent_seconds"`
	LostAtBatch    int     `json:"lost_at_batch"`
	ResumedAtBatch int     `json:"resumed_at_batch"`
	RedoneBatches  int     `json:"redone_batches"`
}

// Finetune is the outcome of fine-tuning.
type Finetune struct {
	Epochs             int             `json:"epochs"`
	Seconds            float64         `json:"seconds"`
	TrainAccuracy      float64         `json:"train_accuracy"`
	ValidationAccuracy float64         `json:"validation_accuracy"`
	TestAccuracy       float64         `json:"test_accuracy"`
	History            []FinetuneEpoch `json:"history"`
	// Confusion[t][p] counts the test examples of class t predicted as p;
	// PerClass[t] is class t's test accuracy; Classes names the classes
	// where the data set has names (as in result.json).
	Confusion [][]int   `json:"confusion,omitempty"`
	PerClass  []float64 `json:"per_class_accuracy,omitempty"`
	Classes   []string  `json:"classes,omitempty"`
}

// FinetuneEpoch is one epoch of fine-tuning.
type FinetuneEpoch struct {
	Epoch              int     `json:"epoch"`
	Loss               float64 `json:"loss"`
	TrainAccuracy      float64 `json:"train_accuracy"`
	ValidationAccuracy float64 `json:"validation_accuracy"`
	// Seconds is the epoch's wall-clock time.
	Seconds float64 `json:"seconds,omitempty"`
}

// FinetuneProgress is fine-tuning while it goes: the epochs planned (it
// may stop earlier, its validation accuracy no longer improving) and
// those trained so far.
type FinetuneProgress struct {
	Epochs  int             `json:"epochs"`
	History []FinetuneEpoch `json:"history"`
	// Plan is how fine-tuning is laid out: null until it is planned.
	Plan *FinetunePlan `json:"plan"`
	// Workers are the workers of data-parallel fine-tuning, by name, as
	// they last reported; absent when the master fine-tunes.
	Workers []FinetuneWorker `json:"workers,omitempty"`
}

// Run is the live state of one run. Its methods are safe for concurrent
// use and do nothing on a nil *Run, so that a run without a monitor calls
// them all the same.
type Run struct {
	name, mode, url string
	now             func() time.Time

	mu            sync.Mutex
	phase         Phase
	err           string
	started       time.Time
	pretrainStart time.Time
	pretrainEnd   time.Time // zero while pre-training
	ended         time.Time // zero while running
	rbms          []*rbmState
	slaves        []SlaveStatus
	registrations int
	recoveries    []RecoveryStatus
	finetuning    *FinetuneProgress
	workers       map[string]*ftWorker // of data-parallel fine-tuning
	finetune      *Finetune
	plan          string
	endToEnd      float64
	lastPoll      time.Time // of /api/status, for Linger
	// entered are the phases of pre-training entered so far; phases those
	// of result.json, once pre-training ended.
	entered []enteredPhase
	phases  []PretrainPhase
}

// rbmState is what Run knows of one RBM: its latest report, and the
// counters summed from its reports.
type rbmState struct {
	cfg     pipeline.StageConfig
	planned int // mini-batches in all (pipeline.StageConfig.Batches)
	stats   pipeline.Stats
	// base is the report the next one grows from: stats, or a stored
	// checkpoint's after a replacement resumed from it.
	base pipeline.Stats
	// batches and samples per worker; the rest for the RBM.
	batches, samples            map[string]float64
	busy, waitInput, waitCredit float64
	rejected                    float64
	checkpoints                 int
	lastCheckpoint              time.Time
	checkpointed                []pipeline.Stats // the stats of recent checkpoints, oldest first
	lost, recoveries, redone    int
	trace                       trace
}

// keptCheckpoints bounds the checkpoints an RBM remembers the stats of,
// to find the one a replacement resumes from.
const keptCheckpoints = 64

// NewRun returns the state of the run name (mode: greedy or pipelined),
// served at url ("" if it is not served), starting now.
func NewRun(name, mode, url string) *Run {
	r := &Run{name: name, mode: mode, url: url, now: time.Now}
	r.started = r.now()
	return r
}

// URL returns where the run's state is served, or "".
func (r *Run) URL() string {
	if r == nil {
		return ""
	}
	return r.url
}

// Pretraining says pre-training starts, on the RBMs stages describe, each
// epoch over examples rows.
func (r *Run) Pretraining(stages []pipeline.StageConfig, examples int) {
	if r == nil {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.phase, r.pretrainStart = Pretraining, r.now()
	r.rbms = make([]*rbmState, len(stages))
	for i, c := range stages {
		r.rbms[i] = &rbmState{cfg: c, planned: c.Batches(examples),
			stats: pipeline.Stats{Index: c.Index}, base: pipeline.Stats{Index: c.Index},
			batches: map[string]float64{}, samples: map[string]float64{}}
	}
}

// Planned records the plan of the run's local slaves, as printed.
func (r *Run) Planned(plan string) {
	if r == nil {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.plan = plan
}

// Hooks returns hooks that report every RBM's statistics to r.
func (r *Run) Hooks() pipeline.Hooks {
	if r == nil {
		return pipeline.Hooks{}
	}
	return pipeline.Hooks{Window: r.Observe, Epoch: r.Observe}
}

// rbm returns RBM i's state, or nil.
func (r *Run) rbm(i int) *rbmState {
	if i < 1 || i > len(r.rbms) {
		return nil
	}
	return r.rbms[i-1]
}

// Observe records a report of an RBM's statistics: its latest state, and
// what it trained, waited and dropped since the report before.
func (r *Run) Observe(s pipeline.Stats) {
	if r == nil {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	st := r.rbm(s.Index)
	if st == nil {
		return
	}
	if s.Worker == "" {
		s.Worker = "master" // as result.json names it
	}
	b := st.base
	st.batches[s.Worker] += grow(float64(b.Batches), float64(s.Batches))
	st.samples[s.Worker] += grow(float64(b.Rows), float64(s.Rows))
	st.busy += grow(b.Busy.Seconds(), s.Busy.Seconds())
	st.waitInput += grow(b.WaitInput.Seconds(), s.WaitInput.Seconds())
	st.waitCredit += grow(b.WaitCredit.Seconds(), s.WaitCredit.Seconds())
	st.rejected += grow(float64(b.Rejected), float64(s.Rejected))
	s.Recon = append([]float64(nil), s.Recon...)
	st.stats, st.base = s, s
	st.trace.add(s.Batches, s.LastRecon)
}

// grow is what a counter that was prev before and is cur now adds: the
// increase, or nothing when it went back.
func grow(prev, cur float64) float64 {
	return max(0, cur-prev)
}

// Joined records a slave that registered.
func (r *Run) Joined(name, host string, cpus int) {
	if r == nil {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.registrations++
	for _, s := range r.slaves {
		if s.Name == name && s.Host == host {
			return // a spare registers every second
		}
	}
	r.slaves = append(r.slaves, SlaveStatus{Name: name, Host: host, CPUs: cpus, AtSeconds: r.now().Sub(r.started).Seconds()})
}

// Lost records that RBM rbm's slave was declared lost; while fine-tuning,
// that the worker slave was.
func (r *Run) Lost(rbm int, slave string, silent time.Duration) {
	if r == nil {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.phase == FineTuning {
		r.workerLost(slave) // rbm is the workers' network, not RBM_rbm
		return
	}
	if st := r.rbm(rbm); st != nil {
		st.lost++
		st.stats.State = pipeline.Lost
	}
}

// Recovered records a replacement resuming a lost slave's RBM, or while
// fine-tuning a lost worker's windows. The RBM's (the worker's) next
// report grows from the checkpoint it resumed from, so that the
// mini-batches redone are counted again.
func (r *Run) Recovered(rec protocol.Recovery) {
	if r == nil {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.recoveries = append(r.recoveries, RecoveryStatus{
		RBM: rec.RBM, Lost: rec.Lost, Replacement: rec.Replacement, AtSeconds: r.now().Sub(r.started).Seconds(),
		SilentSeconds: rec.Silent.Seconds(), LostAtBatch: rec.LostAtBatch, ResumedAtBatch: rec.ResumedAtBatch,
		RedoneBatches: rec.Redone,
	})
	if r.phase == FineTuning {
		r.handOver(rec)
		return
	}
	st := r.rbm(rec.RBM)
	if st == nil {
		return
	}
	st.recoveries++
	st.redone += max(0, rec.Redone)
	if rec.Replacement == rec.Lost {
		return // taken back: it goes on where it was
	}
	for i := len(st.checkpointed) - 1; i >= 0; i-- {
		if c := st.checkpointed[i]; c.Batches == rec.ResumedAtBatch {
			st.base = lower(st.base, c)
			return
		}
	}
	b := st.base
	b.Batches = min(b.Batches, rec.ResumedAtBatch)
	b.Rows = min(b.Rows, rec.ResumedAtBatch*st.cfg.BatchSize)
	st.base = b
}

// lower returns b with every counter the lower of b's and c's.
func lower(b, c pipeline.Stats) pipeline.Stats {
	b.Batches, b.Rows = min(b.Batches, c.Batches), min(b.Rows, c.Rows)
	b.Busy, b.WaitInput, b.WaitCredit = min(b.Busy, c.Busy), min(b.WaitInput, c.WaitInput), min(b.WaitCredit, c.WaitCredit)
	return b
}

// Checkpointed records a checkpoint of RBM rbm, once stored.
func (r *Run) Checkpointed(rbm int, state pipeline.StageState) {
	if r == nil {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	st := r.rbm(rbm)
	if st == nil {
		return
	}
	st.checkpoints++
	st.lastCheckpoint = r.now()
	s := state.Stats
	s.Recon = nil
	if len(st.checkpointed) == keptCheckpoints {
		st.checkpointed = append(st.checkpointed[:0], st.checkpointed[1:]...)
	}
	st.checkpointed = append(st.checkpointed, s)
}

// FineTuning says pre-training ended and fine-tuning starts, epochs long
// at most.
func (r *Run) FineTuning(epochs int) {
	if r == nil {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.endPretraining()
	r.phase = FineTuning
	r.finetuning = &FinetuneProgress{Epochs: epochs}
}

// FinetuneEpoch records an epoch of fine-tuning, once trained.
func (r *Run) FinetuneEpoch(e FinetuneEpoch) {
	if r == nil {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.finetuning == nil {
		r.finetuning = &FinetuneProgress{}
	}
	r.finetuning.History = append(r.finetuning.History, e)
}

// endPretraining notes when pre-training ended, once.
func (r *Run) endPretraining() {
	if r.pretrainEnd.IsZero() && !r.pretrainStart.IsZero() {
		r.pretrainEnd = r.now()
	}
}

// Finetuned records the outcome of fine-tuning.
func (r *Run) Finetuned(f Finetune) {
	if r == nil {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	f.History = append([]FinetuneEpoch(nil), f.History...)
	f.Confusion = copyRows(f.Confusion)
	f.PerClass = append([]float64(nil), f.PerClass...)
	f.Classes = append([]string(nil), f.Classes...)
	r.finetune = &f
}

// copyRows returns a copy of m that shares nothing with it.
func copyRows(m [][]int) [][]int {
	if m == nil {
		return nil
	}
	c := make([][]int, len(m))
	for i, row := range m {
		c[i] = append([]int(nil), row...)
	}
	return c
}

// Done says the run finished and wrote its results.
func (r *Run) Done() { r.end(Done, nil) }

// Failed says the run stopped with err: interrupted if err is a
// cancellation (or the protocol's interruption), failed otherwise.
func (r *Run) Failed(err error) {
	if errors.Is(err, context.Canceled) || errors.Is(err, protocol.ErrInterrupted) {
		r.end(Interrupted, err)
		return
	}
	r.end(Failed, err)
}

func (r *Run) end(p Phase, err error) {
	if r == nil {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.phase >= Done {
		return
	}
	r.endPretraining()
	r.phase, r.ended = p, r.now()
	if err != nil {
		r.err = err.Error()
	}
}

// Status returns the run's state now.
func (r *Run) Status() Status {
	if r == nil {
		return Status{}
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	now := r.now()
	end := now
	if !r.ended.IsZero() {
		end = r.ended
	}
	s := Status{
		Name: r.name, Mode: r.mode, State: r.phase, Error: r.err, URL: r.url, Plan: r.plan,
		Started: r.started.UTC().Round(time.Millisecond), ElapsedSeconds: end.Sub(r.started).Seconds(),
		RBMs: []RBMStatus{}, Slaves: append([]SlaveStatus{}, r.slaves...),
		Recoveries: append([]RecoveryStatus{}, r.recoveries...), EndToEndSeconds: r.endToEnd,
	}
	if !r.pretrainStart.IsZero() {
		pend := now
		if !r.pretrainEnd.IsZero() {
			pend = r.pretrainEnd
		}
		s.PretrainSeconds = pend.Sub(r.pretrainStart).Seconds()
	}
	s.PretrainPhases = r.pretrainPhases(now)
	for _, st := range r.rbms {
		c, x := st.cfg, st.stats
		total := st.planned
		row := RBMStatus{
			Index: c.Index, Visible: c.Visible, Hidden: c.Hidden, Worker: x.Worker, State: stateName(x.State),
			Epoch: min(x.Epoch+1, c.Epochs), Epochs: c.Epochs, Batches: x.Batches, BatchesTotal: total,
			BusySeconds: x.Busy.Seconds(), WaitSeconds: (x.WaitInput + x.WaitCredit).Seconds(),
			WaitInputSeconds: x.WaitInput.Seconds(), WaitCreditSeconds: x.WaitCredit.Seconds(),
			LastReconError: x.LastRecon, ReconError: append([]float64{}, x.Recon...), ReconTrace: st.trace.copy(),
			Rejected: x.Rejected, Checkpoints: st.checkpoints,
		}
		if x.Busy > 0 {
			row.SamplesPerSecond = float64(x.Rows) / x.Busy.Seconds()
		}
		if !st.lastCheckpoint.IsZero() {
			age := now.Sub(st.lastCheckpoint).Seconds()
			row.CheckpointAgeSeconds = &age
		}
		s.Batches += x.Batches
		s.BatchesTotal += total
		s.RBMs = append(s.RBMs, row)
	}
	if r.phase == Pretraining {
		if eta, ok := r.eta(s.PretrainSeconds); ok {
			s.ETASeconds = &eta
		}
	}
	if r.finetuning != nil {
		s.Finetuning = &FinetuneProgress{Epochs: r.finetuning.Epochs, History: append([]FinetuneEpoch{}, r.finetuning.History...),
			Plan: copyPlan(r.finetuning.Plan), Workers: r.finetuneWorkers(r.finetuning.Epochs)}
	}
	if r.finetune != nil {
		f := *r.finetune
		f.History = append([]FinetuneEpoch{}, f.History...)
		f.Confusion = copyRows(f.Confusion) // the caller may change it
		f.PerClass = append([]float64(nil), f.PerClass...)
		f.Classes = append([]string(nil), f.Classes...)
		s.Finetune = &f
	}
	return s
}

// eta estimates the seconds pre-training has left, elapsed seconds into it.
// Pipelined, the RBMs train at once and the last to finish ends it: the
// most any RBM needs at its rate so far. Greedy, they train one after the
// other: the RBMs not started yet are assumed as fast as those trained so
// far, per mini-batch.
func (r *Run) eta(elapsed float64) (float64, bool) {
	if elapsed <= 0 || len(r.rbms) == 0 {
		return 0, false
	}
	if r.mode == "greedy" {
		done, total := 0, 0
		for _, st := range r.rbms {
			done += st.stats.Batches
			total += st.planned
		}
		if done == 0 {
			return 0, false
		}
		return elapsed * float64(total-done) / float64(done), true
	}
	left := 0.0
	for _, st := range r.rbms {
		done, total := st.stats.Batches, st.planned
		if done >= total {
			continue
		}
		if done == 0 {
			return 0, false
		}
		left = math.Max(left, elapsed*float64(total-done)/float64(done))
	}
	return left, true
}
