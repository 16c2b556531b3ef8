package pipeline

import (
	"fmt"
	"sort"
	"strings"

	"github.com/pipedbn/pipedbn/internal/sat"
	"github.com/pipedbn/pipedbn/rbm"
)

// Memory is an estimate of the bytes one process, or one worker in it,
// holds at its peak in the buffers that grow with the DBN's shapes, the
// mini-batch, the credits and the data: each part an upper bound of the
// live bytes of what it names. It leaves out what does not grow with them
// (the Go runtime, the program, OpenBLAS's own buffers) and garbage the
// collector has not reclaimed yet: with the default GOGC a Go heap may
// grow to twice its live bytes before a collection.
//
// Its figures saturate at math.MaxInt64 instead of overflowing, so that an
// absurd shape gives an absurd estimate, never a small one.
//
// Measured against the heap (TestEstimatesBoundMeasuredHeap, and dbn's
// TestEstimateBoundsMeasuredRun for whole runs): Greedy's and a Stage's
// estimates are their live bytes to within 0.1%; a whole run's is 1.0x to
// 1.6x its peak, most over where it bounds what timing decides (the
// checkpoints a store keeps).
type Memory struct {
	// Parts, in the order they were added.
	Parts []MemoryPart
}

// MemoryPart is one part of a Memory: what it holds, in the paper's
// language, and its bytes.
type MemoryPart struct {
	What  string
	Bytes int64
}

// Add adds a part of bytes bytes; nothing when bytes <= 0.
func (m *Memory) Add(what string, bytes int64) {
	if bytes > 0 {
		m.Parts = append(m.Parts, MemoryPart{What: what, Bytes: bytes})
	}
}

// AddMemory adds every part of o, each named with prefix before it.
func (m *Memory) AddMemory(prefix string, o Memory) {
	for _, p := range o.Parts {
		m.Add(prefix+p.What, p.Bytes)
	}
}

// Total is the sum of the parts.
func (m Memory) Total() int64 {
	var t int64
	for _, p := range m.Parts {
		t = sat.Add(t, p.Bytes)
	}
	return t
}

// Largest returns the largest part (the zero MemoryPart if there is none).
func (m Memory) Largest() MemoryPart {
	var l MemoryPart
	for _, p := range m.Parts {
		if p.Bytes > l.Bytes {
			l = p
		}
	}
	return l
}

// String lists the parts, largest first: "what: 12345 B; ...".
func (m Memory) String() string {
	ps := append([]MemoryPart(nil), m.Parts...)
	sort.SliceStable(ps, func(i, j int) bool { return ps[i].Bytes > ps[j].Bytes })
	s := make([]string, len(ps))
	for i, p := range ps {
		s[i] = fmt.Sprintf("%s: %d B", p.What, p.Bytes)
	}
	return strings.Join(s, "; ")
}

// Peak returns the largest of phases, by Total: what a process that goes
// through them one after the other holds at its peak (a zero Memory for
// none).
func Peak(phases ...Memory) Memory {
	var p Memory
	for _, ph := range phases {
		if ph.Total() > p.Total() {
			p = ph
		}
	}
	return p
}

// Float32Bytes returns the bytes of the product of counts float32 values,
// saturating at math.MaxInt64; 0 if a count is <= 0.
func Float32Bytes(counts ...int) int64 {
	b := int64(4)
	for _, c := range counts {
		if c <= 0 {
			return 0
		}
		b = sat.Mul(b, int64(c))
	}
	return b
}

// vals is the bytes of n float32 values.
func vals(n int64) int64 { return sat.Mul(n, 4) }

// params is the float32 values of RBM_i's W_i, A and B_i.
func (c StageConfig) params() int64 {
	if c.Net != nil {
		return int64(c.Net.NumParams())
	}
	return sat.Add(sat.Mul(int64(c.Visible), int64(c.Hidden)), int64(c.Visible)+int64(c.Hidden))
}

// window is the bytes of one window of K mini-batches of width values per
// row, with its bias vector (an epoch of n rows). It counts one for
// RBM_1's data windows too, which carry none: a bound a few kilobytes
// over.
func (c StageConfig) window(n, width int) int64 {
	return WindowBytes(WindowRows(c.K, c.BatchSize, n), width, true)
}

