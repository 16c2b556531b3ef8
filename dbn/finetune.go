package dbn

import (
	"context"
	"fmt"
	"math"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/pipedbn/pipedbn/config"
	"github.com/pipedbn/pipedbn/data"
	"github.com/pipedbn/pipedbn/finetune"
	"github.com/pipedbn/pipedbn/monitor"
	"github.com/pipedbn/pipedbn/rbm"
)

// finetuneNet unrolls the pre-trained RBMs (or, with finetune.init: random,
// a network of the same shape from random weights) into a classifier, trains
// it with backprop on the training set less its validation split, and
// evaluates it. mon (nil: nobody) sees every epoch as it ends.
//
// With finetune.workers 1 the master is the one worker that fine-tunes:
// with cluster.cpus_per_worker it is capped like any worker (asWorker)
// until fine-tuning returns. The evaluation after training stays capped,
// as the validation after every epoch inside training is: it is the same
// emulated machine's work, and it is outside finetune.seconds either way.
// With more, the workers fine-tune data-parallel (finetuneOnWorkers) and
// the master evaluates their network uncapped: it is not a worker.
func finetuneNet(ctx context.Context, cfg *config.Config, opt Options, out string, train, test *data.Set, rbms []*rbm.RBM) (*FinetuneResult, *finetune.Network, error) {
	f := cfg.Finetune
	log := opt.Logger
	classes := max(train.Classes, test.Classes)
	seed := seedFor(cfg.Seed, seedFinetune, 0)
	net := unrolled(cfg, rbms, classes, seed)
	fit, valid := train, (*data.Set)(nil)
	if nValid := int(math.Round(f.Validation * float64(train.N))); nValid > 0 && nValid < train.N {
		fit, valid = train.Split(train.N - nValid)
	}
	res := &FinetuneResult{Epochs: f.Epochs, Init: f.Init}
	start := time.Now()
	var err error
	if f.Workers > 1 {
		err = finetuneDistributed(ctx, cfg, opt, out, net, fit, seed, res)
	} else {
		w := asWorker(cfg.Cluster.CPUsPerWorker, "finetune", "fine-tuning", log)
		defer w.release()
		res.Plan = &FinetunePlan{Workers: 1, BatchPerWorker: min(f.BatchSize, fit.N), CPUs: w.cpus, Threads: w.threads}
		log.Info("fine-tuning", "init", f.Init, "epochs", f.Epochs, "train", fit.N, "validation", setSize(valid), "batch_size", f.BatchSize, "cpus", w.cpus, "threads", w.threads, "learning_rate", f.LearningRate, "dropout", f.Dropout, "input_dropout", f.InputDropout, "average_last", f.AverageLast, "max_norm", f.MaxNorm, "label_smoothing", f.LabelSmoothing)
		opt.Monitor.FinetunePlanned(monitorFinetunePlan(res.Plan))
		err = finetuneLocal(ctx, cfg, log, opt.Monitor, net, fit, valid, seed, res)
	}
	if err != nil {
		return nil, nil, fmt.Errorf("fine-tuning: %w", err)
	}
	res.Seconds = time.Since(start).Seconds()
	res.TrainAccuracy = net.Evaluate(fit).Accuracy
	if valid != nil {
		res.ValidationAccuracy = net.Evaluate(valid).Accuracy
	}
	ev := net.Evaluate(test)
	res.TestAccuracy = ev.Accuracy
	res.Confusion = ev.Confusion
	res.PerClass = ev.PerClass
	if cfg.Data.Source == config.FashionMNIST {
		res.Classes = finetune.FashionMNISTClasses
	}
	log.Info("fine-tuning done", "seconds", res.Seconds, "train_accuracy", res.TrainAccuracy, "test_accuracy", res.TestAccuracy)
	return res, net, nil
}

// unrolled is the network to fine-tune: the RBMs unrolled, or with
// finetune.init random the same shape from random weights.
func unrolled(cfg *config.Config, rbms []*rbm.RBM, classes int, seed uint64) *finetune.Network {
	if cfg.Finetune.Init == "random" {
		return finetune.Random(cfg.DBN.Layers, classes, seed)
	}
	layers := make([]finetune.Layer, len(rbms))
	for i, r := range rbms {
		layers[i] = finetune.Layer{In: r.Visible, Out: r.Hidden, W: r.W, B: r.B}
	}
	return finetune.FromPretrained(layers, classes, seed)
}

