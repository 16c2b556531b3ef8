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

// resendAfter is how long a consumer hears nothing, or how long it lets
// pass after asking, before it asks its producer to send again the windows
// it still keeps: core NATS drops what is in flight when the server
// restarts or a connection breaks.
const resendAfter = time.Second

// LinkStats counts a link end's traffic.
type LinkStats struct {
	// Bytes published or received on the link, fragments included.
	Bytes int64
	// Windows sent or accepted.
	Windows uint64
	// Rejected counts fragments and messages that failed to decode or were
	// for another run, producer or shape; Duplicates, windows received twice
	// (and dropped); Gaps, windows that arrived ahead of the one awaited
	// (dropped, and asked for again).
	Rejected, Duplicates, Gaps int64
	// Resent counts windows a producer sent again on request; Resends the
	// requests a consumer made.
	Resent, Resends int64
}

// Sender is the producing end of a link over NATS: it publishes windows on
// its own data subject, each only once the consumer has granted credit for
// it, so a slow consumer makes the producer wait instead of losing data or
// piling it up.
//
// The Sender keeps every window the consumer's checkpoint does not cover
// yet (Credit.Durable), and sends them again when the consumer asks
// (Credit.Resend): after a NATS restart dropped them, or when a replacement
// consumer resumes from its checkpoint. Each window carries its Seq, so the
// consumer applies none twice and notices any it missed.
type Sender struct {
	nc       *nats.Conn
	subject  string
	runID    string
	producer int
	maxPart  int

	mu       sync.Mutex
	sub      *nats.Subscription
	consumer string
	upTo     uint64
	seq      uint64   // the next window's Seq
	kept     [][]byte // the encoded windows keptFrom..seq-1
	keptFrom uint64
	epoch    int
	eos      []byte      // the encoded EndOfStream, once closed
	resend   chan uint64 // from which Seq to send again
	changed  chan struct{}
	stopped  chan struct{}
	wg       sync.WaitGroup

	msgID         atomic.Uint64
	bytes, resent atomic.Int64
}

// NewSender returns the sending end of the link from producer (its name and
// RBM index i; 0 and MasterName for the master's data) to consumer.
func NewSender(nc *nats.Conn, runID, producerName string, producer int, consumerName string) (*Sender, error) {
	s := &Sender{
		nc: nc, subject: dataSubject(runID, producerName), runID: runID, producer: producer,
		maxPart: int(nc.MaxPayload()), changed: make(chan struct{}, 1),
		resend: make(chan uint64, 1), stopped: make(chan struct{}),
	}
	s.msgID.Store(uint64(time.Now().UnixNano()))
	if err := s.Relink(consumerName); err != nil {
		return nil, err
	}
	s.wg.Add(1)
	go s.serveResends()
	return s, nil
}

// Relink points the Sender at a new consumer, one that replaced a lost
// slave: it listens to that consumer's credits from now on.
func (s *Sender) Relink(consumerName string) error {
	sub, err := s.nc.Subscribe(creditSubject(s.runID, consumerName), s.onCredit)
	if err != nil {
		return fmt.Errorf("subscribe to credits of %s: %w", consumerName, err)
	}
	s.mu.Lock()
	old := s.sub
	s.sub, s.consumer = sub, consumerName
	s.mu.Unlock()
	if old != nil {
		old.Unsubscribe()
	}
	return nil
}

// StartAt makes seq the Seq of the next window: a producer resumed from a
// checkpoint taken after seq windows. Call it before the first Send.
func (s *Sender) StartAt(seq uint64) {
	s.mu.Lock()
	s.seq, s.keptFrom, s.kept = seq, seq, nil
	s.mu.Unlock()
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
	// Forget what the consumer's checkpoint covers.
	if d := min(c.Durable, s.seq); d > s.keptFrom {
		n := d - s.keptFrom
		clear(s.kept[:n])
		s.kept = s.kept[n:]
		s.keptFrom = d
	}
	ask := c.Resend && c.Next < s.seq+1 // EndOfStream counts as Seq s.seq
	s.mu.Unlock()
	if ask {
		select {
		case s.resend <- c.Next:
		default: // a resend is pending; it covers this one
		}
	}
}

// serveResends sends windows again as consumers ask, until Stop.
func (s *Sender) serveResends() {
	defer s.wg.Done()
	for {
		var from uint64
		select {
		case from = <-s.resend:
		case <-s.stopped:
			return
		}
		s.mu.Lock()
		var again [][]byte
		if from >= s.keptFrom {
			again = append(again, s.kept[from-s.keptFrom:]...)
		}
		windows := len(again)
		if s.eos != nil {
			again = append(again, s.eos)
		}
		s.mu.Unlock()
		for i, payload := range again {
			if s.publish(payload) != nil {
				break // disconnected: the consumer will ask again
			}
			if i < windows {
				s.resent.Add(1)
			}
		}
	}
}

