package natsnet

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/pipedbn/pipedbn/messages"
	"github.com/pipedbn/pipedbn/pipeline"
)

// regrantEvery is how often a waiting consumer repeats its credit: a
// producer that subscribed after the last grant still learns of it.
const regrantEvery = 500 * time.Millisecond

// LinkStats counts a link end's traffic.
type LinkStats struct {
	// Bytes published or received on the link, fragments included.
	Bytes int64
	// Windows sent or accepted.
	Windows uint64
	// Rejected counts fragments and messages that failed to decode or were
	// for another run, producer or shape; Duplicates, windows received twice.
	Rejected, Duplicates int64
}

// Sender is the producing end of a link over NATS: it publishes windows on
// its own data subject, each only once the consumer has granted credit for
// it, so a slow consumer makes the producer wait instead of losing data or
// piling it up.
type Sender struct {
	nc       *nats.Conn
	subject  string
	runID    string
	producer int
	maxPart  int
	sub      *nats.Subscription

	mu      sync.Mutex
	upTo    uint64
	changed chan struct{}

	seq, msgID uint64
	epoch      int
	bytes      atomic.Int64
}

// NewSender returns the sending end of the link from producer (its name and
// RBM index i; 0 and MasterName for the master's data) to consumer.
func NewSender(nc *nats.Conn, runID, producerName string, producer int, consumerName string) (*Sender, error) {
	s := &Sender{
		nc: nc, subject: dataSubject(runID, producerName), runID: runID, producer: producer,
		maxPart: int(nc.MaxPayload()), changed: make(chan struct{}, 1),
	}
	sub, err := nc.Subscribe(creditSubject(runID, consumerName), s.onCredit)
	if err != nil {
		return nil, fmt.Errorf("subscribe to credits of %s: %w", consumerName, err)
	}
	s.sub = sub
	return s, nil
}

func (s *Sender) onCredit(msg *nats.Msg) {
	m, err := messages.Decode(msg.Data)
	if err != nil {
		return
	}
	c, ok := m.(*messages.Credit)
	if !ok || c.RunID != s.runID || c.RBM != s.producer {
		return
	}
	s.mu.Lock()
	if c.UpTo > s.upTo {
		s.upTo = c.UpTo
		select {
		case s.changed <- struct{}{}:
		default:
		}
	}
	s.mu.Unlock()
}

