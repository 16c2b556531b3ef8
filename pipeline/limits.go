package pipeline

import "github.com/pipedbn/pipedbn/internal/sat"

// How big the parts of a run may be. The memory estimate (Memory), the
// checks that refuse a run before its data is loaded (dbn.CheckLimits) and
// the allocations they guard (Source's windows, the local slaves' layout)
// all size what they hold with these, so that nothing is allocated at a
// size the checks did not see.

// MaxSlaves bounds the slaves of one pipelined run that its master starts
// or admits: every RBM of every local slave process's stage group, every
// stage replica, or the slaves started by hand for the embedded NATS
// server. That server gives each slave an identity of its own and every
// slave account imports from every other, so its config grows with their
// square.
const MaxSlaves = 128

// WindowRows is the rows of a full window of k mini-batches of batchSize
// rows over an epoch of n rows: k·batchSize, at most n (an epoch shorter
// than a window is dealt in one), 0 if any is <= 0. It never overflows.
func WindowRows(k, batchSize, n int) int {
	if k <= 0 || batchSize <= 0 || n <= 0 {
		return 0
	}
	return int(min(sat.Mul(int64(k), int64(batchSize)), int64(n)))
}

// WindowBytes returns the bytes of a window of rows rows of width float32
// values, with its bias vector B_i (width values more) when bias is set: a
// window of middle results, which a data window for RBM_1 lacks. The memory
// estimate, the checks, the planner (package plan) and the simulator
// (experiments) all size a window by it. It saturates at math.MaxInt64.
func WindowBytes(rows, width int, bias bool) int64 {
	values := sat.Mul(int64(max(rows, 0)), int64(max(width, 0)))
	if bias {
		values = sat.Add(values, int64(max(width, 0)))
	}
	return vals(values)
}

// LinkCredits is the credits of the link into RBM c.Index in a run over n
// rows: credits, fewer where its windows are long, as many as fit in
// budget bytes of windows in flight, and at least one.
func LinkCredits(credits int, c StageConfig, n int, budget int64) int {
	window := WindowBytes(WindowRows(c.K, c.BatchSize, n), c.Visible, false)
	if window <= 0 {
		return credits
	}
	return int(max(1, min(int64(credits), budget/window)))
}
