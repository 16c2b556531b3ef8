package natsnet

import (
	"context"

	"github.com/pipedbn/pipedbn/pipeline/driver"
)

// RunGroup runs a stage group of a plan in this process: one slave per
// name, each registering and training the RBM the master seats it at (its
// plan's Seating gives a group's names consecutive RBMs). The slaves share
// the process's BLAS threads (opt.Threads) and train one window at a time,
// each window with all of them, so that a group on one machine does the
// work of greedy pre-training in the same time, while its windows still
// flow as the pipelined schedule's. Middle results and credits between the
// group's RBMs are handed over in memory (the same messages, in order,
// under the same protocol), not through the NATS server.
//
// A slave whose name is still held by a process heard from moments ago
// registers again until opt.JoinTimeout. When one slave fails, RunGroup
// stops the others (each leaving its checkpoint) and returns the first
// error (see driver.RunGroup). One name is RunSlave.
func RunGroup(ctx context.Context, opt SlaveOptions, names []string) error {
	return driver.RunGroup(ctx, opt.SlaveOptions, names, func(ctx context.Context, o driver.SlaveOptions) error {
		n := opt
		n.SlaveOptions = o
		return runSlave(ctx, &n)
	})
}