// Send implements pipeline.Sender: it waits for credit, then encodes w as a
// Chunk and publishes it in fragments that fit the server's max payload. It
// keeps the encoded window until the consumer's checkpoint covers it. A
// window that cannot be published because the connection is down is not an
// error: the consumer asks for it again once the connection is back.
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
	s.mu.Lock()
	seq := s.seq
	s.mu.Unlock()
	payload, err := messages.Encode(&messages.Chunk{
		RunID: s.runID, RBM: s.producer, Epoch: w.Epoch, Seq: seq,
		Rows: rows, Cols: cols, Data: w.X, BatchRows: w.Rows, Bias: w.Bias,
	})
	if err != nil {
		return err
	}
	s.mu.Lock()
	s.kept = append(s.kept, payload)
	s.seq++
	s.epoch = w.Epoch
	s.mu.Unlock()
	return s.publish(payload)
}

// publish sends an encoded message in fragments, each with a fresh message
// id (a receiver drops fragments of ids it has completed). It reports a lost
// connection as success: the window is kept, and asked for again.
func (s *Sender) publish(payload []byte) error {
	for _, p := range messages.Split(payload, s.maxPart, s.msgID.Add(1)) {
		if err := s.nc.Publish(s.subject, p); err != nil {
			if disconnected(s.nc, err) {
				return nil
			}
			return fmt.Errorf("publish on %s: %w", s.subject, err)
		}
		s.bytes.Add(int64(len(p)))
	}
	return nil
}

// disconnected reports whether err only says that the connection is down
// for now.
func disconnected(nc *nats.Conn, err error) bool {
	return errors.Is(err, nats.ErrReconnectBufExceeded) || errors.Is(err, nats.ErrConnectionReconnecting) || nc.IsReconnecting()
}

// Close implements pipeline.Sender: it sends EndOfStream and flushes. The
// Sender goes on answering resend requests until Stop.
func (s *Sender) Close(ctx context.Context) error {
	s.mu.Lock()
	eos, err := messages.Encode(&messages.EndOfStream{RunID: s.runID, RBM: s.producer, Epoch: s.epoch, Windows: s.seq})
	s.eos = eos
	s.mu.Unlock()
	if err != nil {
		return err
	}
	if err := s.publish(eos); err != nil {
		return err
	}
	if err := s.nc.FlushTimeout(30 * time.Second); err != nil && !disconnected(s.nc, err) {
		return err
	}
	return nil
}

// Stop ends the Sender: it stops answering resend requests and listening
// to credits.
func (s *Sender) Stop() {
	s.mu.Lock()
	select {
	case <-s.stopped:
	default:
		close(s.stopped)
	}
	sub := s.sub
	s.mu.Unlock()
	s.wg.Wait()
	if sub != nil {
		sub.Unsubscribe()
	}
}

// Sent is the number of windows handed to Send so far, counting from 0
// even after StartAt.
func (s *Sender) Sent() uint64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.seq
}

// Stats returns the sender's counts.
func (s *Sender) Stats() LinkStats {
	s.mu.Lock()
	defer s.mu.Unlock()
	return LinkStats{Bytes: s.bytes.Load(), Windows: s.seq, Resent: s.resent.Load()}
}

// Receiver is the consuming end of a link over NATS. It grants the producer
// credit for `credits` windows beyond the one it is training on, accepts
// windows strictly in sequence, drops duplicates, asks for windows again
// after a gap or a silence, and rejects (and counts) anything that is not a
// consistent window of its run, producer and width.
type Receiver struct {
	nc         *nats.Conn
	reasm      *messages.Reassembler
	runID      string
	producer   int
	cols       int
	credits    int
	creditSubj string

	sub    *nats.Subscription
	relink chan string

	next       uint64
	askResend  bool
	lastData   time.Time
	lastResend time.Time
	win        pipeline.Window

	// durable is what the consumer's last stored checkpoint covers; with
	// checkpoints off, everything accepted counts as durable.
	durable       atomic.Uint64
	checkpointing atomic.Bool

	waiting                                    atomic.Bool
	bytes, rejected, duplicates, gaps, resends atomic.Int64
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
		relink:     make(chan string, 4),
	}
	sub, err := r.subscribe(producerName)
	if err != nil {
		return nil, err
	}
	r.sub = sub
	return r, nil
}

func (r *Receiver) subscribe(producerName string) (*nats.Subscription, error) {
	sub, err := r.nc.SubscribeSync(dataSubject(r.runID, producerName))
	if err != nil {
		return nil, fmt.Errorf("subscribe to windows of %s: %w", producerName, err)
	}
	// Credits bound what may be pending; the library's own limits would
	// drop messages instead of making the producer wait.
	if err := sub.SetPendingLimits(-1, -1); err != nil {
		return nil, err
	}
	return sub, nil
}