// runWindows is the windows of a whole run of n rows per epoch: no link
// ever holds more.
func (c StageConfig) runWindows(n int) int64 {
	if n <= 0 || c.BatchSize <= 0 || c.K <= 0 {
		return 0
	}
	return sat.Mul(int64(max(c.Epochs, 0)), int64(WindowsPerEpoch(n, c.BatchSize, c.K)))
}

// TrainerMemory estimates what Stage i holds to train RBM_i, apart from its
// input: W_i, A and B_i, and what rbm.NewTrainer allocates besides
// (rbm.TrainerValues): the momentum (velocity) and last good copy of each
// (3·(V·H + V + H) values in all), and the CD-k work buffers of one
// mini-batch of B rows (B·(V + 3H) + V + 2H values).
func (c StageConfig) TrainerMemory() Memory {
	var m Memory
	i := c.Index
	if c.Net != nil {
		// A layer's activations, deltas and dropout draws per row, and the
		// flat vector Params copies out.
		var widths int64
		for _, w := range c.Net.Sizes {
			widths = sat.Add(widths, int64(w))
		}
		m.Add("the network (weights and biases, their momentum, a flat copy)", vals(sat.Mul(3, c.params())))
		m.Add("the network's buffers of a mini-batch", vals(sat.Mul(3*int64(max(c.BatchSize, 0)), widths)))
		return m
	}
	kept, scratch := rbm.TrainerValues(c.Visible, c.Hidden, c.BatchSize)
	m.Add(fmt.Sprintf("RBM_%d (W_%d and biases, with their momentum and last good copy)", i, i), vals(sat.Add(c.params(), kept)))
	m.Add(fmt.Sprintf("RBM_%d's CD-k buffers of a mini-batch", i), vals(scratch))
	return m
}

// Flow is what bounds the windows in flight in the pipelined schedule, and
// how its messages travel.
type Flow struct {
	// RBMs is L, the number of RBMs (and of slaves).
	RBMs int
	// Rows is the number of examples in an epoch.
	Rows int
	// Credits is the windows a consumer grants its producer beyond those
	// it trained (cluster.credits).
	Credits int
	// LinkCredits, if set, holds the credits of each link as the master
	// grants them, LinkCredits[i-1] those of the link into RBM_i: fewer than
	// Credits where its windows are long (protocol.LinkCredits).
	LinkCredits []int
	// CheckpointEvery is C, the windows between a slave's checkpoints; 0:
	// none (reliability.checkpoint_every).
	CheckpointEvery int
	// InLinks and OutLinks count the slave's links from its producers and
	// to its consumers (its Assign's Upstream and Downstream): more than
	// one where a neighbouring stage group has replicas, each link with its
	// own credit and its own kept windows. 0 counts as 1.
	InLinks, OutLinks int
	// Replicas is the replicas of the slave's stage group: with more than
	// one, it sends its parameters to their averages and receives the mean.
	Replicas int
	// RBMReplicas is the master's view of the plan: RBMReplicas[i-1] the
	// stage replicas of RBM_i (nil, or 0: one), whose checkpoints and
	// averages the master holds, every SyncEvery windows.
	RBMReplicas []int
	SyncEvery   int
	// Wire says messages travel encoded, in fragments (over NATS): each is
	// copied into its encoding and its fragments on the way out, and
	// reassembled and decoded on the way in. Otherwise (memnet) a message
	// is handed over as it is.
	Wire bool
}

// kept bounds the windows a producer keeps for RBM_j, its consumer, out of
// a run of total windows. Without checkpoints it forgets a window once it
// arrived: it keeps at most the credit. With checkpoints it keeps them from
// RBM_j's keep point on, which trails RBM_j by up to C windows plus what the
// RBMs above lag behind it (each up to its credit, the window it trains and
// the one it holds for credit), as the keep points move top down (see
// protocol's updateKeeps).
func (f Flow) kept(j int, total int64) int64 {
	credits := f.credits(j)
	if f.CheckpointEvery <= 0 {
		return min(credits+1, total)
	}
	return min(sat.Add(sat.Add(credits+1, f.lag(j)), 2*int64(f.CheckpointEvery)), total)
}

// replicas returns the stage replicas of RBM_i in the master's view.
func (f Flow) replicas(i int) int64 {
	if i >= 1 && i <= len(f.RBMReplicas) {
		return int64(max(f.RBMReplicas[i-1], 1))
	}
	return 1
}

