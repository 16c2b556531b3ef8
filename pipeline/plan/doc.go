// Package plan chooses how pipelined pre-training lays a DBN's RBMs out on
// the slaves: contiguous stage groups of RBMs, each trained by
// one slave that passes middle results between its RBMs in memory, and per
// group a number of stage replicas, slaves that train every r-th window of
// the group data-parallel and average their parameters. It predicts the
// pipeline's seconds per window from a small cost model of CD-1 and picks
// the plan whose slowest group is fastest, the pipeline's throughput, by
// dynamic programming over contiguous ranges of RBMs and numbers of
// replicas, as PipeDream's optimizer does for DNN layers. The package is
// pure: no I/O, no goroutines, no clock.
//
// # Cost model
//
// Work is counted in flop-equivalents. One sample of CD-k on a v x h RBM
// costs SampleWork = 2(3+2k)·v·h + UnitWork·k·(v+h): rbm.Trainer.Step does
// 3+2k GEMMs of 2·v·h flops per sample (10·v·h for CD-1: 3.92, 2.5 and 10
// MFLOP for the quickstart DBN's 784x500, 500x500 and 500x2000) and
// element-wise work that experiments/results/
// rbm_cd1_vs_gemm5 puts at about UnitWork = 280 flops per unit and sample.
// Whether the visible units are Bernoulli or Gaussian changes neither term
// noticeably, so the model ignores it. Each step costs StepRows samples more
// (the weight update and the GEMMs' fixed costs, 8 fitted), or what
// Job.StepRows measured for the RBM's shape on the machine (StepRowsFrom;
// dbn measures capped machines' by CPU time): a stage replica, one of r, takes r steps a mini-batch, a sub-batch each.
//
// A machine (Machine) has CPUs and a Speed in GFLOP/s per CPU of that work.
// A slave would measure it at registration: about a second of single-
// threaded CD-1 steps on RefVisible x RefHidden in batches of RefBatch (or
// on the shapes it is to train), turned into Speed by SpeedFromRate. Its
// training rate is Speed·c·eff(c) with eff(c) = 1/(1 + ThreadLoss·(c-1)) for
// c > 1 CPUs, 1 for one, and 1/(1 + QuotaLoss) below (a fractional CPU is a
// cgroup quota); it handles message bytes on one thread, at
// Speed·min(c, 1), times eff(c) below one CPU.
//
// A window is BatchSize·K samples (an epoch's last, shorter window counts as
// a full one). A group of RBMs i..j on r replicas, each replica training
// every r-th window in K·r steps, takes per window
//
//	work     = (BatchSize·K + StepRows·K·r) · SampleWork of RBMs i..j
//	compute  = work / (training rate of the slowest replica) / r
//	messages = (in + out bytes) · ByteWork / (handling rate) / r
//	sync     = (r·P / bandwidth + 2·latency + 2·P·ByteWork / handling rate) / (S·r)  (r > 1)
//	link     = max(in, out) / bandwidth / r
//	window   = max(compute + messages + sync, link)
//
// where in is the data window (rows·L_0 values at Job.Data's bytes a value)
// for the group of RBM_1 and otherwise the middle result at Job.Middle's bytes a value
// and B_{i-1} in float32 (pipeline.WireBytes: rows·L_{i-1}·size +
// 4·L_{i-1}), out likewise for RBM_j (none for the top RBM); P is the group's parameters W, A, B in
// float32, averaged through the master (pipeline/protocol: each replica
// sends its P and receives their mean, and the master's link carries the
// r of them each way) once every S = Job.SyncEvery windows of a replica. The link carries windows while the CPU trains, so it overlaps;
// credits hide the latency of windows (it counts in the fill). Replicas are
// fed round-robin, so the slowest paces a group. The pipeline's window is
// its slowest group's (or the master's link's, streaming every data
// window), and a run of W windows takes (W-1)·window plus the first
// window's transit through the groups, plus the calibration that measured
// the machines, where the caller tells it (Plan.Calibrated). Greedy pre-training is predicted on
// the fastest machine as W windows of every RBM, without the transforms
// between RBMs, so predicted speed-ups are slightly low. Network and
// ByteWork have the meaning of experiments.SimNetwork and SimJob.ByteCost,
// so the simulator can replay any plan.
//
// What the model says of the quickstart DBN (784-500-500-2000, K = 10) on
// equal machines: one machine per RBM is paced by RBM_3 (1.66x at best),
// and grouping alone cannot do better; replicas can, and replicating the
// whole DBN is predicted fastest (2.65x on 3 machines, 3.5x on 4, 6.6x on 8
// at 10 Gb/s): a window's middle result (2560 rows of L_i floats) outweighs
// an RBM's weights (L_{i-1} rows of L_i floats), so averaging parameters
// every window costs a replica fewer bytes than a group boundary costs in
// messages. Replicas alter training, which the model does not price:
// Options.Tolerance trades time for fewer of them
// (TestQuickstartFewerCopies).
//
// # Search
//
// Auto minimises the window in two passes of one dynamic programme: the
// fastest window T first, then, among plans whose groups all take at most
// T·(1+Tolerance), the fewest RBM copies (replicas change what an RBM
// trains on, which the time model does not see), then the fastest. With
// equal machines the programme runs over prefixes of the RBMs and numbers of
// machines, choosing the last group's range and replicas, and may leave
// machines idle: O(L²·M²) groups, exact. With unequal machines it runs over
// subsets of machines, exact, up to ExactMachines (O(L²·3^M) groups), and
// beyond that over runs of machines sorted by speed, fastest first and
// slowest first, a heuristic that gives replicas of a group machines of
// similar speed. OnePerRBM is the paper's mapping, and Explicit checks and
// predicts a plan written by hand.
//
// What PipeDream's optimizer (msr-fiddle/pipedream,
// optimizer/optimizer_graph_hierarchical.py, compute_partitioning) gave this
// package: the recurrence A[i][j][m] = min over a split k and m' replicas of
// max(A[i][k][m-m'], the last stage's time on m'), a stage's time on m'
// replicas as (compute + its data-parallel communication, 4(m'-1)/m' times
// the parameters over the bandwidth) / m' (here the parameters to the
// master and their mean back, the master's link carrying m' of each, plus
// latency and handling), transfers of
// activations over m' links as separate max terms, the option of using
// fewer machines than given, and printing each stage's time and
// replication. Unlike PipeDream it has no memory constraint (an RBM's
// parameters are small), no hierarchy of networks, and it charges message
// handling on the CPU, which this project measured to matter.
//
// # Where it is used, and next steps
//
// dbn lays out a pipelined run's local slave processes by cluster.plan
// (auto, one-per-rbm, or explicit groups like "1-2,3x2"), with the
// master's speed measured on one thread (rbm.MeasureRate, SpeedFromRate)
// and, for each RBM the plan may replicate, its step cost (rbm.
// MeasureStepCost, StepRowsFrom), and records the plan, predicted against
// measured, in result.json. Groups
// run as one process hosting one slave per RBM (natsnet.RunGroup), each
// replica as a process of its own; auto trades time for fewer replicas by
// cluster.replica_tolerance, and S is cluster.sync_every. Left for later:
// the calibration at registration for slaves
// started by hand (each reports CPUs and SpeedFromRate; ByteWork and
// ThreadLoss fitted as the simulator fits ByteCost); letting experiments'
// simulator replay a plan; and re-planning when the lower groups finish.
package plan
