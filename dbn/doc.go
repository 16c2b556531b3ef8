// Package dbn is one run of pipedbn, what `master run` does: it loads the
// data a config names, pre-trains the deep belief network's RBMs greedily
// (one after the other, in this process) or pipelined (all at once, in this
// process or over a NATS cluster of slaves, local processes or remote ones,
// with checkpoints, replacement of lost slaves and resumption of an
// interrupted run), fine-tunes the unrolled network with backprop, and
// writes result.json and weights.npz to the run's output folder. Run is the
// whole of it; Result is result.json.
package dbn
