package dbn

import (
	"encoding/json"
	"fmt"
	"os"

	"github.com/pipedbn/pipedbn/config"
	"github.com/pipedbn/pipedbn/monitor"
	"github.com/pipedbn/pipedbn/pipeline"
	"github.com/pipedbn/pipedbn/pipeline/protocol"
	"github.com/pipedbn/pipedbn/rbm"
)

// Result is a run's result.json (docs/results-schema.md).
type Result struct {
	Name            string          `json:"name"`
	Mode            config.Mode     `json:"mode"`
	Seed            uint64          `json:"seed"`
	Layers          []int           `json:"layers"`
	PretrainSeconds float64         `json:"pretrain_seconds"`
	RBMs            []RBMResult     `json:"rbms"`
	Finetune        *FinetuneResult `json:"finetune"`
	Weights         string          `json:"weights"`

	// Extensions beyond the contract.

	// Data names the training set and its size.
	Data DataInfo `json:"data"`
	// BLAS is the linear-algebra back end ("openblas" or "gonum").
	BLAS string `json:"blas"`
	// BLASCore is the back end's kernels: OpenBLAS's name for the CPU
	// they are for ("SkylakeX", "Haswell"), or "go".
	BLASCore string `json:"blas_core"`
	// CPUsPerWorker is the number of CPUs each worker was allowed (0: no cap).
	CPUsPerWorker float64 `json:"cpus_per_worker"`
	// Colocate is cluster.colocate: the local slaves shared one group of
	// CPUsPerWorker CPUs (one machine).
	Colocate bool `json:"colocate,omitempty"`
	// Config is the path of the config the run was read from.
	Config string `json:"config"`
	// PretrainedFrom is pretrain.weights: the file the RBMs were read
	// from instead of pre-trained (absent: pre-trained by this run, in
	// PretrainSeconds).
	PretrainedFrom string `json:"pretrained_from,omitempty"`
	// ProbeRows is pretrain.probe.rows, the probe set of rbms[].probe
	// (absent: no probe).
	ProbeRows int `json:"probe_rows,omitempty"`
	// CheckpointEvery is reliability.checkpoint_every (C) of a pipelined
	// run over NATS; Resumed says the run resumed an interrupted one;
	// Recoveries lists the slaves lost and replaced during the run.
	CheckpointEvery int  `json:"checkpoint_every,omitempty"`
	Resumed         bool `json:"resumed,omitempty"`
	// FinetuneRestarts counts the times the master, interrupted while it
	// fine-tuned, started fine-tuning the pre-trained network again.
	FinetuneRestarts int                 `json:"finetune_restarts,omitempty"`
	Recoveries       []protocol.Recovery `json:"recoveries,omitempty"`
	// MasterRejected counts, by reason, the messages the master dropped:
	// unreadable, reports of another run or an earlier incarnation, or
	// registrations under a name not their sender's (foreign); absent when
	// none.
	MasterRejected map[string]uint64 `json:"master_rejected,omitempty"`
	// Plan is the plan of a pipelined run's local slaves (cluster.plan),
	// predicted against measured; absent for other runs.
	Plan *PlanResult `json:"plan,omitempty"`
	// EndToEndSeconds is the whole job: PretrainSeconds plus
	// Finetune.Seconds (PretrainSeconds alone without fine-tuning). Neither
	// counts loading and preparing the data, the final reconstruction
	// errors and probe measures, the evaluation after fine-tuning or the
	// writing of files. Absent until the run's last phase ended, and in
	// results of versions before it.
	EndToEndSeconds float64 `json:"end_to_end_seconds,omitempty"`
	// PretrainPhases are a pipelined run's phases of pre-training, in
	// order, their seconds summing to pretrain_seconds (see phaseNames);
	// absent for greedy runs.
	PretrainPhases []Phase `json:"pretrain_phases,omitempty"`
	// Windows is W, the windows each RBM of a pipelined run trains;
	// BottleneckWindowSeconds the busy seconds per window of its slowest
	// stage group; OverheadSeconds pretrain_seconds less W of those. See
	// recordOverhead.
	Windows                 int     `json:"windows,omitempty"`
	BottleneckWindowSeconds float64 `json:"bottleneck_window_seconds,omitempty"`
	OverheadSeconds         float64 `json:"overhead_seconds,omitempty"`
}

