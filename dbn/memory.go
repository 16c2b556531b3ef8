package dbn

import (
	"context"
	"fmt"

	"github.com/pipedbn/pipedbn/config"
	"github.com/pipedbn/pipedbn/data"
	"github.com/pipedbn/pipedbn/pipeline"
	"github.com/pipedbn/pipedbn/pipeline/memnet"
	"github.com/pipedbn/pipedbn/pipeline/protocol"
)

// pretrainMemory runs the pipelined schedule in this process
// (`cluster.transport: memory`): the same protocol as over NATS, with its
// credits, sequence numbers and checkpoints, between a master and one slave
// per RBM on an in-memory network, each slave training on a goroutine of
// its own.
func pretrainMemory(ctx context.Context, cfg *config.Config, opt Options, out string, train *data.Set, stageCfgs []pipeline.StageConfig, shuffleSeed uint64, prog *progress) (*trained, error) {
	slaves := make([]string, len(stageCfgs))
	for i := range slaves {
		slaves[i] = fmt.Sprintf("memory-%d", i+1)
	}
	rel := cfg.Reliability
	saver := newSaver(out, stageCfgs, opt.Logger)
	mc := protocol.MasterConfig{
		Run:    protocol.Run{ID: runID(cfg.Name)},
		Stages: stageCfgs, Data: train.X, N: train.N, ShuffleSeed: shuffleSeed, DataPrecision: pipeline.ExactPrecision(train.X),
		Credits: cfg.Cluster.Credits, CheckpointEvery: rel.CheckpointEvery,
		Observer: protocol.Observer{Hooks: prog.hooks(), Checkpointed: prog.checkpointed(saver.checkpointed),
			Joined: opt.Monitor.Joined, Lost: opt.Monitor.Lost, Recovered: opt.Monitor.Recovered,
			Passed: prog.phases.observer()},
	}
	prog.phases.end(phaseCalibration) // nothing to plan: every RBM trains in this process
	if rel.SaveEvery > 0 && rel.CheckpointEvery > 0 {
		stopSaving := saver.every(rel.SaveEvery)
		defer stopSaving()
	}
	timing := protocol.DefaultTiming(cfg.Cluster.JoinTimeout, rel.LostAfter)
	net := memnet.New(mc, slaves, memnet.Options{Timing: timing, Logger: opt.Logger.Named("memory")})
	res, err := net.Run(ctx)
	if err != nil {
		return nil, err
	}
	t := &trained{recoveries: net.Recoveries()}
	for _, r := range res {
		t.addTrained(r)
	}
	return t, nil
}
