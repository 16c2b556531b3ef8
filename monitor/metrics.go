package monitor

import (
	"maps"
	"slices"
	"strconv"

	"github.com/prometheus/client_golang/prometheus"
)

// The metrics of a run (README, "Watching a run"). Names follow
// Prometheus's conventions: the pipedbn_ prefix, base units, counters
// ending in _total.
var (
	descRunInfo = prometheus.NewDesc("pipedbn_run_info",
		"The run: its name and pre-training mode (always 1).", []string{"name", "mode"}, nil)
	descRunPhase = prometheus.NewDesc("pipedbn_run_phase",
		"1 for the phase the run is in (starting, pre-training, fine-tuning, done, failed, interrupted), 0 for the others.", []string{"phase"}, nil)
	descRunStart = prometheus.NewDesc("pipedbn_run_start_time_seconds",
		"When the run started, in seconds since the Unix epoch.", nil, nil)
	descPretrainPhase = prometheus.NewDesc("pipedbn_pretrain_phase_seconds",
		"Seconds a pipelined run's pre-training spent in the phase (calibration, start, fill, steady, drain, collect), the current one's so far; absent before the run enters it.", []string{"phase"}, nil)
	descETA = prometheus.NewDesc("pipedbn_pretrain_eta_seconds",
		"Estimated seconds pre-training has left; absent while unknown.", nil, nil)
	descBatchesPlanned = prometheus.NewDesc("pipedbn_batches_planned",
		"Mini-batches the RBM trains in all: epochs x mini-batches per epoch.", []string{"rbm"}, nil)
	descBatches = prometheus.NewDesc("pipedbn_batches_trained_total",
		"Mini-batches the RBM trained, by the slave that trained them (redone ones after a replacement counted again).", []string{"rbm", "slave"}, nil)
	descSamples = prometheus.NewDesc("pipedbn_samples_trained_total",
		"Training examples (rows) the RBM trained on, by the slave that trained them.", []string{"rbm", "slave"}, nil)
	descBusy = prometheus.NewDesc("pipedbn_busy_seconds_total",
		"Seconds the RBM's worker spent training.", []string{"rbm"}, nil)
	descWait = prometheus.NewDesc("pipedbn_wait_seconds_total",
		"Seconds the RBM's worker spent waiting: for input windows, or for credit from the RBM above (slaves report their waits together, as input).",
		[]string{"rbm", "waiting_for"}, nil)
	descRecon = prometheus.NewDesc("pipedbn_recon_error",
		"Mean squared reconstruction error of the RBM's latest window.", []string{"rbm"}, nil)
	descEpochRecon = prometheus.NewDesc("pipedbn_epoch_recon_error",
		"Mean squared reconstruction error of the RBM's last finished epoch; absent before the first.", []string{"rbm"}, nil)
	descEpoch = prometheus.NewDesc("pipedbn_epoch",
		"Epoch the RBM is training, 1-based (the last once done).", []string{"rbm"}, nil)
	descEpochsDone = prometheus.NewDesc("pipedbn_epochs_completed",
		"Epochs the RBM finished.", []string{"rbm"}, nil)
	descState = prometheus.NewDesc("pipedbn_rbm_state",
		"1 for the state the RBM is in (idle, training, waiting_input, waiting_credit, done, failed, lost), 0 for the others.", []string{"rbm", "state"}, nil)
	descRejected = prometheus.NewDesc("pipedbn_messages_rejected_total",
		"Messages the RBM's worker dropped on its input (corrupt, foreign, misshapen, duplicate, gap, stale).", []string{"rbm"}, nil)
	descCheckpoints = prometheus.NewDesc("pipedbn_checkpoints_total",
		"Checkpoints of the RBM stored.", []string{"rbm"}, nil)
	descCheckpointTime = prometheus.NewDesc("pipedbn_last_checkpoint_timestamp_seconds",
		"When the RBM's newest checkpoint was stored, in seconds since the Unix epoch; absent before the first.", []string{"rbm"}, nil)
	descLost = prometheus.NewDesc("pipedbn_slaves_lost_total",
		"Times the RBM's slave was declared lost.", []string{"rbm"}, nil)
	descRecoveries = prometheus.NewDesc("pipedbn_recoveries_total",
		"Replacements that resumed the RBM after its slave was lost.", []string{"rbm"}, nil)
	descRedone = prometheus.NewDesc("pipedbn_redone_batches_total",
		"Mini-batches the RBM's replacements redo (at least: what the lost slave reported since the checkpoint).", []string{"rbm"}, nil)
	descRegistrations = prometheus.NewDesc("pipedbn_slave_registrations_total",
		"Registrations the master received (a waiting spare registers every second).", nil, nil)
	descAccuracy = prometheus.NewDesc("pipedbn_finetune_accuracy",
		"Accuracy of the fine-tuned classifier on the set; absent before fine-tuning ended.", []string{"set"}, nil)
	descWorkerEpoch = prometheus.NewDesc("pipedbn_finetune_worker_epoch",
		"Epoch the data-parallel fine-tuning worker is training, 1-based (the last once done).", []string{"worker"}, nil)
	descWorkerBatches = prometheus.NewDesc("pipedbn_finetune_worker_batches_trained_total",
		"Mini-batches the data-parallel fine-tuning worker trained (redone ones after a replacement counted again).", []string{"worker"}, nil)
	descWorkerSamples = prometheus.NewDesc("pipedbn_finetune_worker_samples_trained_total",
		"Training examples the data-parallel fine-tuning worker trained on.", []string{"worker"}, nil)
	descWorkerBusy = prometheus.NewDesc("pipedbn_finetune_worker_busy_seconds_total",
		"Seconds the data-parallel fine-tuning worker spent training.", []string{"worker"}, nil)
	descWorkerWait = prometheus.NewDesc("pipedbn_finetune_worker_wait_seconds_total",
		"Seconds the data-parallel fine-tuning worker spent waiting, for its windows or for the workers' average.", []string{"worker"}, nil)
	descWorkerLoss = prometheus.NewDesc("pipedbn_finetune_worker_loss",
		"Mean loss of the data-parallel fine-tuning worker's latest window.", []string{"worker"}, nil)
	descWorkerState = prometheus.NewDesc("pipedbn_finetune_worker_state",
		"1 for the state the data-parallel fine-tuning worker is in (idle, training, waiting_input, waiting_average, done, failed, lost), 0 for the others.",
		[]string{"worker", "state"}, nil)
)

