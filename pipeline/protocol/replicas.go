package protocol

import (
	"time"

	"github.com/pipedbn/pipedbn/messages"
	"github.com/pipedbn/pipedbn/pipeline"
)

// Stage replicas: r slaves may train one stage group
// data-parallel, replica k the windows g with g mod r = k. The windows of
// a stream are numbered over the whole run (the global Seq). Between a
// producer group of q replicas and a consumer group of r, window g travels
// from producer replica g mod q to consumer replica g mod r, on the link
// between those two, where it is that link's window number "windows of the
// link before g" (LinkWindows): a link carries the windows of one residue
// modulo lcm(q, r), and replicas a and b share a link only when a and b
// agree modulo gcd(q, r). A Dealer is a producer's end of its links: it
// deals its windows in order, each within its consumer's credit. A
// Gatherer is a consumer's end: it takes its windows in global order. Each
// link is an ordinary Producer and Consumer pair, with its own credit,
// resends, relinks and durable point; with q = r = 1 a Dealer is one
// Producer and a Gatherer one Consumer, window for window and message for
// message.

// Replica is a slave's place in its stage group: replica Index of Of. It
// trains the windows g with g mod Of = Index; its own window n is global
// window Index + n·Of.
type Replica struct{ Index, Of int }

// Alone is the place of a stage group without replicas.
var Alone = Replica{0, 1}

// Global returns the global Seq of the replica's own window n.
func (p Replica) Global(n uint64) uint64 { return uint64(p.Index) + n*uint64(p.Of) }

// LinkWindows returns how many windows before global window g the link
// from producer replica a to consumer replica b carries: those g' < g with
// g' mod a.Of = a.Index and g' mod b.Of = b.Index. It is the link's Seq of
// its first window at or after g.
func LinkWindows(g uint64, a, b Replica) uint64 {
	period := linkPeriod(a, b)
	first, ok := linkOffset(a, b)
	if !ok {
		return 0
	}
	n := g / period
	if g%period > first {
		n++
	}
	return n
}

// linkOffset returns the first global window the link from a to b
// carries, and false when a and b share no window.
func linkOffset(a, b Replica) (uint64, bool) {
	period := int(linkPeriod(a, b))
	for g := a.Index; g < period; g += a.Of {
		if g%b.Of == b.Index {
			return uint64(g), true
		}
	}
	return 0, false
}

// Shares reports whether producer replica a and consumer replica b share
// a link.
func Shares(a, b Replica) bool {
	_, ok := linkOffset(a, b)
	return ok
}

// linkPeriod is lcm(a.Of, b.Of): a link carries one window of every
// linkPeriod consecutive global windows.
func linkPeriod(a, b Replica) uint64 { return uint64(a.Of * b.Of / gcd(a.Of, b.Of)) }

func gcd(a, b int) int {
	for b != 0 {
		a, b = b, a%b
	}
	return a
}

// Dealer deals the windows of a producer (the master's data, or RBM_i's
// middle results and B_i) to the replicas of the stage group above it:
// global window g to replica g mod r.
type Dealer struct {
	self  Replica
	links []*Producer // links[b]: to consumer replica b; nil if they share none
	n     uint64      // the producer's own windows sent
}

// NewDealer returns the producing end of the links from self, replica at
// of its group (RBM index rbm; 0 for the master's data), to consumers, the
// replicas of the group above in order; start is the number of its own
// windows sent before (0, or the checkpoint it resumes from).
func NewDealer(run Run, self string, at Replica, rbm int, consumers []string, start uint64) *Dealer {
	d := &Dealer{self: at, n: start, links: make([]*Producer, len(consumers))}
	g := at.Global(start)
	for b, c := range consumers {
		to := Replica{b, len(consumers)}
		if Shares(at, to) {
			d.links[b] = NewProducer(run, self, rbm, c, LinkWindows(g, at, to))
		}
	}
	return d
}

// due returns the link of the next window.
func (d *Dealer) due() *Producer {
	return d.links[d.self.Global(d.n)%uint64(len(d.links))]
}

