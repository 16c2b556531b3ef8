package protocol

import (
	"fmt"
	"math"
	"time"

	"github.com/pipedbn/pipedbn/messages"
	"github.com/pipedbn/pipedbn/pipeline"
)

// Run names a run on the wire: its ID, and the incarnation of its master
// (a resumed master starts a new one), so that words of an earlier
// incarnation are told apart from this one's.
type Run struct {
	ID          string
	Incarnation uint32
}

func (r Run) String() string { return fmt.Sprintf("%s#%d", r.ID, r.Incarnation) }

// matches sorts a message's run into this run, another run, or an earlier
// (or later) incarnation of this one.
func (r Run) matches(id string, incarnation uint32) (ok bool, reason messages.RejectReason) {
	switch {
	case id != r.ID:
		return false, messages.RejectForeign
	case incarnation != r.Incarnation:
		return false, messages.RejectStale
	}
	return true, 0
}

// LinkStats counts what one end of a link did.
type LinkStats struct {
	// Windows sent (producer) or accepted (consumer).
	Windows uint64
	// Resent counts windows a producer sent again on request; Resends the
	// requests a consumer made; InFlight the requests a producer let pass
	// because the window asked for was on its way (Producer.SetInFlight).
	Resent, Resends, InFlight uint64
	// Rejected counts what a consumer dropped, per reason.
	Rejected messages.Rejections
	// Bytes is the length in the wire format (messages.Chunk.EncodedSize)
	// of the windows this end sent (producer) or accepted (consumer) since
	// it was made, each window once: a window sent again, a duplicate, or
	// anything rejected adds nothing. A window counts as the producer's
	// Send returns it, before any transport carries it.
	Bytes uint64
}

// Producer is the sending end of a link: the master feeding RBM_1's data,
// or slave i sending its middle results and B_i to slave i+1. It sends a
// window only within the credit its consumer granted, numbers every window
// with its Seq over the whole run, and keeps every window the consumer's
// checkpoints do not cover yet, to send it again when asked: after a loss
// in flight, or to a replacement consumer resuming from a checkpoint.
// Windows sent again stay within the credit too: a consumer that resumes
// many windows back gets them as it trains, not all at once.
type Producer struct {
	run      Run
	self     string
	rbm      int // the producer's RBM index; 0 for the master's data
	consumer string

	seq      uint64 // the next window's Seq
	upTo     uint64 // windows with Seq < upTo may be sent
	kept     []*messages.Chunk
	keptFrom uint64 // the Seq of kept[0]
	// sentAt[k] is when kept[k] was last sent to the consumer (notSent:
	// not to this one); inFlight how long a window sent counts as on its
	// way (SetInFlight).
	sentAt   []time.Duration
	inFlight time.Duration
	// resend is the Seq of the next kept window to send again; seq when
	// none is due. endAgain: the end of the stream follows them.
	resend   uint64
	endAgain bool
	// again, if set, makes a window anew, kept then as nil (Regenerate).
	again func(seq uint64) *pipeline.Window
	end   *messages.EndOfStream
	stats LinkStats
}

// NewProducer returns the producing end of the link from self (RBM index
// rbm; 0 for the master's data) to consumer, whose next window has Seq
// start: 0, or the checkpoint a producer resumes from.
func NewProducer(run Run, self string, rbm int, consumer string, start uint64) *Producer {
	return &Producer{run: run, self: self, rbm: rbm, consumer: consumer, seq: start, upTo: start, keptFrom: start, resend: start}
}

// notSent marks a kept window not sent to the current consumer.
const notSent = time.Duration(math.MinInt64)

// SetInFlight has the producer take a request to send window n again,
// made less than d after it sent n, for one that crossed the window on its
// way: it sends nothing again then, and the consumer, if the window was
// lost after all, asks again (Consumer.Tick, after ResendAfter). A consumer
// waits for a window it asked for again by its own clock, which cannot
// tell a window on its way from a lost one: a slave on a small CPU quota
// reads a long window slowly, and two slaves of one process wake together
// when its quota comes back. d is the protocol's ResendAfter; 0 (the
// default) sends again whatever is asked.
func (p *Producer) SetInFlight(d time.Duration) { p.inFlight = d }