// StartAt makes seq the Seq of the next window to accept, and asks the
// producer for the windows from there: a consumer resumed from a checkpoint
// taken after seq windows. Call it before the first Recv.
func (r *Receiver) StartAt(seq uint64) {
	r.next = seq
	r.accepted.Store(seq)
	r.durable.Store(seq)
	r.askResend = true
}

// Checkpointing says whether the consumer's checkpoints, reported with
// SetDurable, decide what the producer keeps; without them the producer
// keeps only what was not received yet.
func (r *Receiver) Checkpointing(on bool) { r.checkpointing.Store(on) }

// SetDurable records that a stored checkpoint covers the windows before
// seq. Safe to call while Recv runs.
func (r *Receiver) SetDurable(seq uint64) {
	for {
		old := r.durable.Load()
		if seq <= old || r.durable.CompareAndSwap(old, seq) {
			return
		}
	}
}

// Relink switches the Receiver to the windows of a new producer, one that
// replaced a lost slave. Safe to call while Recv runs.
func (r *Receiver) Relink(producerName string) {
	r.relink <- producerName
}

func (r *Receiver) grant(resend bool) error {
	durable := r.next
	if r.checkpointing.Load() {
		durable = min(r.durable.Load(), r.next)
	}
	b, err := messages.Encode(&messages.Credit{
		RunID: r.runID, RBM: r.producer, UpTo: r.next + uint64(r.credits),
		Next: r.next, Durable: durable, Resend: resend,
	})
	if err != nil {
		return err
	}
	if resend {
		r.lastResend = time.Now()
		r.resends.Add(1)
	}
	if err := r.nc.Publish(r.creditSubj, b); err != nil && !disconnected(r.nc, err) {
		return err
	}
	return nil
}

// Waiting reports whether the Receiver is waiting in Recv: the consumer has
// handed on everything it trained. Safe to call while Recv runs.
func (r *Receiver) Waiting() bool { return r.waiting.Load() }

// Recv implements pipeline.Receiver.
func (r *Receiver) Recv(ctx context.Context) (*pipeline.Window, error) {
	r.waiting.Store(true)
	defer r.waiting.Store(false)
	if r.lastData.IsZero() {
		r.lastData = time.Now()
	}
	if err := r.grant(r.askResend); err != nil {
		return nil, fmt.Errorf("grant credit: %w", err)
	}
	r.askResend = false
	for {
		select {
		case name := <-r.relink:
			sub, err := r.subscribe(name)
			if err != nil {
				return nil, err
			}
			r.sub.Unsubscribe()
			r.sub = sub
			if err := r.grant(true); err != nil {
				return nil, fmt.Errorf("grant credit: %w", err)
			}
		default:
		}
		wait, cancel := context.WithTimeout(ctx, regrantEvery)
		msg, err := r.sub.NextMsgWithContext(wait)
		cancel()
		if err != nil {
			if ctx.Err() != nil {
				return nil, ctx.Err()
			}
			if errors.Is(err, context.DeadlineExceeded) {
				now := time.Now()
				resend := now.Sub(r.lastData) >= resendAfter && now.Sub(r.lastResend) >= resendAfter
				if err := r.grant(resend); err != nil {
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
				if err := r.gap(); err != nil {
					return nil, err
				}
				continue
			}
			r.next++
			r.lastData = time.Now()
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
			if m.Windows > r.next {
				if err := r.gap(); err != nil {
					return nil, err
				}
				continue
			}
			if m.Windows < r.next {
				return nil, fmt.Errorf("rbm %d ended its stream after %d windows, %d arrived", r.producer, m.Windows, r.next)
			}
			r.sub.Unsubscribe()
			return nil, io.EOF
		default:
			r.reject(fmt.Errorf("unexpected %s on a data subject", m.Kind()))
		}
	}
}

// gap notes a window that arrived ahead of the awaited one: those between
// were lost, and the producer is asked for them again (at most once per
// resendAfter).
func (r *Receiver) gap() error {
	r.gaps.Add(1)
	if time.Since(r.lastResend) < resendAfter {
		return nil
	}
	if err := r.grant(true); err != nil {
		return fmt.Errorf("grant credit: %w", err)
	}
	return nil
}

// reject counts a fragment or message that is not a window of this link.
func (r *Receiver) reject(error) {
	r.rejected.Add(1)
}

// Stats returns the receiver's counts.
func (r *Receiver) Stats() LinkStats {
	return LinkStats{
		Bytes: r.bytes.Load(), Windows: r.accepted.Load(), Rejected: r.rejected.Load(),
		Duplicates: r.duplicates.Load(), Gaps: r.gaps.Load(), Resends: r.resends.Load(),
	}
}