// Send implements pipeline.Sender: it waits for credit, then encodes w as a
// Chunk and publishes it in fragments that fit the server's max payload.
func (s *Sender) Send(ctx context.Context, w *pipeline.Window) error {
	for {
		s.mu.Lock()
		ok := s.seq < s.upTo
		s.mu.Unlock()
		if ok {
			break
		}
		select {
		case <-s.changed:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	rows := w.TotalRows()
	cols := 0
	if rows > 0 {
		cols = len(w.X) / rows
	}
	chunk := &messages.Chunk{
		RunID: s.runID, RBM: s.producer, Epoch: w.Epoch, Seq: s.seq,
		Rows: rows, Cols: cols, Data: w.X, BatchRows: w.Rows, Bias: w.Bias,
	}
	if err := s.publish(chunk); err != nil {
		return err
	}
	s.mu.Lock()
	s.seq++
	s.mu.Unlock()
	s.epoch = w.Epoch
	return nil
}

func (s *Sender) publish(m messages.Message) error {
	parts, err := messages.EncodeParts(m, s.maxPart, s.msgID)
	if err != nil {
		return err
	}
	s.msgID++
	for _, p := range parts {
		if err := s.nc.Publish(s.subject, p); err != nil {
			return fmt.Errorf("publish on %s: %w", s.subject, err)
		}
		s.bytes.Add(int64(len(p)))
	}
	return nil
}

// Close implements pipeline.Sender: it sends EndOfStream and flushes.
func (s *Sender) Close(ctx context.Context) error {
	defer s.sub.Unsubscribe()
	if err := s.publish(&messages.EndOfStream{RunID: s.runID, RBM: s.producer, Epoch: s.epoch, Windows: s.seq}); err != nil {
		return err
	}
	return s.nc.FlushTimeout(30 * time.Second)
}

// Stats returns the sender's counts.
func (s *Sender) Stats() LinkStats {
	s.mu.Lock()
	defer s.mu.Unlock()
	return LinkStats{Bytes: s.bytes.Load(), Windows: s.seq}
}

// Receiver is the consuming end of a link over NATS. It grants the producer
// credit for `credits` windows beyond the one it is training on, accepts
// windows strictly in sequence, drops duplicates and rejects (and counts)
// anything that is not a consistent window of its run, producer and width.
type Receiver struct {
	nc         *nats.Conn
	sub        *nats.Subscription
	reasm      *messages.Reassembler
	runID      string
	producer   int
	cols       int
	credits    int
	creditSubj string

	next uint64
	win  pipeline.Window

	bytes, rejected, duplicates atomic.Int64
	// accepted mirrors next for Stats, which the slave's status reporter
	// calls while Recv runs.
	accepted atomic.Uint64
}

// NewReceiver returns the receiving end of the link from producer (name and
// RBM index; 0 and MasterName for the data) to consumer, for windows of cols
// values per row.
func NewReceiver(nc *nats.Conn, runID, producerName string, producer int, consumerName string, cols, credits int) (*Receiver, error) {
	r := &Receiver{
		nc: nc, runID: runID, producer: producer, cols: cols, credits: credits,
		creditSubj: creditSubject(runID, consumerName),
		reasm:      messages.NewReassembler(messages.ReassemblerConfig{}),
	}
	sub, err := nc.SubscribeSync(dataSubject(runID, producerName))
	if err != nil {
		return nil, fmt.Errorf("subscribe to windows of %s: %w", producerName, err)
	}
	// Credits bound what may be pending; the library's own limits would
	// drop messages instead of making the producer wait.
	if err := sub.SetPendingLimits(-1, -1); err != nil {
		return nil, err
	}
	r.sub = sub
	return r, nil
}

func (r *Receiver) grant() error {
	b, err := messages.Encode(&messages.Credit{RunID: r.runID, RBM: r.producer, UpTo: r.next + uint64(r.credits)})
	if err != nil {
		return err
	}
	return r.nc.Publish(r.creditSubj, b)
}

// Recv implements pipeline.Receiver.
func (r *Receiver) Recv(ctx context.Context) (*pipeline.Window, error) {
	if err := r.grant(); err != nil {
		return nil, fmt.Errorf("grant credit: %w", err)
	}
	for {
		wait, cancel := context.WithTimeout(ctx, regrantEvery)
		msg, err := r.sub.NextMsgWithContext(wait)
		cancel()
		if err != nil {
			if ctx.Err() != nil {
				return nil, ctx.Err()
			}
			if errors.Is(err, context.DeadlineExceeded) {
				if err := r.grant(); err != nil {
					return nil, fmt.Errorf("grant credit: %w", err)
				}
				continue
			}
			return nil, fmt.Errorf("receive: %w", err)
		}
		r.bytes.Add(int64(len(msg.Data)))
		payload, err := r.reasm.Add(msg.Data)
		if err != nil {
			r.reject(err)
			continue
		}
		if payload == nil {
			continue
		}
		m, err := messages.Decode(payload)
		if err != nil {
			r.reject(err)
			continue
		}
		switch m := m.(type) {
		case *messages.Chunk:
			if err := m.Check(r.runID, r.producer, r.cols); err != nil {
				r.reject(err)
				continue
			}
			if m.Seq < r.next {
				r.duplicates.Add(1)
				continue
			}
			if m.Seq > r.next {
				return nil, fmt.Errorf("window %d from rbm %d arrived while window %d was expected: %d windows lost", m.Seq, r.producer, r.next, m.Seq-r.next)
			}
			r.next++
			r.accepted.Store(r.next)
			r.win = pipeline.Window{Epoch: m.Epoch, Seq: int(m.Seq), Rows: m.BatchRows, X: m.Data, Bias: m.Bias}
			if r.producer == 0 {
				r.win.Bias = nil // data windows: RBM_1 owns its visible biases
			}
			return &r.win, nil
		case *messages.EndOfStream:
			if m.RunID != r.runID || m.RBM != r.producer {
				r.reject(fmt.Errorf("end of stream for run %q rbm %d: %w", m.RunID, m.RBM, messages.ErrMismatch))
				continue
			}
			if m.Windows != r.next {
				return nil, fmt.Errorf("rbm %d ended its stream after %d windows, %d arrived", r.producer, m.Windows, r.next)
			}
			r.sub.Unsubscribe()
			return nil, io.EOF
		default:
			r.reject(fmt.Errorf("unexpected %s on a data subject", m.Kind()))
		}
	}
}

// reject counts a fragment or message that is not a window of this link.
func (r *Receiver) reject(error) {
	r.rejected.Add(1)
}

// Stats returns the receiver's counts.
func (r *Receiver) Stats() LinkStats {
	return LinkStats{Bytes: r.bytes.Load(), Windows: r.accepted.Load(), Rejected: r.rejected.Load(), Duplicates: r.duplicates.Load()}
}