// endToEnd sets EndToEndSeconds, once the run's last phase ended, and
// tells mon (nil: nobody).
func (res *Result) endToEnd(mon *monitor.Run) {
	res.EndToEndSeconds = res.PretrainSeconds
	if res.Finetune != nil {
		res.EndToEndSeconds += res.Finetune.Seconds
	}
	mon.EndToEnd(res.EndToEndSeconds)
}

// PlanResult is how a pipelined run laid its RBMs out on its local slave
// processes, what pipeline/plan predicted of it and what was measured.
type PlanResult struct {
	// Strategy is auto, one-per-rbm or explicit.
	Strategy string `json:"strategy"`
	// SpeedGFLOPS is the master's CD-1 speed on one thread, measured before
	// the run, which the prediction assumes of every process.
	SpeedGFLOPS float64 `json:"speed_gflops"`
	// CPUs and Threads of each process; 0 where they differ
	// (cluster.machine_cpus: see each group's CPUs).
	CPUs    float64 `json:"cpus"`
	Threads int     `json:"threads"`
	// Windows is W, the windows each RBM trains.
	Windows int `json:"windows"`
	// PredictedSeconds is the plan's pre-training time (pretrain_seconds
	// measures it, with the start of the processes and the transforms of
	// the final recon error).
	PredictedSeconds float64 `json:"predicted_seconds"`
	// PredictedSpeedUp is the plan's over greedy on its fastest machine,
	// and PredictedEfficiency that over the capacity of all the machines
	// (idle ones too) in fastest machines: M for M equal machines.
	PredictedSpeedUp    float64 `json:"predicted_speedup"`
	PredictedEfficiency float64 `json:"predicted_efficiency"`
	// StepRows is what a CD step of each RBM cost beyond its samples, in
	// samples, as the master measured it for the RBMs the plan puts on
	// replicas (0: not measured, the planner's constant); absent when the
	// plan has no replicas.
	StepRows []float64 `json:"step_rows,omitempty"`
	// Groups, one per process, in the order of their RBMs.
	Groups []PlanGroup `json:"groups"`
	// Text is the plan as the master printed it.
	Text string `json:"text"`
}

// PlanGroup is one stage group of a plan: the RBMs one process trained,
// on Replicas processes.
type PlanGroup struct {
	RBMs     []int    `json:"rbms"`
	Slaves   []string `json:"slaves"`
	Replicas int      `json:"replicas"`
	// CPUs is each replica's machine's CPUs, in the order of its replicas
	// (0: uncapped).
	CPUs []float64 `json:"cpus"`
	// PredictedWindowSeconds is the plan's seconds per window of the
	// group (compute, messages and link); PredictedComputeSeconds its
	// training part, which MeasuredBusySeconds measures: the busy seconds
	// of its RBMs per window, as their slaves reported them (of replicas:
	// the busiest replica's, over every window of the run).
	PredictedWindowSeconds  float64 `json:"predicted_window_seconds"`
	PredictedComputeSeconds float64 `json:"predicted_compute_seconds"`
	MeasuredBusySeconds     float64 `json:"measured_busy_seconds"`
}

// DataInfo describes the data a run trained and tested on.
type DataInfo struct {
	Source string `json:"source"`
	Train  int    `json:"train"`
	Test   int    `json:"test"`
	Dim    int    `json:"dim"`
	// Scale is data.scale when it is not none (its fit is in ScaleFile).
	Scale string `json:"scale,omitempty"`
}

// RBMResult is one RBM's part of a result.
type RBMResult struct {
	Index       int       `json:"index"`
	Visible     int       `json:"visible"`
	Hidden      int       `json:"hidden"`
	Worker      string    `json:"worker"`
	Batches     int       `json:"batches"`
	ReconError  []float64 `json:"recon_error"`
	BusySeconds float64   `json:"busy_seconds"`
	WaitSeconds float64   `json:"wait_seconds"`
	BytesIn     int64     `json:"bytes_in"`
	BytesOut    int64     `json:"bytes_out"`

	// FinalReconError (an extension) is the RBM's reconstruction error at
	// the end, on the first training examples transformed by the final
	// RBMs below it: comparable across schedules, where recon_error of an
	// upper pipelined RBM is measured on input that moved as it trained.
	FinalReconError float64 `json:"final_recon_error"`
	// SettleReconError (an extension) is the RBM's reconstruction error in
	// the settle phase (pretrain.settle), one entry per pass it trained in;
	// recon_error keeps one per epoch, as the contract has it.
	SettleReconError []float64 `json:"settle_recon_error,omitempty"`
	// Probe (an extension, with pretrain.probe.rows > 0) is the RBM's
	// snapshots over pre-training, measured on the probe set; the last is
	// the final RBM.
	Probe []ProbePoint `json:"probe,omitempty"`
	// Rejected (an extension) counts, by reason, the messages the RBM's
	// slave dropped on its input link (corrupt, foreign, shape, duplicate,
	// gap, stale), as it last reported; absent when none.
	Rejected map[string]uint64 `json:"rejected,omitempty"`
}

