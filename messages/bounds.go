package messages

import "github.com/pipedbn/pipedbn/internal/sat"

// This file bounds what a receiver accepts: a fragment header may claim
// any length up to 4 GiB, and a Reassembler allocates the whole claim at
// the first fragment, so a receiver checks the claim against what its
// sender may send on that subject before anything is allocated for it.

// MaxSmall bounds the encoding of a message whose arrays do not grow with
// the layers, the data or the epochs (Register, Admission, Assign, Credit,
// EndOfStream, Stop, CheckpointAck, Error), and that of every other
// message's fields besides such arrays: names and lists of names, counts,
// a line of error text, a checkpoint's RNG state, the padding of its
// float32 arrays.
const MaxSmall = 64 << 10

// Shape is what bounds the size of the messages about one RBM_i: its
// layers, its epochs and its windows. A zero field bounds the arrays it
// sizes to none.
type Shape struct {
	// Visible and Hidden are the sizes of L_(i-1) and L_i: W_i, A and B_i
	// are the arrays of Weights, Params and Checkpoint (twice, with their
	// momentum, and W once more as a block step), and a window's rows are
	// Visible values wide.
	Visible, Hidden int
	// Epochs bounds the reconstruction errors, one per epoch, of Status,
	// Weights and Checkpoint.
	Epochs int
	// WindowRows bounds the rows of a window (Chunk) into RBM_i: K
	// mini-batches, at most an epoch's rows.
	WindowRows int
	// Flat, for the network of data-parallel fine-tuning, is the length of
	// its flat parameter vector: the array of its Weights, Params and
	// Checkpoint (three times, with its momentum and block step) instead
	// of W, A and B.
	Flat int64
}

// MaxSize returns the most bytes the encoding of a message of kind k about
// an RBM of shape s may take: its arrays as s sizes them, and MaxSmall for
// the rest. It saturates at math.MaxInt64 instead of overflowing.
func MaxSize(k Kind, s Shape) int64 {
	v, h := nonNeg(s.Visible), nonNeg(s.Hidden)
	params := max(sat.Add(sat.Mul(v, h), v+h), s.Flat)
	perEpoch := sat.Mul(8, nonNeg(s.Epochs))
	switch k {
	case KindChunk:
		// The rows of data and the bias, both Visible wide, and at most one
		// mini-batch length and one label per row.
		rows := nonNeg(s.WindowRows)
		return sat.Add(MaxSmall, sat.Add(sat.Mul(4, sat.Mul(sat.Add(rows, 1), v)), sat.Mul(9, rows)))
	case KindWeights:
		return sat.Add(MaxSmall, sat.Add(sat.Mul(4, params), perEpoch))
	case KindParams:
		return sat.Add(MaxSmall, sat.Mul(4, params))
	case KindCheckpoint:
		return sat.Add(MaxSmall, sat.Add(sat.Mul(12, params), perEpoch))
	case KindStatus:
		return sat.Add(MaxSmall, perEpoch)
	}
	return MaxSmall
}

// minPart is the smallest fragment Limits leaves room for the bookkeeping
// of: a NATS server's max_payload is larger.
const minPart = 2 << 10

// Limits returns the limits of a Reassembler for one sender of messages of
// the given kinds about RBMs of the given shapes (a subject that carries
// only those, from one sender): the longest payload is the largest MaxSize,
// at most DefaultMaxMessage, and it holds two of them incomplete at once,
// in fragments of at least 2 KiB.
func Limits(kinds []Kind, shapes ...Shape) ReassemblerConfig {
	longest := int64(MaxSmall)
	for _, k := range kinds {
		for _, s := range shapes {
			longest = max(longest, MaxSize(k, s))
		}
	}
	longest = min(longest, DefaultMaxMessage)
	held := 2 * (longest + (longest+minPart-1)/minPart*partOverhead)
	return ReassemblerConfig{MaxTotal: int(longest), MaxBytes: held, MaxSenderBytes: held}
}

func nonNeg(n int) int64 { return int64(max(n, 0)) }

// Shape returns the shape of the RBM a assigns: what bounds the messages
// its slave receives (its windows, its checkpoint, its replicas' average).
func (m *Assign) Shape() Shape {
	rows := m.RowsPerEpoch
	if m.K > 0 && m.BatchSize > 0 && m.K <= rows/m.BatchSize {
		rows = m.K * m.BatchSize
	}
	return Shape{Visible: m.Visible, Hidden: m.Hidden, Epochs: m.Epochs, WindowRows: rows, Flat: NetParams(m.Net)}
}