// averages bounds the parameters the master holds for the averages of
// RBM_i's r replicas: the r sets gathered for a round; the averages it
// keeps, one per round since RBM_i's keep point (protocol's averaging), the
// latest alone without checkpoints; the set arriving (its fragments and
// its decoding) and the average's encoding on its way out. The mean's
// float64 sums count as two more.
func (f Flow) averages(i int, r, total int64) int64 {
	rounds := int64(1)
	if f.CheckpointEvery > 0 && f.SyncEvery > 0 {
		rounds = sat.Add(f.kept(i, total)/int64(f.SyncEvery), 1)
	}
	return sat.Add(sat.Add(r, rounds), 5)
}

// credits returns the credits of the link into RBM_i.
func (f Flow) credits(i int) int64 {
	if i >= 1 && i <= len(f.LinkCredits) {
		return int64(max(f.LinkCredits[i-1], 0))
	}
	return int64(max(f.Credits, 0))
}

// lag bounds the windows the RBMs above RBM_i lag behind it: each up to
// its credit, the window it trains and the one it holds for credit.
func (f Flow) lag(i int) int64 {
	var l int64
	for k := i + 1; k <= f.RBMs; k++ {
		l = sat.Add(l, f.credits(k)+2)
	}
	return l
}

// storedCheckpoints bounds the checkpoints of RBM_i a master keeps in a
// store: those from its keep point on, which trails RBM_i's latest
// checkpoint by what the RBMs above lag behind it (see kept). A run of
// 4 RBMs, credits 4 and C = 1, 2 and 5 kept at most 12, 9 and 2 of RBM_1's
// where this bound is 20, 11 and 6.
func (f Flow) storedCheckpoints(i int, total int64) int64 {
	c := int64(f.CheckpointEvery)
	if c <= 0 {
		return 0
	}
	lag := sat.Add(f.lag(i), c)
	return min((lag+c-1)/c+1, total/c+1)
}

// SlaveMemory estimates what the slave of RBM_i holds in the pipelined
// schedule of f: RBM_i and its trainer (TrainerMemory); the windows of K
// mini-batches of L_{i-1} values its credit lets wait (on each link in);
// for i < L the middle results it keeps for RBM_{i+1} to ask for again (on
// each link out), with the one it trains and the one waiting for credit;
// a stage replica's parameters on their way to the average and the mean
// coming back; and a checkpoint on its way (a
// snapshot of W_i, its biases and their momentum), or without checkpoints
// over the wire the trained weights on their way.
func (c StageConfig) SlaveMemory(f Flow) Memory {
	m := c.TrainerMemory()
	i, total := c.Index, c.runWindows(f.Rows)
	inLinks, outLinks := int64(max(f.InLinks, 1)), int64(max(f.OutLinks, 1))
	in := min(f.credits(i), total)
	if f.Wire {
		in++ // the next window, reassembled from its fragments
	}
	in = min(sat.Mul(in, inLinks), total)
	m.Add(fmt.Sprintf("windows of %d mini-batches of L_%d (RBM_%d's input, %d credits on each of %d links)", c.K, i-1, i, f.credits(i), inLinks), sat.Mul(in, c.window(f.Rows, c.Visible)))
	if i < f.RBMs {
		out := sat.Add(min(sat.Mul(f.kept(i+1, total), outLinks), total), 2)
		if f.Wire {
			out = sat.Add(out, 2) // a window's encoding and its fragments
		}
		m.Add(fmt.Sprintf("middle results of RBM_%d (windows kept for RBM_%d to ask for again, on %d links)", i, i+1, outLinks), sat.Mul(out, c.window(f.Rows, c.Hidden)))
	}
	if f.Replicas > 1 {
		copies := int64(2)
		if f.Wire {
			copies = 6 // each with its encoding and fragments
		}
		m.Add(fmt.Sprintf("RBM_%d's parameters for its %d replicas' average, and their mean", i, f.Replicas), vals(sat.Mul(copies, c.params())))
	}
	copies := int64(0)
	what := ""
	switch {
	case f.CheckpointEvery > 0 && f.Wire:
		copies, what = 6, "a checkpoint on its way (W_%d, biases and momentum, with their encoding and fragments)"
	case f.CheckpointEvery > 0:
		copies, what = 2, "a checkpoint on its way (W_%d, biases and momentum)"
	case f.Wire:
		copies, what = 2, "the trained W_%d on its way (its encoding and fragments)"
	}
	if copies > 0 {
		m.Add(fmt.Sprintf(what, i), vals(sat.Mul(copies, c.params())))
	}
	return m
}

