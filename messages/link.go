package messages

import (
	"errors"
	"fmt"
	"strings"
)

// This file holds what flows on the link from RBM_i's slave to RBM_(i+1)'s:
// windows of the middle result (Chunk) until the last (EndOfStream), Credit
// back, and the reasons a receiver drops what it cannot use (Rejections).

// Chunk is one window of the middle result: the hidden activations RBM_i
// computed for up to K consecutive mini-batches, with the hidden biases B_i
// it had after training on them. Slave i+1 sets the biases of its L_i-copy
// to Bias and trains on the rows, mini-batch by mini-batch.
type Chunk struct {
	// RunID names the run.
	RunID string
	// Incarnation is the run's incarnation, as in Assign.
	Incarnation uint32
	// RBM is i, the index of the producer RBM_i.
	RBM int
	// Epoch is the producer's epoch these rows belong to.
	Epoch int
	// Seq numbers the producer's windows from 0 over the whole run (it does
	// not restart each epoch), so that Credit can refer to them.
	Seq uint64
	// FirstBatch is the index, within the epoch, of the window's first
	// mini-batch.
	FirstBatch int
	// Rows and Cols are the shape of Data; Cols is the producer's hidden
	// size.
	Rows, Cols int
	// Data holds the Rows x Cols middle result, row-major.
	Data []float32
	// Encoding is how Data travels: EncodingFloat32 (the zero value) as
	// it is; a narrower one only for values the producer rounded to it,
	// since Encode rounds every value to its nearest code. Decode reads
	// Data back as float32 whatever the encoding, and Bias travels as
	// float32 always.
	Encoding Encoding
	// BatchRows holds the row count of each mini-batch in the window, in
	// order; its length is the number of mini-batches and its sum is Rows.
	// Only the epoch's last mini-batch may be short.
	BatchRows []int
	// Bias is B_i, the producer's hidden biases, of length Cols.
	Bias []float32
	// Labels, in the master's data windows of a supervised stage (the
	// network of data-parallel fine-tuning), holds each row's class: Rows
	// values. Empty otherwise.
	Labels []byte
}

// Kind returns KindChunk.
func (*Chunk) Kind() Kind { return KindChunk }

func (m *Chunk) validate() error {
	if m.RBM < 0 {
		return invalid("rbm %d: want >= 0 (0: the master's data)", m.RBM)
	}
	if err := nonNegative("epoch", m.Epoch, "first batch", m.FirstBatch); err != nil {
		return err
	}
	if m.Encoding >= encodingEnd {
		return invalid("data encoding %v", m.Encoding)
	}
	if err := matrixShape("data", len(m.Data), m.Rows, m.Cols); err != nil {
		return err
	}
	if len(m.Bias) != m.Cols && !(m.RBM == 0 && len(m.Bias) == 0) {
		return shapeErr("bias has %d values, want cols = %d", len(m.Bias), m.Cols)
	}
	if len(m.BatchRows) == 0 {
		return shapeErr("no mini-batches")
	}
	sum := 0
	for j, n := range m.BatchRows {
		// n <= Rows keeps the sum from overflowing.
		if n < 1 || n > m.Rows {
			return shapeErr("mini-batch %d has %d rows, want 1..%d", j, n, m.Rows)
		}
		if sum += n; sum > m.Rows {
			break
		}
	}
	if sum != m.Rows {
		return shapeErr("mini-batch rows sum to %d or more, want rows = %d", sum, m.Rows)
	}
	if len(m.Labels) != 0 && len(m.Labels) != m.Rows {
		return shapeErr("%d labels for %d rows, want one per row or none", len(m.Labels), m.Rows)
	}
	return nil
}

// Check reports whether c is a consistent window that a receiver expecting
// chunks of run runID from RBM_producer, with cols columns, may train on. It
// returns an error wrapping ErrMismatch for a wrong run or producer, ErrShape
// for a wrong shape, and ErrShape or ErrInvalid if c is inconsistent in
// itself. A receiver counts and drops such chunks rather than applying them.
func (m *Chunk) Check(runID string, producer int, cols int) error {
	if m == nil {
		return invalid("nil chunk")
	}
	if m.RunID != runID {
		return fmt.Errorf("chunk %d: run %q, want %q: %w", m.Seq, m.RunID, runID, ErrMismatch)
	}
	if m.RBM != producer {
		return fmt.Errorf("chunk %d: from rbm %d, want %d: %w", m.Seq, m.RBM, producer, ErrMismatch)
	}
	if m.Cols != cols {
		return fmt.Errorf("chunk %d: %d cols, want %d: %w", m.Seq, m.Cols, cols, ErrShape)
	}
	if err := m.validate(); err != nil {
		return fmt.Errorf("chunk %d: %w", m.Seq, err)
	}
	return nil
}