// Regenerate has the producer keep no window but make those asked for
// again with again, which returns window seq as it was sent: the master
// deals its data windows anew from its Source instead of holding up to
// 2C + the lag above of them.
func (p *Producer) Regenerate(again func(seq uint64) *pipeline.Window) { p.again = again }

// Relink points the producer at a consumer that replaced a lost one: what
// was due again to the lost one is dropped; the new one asks for its own.
func (p *Producer) Relink(consumer string) {
	p.consumer = consumer
	p.resend, p.endAgain = p.seq, false
	for k := range p.sentAt {
		p.sentAt[k] = notSent
	}
}

// Consumer names the current consumer.
func (p *Producer) Consumer() string { return p.consumer }

// CanSend reports whether the consumer granted credit for the next window,
// and every window due again was sent before it.
func (p *Producer) CanSend() bool { return p.end == nil && p.resend == p.seq && p.seq < p.upTo }

// Seq is the Seq the next window gets: the number of windows produced.
func (p *Producer) Seq() uint64 { return p.seq }

// Closed reports whether the end of the stream was sent.
func (p *Producer) Closed() bool { return p.end != nil }

// Stats returns the producer's counts.
func (p *Producer) Stats() LinkStats { return p.stats }

// Send numbers w, keeps it and returns the message that carries it, sent
// at now. It takes ownership of w's slices: the caller must not change
// them. Call it only when CanSend.
func (p *Producer) Send(now time.Duration, w *pipeline.Window) Envelope {
	if !p.CanSend() {
		panic(fmt.Sprintf("protocol: rbm %d sends window %d without credit (up to %d)", p.rbm, p.seq, p.upTo))
	}
	c := p.chunk(w, p.seq)
	if p.again != nil {
		p.kept = append(p.kept, nil)
	} else {
		p.kept = append(p.kept, c)
	}
	p.sentAt = append(p.sentAt, now)
	p.seq++
	p.resend = p.seq
	p.stats.Windows++
	p.stats.Bytes += uint64(c.EncodedSize())
	return Envelope{From: p.self, To: p.consumer, Msg: c}
}

// chunk is the message that carries w as window seq, its values in the
// narrowest encoding that holds them exactly (the producer's stage rounded
// them to its precision).
func (p *Producer) chunk(w *pipeline.Window, seq uint64) *messages.Chunk {
	rows := w.TotalRows()
	return &messages.Chunk{
		RunID: p.run.ID, Incarnation: p.run.Incarnation, RBM: p.rbm, Epoch: w.Epoch, Seq: seq,
		Rows: rows, Cols: len(w.X) / max(rows, 1), Data: w.X, BatchRows: w.Rows, Bias: w.Bias, Labels: w.Labels,
		Encoding: EncodingOf(w.Precision),
	}
}

// Close returns the end of the stream, after the last window.
func (p *Producer) Close(lastEpoch int) Envelope {
	p.end = &messages.EndOfStream{RunID: p.run.ID, Incarnation: p.run.Incarnation, RBM: p.rbm, Epoch: lastEpoch, Windows: p.seq}
	return Envelope{From: p.self, To: p.consumer, Msg: p.end}
}