// MasterMemory estimates what the master of the pipelined schedule of f
// holds besides the data set: the windows of K mini-batches of data it
// sends RBM_1 at once, new or again (RBM_1's credit), and per RBM_i its
// checkpoints (each replica's), the averages of its replicas and its
// trained weights. Of the checkpoints it holds the latest (weights.npz is
// refreshed from it) and the encoding of the one it stores; in memory
// (memnet, whose store is in memory) the stored ones too; over the wire
// the fragments of the one arriving and its decoding (its store is
// JetStream's, outside the master: a store in the master's memory, for a
// NATS server without JetStream, holds the stored ones too). Of the
// weights it holds them as received, their encoding for the store and its
// copy (over the wire: the fragments, reassembled).
func MasterMemory(cfgs []StageConfig, f Flow) Memory {
	var m Memory
	if len(cfgs) == 0 {
		return m
	}
	c1 := cfgs[0]
	total := c1.runWindows(f.Rows)
	win := sat.Add(min(f.credits(1), total), 1)
	if f.Wire {
		win = sat.Add(win, 2)
	}
	// The master keeps none of them: it deals those RBM_1 asks for again
	// anew (protocol.Producer.Regenerate), within RBM_1's credit like the
	// new ones.
	m.Add(fmt.Sprintf("windows of %d mini-batches of data for RBM_1 (dealt anew when asked for again)", c1.K), sat.Mul(win, c1.window(f.Rows, c1.Visible)))
	for _, c := range cfgs {
		i, r := c.Index, f.replicas(c.Index)
		if f.CheckpointEvery > 0 {
			n := int64(4)
			if !f.Wire {
				n = sat.Add(2, f.storedCheckpoints(i, total))
			}
			what := fmt.Sprintf("RBM_%d's checkpoints (W_%d, biases and momentum)", i, i)
			if r > 1 {
				what = fmt.Sprintf("the checkpoints of RBM_%d's %d replicas (W_%d, biases and momentum)", i, r, i)
			}
			m.Add(what, vals(sat.Mul(sat.Mul(sat.Mul(2, n), r), c.params())))
		}
		if r > 1 {
			m.Add(fmt.Sprintf("the averages of RBM_%d's %d replicas", i, r), vals(sat.Mul(f.averages(i, r, total), c.params())))
		}
		m.Add(fmt.Sprintf("RBM_%d's trained W_%d", i, i), vals(sat.Mul(3, c.params())))
	}
	return m
}

// GreedyMemory estimates what Greedy holds, on n rows, besides its input
// x: every stage (TrainerMemory: Greedy keeps them all), the window buffer
// and the shuffled order of the stage training, and the largest hand-over
// between two RBMs, where the data transformed through RBM_i (n·L_i
// values) is made while RBM_i's own input (n·L_{i-1} values, for i > 1)
// is still held.
func GreedyMemory(n int, cfgs []StageConfig) Memory {
	var m Memory
	var window, handOver int64
	handOverAt := 0
	for k, c := range cfgs {
		m.AddMemory("", c.TrainerMemory())
		window = max(window, WindowBytes(WindowRows(c.K, c.BatchSize, n), c.Visible, false))
		if k == len(cfgs)-1 {
			break
		}
		h := sat.Mul(int64(max(n, 0)), int64(c.Hidden))
		if k > 0 {
			h = sat.Add(h, sat.Mul(int64(max(n, 0)), int64(c.Visible)))
		}
		if vals(h) > handOver {
			handOver, handOverAt = vals(h), c.Index
		}
	}
	m.Add("a window of mini-batches and the shuffled order of the examples", sat.Add(window, sat.Mul(8, int64(max(n, 0)))))
	if handOverAt > 0 {
		m.Add(fmt.Sprintf("the data transformed through RBM_%d (the input of RBM_%d)", handOverAt, handOverAt+1), handOver)
	}
	return m
}