// Batch returns the rows of the window's j-th mini-batch, a view into Data.
// It panics if j is out of range or m is inconsistent; call Check first.
func (m *Chunk) Batch(j int) []float32 {
	lo := 0
	for _, n := range m.BatchRows[:j] {
		lo += n
	}
	return m.Data[lo*m.Cols : (lo+m.BatchRows[j])*m.Cols]
}

// fields is the chunk's layout on the wire; EncodedSize adds it up without
// writing it, and must change with it.
func (m *Chunk) fields(c *coder) {
	c.run(&m.RunID, &m.Incarnation)
	c.int(&m.RBM, "rbm")
	c.int(&m.Epoch, "epoch")
	c.u64(&m.Seq, "seq")
	c.int(&m.FirstBatch, "first batch")
	c.int(&m.Rows, "rows")
	c.int(&m.Cols, "cols")
	c.ints(&m.BatchRows, "batch rows")
	c.f32s(&m.Bias, "bias")
	c.bytes(&m.Labels, "labels")
	c.u8((*uint8)(&m.Encoding), "encoding")
	c.values(&m.Data, m.Encoding, "data")
}

// ValueBytes returns the bytes of the window's values on the wire: Data at
// its Encoding, and Bias.
func (m *Chunk) ValueBytes() int64 {
	return m.Encoding.Bytes(len(m.Data)) + 4*int64(len(m.Bias))
}

// EncodedSize returns the length of the chunk in the wire format: len of
// what Encode returns for it (header, fields, padding and checksum; not a
// transport's fragment headers), added up from the lengths of its fields
// without encoding anything. It is the size of a window on the wire that
// a slave's BytesIn and BytesOut count (Status, Weights).
func (m *Chunk) EncodedSize() int64 {
	n := int64(headerSize)
	n += 4 + int64(len(m.RunID)) + 4 // run id, incarnation
	n += 6 * 8                       // rbm, epoch, seq, first batch, rows, cols
	n += 4 + 8*int64(len(m.BatchRows))
	n += f32sSize(n, len(m.Bias))
	n += 4 + int64(len(m.Labels))
	n++ // encoding
	if m.Encoding == EncodingFloat32 {
		n += f32sSize(n, len(m.Data))
	} else {
		n += 4 + m.Encoding.Bytes(len(m.Data))
	}
	return n + trailerSize
}

// f32sSize is the length of an array of n float32 values that coder.f32s
// writes at offset at into a message: its length prefix, its padding and
// its values.
func f32sSize(at int64, n int) int64 {
	if n == 0 {
		return 4
	}
	return 4 + int64(pad4(int(at+4))) + 4*int64(n)
}

// EndOfStream is sent by the producer RBM_i after its last window of the
// run; no chunk follows it.
type EndOfStream struct {
	// RunID names the run.
	RunID string
	// Incarnation is the run's incarnation, as in Assign.
	Incarnation uint32
	// RBM is i, the index of the producer.
	RBM int
	// Epoch is the producer's last epoch.
	Epoch int
	// Windows is the total number of windows sent in the run.
	Windows uint64
}

// Kind returns KindEndOfStream.
func (*EndOfStream) Kind() Kind { return KindEndOfStream }

func (m *EndOfStream) validate() error {
	if m.RBM < 0 {
		return invalid("rbm %d: want >= 0 (0: the master's data)", m.RBM)
	}
	return nonNegative("epoch", m.Epoch)
}

func (m *EndOfStream) fields(c *coder) {
	c.run(&m.RunID, &m.Incarnation)
	c.int(&m.RBM, "rbm")
	c.int(&m.Epoch, "epoch")
	c.u64(&m.Windows, "windows")
}

// Credit is sent by the consumer RBM_(i+1) to the producer RBM_i to grant it
// more windows: the producer may send every window with Seq < UpTo. Credits
// are cumulative, so a lost or reordered Credit is repaired by the next one.
type Credit struct {
	// RunID names the run.
	RunID string
	// Incarnation is the run's incarnation, as in Assign.
	Incarnation uint32
	// RBM is i, the index of the producer the credit is for.
	RBM int
	// UpTo is one past the highest Seq the producer may send.
	UpTo uint64
	// Next is the Seq of the window the consumer waits for.
	Next uint64
	// Durable says the consumer's checkpoint covers every window with Seq
	// < Durable: the producer need not keep them for a replay any more.
	Durable uint64
	// Resend asks the producer to send again the windows it still keeps
	// from Seq Next on: the consumer is new, or saw a gap or silence.
	Resend bool
}