// OnCredit takes the consumer's credit, at now: more windows may be sent,
// those its checkpoints cover are forgotten, and those it asks for again
// are due again, unless the first of them is still on its way
// (SetInFlight): it returns those of them the credit covers, to be sent
// again (the rest follow with later credits). Credits of another consumer
// or run are ignored. It fails when the consumer asks for a window the
// producer no longer keeps: the protocol's restart rule (see updateKeeps)
// rules that out, and the run cannot go on without it.
func (p *Producer) OnCredit(now time.Duration, from string, c *messages.Credit) ([]Envelope, error) {
	if from != p.consumer || c.RBM != p.rbm {
		return nil, nil
	}
	if ok, _ := p.run.matches(c.RunID, c.Incarnation); !ok {
		return nil, nil
	}
	p.upTo = max(p.upTo, c.UpTo)
	if c.Resend && p.onItsWay(now, c.Next) {
		// The window asked for, and those after it, left less than
		// inFlight ago: on their way, not lost.
		p.stats.InFlight++
	} else if c.Resend && c.Next <= p.seq {
		if c.Next < p.keptFrom {
			return nil, fmt.Errorf("rbm %d: %s asks for window %d again, but rbm %d keeps only the windows from %d on", p.rbm, from, c.Next, p.rbm, p.keptFrom)
		}
		// A consumer that resumed from a checkpoint grants less than the
		// one before it: its credit counts from here.
		p.upTo = c.UpTo
		p.resend, p.endAgain = c.Next, p.end != nil
	}
	// The consumer has what comes before its Next.
	p.resend = max(p.resend, min(c.Next, p.seq))
	if d := min(c.Durable, p.seq); d > p.keptFrom {
		n := d - p.keptFrom
		clear(p.kept[:n])
		p.kept = p.kept[n:]
		p.sentAt = p.sentAt[n:]
		p.keptFrom = d
	}
	return p.sendAgain(now, c.UpTo), nil
}

// onItsWay reports whether window seq was sent to the consumer less than
// inFlight before now.
func (p *Producer) onItsWay(now time.Duration, seq uint64) bool {
	if p.inFlight <= 0 || seq < p.keptFrom || seq >= p.seq {
		return false
	}
	at := p.sentAt[seq-p.keptFrom]
	return at != notSent && now-at < p.inFlight
}

// sendAgain returns the windows due again below upTo, the consumer's
// credit, sent at now, and the end of the stream after the last of them.
func (p *Producer) sendAgain(now time.Duration, upTo uint64) []Envelope {
	var again []Envelope
	for ; p.resend < p.seq && p.resend < upTo; p.resend++ {
		k := p.kept[p.resend-p.keptFrom]
		if k == nil {
			k = p.chunk(p.again(p.resend), p.resend)
		}
		p.sentAt[p.resend-p.keptFrom] = now
		again = append(again, Envelope{From: p.self, To: p.consumer, Msg: k})
	}
	p.stats.Resent += uint64(len(again))
	if p.endAgain && p.resend == p.seq {
		p.endAgain = false
		again = append(again, Envelope{From: p.self, To: p.consumer, Msg: p.end})
	}
	return again
}

// Consumer is the receiving end of a link. It grants its producer credit
// for Credits windows beyond those trained, accepts windows strictly in
// sequence, drops duplicates, asks for windows again after a gap or a
// silence, and rejects (and counts, per reason) anything that is not a
// consistent window of its run, producer and width.
type Consumer struct {
	run      Run
	self     string
	producer string
	rbm      int // the producer's RBM index
	cols     int
	credits  int
	timing   Timing

	next          uint64 // the Seq of the next window to accept
	trained       uint64 // windows taken and trained
	queue         []*messages.Chunk
	ended         bool
	durable       uint64
	checkpointing bool

	lastData, lastGrant, lastResend time.Duration
	askResend                       bool
	// heard says a window or the end came from the producer since the
	// consumer started or relinked.
	heard bool
	stats LinkStats
}

// NewConsumer returns the receiving end of the link from producer (its RBM
// index rbm; 0 and MasterName for the data) to self, for windows of cols
// values per row, starting at the window with Seq start. With checkpointing,
// the producer keeps what the consumer's checkpoints do not cover yet
// (SetDurable); without, only what was not received yet.
func NewConsumer(run Run, self, producer string, rbm, cols, credits int, start uint64, checkpointing bool, t Timing) *Consumer {
	return &Consumer{
		run: run, self: self, producer: producer, rbm: rbm, cols: cols, credits: credits, timing: t,
		next: start, trained: start, durable: start, checkpointing: checkpointing, askResend: start > 0,
	}
}

// Producer names the current producer.
func (c *Consumer) Producer() string { return c.producer }

// Stats returns the consumer's counts.
func (c *Consumer) Stats() LinkStats {
	s := c.stats
	s.Windows = c.next
	return s
}