// Regenerate has every link keep no window but make those asked for again
// with again, which returns global window g as it was sent (see
// Producer.Regenerate).
func (d *Dealer) Regenerate(again func(g uint64) *pipeline.Window) {
	for b, l := range d.links {
		if l == nil {
			continue
		}
		to := Replica{b, len(d.links)}
		first, _ := linkOffset(d.self, to)
		period := linkPeriod(d.self, to)
		l.Regenerate(func(j uint64) *pipeline.Window { return again(first + j*period) })
	}
}

// Relink points the link to replica b at a consumer that replaced it.
func (d *Dealer) Relink(b int, consumer string) {
	if l := d.links[b]; l != nil {
		l.Relink(consumer)
	}
}

// Consumers names the current consumers, the replicas in order ("" for a
// replica the producer shares no link with).
func (d *Dealer) Consumers() []string {
	names := make([]string, len(d.links))
	for b, l := range d.links {
		if l != nil {
			names[b] = l.Consumer()
		}
	}
	return names
}

// CanSend reports whether the next window's replica granted credit for it.
func (d *Dealer) CanSend() bool { return d.due().CanSend() }

// Sent returns the producer's own windows sent.
func (d *Dealer) Sent() uint64 { return d.n }

// Send deals w, the producer's next window, to its replica, at now, as
// Producer.Send; call it only when CanSend.
func (d *Dealer) Send(now time.Duration, w *pipeline.Window) Envelope {
	l := d.due()
	d.n++
	return l.Send(now, w)
}

// SetInFlight sets every link's time a window counts as on its way (see
// Producer.SetInFlight).
func (d *Dealer) SetInFlight(t time.Duration) {
	for _, l := range d.links {
		if l != nil {
			l.SetInFlight(t)
		}
	}
}

// Close returns the end of the stream on every link, after the last
// window.
func (d *Dealer) Close(lastEpoch int) []Envelope {
	var out []Envelope
	for _, l := range d.links {
		if l != nil {
			out = append(out, l.Close(lastEpoch))
		}
	}
	return out
}

// OnCredit takes a replica's credit (see Producer.OnCredit); a credit from
// none of the consumers is ignored.
func (d *Dealer) OnCredit(now time.Duration, from string, c *messages.Credit) ([]Envelope, error) {
	for _, l := range d.links {
		if l != nil && l.Consumer() == from {
			return l.OnCredit(now, from, c)
		}
	}
	return nil, nil
}

// Stats returns the counts of all links together.
func (d *Dealer) Stats() LinkStats {
	var s LinkStats
	for _, l := range d.links {
		if l != nil {
			s.add(l.Stats())
		}
	}
	return s
}

func (s *LinkStats) add(o LinkStats) {
	s.Windows += o.Windows
	s.Resent += o.Resent
	s.Resends += o.Resends
	s.InFlight += o.InFlight
	s.Bytes += o.Bytes
	for reason, n := range o.Rejected {
		s.Rejected[reason] += n
	}
}

// Gatherer takes a replica's windows, in global order, from the replicas
// of the stage group below it (or the master's data): global window g
// from producer replica g mod q.
type Gatherer struct {
	self  Replica
	links []*Consumer // links[a]: from producer replica a; nil if they share none
	n     uint64      // the replica's own windows taken
	taken *Consumer
}

// NewGatherer returns the receiving end of the links from producers, the
// replicas of the group below in order (their RBM index rbm; 0 and
// MasterName for the data), to self, replica at of its group, whose next
// own window is start (0, or the checkpoint it resumes from); the other
// arguments are NewConsumer's, for every link.
func NewGatherer(run Run, self string, at Replica, producers []string, rbm, cols, credits int, start uint64, checkpointing bool, t Timing) *Gatherer {
	g := &Gatherer{self: at, n: start, links: make([]*Consumer, len(producers))}
	next := at.Global(start)
	for a, p := range producers {
		from := Replica{a, len(producers)}
		if Shares(from, at) {
			g.links[a] = NewConsumer(run, self, p, rbm, cols, credits, LinkWindows(next, from, at), checkpointing, t)
		}
	}
	return g
}

func (g *Gatherer) due() *Consumer {
	return g.links[g.self.Global(g.n)%uint64(len(g.links))]
}