// Kind returns KindCredit.
func (*Credit) Kind() Kind { return KindCredit }

func (m *Credit) validate() error {
	if m.RBM < 0 {
		return invalid("rbm %d: want >= 0 (0: the master's data)", m.RBM)
	}
	if m.Durable > m.Next {
		return invalid("durable %d beyond next %d", m.Durable, m.Next)
	}
	return nil
}

func (m *Credit) fields(c *coder) {
	c.run(&m.RunID, &m.Incarnation)
	c.int(&m.RBM, "rbm")
	c.u64(&m.UpTo, "up to")
	c.u64(&m.Next, "next")
	c.u64(&m.Durable, "durable")
	c.bool(&m.Resend, "resend")
}

// RejectReason is why a slave dropped something that arrived on its input
// link instead of training on it; Status.Rejected counts them by reason.
type RejectReason uint8

// The reasons. Their order is part of the wire format (Status.Rejected
// lists the counts in it): append new reasons at the end, never reorder.
const (
	// RejectCorrupt: it failed to reassemble or decode.
	RejectCorrupt RejectReason = iota
	// RejectForeign: a well-formed message of another run, incarnation,
	// producer or peer (ErrMismatch).
	RejectForeign
	// RejectShape: a window inconsistent in itself or with the receiver's
	// shape (ErrShape, ErrInvalid).
	RejectShape
	// RejectDuplicate: a window already received.
	RejectDuplicate
	// RejectGap: a window that arrived ahead of the one awaited.
	RejectGap
	// RejectStale: a message of an earlier incarnation of the run.
	RejectStale
	rejectEnd
)

var rejectNames = [...]string{
	RejectCorrupt:   "corrupt",
	RejectForeign:   "foreign",
	RejectShape:     "shape",
	RejectDuplicate: "duplicate",
	RejectGap:       "gap",
	RejectStale:     "stale",
}

// String returns the reason's lower-case name, such as "corrupt", or
// "RejectReason(N)" for an unknown reason.
func (r RejectReason) String() string {
	if r < rejectEnd {
		return rejectNames[r]
	}
	return fmt.Sprintf("RejectReason(%d)", uint8(r))
}

// ReasonOf returns the RejectReason for an error of this package:
// RejectForeign for ErrMismatch, RejectShape for ErrShape and ErrInvalid,
// and RejectCorrupt for the rest (ErrMagic, ErrVersion, ErrKind,
// ErrChecksum, ErrTruncated, ErrTrailing, ErrFragment, ErrTooLarge,
// ErrEvicted), and for any other error: whatever cannot be read is corrupt.
// Duplicates, gaps and stale messages are the receiver's own judgement, not
// errors of this package.
func ReasonOf(err error) RejectReason {
	switch {
	case errors.Is(err, ErrMismatch):
		return RejectForeign
	case errors.Is(err, ErrShape), errors.Is(err, ErrInvalid):
		return RejectShape
	}
	return RejectCorrupt
}

// Rejections counts what a slave's input link dropped, by reason: the
// count of reason r is at index r.
type Rejections [rejectEnd]uint64

// Add counts one rejection for reason r. It panics if r is not a known
// reason.
func (s *Rejections) Add(r RejectReason) {
	if r >= rejectEnd {
		panic(fmt.Sprintf("messages: Rejections.Add: unknown reason %v", r))
	}
	s[r]++
}

// Total returns the number of rejections, all reasons together.
func (s Rejections) Total() uint64 {
	var n uint64
	for _, x := range s {
		n += x
	}
	return n
}

// ByReason returns the non-zero counts keyed by reason name, such as
// {"corrupt": 2, "gap": 1}; nil if every count is zero.
func (s Rejections) ByReason() map[string]uint64 {
	var m map[string]uint64
	for r, n := range s {
		if n > 0 {
			if m == nil {
				m = map[string]uint64{}
			}
			m[RejectReason(r).String()] = n
		}
	}
	return m
}

// String lists the non-zero counts by reason, such as "corrupt=2 gap=1",
// or returns "none".
func (s Rejections) String() string {
	var b strings.Builder
	for r, n := range s {
		if n > 0 {
			if b.Len() > 0 {
				b.WriteByte(' ')
			}
			fmt.Fprintf(&b, "%v=%d", RejectReason(r), n)
		}
	}
	if b.Len() == 0 {
		return "none"
	}
	return b.String()
}