// Start grants the first credit, asking for the kept windows again if the
// consumer resumes from a checkpoint.
func (c *Consumer) Start(now time.Duration) Envelope {
	c.lastData, c.heard = now, false
	return c.grant(now, c.askResend)
}

// Relink switches to the windows of a producer that replaced a lost one,
// and asks it for what it keeps.
func (c *Consumer) Relink(now time.Duration, producer string) Envelope {
	c.producer = producer
	c.lastData, c.heard = now, false
	return c.grant(now, true)
}

// SetDurable records that no resume of the consumer will ever need the
// windows before seq.
func (c *Consumer) SetDurable(seq uint64) { c.durable = max(c.durable, seq) }

func (c *Consumer) grant(now time.Duration, resend bool) Envelope {
	durable := c.next
	if c.checkpointing {
		durable = min(c.durable, c.next)
	}
	c.lastGrant = now
	if resend {
		c.lastResend = now
		c.stats.Resends++
	}
	return Envelope{From: c.self, To: c.producer, Msg: &messages.Credit{
		RunID: c.run.ID, Incarnation: c.run.Incarnation, RBM: c.rbm,
		UpTo: c.trained + uint64(c.credits), Next: c.next, Durable: durable, Resend: resend,
	}}
}

// OnChunk takes a window. It returns the credit to send, if any: a request
// to send again after a gap.
func (c *Consumer) OnChunk(now time.Duration, from string, m *messages.Chunk) []Envelope {
	if reason, ok := c.check(from, m.RunID, m.Incarnation); !ok {
		c.stats.Rejected.Add(reason)
		return nil
	}
	if err := m.Check(c.run.ID, c.rbm, c.cols); err != nil {
		c.stats.Rejected.Add(messages.ReasonOf(err))
		return nil
	}
	c.heard = true
	switch {
	case c.ended || m.Seq < c.next:
		c.stats.Rejected.Add(messages.RejectDuplicate)
		return nil
	case m.Seq > c.next:
		return c.gap(now)
	}
	c.next++
	c.lastData = now
	c.queue = append(c.queue, m)
	c.stats.Bytes += uint64(m.EncodedSize())
	return nil
}

// OnEnd takes the end of the stream. It fails when the producer ended
// after fewer windows than were received: it cannot be the same stream.
func (c *Consumer) OnEnd(now time.Duration, from string, m *messages.EndOfStream) ([]Envelope, error) {
	if reason, ok := c.check(from, m.RunID, m.Incarnation); !ok || m.RBM != c.rbm {
		if ok {
			reason = messages.RejectForeign
		}
		c.stats.Rejected.Add(reason)
		return nil, nil
	}
	c.heard = true
	switch {
	case c.ended:
		c.stats.Rejected.Add(messages.RejectDuplicate)
	case m.Windows > c.next:
		return c.gap(now), nil
	case m.Windows < c.next:
		return nil, fmt.Errorf("rbm %d ended its stream after %d windows, %d arrived", c.rbm, m.Windows, c.next)
	default:
		c.ended = true
		c.lastData = now
	}
	return nil, nil
}

func (c *Consumer) check(from, runID string, incarnation uint32) (messages.RejectReason, bool) {
	if from != c.producer {
		return messages.RejectForeign, false
	}
	ok, reason := c.run.matches(runID, incarnation)
	return reason, ok
}

// gap notes a window that arrived ahead of the awaited one: those between
// were lost, and the producer is asked for them again, at most once per
// ResendAfter.
func (c *Consumer) gap(now time.Duration) []Envelope {
	c.stats.Rejected.Add(messages.RejectGap)
	if now-c.lastResend < c.timing.ResendAfter {
		return nil
	}
	return []Envelope{c.grant(now, true)}
}

// Reject counts something the transport dropped on this link before it
// became a message: a fragment or payload that could not be read.
func (c *Consumer) Reject(reason messages.RejectReason) { c.stats.Rejected.Add(reason) }