// finetuneLocal trains net in this process (finetune.Train), every epoch
// into res.History and onto mon.
func finetuneLocal(ctx context.Context, cfg *config.Config, log hclog.Logger, mon *monitor.Run, net *finetune.Network, fit, valid *data.Set, seed uint64, res *FinetuneResult) error {
	f := cfg.Finetune
	hist, err := finetune.Train(ctx, net, fit, valid, finetune.Config{
		Epochs: f.Epochs, BatchSize: f.BatchSize, LearningRate: f.LearningRate,
		LearningRateFinal: f.LearningRateFinal, Momentum: f.Momentum, WeightDecay: f.WeightDecay,
		Patience: f.Patience, Seed: seed, Dropout: f.Dropout, InputDropout: f.InputDropout,
		AverageLast: f.AverageLast, MaxNorm: f.MaxNorm, LabelSmoothing: f.LabelSmoothing,
	}, finetune.Hooks{Epoch: func(e finetune.EpochStats) {
		log.Info("fine-tuning epoch done", "epoch", fmt.Sprintf("%d/%d", e.Epoch, f.Epochs), "loss", e.Loss,
			"train_accuracy", e.TrainAccuracy, "validation_accuracy", e.ValidAccuracy, "seconds", e.Seconds)
		mon.FinetuneEpoch(monitor.FinetuneEpoch{Epoch: e.Epoch, Loss: e.Loss, TrainAccuracy: e.TrainAccuracy,
			ValidationAccuracy: e.ValidAccuracy, Seconds: e.Seconds})
	}})
	if err != nil {
		return err
	}
	for _, e := range hist {
		res.History = append(res.History, FinetuneEpoch{
			Epoch: e.Epoch, LearningRate: e.LearningRate, Loss: e.Loss, TrainAccuracy: e.TrainAccuracy,
			ValidationAccuracy: e.ValidAccuracy, Seconds: e.Seconds,
		})
	}
	return nil
}

// finetuneDistributed trains net on the workers (finetuneOnWorkers) and
// records their plan, losses and recoveries in res.
func finetuneDistributed(ctx context.Context, cfg *config.Config, opt Options, out string, net *finetune.Network, fit *data.Set, seed uint64, res *FinetuneResult) error {
	f := cfg.Finetune
	sync := f.SyncEvery
	res.Plan = &FinetunePlan{Workers: f.Workers, SyncEvery: &sync, BlockMomentum: f.BlockMomentum, BatchPerWorker: min(f.BatchSize, fit.N),
		CPUs: cfg.Cluster.CPUsPerWorker, Threads: workerThreads(cfg.Cluster.CPUsPerWorker)}
	opt.Logger.Info("fine-tuning on workers", "init", f.Init, "workers", f.Workers, "sync_every", f.SyncEvery, "lr_rule", f.LRRule,
		"warmup_epochs", f.WarmupEpochs, "block_momentum", f.BlockMomentum, "epochs", f.Epochs, "train", fit.N, "batch_size", f.BatchSize, "cpus_each", cfg.Cluster.CPUsPerWorker)
	opt.Monitor.FinetunePlanned(monitorFinetunePlan(res.Plan))
	st, recs, err := finetuneOnWorkers(ctx, cfg, opt, out, net, fit, seed)
	if err != nil {
		return err
	}
	for e, l := range st.Recon {
		res.History = append(res.History, FinetuneEpoch{Epoch: e + 1, Loss: l})
	}
	res.Recoveries = recs
	res.BusySeconds, res.WaitSeconds = st.Busy.Seconds(), (st.WaitInput + st.WaitCredit).Seconds()
	return nil
}

// monitorFinetunePlan is p as the monitor shows it.
func monitorFinetunePlan(p *FinetunePlan) monitor.FinetunePlan {
	return monitor.FinetunePlan{Workers: p.Workers, SyncEvery: p.SyncEvery, BatchPerWorker: p.BatchPerWorker,
		CPUs: p.CPUs, Threads: p.Threads}
}

func setSize(s *data.Set) int {
	if s == nil {
		return 0
	}
	return s.N
}
