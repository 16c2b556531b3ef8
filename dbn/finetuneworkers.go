package dbn

import (
	"context"
	"fmt"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/pipedbn/pipedbn/config"
	"github.com/pipedbn/pipedbn/data"
	"github.com/pipedbn/pipedbn/finetune"
	"github.com/pipedbn/pipedbn/monitor"
	"github.com/pipedbn/pipedbn/pipeline"
	"github.com/pipedbn/pipedbn/pipeline/driver"
	"github.com/pipedbn/pipedbn/pipeline/protocol"
	"github.com/pipedbn/pipedbn/rbm"
)

// finetuneOnWorkers fine-tunes net data-parallel on W = finetune.workers
// workers over the protocol: one stage, the network, with W replicas that
// the master deals windows of finetune.sync_every labelled mini-batches of
// fit, each replica the windows g with g mod W = its place, and that
// average their parameters through the master after every window. The
// workers are local slave processes, each capped at
// cluster.cpus_per_worker, or with cluster.slaves > 0 slaves that join (or
// serve) this run; a lost worker is replaced from its last checkpoint, as
// in pre-training. net ends as the last average. It returns the workers'
// statistics (Recon: the mean loss of every epoch) and the replacements of
// lost workers.
func finetuneOnWorkers(ctx context.Context, cfg *config.Config, opt Options, out string, net *finetune.Network, fit *data.Set, seed uint64) (pipeline.Stats, []protocol.Recovery, error) {
	f := cfg.Finetune
	log := opt.Logger.Named("finetune")
	stage := finetuneStage(cfg, net, fit.N, seed)
	var lay *layout
	if cfg.Cluster.Slaves == 0 {
		lay = workerLayout(f.Workers, cfg.Cluster.CPUsPerWorker)
	}
	srv, err := startServer(ctx, cfg, lay, log)
	if err != nil {
		return pipeline.Stats{}, nil, err
	}
	defer srv.close()
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	local, _, err := startSlaves(ctx, cfg, opt, srv, out, lay, f.Workers, cancel)
	if err != nil {
		return pipeline.Stats{}, nil, err
	}
	if local != nil {
		defer local.stop()
	}
	rec := &recorder{monitor: opt.Monitor}
	plan := driver.Plan{
		MasterConfig: protocol.MasterConfig{
			Run: protocol.Run{ID: runID(cfg.Name + "-finetune")}, Stages: []pipeline.StageConfig{stage},
			Data: fit.X, N: fit.N, Labels: fit.Labels, ShuffleSeed: seed ^ 0x5eed, DataPrecision: pipeline.ExactPrecision(fit.X),
			Credits: cfg.Cluster.Credits, CheckpointEvery: cfg.Reliability.CheckpointEvery,
			Timing:   protocol.Timing{JoinTimeout: cfg.Cluster.JoinTimeout, LostAfter: cfg.Reliability.LostAfter},
			Observer: workerObserver(rec, opt.Monitor, f.Epochs, log),
			Replicas: []int{f.Workers}, SyncEvery: 1,
		},
		Store: protocol.NewMemStore(),
	}
	if local != nil {
		plan.Respawn, plan.Seating = local.restart, lay.seating()
	}
	res, err := runMaster(ctx, srv.master, plan, cfg, out, log)
	if err != nil {
		return pipeline.Stats{}, nil, fmt.Errorf("data-parallel fine-tuning: %w", err)
	}
	recs := rec.recoveries()
	for _, r := range recs {
		log.Info("a lost worker was replaced", "worker", r.Lost, "by", r.Replacement, "from_window", r.ResumedAtWindow, "batches_redone", r.Redone)
	}
	net.SetParams(res[0].Params)
	return res[0].Stats, recs, nil
}

// finetuneStage is the stage of the network net for fine-tuning on n
// examples with cfg's finetune keys: windows of sync_every mini-batches,
// the linear rule's warm-up in each worker's windows, block momentum.
func finetuneStage(cfg *config.Config, net *finetune.Network, n int, seed uint64) pipeline.StageConfig {
	f := cfg.Finetune
	batch := min(f.BatchSize, n)
	final := f.LearningRateFinal
	if final == 0 {
		final = f.LearningRate
	}
	lr, _ := finetune.ParseLRRule(f.LRRule) // the config checked it
	perWorker := (pipeline.WindowsPerEpoch(n, batch, f.SyncEvery) + f.Workers - 1) / f.Workers
	sizes := append(net.Sizes(), net.Classes())
	return pipeline.StageConfig{
		Index: 1, Visible: net.Inputs(), Hidden: net.Classes(), Units: rbm.Bernoulli, Middle: rbm.Probabilities, CDK: 1,
		Epochs: f.Epochs, BatchSize: batch, K: f.SyncEvery, LearningRate: [2]float64{f.LearningRate, final},
		Momentum: [2]float64{f.Momentum, f.Momentum}, WeightDecay: f.WeightDecay, Seed: seed, Replicas: f.Workers,
		Net: &pipeline.NetConfig{
			Sizes: sizes, Init: net.Params(nil), Dropout: f.Dropout, InputDropout: f.InputDropout, MaxNorm: f.MaxNorm,
			LabelSmoothing: f.LabelSmoothing, LR: lr, WarmupWindows: f.WarmupEpochs * perWorker, BlockMomentum: f.BlockMomentum,
		},
	}
}

// workerLayout is W local worker processes, replicas of the one stage,
// each on a machine of cpus CPUs (0: uncapped).
func workerLayout(workers int, cpus float64) *layout {
	lay := &layout{threads: workerThreads(cpus), logStem: "finetune"}
	for k := range workers {
		lay.procs = append(lay.procs, proc{first: 1, last: 1, replica: k, replicas: workers, cpus: cpus})
	}
	return lay
}

// workerObserver logs each epoch the workers finished, with its mean loss,
// and shows it on the monitor, with every worker's reports and the losses
// and replacements of workers.
func workerObserver(rec *recorder, mon *monitor.Run, epochs int, log hclog.Logger) protocol.Observer {
	last, shown := time.Now(), 0
	return protocol.Observer{
		Hooks: pipeline.Hooks{Epoch: func(s pipeline.Stats) {
			// Several epochs may end between two reports: each is shown
			// once, the time since the last one shown split among them.
			done := min(len(s.Recon), epochs)
			if done <= shown {
				return
			}
			secs := time.Since(last).Seconds() / float64(done-shown)
			last = time.Now()
			for e := shown + 1; e <= done; e++ {
				log.Info("fine-tuning epoch done", "epoch", fmt.Sprintf("%d/%d", e, epochs), "loss", s.Recon[e-1],
					"workers", s.Worker, "seconds", secs)
				mon.FinetuneEpoch(monitor.FinetuneEpoch{Epoch: e, Loss: s.Recon[e-1], Seconds: secs})
			}
			shown = done
		}},
		Reported: mon.FinetuneWorker,
		Lost: func(_ int, slave string, silent time.Duration) {
			log.Warn("worker lost; replacing it", "worker", slave, "silent", silent.Round(100*time.Millisecond))
			mon.Lost(1, slave, silent)
		},
		Recovered: rec.recovered,
		Joined:    mon.Joined,
	}
}