func (g *Gatherer) link(from string) *Consumer {
	for _, l := range g.links {
		if l != nil && l.Producer() == from {
			return l
		}
	}
	return nil
}

// each calls f for every link.
func (g *Gatherer) each(f func(a int, l *Consumer)) {
	for a, l := range g.links {
		if l != nil {
			f(a, l)
		}
	}
}

// Producers names the current producers, the replicas in order ("" for a
// replica that shares no link with this one).
func (g *Gatherer) Producers() []string {
	names := make([]string, len(g.links))
	g.each(func(a int, l *Consumer) { names[a] = l.Producer() })
	return names
}

// Stats returns the counts of all links together.
func (g *Gatherer) Stats() LinkStats {
	var s LinkStats
	g.each(func(_ int, l *Consumer) { s.add(l.Stats()) })
	return s
}

// Start grants every link its first credit (see Consumer.Start).
func (g *Gatherer) Start(now time.Duration) []Envelope {
	var out []Envelope
	g.each(func(_ int, l *Consumer) { out = append(out, l.Start(now)) })
	return out
}

// Relink switches the link from producer replica a to a producer that
// replaced it (see Consumer.Relink).
func (g *Gatherer) Relink(now time.Duration, a int, producer string) []Envelope {
	l := g.links[a]
	if l == nil {
		return nil
	}
	return []Envelope{l.Relink(now, producer)}
}

// SetDurable records that no resume will need the replica's own windows
// before n (see Consumer.SetDurable).
func (g *Gatherer) SetDurable(n uint64) {
	next := g.self.Global(n)
	g.each(func(a int, l *Consumer) { l.SetDurable(LinkWindows(next, Replica{a, len(g.links)}, g.self)) })
}

// OnChunk takes a window from one of the producers (see Consumer.OnChunk);
// one from none of them is rejected as foreign.
func (g *Gatherer) OnChunk(now time.Duration, from string, m *messages.Chunk) []Envelope {
	l := g.link(from)
	if l == nil {
		g.Reject(messages.RejectForeign)
		return nil
	}
	return l.OnChunk(now, from, m)
}

// OnEnd takes the end of a producer's stream (see Consumer.OnEnd).
func (g *Gatherer) OnEnd(now time.Duration, from string, m *messages.EndOfStream) ([]Envelope, error) {
	l := g.link(from)
	if l == nil {
		g.Reject(messages.RejectForeign)
		return nil, nil
	}
	return l.OnEnd(now, from, m)
}

// Reject counts something the transport dropped before it became a
// message (see Consumer.Reject), on the link of the next window.
func (g *Gatherer) Reject(reason messages.RejectReason) { g.due().Reject(reason) }

// Arriving notes that part of a window arrived (see Consumer.Arriving):
// the transport does not say from which producer, so every link waits.
func (g *Gatherer) Arriving(now time.Duration) {
	g.each(func(_ int, l *Consumer) { l.Arriving(now) })
}

// Ready reports whether the next window in global order is waiting.
func (g *Gatherer) Ready() bool { return g.due().Ready() }

// Ended reports whether every window of the replica was taken: the link of
// its next window ended before it.
func (g *Gatherer) Ended() bool { return g.due().Ended() }

// Take returns the replica's next window, its Seq global; call it only
// when Ready.
func (g *Gatherer) Take() *pipeline.Window {
	g.taken = g.due()
	w := g.taken.Take()
	w.Seq = int(g.self.Global(g.n))
	g.n++
	return w
}

// Trained notes that the window last taken is trained, and returns the
// credit for one more on its link. The link of the next window awaits it
// from now (Consumer.await).
func (g *Gatherer) Trained(now time.Duration) Envelope {
	e := g.taken.Trained(now)
	g.due().await(now)
	return e
}

// Tick runs every link's timers (see Consumer.Tick): each repeats its
// credit, but only the link of the next window asks for windows again
// after a silence. The other links' windows are not awaited yet: a link
// carries one window in lcm(q, r), and asking for one while it is on its
// way has it sent twice.
func (g *Gatherer) Tick(now time.Duration) []Envelope {
	var out []Envelope
	due := g.due()
	g.each(func(_ int, l *Consumer) { out = append(out, l.tick(now, l == due)...) })
	return out
}