// Arriving notes that a part of a window arrived on this link, the rest
// yet to come: a long window (K = 200 is 153 MiB) takes seconds to arrive,
// and it is not silence, so the consumer waits ResendAfter from its last
// part before it asks for the window again.
func (c *Consumer) Arriving(now time.Duration) { c.lastData = now }

// Ready reports whether a window is waiting to be trained.
func (c *Consumer) Ready() bool { return len(c.queue) > 0 }

// Ended reports whether every window of the stream was taken.
func (c *Consumer) Ended() bool { return c.ended && len(c.queue) == 0 }

// Take returns the next window to train. The window is valid until the
// next Take; call it only when Ready.
func (c *Consumer) Take() *pipeline.Window {
	m := c.queue[0]
	c.queue[0] = nil
	c.queue = c.queue[1:]
	w := &pipeline.Window{Epoch: m.Epoch, Seq: int(m.Seq), Rows: m.BatchRows, X: m.Data, Bias: m.Bias, Labels: m.Labels, Precision: PrecisionOf(m.Encoding)}
	if c.rbm == 0 {
		w.Bias = nil // data windows: RBM_1 owns its visible biases
	}
	return w
}

// Trained notes that the window last taken is trained, and returns the
// credit for one more. The consumer waits from now (await).
func (c *Consumer) Trained(now time.Duration) Envelope {
	c.trained++
	c.await(now)
	return c.grant(now, false)
}

// await notes that the consumer waits for its next window from now: a
// silence counts from its last data or from now, whichever is later. While
// it trained, its next window may have come on its way: a slave with a
// small CPU quota reads a long window slowly, and asking for it then would
// have it sent twice.
func (c *Consumer) await(now time.Duration) { c.lastData = max(c.lastData, now) }

// Tick runs the consumer's timers while it waits: it repeats its credit
// every RegrantEvery (a producer that subscribed, or restarted, after the
// last grant still learns of it), and, with no window queued, asks for the
// kept windows again after ResendAfter of silence (a loss in flight). A
// replica waiting for its replicas' average may hold queued windows. After
// the end of the stream it still repeats its credit: a producer restarted
// behind it (its keep point waits for the consumer's checkpoint after the
// end) learns from it that every window arrived, and gets credit to
// produce them again on its way to the end.
func (c *Consumer) Tick(now time.Duration) []Envelope { return c.tick(now, true) }

// tick is Tick; a consumer that does not await a window (awaited false:
// a link of a Gatherer whose next window comes on another) only repeats
// its credit.
func (c *Consumer) tick(now time.Duration, awaited bool) []Envelope {
	t := c.timing
	if awaited && !c.ended && len(c.queue) == 0 && now-c.lastData >= t.ResendAfter && now-c.lastResend >= t.ResendAfter {
		return []Envelope{c.grant(now, true)}
	}
	if now-c.lastGrant >= c.regrantEvery() {
		return []Envelope{c.grant(now, false)}
	}
	return nil
}

// regrantEvery is how often the consumer repeats its credit: at every tick
// until its producer is heard from, since the slaves of a run are assigned
// at once and a producer that opens its end of the link just after the
// first credit would otherwise wait RegrantEvery for the next, and every
// RegrantEvery after that.
func (c *Consumer) regrantEvery() time.Duration {
	if c.heard {
		return c.timing.RegrantEvery
	}
	return min(c.timing.Tick(), c.timing.RegrantEvery)
}

// WindowBudget bounds the bytes of the windows in flight on one link: the
// longest message (256 MiB), so that what a NATS server holds for a slow
// reader (two of them) has room for a window sent again.
const WindowBudget = messages.DefaultMaxMessage

// LinkCredits is the credits of the link into stage cfg of a run over n
// rows: credits, fewer for long windows (as many as fit in WindowBudget,
// at least one). A window of K = 200 quickstart mini-batches (153 MiB)
// travels alone, one of K = 10 (7.7 MiB) with the configured four.
func LinkCredits(credits int, cfg pipeline.StageConfig, n int) int {
	return pipeline.LinkCredits(credits, cfg, n, WindowBudget)
}