// stateOrder lists the RBM states in the order of pipedbn_rbm_state.
var stateOrder = []string{"idle", "training", "waiting_input", "waiting_credit", "done", "failed", "lost"}

// workerStateOrder lists the fine-tuning workers' states in the order of
// pipedbn_finetune_worker_state: the network has no stage above to wait
// for, but waits for the workers' average.
var workerStateOrder = []string{"idle", "training", "waiting_input", "waiting_average", "done", "failed", "lost"}

// collector is a Run as a prometheus.Collector: its metrics are computed
// from the run's state at every scrape.
type collector struct{ r *Run }

func (c collector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{descRunInfo, descRunPhase, descRunStart, descPretrainPhase, descETA, descBatchesPlanned,
		descBatches, descSamples, descBusy, descWait, descRecon, descEpochRecon, descEpoch, descEpochsDone,
		descState, descRejected, descCheckpoints, descCheckpointTime, descLost, descRecoveries, descRedone,
		descRegistrations, descAccuracy, descWorkerEpoch, descWorkerBatches, descWorkerSamples, descWorkerBusy,
		descWorkerWait, descWorkerLoss, descWorkerState} {
		ch <- d
	}
}

func (c collector) Collect(ch chan<- prometheus.Metric) {
	s := c.r.Status() // the ETA, as /api/status has it
	r := c.r
	r.mu.Lock()
	defer r.mu.Unlock()
	gauge := func(d *prometheus.Desc, v float64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, v, labels...)
	}
	counter := func(d *prometheus.Desc, v float64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.CounterValue, v, labels...)
	}
	gauge(descRunInfo, 1, r.name, r.mode)
	for p := Starting; p < phaseEnd; p++ {
		gauge(descRunPhase, oneIf(r.phase == p), p.String())
	}
	gauge(descRunStart, float64(r.started.UnixNano())/1e9)
	for _, p := range s.PretrainPhases {
		gauge(descPretrainPhase, p.Seconds, p.Name)
	}
	if s.ETASeconds != nil {
		gauge(descETA, *s.ETASeconds)
	}
	counter(descRegistrations, float64(r.registrations))
	for _, st := range r.rbms {
		rbm := strconv.Itoa(st.cfg.Index)
		x := st.stats
		gauge(descBatchesPlanned, float64(st.planned), rbm)
		for _, w := range sortedKeys(st.batches) {
			counter(descBatches, st.batches[w], rbm, w)
			counter(descSamples, st.samples[w], rbm, w)
		}
		counter(descBusy, st.busy, rbm)
		counter(descWait, st.waitInput, rbm, "input")
		counter(descWait, st.waitCredit, rbm, "credit")
		gauge(descRecon, x.LastRecon, rbm)
		if n := len(x.Recon); n > 0 {
			gauge(descEpochRecon, x.Recon[n-1], rbm)
		}
		gauge(descEpoch, float64(min(x.Epoch+1, st.cfg.Epochs)), rbm)
		gauge(descEpochsDone, float64(len(x.Recon)), rbm)
		state := stateName(x.State)
		for _, name := range stateOrder {
			gauge(descState, oneIf(name == state), rbm, name)
		}
		counter(descRejected, st.rejected, rbm)
		counter(descCheckpoints, float64(st.checkpoints), rbm)
		if !st.lastCheckpoint.IsZero() {
			gauge(descCheckpointTime, float64(st.lastCheckpoint.UnixNano())/1e9, rbm)
		}
		counter(descLost, float64(st.lost), rbm)
		counter(descRecoveries, float64(st.recoveries), rbm)
		counter(descRedone, float64(st.redone), rbm)
	}
	if f := r.finetune; f != nil {
		gauge(descAccuracy, f.TrainAccuracy, "train")
		gauge(descAccuracy, f.ValidationAccuracy, "validation")
		gauge(descAccuracy, f.TestAccuracy, "test")
	}
	r.collectWorkers(gauge, counter)
}

// collectWorkers sends the metrics of the data-parallel fine-tuning
// workers, with gauge and counter.
func (r *Run) collectWorkers(gauge, counter func(d *prometheus.Desc, v float64, labels ...string)) {
	epochs := 0
	if r.finetuning != nil {
		epochs = r.finetuning.Epochs
	}
	for _, name := range slices.Sorted(maps.Keys(r.workers)) {
		w := r.workers[name]
		gauge(descWorkerEpoch, float64(epochOf(w.stats, epochs)), name)
		counter(descWorkerBatches, w.batches, name)
		counter(descWorkerSamples, w.samples, name)
		counter(descWorkerBusy, w.busy, name)
		counter(descWorkerWait, w.wait, name)
		gauge(descWorkerLoss, w.stats.LastRecon, name)
		state := stateName(w.stats.State)
		for _, s := range workerStateOrder {
			gauge(descWorkerState, oneIf(s == state), name, s)
		}
	}
}

func oneIf(b bool) float64 {
	if b {
		return 1
	}
	return 0
}

func sortedKeys(m map[string]float64) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}