// FinetuneEpoch is one epoch of fine-tuning in result.json.
type FinetuneEpoch struct {
	Epoch              int     `json:"epoch"`
	LearningRate       float64 `json:"learning_rate"`
	Loss               float64 `json:"loss"`
	TrainAccuracy      float64 `json:"train_accuracy"`
	ValidationAccuracy float64 `json:"validation_accuracy"`
	Seconds            float64 `json:"seconds"`
}

// rbmResult is RBM_i's row of a result: its shape, the statistics of its
// training and the bytes its worker received and sent (none for a worker
// inside the master).
func rbmResult(r *rbm.RBM, s pipeline.Stats, worker string, bytesIn, bytesOut int64) RBMResult {
	return RBMResult{
		Index: s.Index, Visible: r.Visible, Hidden: r.Hidden, Worker: worker,
		Batches: s.Batches, ReconError: s.Recon, BusySeconds: s.Busy.Seconds(),
		WaitSeconds: (s.WaitInput + s.WaitCredit).Seconds(), BytesIn: bytesIn, BytesOut: bytesOut,
	}
}

// FinetuneResult is the fine-tuning part of a result.
type FinetuneResult struct {
	Epochs        int     `json:"epochs"`
	Seconds       float64 `json:"seconds"`
	TrainAccuracy float64 `json:"train_accuracy"`
	TestAccuracy  float64 `json:"test_accuracy"`

	// Extensions beyond the contract.

	// Init is pretrained or random (the no-pre-training baseline).
	Init string `json:"init"`
	// ValidationAccuracy is measured on the held-out part of the training
	// set that picked the kept epoch.
	ValidationAccuracy float64 `json:"validation_accuracy"`
	// History has one entry per epoch trained.
	History []FinetuneEpoch `json:"history"`
	// Confusion[t][p] counts test examples of class t predicted as p;
	// PerClass[t] is the test accuracy (recall) of class t.
	Confusion [][]int   `json:"confusion"`
	PerClass  []float64 `json:"per_class_accuracy"`
	// Classes names the classes, where the data set has names.
	Classes []string `json:"classes,omitempty"`
	// Plan is how fine-tuning ran; absent in results of versions before it.
	Plan *FinetunePlan `json:"plan,omitempty"`
	// Recoveries lists the workers of data-parallel fine-tuning lost and
	// replaced, with the mini-batches redone.
	Recoveries []protocol.Recovery `json:"recoveries,omitempty"`
	// BusySeconds and WaitSeconds, with workers, are the longest time a
	// worker spent training and waiting (for windows and averages).
	BusySeconds float64 `json:"busy_seconds,omitempty"`
	WaitSeconds float64 `json:"wait_seconds,omitempty"`
}

// FinetunePlan is how fine-tuning was laid out: on how many workers, with
// which mini-batches, on how many CPUs.
type FinetunePlan struct {
	// Workers is W, the workers that fine-tuned: 1, the master.
	Workers int `json:"workers"`
	// SyncEvery is S, the mini-batches each worker trains between two
	// averages of the workers' networks; absent with one worker, which
	// averages nothing.
	SyncEvery *int `json:"sync_every,omitempty"`
	// BlockMomentum is finetune.block_momentum, with more than one
	// worker; absent when 0.
	BlockMomentum float64 `json:"block_momentum,omitempty"`
	// BatchPerWorker is the examples of each worker's mini-batch.
	BatchPerWorker int `json:"batch_per_worker"`
	// CPUs is the cap each worker ran under: cluster.cpus_per_worker, or 0
	// when there was none (none asked, or the cap could not be set, which
	// the log says and a cpus_per_worker > 0 beside this 0 shows).
	CPUs float64 `json:"cpus"`
	// Threads is each worker's BLAS threads (blas.Threads: 1 in the
	// pure-Go build, whose gonum BLAS GOMAXPROCS bounds instead).
	Threads int `json:"threads"`
}

// ReadResult reads a result.json (ResultFile).
func ReadResult(path string) (*Result, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var r Result
	if err := json.Unmarshal(b, &r); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return &r, nil
}
