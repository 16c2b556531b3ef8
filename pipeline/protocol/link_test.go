package protocol

import (
	"math/rand/v2"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/pipedbn/pipedbn/messages"
	"github.com/pipedbn/pipedbn/pipeline"
)

// credit is a credit of testRun from RBM_1's consumer: UpTo upTo, Next
// next, Durable durable.
func credit(upTo, next, durable uint64, resend bool) *messages.Credit {
	return &messages.Credit{RunID: testRun.ID, Incarnation: testRun.Incarnation, RBM: 1, UpTo: upTo, Next: next, Durable: durable, Resend: resend}
}

// window is a window of two mini-batches (2 and 1 rows) of 2 columns, with
// biases; v marks its values.
func window(epoch int, v float32) *pipeline.Window {
	return &pipeline.Window{Epoch: epoch, Rows: []int{2, 1}, X: []float32{v, v, v, v, v, v}, Bias: []float32{v, -v}}
}

// seqs returns the Seq of every chunk among envs, and whether an
// EndOfStream closes them.
func seqs(t *testing.T, envs []Envelope, to string) ([]uint64, bool) {
	t.Helper()
	var out []uint64
	end := false
	for i, e := range envs {
		if e.From != "s1" || e.To != to {
			t.Errorf("envelope %d: %s -> %s; want s1 -> %s", i, e.From, e.To, to)
		}
		switch m := e.Msg.(type) {
		case *messages.Chunk:
			if end {
				t.Errorf("chunk %d after the end of the stream", m.Seq)
			}
			out = append(out, m.Seq)
		case *messages.EndOfStream:
			end = true
		default:
			t.Errorf("envelope %d holds a %T; want chunks", i, e.Msg)
		}
	}
	return out, end
}

func TestProducerCreditGatesSend(t *testing.T) {
	t.Parallel()
	p := NewProducer(testRun, "s1", 1, "s2", 0)
	if p.CanSend() {
		t.Fatalf("CanSend() before any credit = true; want false")
	}
	func() {
		defer func() {
			r := recover()
			if s, _ := r.(string); !strings.Contains(s, "without credit") {
				t.Errorf("Send without credit panics with %v; want a panic about credit", r)
			}
		}()
		p.Send(0, window(0, 1))
	}()
	if p.Seq() != 0 {
		t.Fatalf("Seq() after a refused Send = %d; want 0", p.Seq())
	}
	if again, err := p.OnCredit(0, "s2", credit(2, 0, 0, false)); again != nil || err != nil {
		t.Fatalf("OnCredit(UpTo 2) = %v, %v; want nil, nil", again, err)
	}
	w := window(1, 0.5)
	e := p.Send(0, w)
	want := &messages.Chunk{
		RunID: "r1", Incarnation: 2, RBM: 1, Epoch: 1, Seq: 0, Rows: 3, Cols: 2,
		Data: w.X, BatchRows: []int{2, 1}, Bias: w.Bias,
	}
	if e.From != "s1" || e.To != "s2" || !reflect.DeepEqual(e.Msg, want) {
		t.Fatalf("Send(window) = %s %+v; want s1 -> s2 %+v", e, e.Msg, want)
	}
	if !p.CanSend() {
		t.Fatalf("CanSend() after 1 of 2 credited windows = false; want true")
	}
	// A credit is cumulative: one that arrives late, with a smaller UpTo,
	// takes nothing back.
	p.OnCredit(0, "s2", credit(1, 0, 0, false))
	if !p.CanSend() {
		t.Fatalf("CanSend() after a late credit (UpTo 1) with window 1 credited = false; want true")
	}
	p.Send(0, window(1, 0.5))
	if p.CanSend() {
		t.Fatalf("CanSend() after 2 of 2 credited windows = true; want false")
	}
	p.OnCredit(0, "s2", credit(1, 0, 0, false))
	if p.CanSend() {
		t.Fatalf("CanSend() after a stale credit (UpTo 1) = true; want false")
	}
	p.OnCredit(0, "s2", credit(3, 0, 0, false))
	if !p.CanSend() {
		t.Fatalf("CanSend() after UpTo 3 = false; want true")
	}
	if got := p.Stats().Windows; got != 2 {
		t.Fatalf("Stats().Windows = %d; want 2", got)
	}
}

func TestProducerSeqFromStart(t *testing.T) {
	t.Parallel()
	for _, start := range []uint64{0, 1, 7} {
		p := NewProducer(testRun, "s1", 1, "s2", start)
		if p.Seq() != start {
			t.Errorf("NewProducer(start %d).Seq() = %d; want %d", start, p.Seq(), start)
		}
		// Credit up to start grants nothing: windows before start are not
		// this producer's to send.
		p.OnCredit(0, "s2", credit(start, start, start, false))
		if p.CanSend() {
			t.Errorf("start %d: CanSend() with UpTo %d = true; want false", start, start)
		}
		p.OnCredit(0, "s2", credit(start+2, start, start, false))
		for k := range uint64(2) {
			if got := p.Send(0, window(0, 1)).Msg.(*messages.Chunk).Seq; got != start+k {
				t.Errorf("start %d: window %d has Seq %d; want %d", start, k, got, start+k)
			}
		}
		if p.Seq() != start+2 {
			t.Errorf("start %d: Seq() after 2 windows = %d; want %d", start, p.Seq(), start+2)
		}
	}
}

// sent returns a producer that sent windows 0..n-1 to s2 with credit to
// spare.
func sent(n int) *Producer {
	p := NewProducer(testRun, "s1", 1, "s2", 0)
	p.OnCredit(0, "s2", credit(100, 0, 0, false))
	for range n {
		p.Send(0, window(0, 1))
	}
	return p
}

func TestProducerResend(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name    string
		credits []*messages.Credit // the last one is checked
		closed  bool
		want    []uint64
		wantEnd bool
		wantErr string
	}{
		{name: "all kept", credits: []*messages.Credit{credit(100, 0, 0, true)}, want: []uint64{0, 1, 2, 3, 4}},
		{name: "from next", credits: []*messages.Credit{credit(100, 3, 0, true)}, want: []uint64{3, 4}},
		{name: "durable forgets", credits: []*messages.Credit{credit(100, 2, 2, false), credit(100, 2, 2, true)}, want: []uint64{2, 3, 4}},
		{name: "next is seq", credits: []*messages.Credit{credit(100, 5, 0, true)}},
		{name: "next beyond seq", credits: []*messages.Credit{credit(100, 6, 0, true)}},
		{name: "no resend asked", credits: []*messages.Credit{credit(100, 0, 0, false)}},
		// Durable beyond what was sent forgets all that was sent: Seq 5 on
		// is still to come.
		{name: "durable beyond seq", credits: []*messages.Credit{credit(100, 9, 9, false), credit(100, 5, 5, true)}},
		{
			name: "durable beyond seq, then below", credits: []*messages.Credit{credit(100, 9, 9, false), credit(100, 3, 3, true)},
			wantErr: "rbm 1: s2 asks for window 3 again, but rbm 1 keeps only the windows from 5 on",
		},
		{name: "closed: windows and end", closed: true, credits: []*messages.Credit{credit(100, 3, 0, true)}, want: []uint64{3, 4}, wantEnd: true},
		{name: "closed: end only", closed: true, credits: []*messages.Credit{credit(100, 5, 5, true)}, wantEnd: true},
		{
			name: "below kept", credits: []*messages.Credit{credit(100, 3, 3, false), credit(100, 1, 1, true)},
			wantErr: "rbm 1: s2 asks for window 1 again, but rbm 1 keeps only the windows from 3 on",
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			p := sent(5)
			if tc.closed {
				p.Close(0)
			}
			var again []Envelope
			var err error
			for _, c := range tc.credits {
				again, err = p.OnCredit(0, "s2", c)
			}
			if tc.wantErr == "" {
				tc.wantErr = errText(nil)
			}
			if errText(err) != tc.wantErr {
				t.Fatalf("OnCredit(%+v) error = %s; want %s", tc.credits[len(tc.credits)-1], errText(err), tc.wantErr)
			}
			got, end := seqs(t, again, "s2")
			if !reflect.DeepEqual(got, tc.want) || end != tc.wantEnd {
				t.Errorf("OnCredit(%+v) resends %v (end %t); want %v (end %t)", tc.credits[len(tc.credits)-1], got, end, tc.want, tc.wantEnd)
			}
			if got := p.Stats().Resent; got != uint64(len(tc.want)) {
				t.Errorf("Stats().Resent = %d; want %d", got, len(tc.want))
			}
		})
	}
}

// A consumer that resumes far back gets the windows again as its credit
// grows, not all at once; new windows and the end of the stream follow the
// last of them.
func TestProducerResendWithinCredit(t *testing.T) {
	t.Parallel()
	p := sent(6)
	p.Close(0)
	steps := []struct {
		credit  *messages.Credit
		want    []uint64
		wantEnd bool
	}{
		{credit(3, 1, 1, true), []uint64{1, 2}, false}, // resumed at 1 with 2 credits
		{credit(3, 3, 1, false), nil, false},           // a regrant: no new credit
		{credit(4, 3, 1, false), []uint64{3}, false},   // window 1 trained
		{credit(5, 4, 1, false), []uint64{4}, false},   // window 2 trained
		{credit(7, 5, 1, false), []uint64{5}, true},    // the last window sent, and the end
		{credit(9, 6, 1, false), nil, false},           // nothing more
	}
	var got []uint64
	for i, st := range steps {
		again, err := p.OnCredit(0, "s2", st.credit)
		if err != nil {
			t.Fatal(err)
		}
		seq, end := seqs(t, again, "s2")
		if !reflect.DeepEqual(seq, st.want) || end != st.wantEnd {
			t.Fatalf("step %d, OnCredit(%+v) sends %v (end %t); want %v (end %t)", i, st.credit, seq, end, st.want, st.wantEnd)
		}
		got = append(got, seq...)
	}
	if p.Stats().Resent != uint64(len(got)) {
		t.Errorf("Stats().Resent = %d; want %d", p.Stats().Resent, len(got))
	}

	// Open: a new window waits until every window due again is sent.
	p = sent(4)
	p.OnCredit(0, "s2", credit(3, 1, 1, true)) // windows 1 and 2 sent again
	if p.CanSend() {
		t.Fatalf("CanSend() with window 3 due again = true; want false")
	}
	again, _ := p.OnCredit(0, "s2", credit(5, 3, 1, false))
	if seq, _ := seqs(t, again, "s2"); !reflect.DeepEqual(seq, []uint64{3}) || !p.CanSend() {
		t.Fatalf("credit up to 5 sends %v, CanSend() = %t; want [3], true", seq, p.CanSend())
	}
	if e := p.Send(0, window(0, 1)); e.Msg.(*messages.Chunk).Seq != 4 {
		t.Fatalf("the new window has Seq %d; want 4", e.Msg.(*messages.Chunk).Seq)
	}
	if p.CanSend() {
		t.Fatalf("CanSend() at window 5, credit up to 5 = true; want false (the earlier consumer's credit up to 100 is gone)")
	}
	// A relinked producer drops what was due to the lost consumer.
	p = sent(4)
	p.OnCredit(0, "s2", credit(2, 1, 1, true))
	p.Relink("s3")
	if again, _ := p.OnCredit(0, "s3", credit(6, 4, 1, false)); len(again) != 0 || !p.CanSend() {
		t.Fatalf("s3's credit from 4 after Relink sends [%s], CanSend() = %t; want nothing, true", describe(again), p.CanSend())
	}
}

func TestProducerClose(t *testing.T) {
	t.Parallel()
	p := sent(3)
	if p.Closed() {
		t.Fatalf("Closed() before Close = true; want false")
	}
	e := p.Close(2)
	want := &messages.EndOfStream{RunID: "r1", Incarnation: 2, RBM: 1, Epoch: 2, Windows: 3}
	if e.From != "s1" || e.To != "s2" || !reflect.DeepEqual(e.Msg, want) {
		t.Fatalf("Close(2) = %s %+v; want s1 -> s2 %+v", e, e.Msg, want)
	}
	if !p.Closed() || p.CanSend() {
		t.Fatalf("after Close: Closed(), CanSend() = %t, %t; want true, false", p.Closed(), p.CanSend())
	}
}

func TestProducerIgnoresForeignCredits(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		from string
		edit func(*messages.Credit)
	}{
		{"another consumer", "s3", func(*messages.Credit) {}},
		{"another rbm", "s2", func(c *messages.Credit) { c.RBM = 2 }},
		{"another run", "s2", func(c *messages.Credit) { c.RunID = "r2" }},
		{"an earlier incarnation", "s2", func(c *messages.Credit) { c.Incarnation = 1 }},
		{"a later incarnation", "s2", func(c *messages.Credit) { c.Incarnation = 3 }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			p := sent(2) // credit up to 100
			p2 := NewProducer(testRun, "s1", 1, "s2", 0)
			c := credit(100, 0, 1, true)
			tc.edit(c)
			again, err := p.OnCredit(0, tc.from, c)
			if again != nil || err != nil {
				t.Errorf("OnCredit(%s, %+v) = %v, %v; want nil, nil", tc.from, c, again, err)
			}
			// Nothing forgotten: window 0 is still kept.
			if again, _ := p.OnCredit(0, "s2", credit(100, 0, 0, true)); len(again) != 2 {
				t.Errorf("after an ignored Durable 1, a resend from 0 returns %d windows; want 2", len(again))
			}
			// Nothing granted.
			p2.OnCredit(0, tc.from, c)
			if p2.CanSend() {
				t.Errorf("CanSend() after an ignored credit = true; want false")
			}
		})
	}
}

func TestProducerRelink(t *testing.T) {
	t.Parallel()
	p := sent(3)
	p.Relink("s3")
	if p.Consumer() != "s3" {
		t.Fatalf("Consumer() after Relink(s3) = %q; want s3", p.Consumer())
	}
	if again, _ := p.OnCredit(0, "s2", credit(100, 0, 0, true)); again != nil {
		t.Fatalf("OnCredit from the old consumer = [%s]; want nothing", describe(again))
	}
	again, _ := p.OnCredit(0, "s3", credit(100, 1, 1, true))
	got, _ := seqs(t, again, "s3")
	if !reflect.DeepEqual(got, []uint64{1, 2}) {
		t.Fatalf("OnCredit from s3 resends %v; want [1 2]", got)
	}
}

// consumer returns the consumer s2 of RBM_1's windows (2 columns), with 2
// credits, checkpointing, started at start; it has not granted yet.
func consumer(start uint64, checkpointing bool) *Consumer {
	return NewConsumer(testRun, "s2", "s1", 1, 2, 2, start, checkpointing, testTiming())
}

// chunk is window seq from s1, of 2 rows of 2 columns.
func chunk(seq uint64) *messages.Chunk {
	return &messages.Chunk{
		RunID: testRun.ID, Incarnation: testRun.Incarnation, RBM: 1, Epoch: 0, Seq: seq,
		Rows: 2, Cols: 2, Data: []float32{1, 2, 3, float32(seq)}, BatchRows: []int{2}, Bias: []float32{0.5, -0.5},
	}
}

// creditOf returns the credit in envs, which must be exactly one, to s1.
func creditOf(t *testing.T, what string, envs []Envelope) *messages.Credit {
	t.Helper()
	wantShape(t, what, envs, "s1 credit")
	if envs[0].From != "s2" {
		t.Fatalf("%s: credit from %q; want s2", what, envs[0].From)
	}
	return envs[0].Msg.(*messages.Credit)
}

func TestConsumerStart(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		start uint64
		want  messages.Credit
	}{
		{0, messages.Credit{RunID: "r1", Incarnation: 2, RBM: 1, UpTo: 2, Next: 0, Durable: 0}},
		// Resuming from a checkpoint at 4: ask for what the producer keeps.
		{4, messages.Credit{RunID: "r1", Incarnation: 2, RBM: 1, UpTo: 6, Next: 4, Durable: 4, Resend: true}},
	} {
		c := consumer(tc.start, true)
		got := creditOf(t, "Start", []Envelope{c.Start(time.Second)})
		if *got != tc.want {
			t.Errorf("start %d: Start() = %+v; want %+v", tc.start, *got, tc.want)
		}
		wantResends := uint64(0)
		if tc.want.Resend {
			wantResends = 1
		}
		if s := c.Stats(); s.Resends != wantResends || s.Windows != tc.start {
			t.Errorf("start %d: Stats() = %+v; want Resends %d, Windows %d", tc.start, s, wantResends, tc.start)
		}
	}
}

func TestConsumerAcceptsInOrder(t *testing.T) {
	t.Parallel()
	c := consumer(0, true)
	c.Start(0)
	if c.Ready() {
		t.Fatalf("Ready() before any window = true; want false")
	}
	for _, seq := range []uint64{0, 1} {
		if out := c.OnChunk(sec(0.1), "s1", chunk(seq)); out != nil {
			t.Fatalf("OnChunk(%d) = [%s]; want nothing", seq, describe(out))
		}
	}
	// A duplicate, received again after a resend.
	if out := c.OnChunk(sec(0.2), "s1", chunk(0)); out != nil {
		t.Fatalf("OnChunk(0) again = [%s]; want nothing", describe(out))
	}
	var want messages.Rejections
	want[messages.RejectDuplicate] = 1
	if s := c.Stats(); s.Windows != 2 || s.Rejected != want {
		t.Fatalf("Stats() = %+v; want Windows 2, Rejected %v", s, want)
	}
	for _, seq := range []int{0, 1} {
		if !c.Ready() {
			t.Fatalf("Ready() with window %d queued = false; want true", seq)
		}
		w := c.Take()
		m := chunk(uint64(seq))
		if w.Seq != seq || !reflect.DeepEqual(w.X, m.Data) || !reflect.DeepEqual(w.Rows, m.BatchRows) || !reflect.DeepEqual(w.Bias, m.Bias) {
			t.Fatalf("Take() = %+v; want window %d of %+v", w, seq, m)
		}
	}
	if c.Ready() {
		t.Fatalf("Ready() after taking both windows = true; want false")
	}
}

func TestConsumerTakeDataWindowDropsBias(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		rbm      int
		producer string
		wantBias []float32
	}{
		{0, MasterName, nil}, // data: RBM_1 owns its visible biases
		{1, "s1", []float32{0.5, -0.5}},
	} {
		c := NewConsumer(testRun, "s2", tc.producer, tc.rbm, 2, 2, 0, true, testTiming())
		m := chunk(0)
		m.RBM = tc.rbm
		c.OnChunk(0, tc.producer, m)
		if !c.Ready() {
			t.Fatalf("rbm %d: Ready() = false; want the window accepted", tc.rbm)
		}
		if got := c.Take().Bias; !reflect.DeepEqual(got, tc.wantBias) {
			t.Errorf("rbm %d: Take().Bias = %v; want %v", tc.rbm, got, tc.wantBias)
		}
	}
}

// TestLinkEncodesByPrecision checks that a producer sends a window in the
// encoding its values are exact in (data and unrounded results as float32,
// rounded probabilities as float16 or uint8, samples as bits), and that the
// consumer, through the wire, takes the very values sent.
func TestLinkEncodesByPrecision(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		p    pipeline.Precision
		x    []float32
		want messages.Encoding
	}{
		{pipeline.Float32, []float32{0.1, 0.7, 1e-9, 0.3, 1, 0}, messages.EncodingFloat32},
		{pipeline.Float16, []float32{0.099975586, 0.7001953, 0, 0.30004883, 1, 0}, messages.EncodingFloat16},
		{pipeline.Uint8, []float32{26.0 / 255, 179.0 / 255, 0, 77.0 / 255, 1, 0}, messages.EncodingUint8},
		{pipeline.Binary, []float32{0, 1, 0, 0, 1, 1}, messages.EncodingBits},
	} {
		p := NewProducer(testRun, "s1", 1, "s2", 0)
		p.OnCredit(0, "s2", credit(1, 0, 0, false))
		w := &pipeline.Window{Rows: []int{2, 1}, X: slices.Clone(tc.x), Bias: []float32{0.123456, -7.5}, Precision: tc.p}
		m := p.Send(0, w).Msg.(*messages.Chunk)
		if m.Encoding != tc.want {
			t.Errorf("%v: chunk encoding %v; want %v", tc.p, m.Encoding, tc.want)
		}
		b, err := messages.Encode(m)
		if err != nil {
			t.Fatal(err)
		}
		got, err := messages.Decode(b)
		if err != nil {
			t.Fatal(err)
		}
		c := NewConsumer(testRun, "s2", "s1", 1, 2, 2, 0, true, testTiming())
		c.OnChunk(0, "s1", got.(*messages.Chunk))
		in := c.Take()
		if !slices.Equal(in.X, tc.x) || !slices.Equal(in.Bias, w.Bias) || in.Precision != tc.p {
			t.Errorf("%v: took %v, bias %v, %v; want %v, %v, as sent", tc.p, in.X, in.Bias, in.Precision, tc.x, w.Bias)
		}
	}
}

func TestConsumerRejects(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		from string
		edit func(*messages.Chunk)
		want messages.RejectReason
	}{
		{"foreign sender", "s9", func(*messages.Chunk) {}, messages.RejectForeign},
		{"the master", MasterName, func(*messages.Chunk) {}, messages.RejectForeign},
		{"another run", "s1", func(m *messages.Chunk) { m.RunID = "r2" }, messages.RejectForeign},
		{"an earlier incarnation", "s1", func(m *messages.Chunk) { m.Incarnation = 1 }, messages.RejectStale},
		{"another producer rbm", "s1", func(m *messages.Chunk) { m.RBM = 2 }, messages.RejectForeign},
		{"wrong width", "s1", func(m *messages.Chunk) {
			m.Cols, m.Rows, m.Data, m.Bias = 4, 1, []float32{1, 2, 3, 4}, []float32{0, 0, 0, 0}
			m.BatchRows = []int{1}
		}, messages.RejectShape},
		{"inconsistent", "s1", func(m *messages.Chunk) { m.BatchRows = []int{1} }, messages.RejectShape},
		{"short bias", "s1", func(m *messages.Chunk) { m.Bias = m.Bias[:1] }, messages.RejectShape},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			c := consumer(0, true)
			c.Start(0)
			m := chunk(0)
			tc.edit(m)
			if out := c.OnChunk(sec(0.1), tc.from, m); out != nil {
				t.Errorf("OnChunk = [%s]; want nothing", describe(out))
			}
			var want messages.Rejections
			want[tc.want] = 1
			if s := c.Stats(); s.Rejected != want || s.Windows != 0 || c.Ready() {
				t.Errorf("Stats() = %+v, Ready() = %t; want Rejected %v, Windows 0, not ready", s, c.Ready(), want)
			}
		})
	}
}

func TestConsumerRejectsForeignEnd(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		from string
		edit func(*messages.EndOfStream)
		want messages.RejectReason
	}{
		{"foreign sender", "s9", func(*messages.EndOfStream) {}, messages.RejectForeign},
		{"another run", "s1", func(m *messages.EndOfStream) { m.RunID = "r2" }, messages.RejectForeign},
		{"an earlier incarnation", "s1", func(m *messages.EndOfStream) { m.Incarnation = 1 }, messages.RejectStale},
		{"another producer rbm", "s1", func(m *messages.EndOfStream) { m.RBM = 0 }, messages.RejectForeign},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			c := consumer(0, true)
			c.Start(0)
			m := &messages.EndOfStream{RunID: "r1", Incarnation: 2, RBM: 1, Windows: 0}
			tc.edit(m)
			out, err := c.OnEnd(sec(0.1), tc.from, m)
			if out != nil || err != nil {
				t.Errorf("OnEnd = [%s], %v; want nothing", describe(out), err)
			}
			var want messages.Rejections
			want[tc.want] = 1
			if s := c.Stats(); s.Rejected != want || c.Ended() {
				t.Errorf("Stats().Rejected = %v, Ended() = %t; want %v, false", s.Rejected, c.Ended(), want)
			}
		})
	}
}

func TestConsumerGapAsksAgainOncePerResendAfter(t *testing.T) {
	t.Parallel()
	c := consumer(0, true)
	start := 10 * time.Second
	c.Start(start)
	c.OnChunk(start, "s1", chunk(0))
	// Window 1 was lost: 2 shows a gap, answered at once.
	cr := creditOf(t, "OnChunk(2)", c.OnChunk(start+sec(0.2), "s1", chunk(2)))
	want := messages.Credit{RunID: "r1", Incarnation: 2, RBM: 1, UpTo: 2, Next: 1, Durable: 0, Resend: true}
	if *cr != want {
		t.Fatalf("OnChunk(2) after 0 = %+v; want %+v", *cr, want)
	}
	// More of the gap within ResendAfter: counted, not asked again.
	if out := c.OnChunk(start+sec(1.1), "s1", chunk(3)); out != nil {
		t.Fatalf("OnChunk(3) 0.9s after asking = [%s]; want nothing", describe(out))
	}
	if out := c.OnChunk(start+sec(1.2), "s1", chunk(2)); len(out) != 1 || !msg[*messages.Credit](t, out, 0).Resend {
		t.Fatalf("OnChunk(2) 1s after asking = [%s]; want a resend credit", describe(out))
	}
	var rej messages.Rejections
	rej[messages.RejectGap] = 3
	if s := c.Stats(); s.Rejected != rej || s.Resends != 2 || s.Windows != 1 {
		t.Fatalf("Stats() = %+v; want Rejected %v, Resends 2, Windows 1", s, rej)
	}
	// The lost window arrives: in order again.
	c.OnChunk(start+sec(1.3), "s1", chunk(1))
	c.OnChunk(start+sec(1.3), "s1", chunk(2))
	if s := c.Stats(); s.Windows != 3 {
		t.Fatalf("Stats().Windows after the resend = %d; want 3", s.Windows)
	}
}

// A gap in the first ResendAfter of the clock must be answered too: the
// consumer never asked before, yet its zero lastResend reads as "asked at
// time 0".
func TestConsumerFirstGapEarlyInTheClock(t *testing.T) {
	t.Parallel()
	knownBug(t, "Consumer.gap compares now with lastResend, whose zero value reads as a resend asked at time 0: "+
		"a consumer that never asked does not ask after a gap seen before ResendAfter on the driver's clock "+
		"(memnet's clock starts at 0); it waits for Tick's silence rule instead")
	c := consumer(0, true)
	c.Start(0)
	out := c.OnChunk(sec(0.2), "s1", chunk(1))
	if len(out) != 1 || !msg[*messages.Credit](t, out, 0).Resend {
		t.Fatalf("OnChunk(1) at 0.2s, window 0 missing = [%s]; want a resend credit", describe(out))
	}
}

func TestConsumerEnd(t *testing.T) {
	t.Parallel()
	c := consumer(0, true)
	c.Start(10 * time.Second)
	c.OnChunk(sec(10.1), "s1", chunk(0))
	c.OnChunk(sec(10.1), "s1", chunk(1))
	end := func(windows uint64) *messages.EndOfStream {
		return &messages.EndOfStream{RunID: "r1", Incarnation: 2, RBM: 1, Epoch: 0, Windows: windows}
	}
	// An end after 3 windows: window 2 is missing, a gap.
	out, err := c.OnEnd(sec(10.2), "s1", end(3))
	if err != nil || len(out) != 1 || !msg[*messages.Credit](t, out, 0).Resend || c.Ended() {
		t.Fatalf("OnEnd(3 windows) after 2 = [%s], %v, Ended %t; want a resend credit, nil, false", describe(out), err, c.Ended())
	}
	// An end after fewer windows than arrived: another stream.
	out, err = c.OnEnd(sec(10.3), "s1", end(1))
	if want := "rbm 1 ended its stream after 1 windows, 2 arrived"; errText(err) != want || out != nil {
		t.Fatalf("OnEnd(1 window) after 2 = [%s], %s; want nothing, %q", describe(out), errText(err), want)
	}
	if out, err = c.OnEnd(sec(10.4), "s1", end(2)); out != nil || err != nil {
		t.Fatalf("OnEnd(2 windows) after 2 = [%s], %v; want nothing, nil", describe(out), err)
	}
	if c.Ended() {
		t.Fatalf("Ended() with 2 windows not taken = true; want false")
	}
	c.Take()
	if c.Ended() {
		t.Fatalf("Ended() with 1 window not taken = true; want false")
	}
	c.Take()
	if !c.Ended() {
		t.Fatalf("Ended() with every window taken = false; want true")
	}
	// Once ended, a resend of the tail is all duplicates, and the timers
	// only repeat the credit: it tells a producer restarted behind the end
	// that every window arrived, and asks for none again.
	c.OnEnd(sec(10.5), "s1", end(2))
	c.OnChunk(sec(10.5), "s1", chunk(1))
	c.OnChunk(sec(10.5), "s1", chunk(2))
	var rej messages.Rejections
	rej[messages.RejectGap] = 1
	rej[messages.RejectDuplicate] = 3
	if s := c.Stats(); s.Rejected != rej {
		t.Fatalf("Stats().Rejected = %v; want %v", s.Rejected, rej)
	}
	out = c.Tick(time.Hour)
	if len(out) != 1 {
		t.Fatalf("Tick after the end = [%s]; want one credit", describe(out))
	}
	if cr, ok := out[0].Msg.(*messages.Credit); !ok || cr.Resend || cr.Next != 2 {
		t.Fatalf("Tick after the end = [%s]; want a credit with Next 2 and no resend", describe(out))
	}
	if out := c.Tick(time.Hour + time.Millisecond); out != nil {
		t.Fatalf("Tick right after a credit = [%s]; want nothing before RegrantEvery", describe(out))
	}
}

func TestConsumerTick(t *testing.T) {
	t.Parallel()
	c := consumer(0, true)
	start := 10 * time.Second
	c.Start(start)
	// Its producer heard from (TestConsumerRegrantsUntilHeard: before).
	c.OnChunk(start, "s1", chunk(0))
	c.Take()
	for _, step := range []struct {
		at   float64 // seconds after start
		want string  // "", "grant" or "resend"
	}{
		{0.4, ""},
		{0.5, "grant"},  // RegrantEvery since the start
		{0.9, ""},       // 0.4s since the regrant
		{1.0, "resend"}, // ResendAfter of silence
		{1.4, ""},
		{1.5, "grant"},  // silent, but asked 0.5s ago: regrant only
		{2.0, "resend"}, // ResendAfter since the last resend
	} {
		out := c.Tick(start + sec(step.at))
		got := ""
		if len(out) == 1 {
			got = "grant"
			cr := creditOf(t, "Tick", out)
			if cr.Resend {
				got = "resend"
			}
			if cr.UpTo != 2 || cr.Next != 1 {
				t.Errorf("Tick(+%gs) = %+v; want UpTo 2, Next 1", step.at, *cr)
			}
		} else if len(out) > 1 {
			t.Fatalf("Tick(+%gs) = [%s]; want at most one credit", step.at, describe(out))
		}
		if got != step.want {
			t.Errorf("Tick(+%gs) = %q; want %q", step.at, got, step.want)
		}
	}
	// A window arrives: while it waits to be taken (and trained: a stage
	// replica waits for its replicas' average first) the consumer asks for
	// nothing again, however long that takes, but repeats its credit.
	c.OnChunk(start+sec(2.1), "s1", chunk(1))
	if out := c.Tick(start + sec(3.5)); len(out) != 1 || msg[*messages.Credit](t, out, 0).Resend {
		t.Errorf("Tick with a window queued = [%s]; want one credit, no resend", describe(out))
	}
	c.Take()
	if out := c.Tick(start + sec(3.6)); len(out) != 1 || !msg[*messages.Credit](t, out, 0).Resend {
		t.Errorf("Tick 1.5s after the last window = [%s]; want a resend", describe(out))
	}
}

// Until its producer is heard from, a consumer repeats its credit at every
// tick, not every RegrantEvery: the slaves of a run are assigned at once,
// and a producer that opens its end of the link just after the first credit
// misses it. From the first window on, and after the end of a stream it
// heard, RegrantEvery.
func TestConsumerRegrantsUntilHeard(t *testing.T) {
	t.Parallel()
	c := consumer(0, true)
	tick := testTiming().Tick()
	if tick >= testTiming().RegrantEvery {
		t.Fatalf("test timing: Tick %s, RegrantEvery %s; want a tick shorter", tick, testTiming().RegrantEvery)
	}
	start := 10 * time.Second
	c.Start(start)
	for k := 1; k <= 3; k++ {
		if out := c.Tick(start + time.Duration(k)*tick); len(out) != 1 || msg[*messages.Credit](t, out, 0).Resend {
			t.Fatalf("Tick %d ticks after the start, producer silent = [%s]; want one credit, no resend", k, describe(out))
		}
	}
	heard := start + 3*tick
	c.OnChunk(heard, "s1", chunk(0))
	if out := c.Tick(heard + tick); out != nil {
		t.Fatalf("Tick a tick after the producer was heard = [%s]; want nothing before RegrantEvery", describe(out))
	}
	if out := c.Tick(start + 3*tick + testTiming().RegrantEvery); len(out) != 1 {
		t.Fatalf("Tick RegrantEvery after the last credit = [%s]; want one credit", describe(out))
	}
	// A new producer (Relink) has not been heard from.
	c.Take()
	at := start + time.Minute
	c.Relink(at, "s3")
	if out := c.Tick(at + tick); len(out) != 1 {
		t.Fatalf("Tick a tick after a relink = [%s]; want one credit", describe(out))
	}
}

// TestConsumerWaitsFromTrained: a consumer that trained for longer than
// ResendAfter does not ask for its next window as soon as it is done: the
// window may be on its way, and the silence counts from the end of
// training.
func TestConsumerWaitsFromTrained(t *testing.T) {
	t.Parallel()
	c := consumer(0, true)
	start := 10 * time.Second
	c.Start(start)
	c.OnChunk(start+sec(0.1), "s1", chunk(0))
	c.Take()
	c.Trained(start + sec(2.5))
	resend := func(at float64) bool {
		for _, e := range c.Tick(start + sec(at)) {
			if creditOf(t, "Tick", []Envelope{e}).Resend {
				return true
			}
		}
		return false
	}
	if resend(2.6) || resend(3.4) {
		t.Errorf("a resend within ResendAfter (1s) of the end of training; want none")
	}
	if !resend(3.5) {
		t.Errorf("no resend ResendAfter after the end of training; want one")
	}
}

// TestConsumerArriving: parts of a long window arriving are not silence:
// the consumer asks for the window again only ResendAfter after the last
// part, not after the last whole window.
func TestConsumerArriving(t *testing.T) {
	t.Parallel()
	c := consumer(0, true)
	start := 10 * time.Second
	c.Start(start)
	resend := func(at float64) bool {
		for _, e := range c.Tick(start + sec(at)) {
			if creditOf(t, "Tick", []Envelope{e}).Resend {
				return true
			}
		}
		return false
	}
	for _, at := range []float64{0.3, 0.8, 1.3, 1.8} {
		c.Arriving(start + sec(at))
		if resend(at + 0.1) {
			t.Fatalf("a resend asked %.1fs after the start, with a part arrived at %.1fs", at+0.1, at)
		}
	}
	if resend(2.7) {
		t.Errorf("a resend 0.9s after the last part; want none before ResendAfter (1s)")
	}
	if !resend(2.8) {
		t.Errorf("no resend 1s after the last part; want one")
	}
}

func TestConsumerTrainedGrants(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name          string
		checkpointing bool
		durable       uint64 // SetDurable before the grant
		want          messages.Credit
	}{
		// 3 windows received, 1 trained.
		{"no checkpoint acked", true, 0, messages.Credit{UpTo: 3, Next: 3, Durable: 0}},
		{"acked up to 1", true, 1, messages.Credit{UpTo: 3, Next: 3, Durable: 1}},
		{"acked beyond next", true, 9, messages.Credit{UpTo: 3, Next: 3, Durable: 3}},
		{"no checkpoints", false, 0, messages.Credit{UpTo: 3, Next: 3, Durable: 3}},
		{"no checkpoints, acked", false, 1, messages.Credit{UpTo: 3, Next: 3, Durable: 3}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			c := consumer(0, tc.checkpointing)
			c.Start(0)
			for seq := range uint64(3) {
				c.OnChunk(0, "s1", chunk(seq))
			}
			c.Take()
			c.SetDurable(tc.durable)
			c.SetDurable(0) // durable never goes back
			got := creditOf(t, "Trained", []Envelope{c.Trained(sec(0.1))})
			tc.want.RunID, tc.want.Incarnation, tc.want.RBM = "r1", 2, 1
			if *got != tc.want {
				t.Errorf("Trained() = %+v; want %+v", *got, tc.want)
			}
		})
	}
}

func TestConsumerRelink(t *testing.T) {
	t.Parallel()
	c := consumer(0, true)
	c.Start(0)
	c.OnChunk(0, "s1", chunk(0))
	e := c.Relink(sec(0.1), "s3")
	if e.To != "s3" || c.Producer() != "s3" {
		t.Fatalf("Relink(s3) sends to %q, Producer() = %q; want s3, s3", e.To, c.Producer())
	}
	want := messages.Credit{RunID: "r1", Incarnation: 2, RBM: 1, UpTo: 2, Next: 1, Durable: 0, Resend: true}
	if got := e.Msg.(*messages.Credit); *got != want {
		t.Fatalf("Relink(s3) = %+v; want %+v", *got, want)
	}
	c.OnChunk(sec(0.2), "s1", chunk(1))
	c.OnChunk(sec(0.2), "s3", chunk(1))
	var rej messages.Rejections
	rej[messages.RejectForeign] = 1
	if s := c.Stats(); s.Windows != 2 || s.Rejected != rej {
		t.Fatalf("Stats() after relink = %+v; want Windows 2 (from s3), Rejected %v (from s1)", s, rej)
	}
}

// TestLinkDeliversInOrderUnderLoss runs a producer and a consumer against
// each other, dropping a third of the messages each way at random, and
// checks that every window arrives once, in order.
func TestLinkDeliversInOrderUnderLoss(t *testing.T) {
	t.Parallel()
	const total = 20
	p := NewProducer(testRun, "s1", 1, "s2", 0)
	c := consumer(0, true)
	var toProducer, toConsumer []Envelope
	toProducer = append(toProducer, c.Start(0))
	r := rand.New(rand.NewPCG(1, 2))
	lossy := func(q []Envelope, e ...Envelope) []Envelope {
		for _, x := range e {
			if r.IntN(3) != 0 {
				q = append(q, x)
			}
		}
		return q
	}
	var got []int
	now := time.Duration(0)
	for step := 0; step < 10000 && !c.Ended(); step++ {
		now += 100 * time.Millisecond
		for _, e := range toProducer {
			again, err := p.OnCredit(0, e.From, e.Msg.(*messages.Credit))
			if err != nil {
				t.Fatalf("OnCredit: %v", err)
			}
			toConsumer = lossy(toConsumer, again...)
		}
		toProducer = nil
		for p.CanSend() && p.Seq() < total {
			toConsumer = lossy(toConsumer, p.Send(0, window(0, float32(p.Seq()))))
		}
		if p.Seq() == total && !p.Closed() {
			toConsumer = lossy(toConsumer, p.Close(0))
		}
		for _, e := range toConsumer {
			switch m := e.Msg.(type) {
			case *messages.Chunk:
				toProducer = lossy(toProducer, c.OnChunk(now, e.From, m)...)
			case *messages.EndOfStream:
				out, err := c.OnEnd(now, e.From, m)
				if err != nil {
					t.Fatalf("OnEnd: %v", err)
				}
				toProducer = lossy(toProducer, out...)
			}
		}
		toConsumer = nil
		for c.Ready() {
			w := c.Take()
			got = append(got, w.Seq)
			toProducer = lossy(toProducer, c.Trained(now))
		}
		toProducer = lossy(toProducer, c.Tick(now)...)
	}
	want := make([]int, total)
	for i := range want {
		want[i] = i
	}
	if !reflect.DeepEqual(got, want) || !c.Ended() {
		t.Fatalf("the consumer took %v (ended %t); want %v, ended", got, c.Ended(), want)
	}
}

// A producer that regenerates its windows keeps none of them, and sends
// the ones asked for again as they were sent.
func TestProducerRegenerates(t *testing.T) {
	t.Parallel()
	p := NewProducer(testRun, "s1", 1, "s2", 0)
	made := 0
	p.Regenerate(func(seq uint64) *pipeline.Window { made++; return window(int(seq)/2, float32(seq)) })
	p.OnCredit(0, "s2", credit(5, 0, 0, false))
	var first []*messages.Chunk
	for seq := range 5 {
		first = append(first, p.Send(0, window(seq/2, float32(seq))).Msg.(*messages.Chunk))
	}
	for _, k := range p.kept {
		if k != nil {
			t.Fatalf("the producer keeps window %d", k.Seq)
		}
	}
	again, err := p.OnCredit(0, "s2", credit(5, 2, 1, true))
	if err != nil {
		t.Fatal(err)
	}
	if got, _ := seqs(t, again, "s2"); !reflect.DeepEqual(got, []uint64{2, 3, 4}) || made != 3 {
		t.Fatalf("resent %v, made %d anew; want [2 3 4], 3", got, made)
	}
	for i, e := range again {
		if got, want := e.Msg.(*messages.Chunk), first[2+i]; !reflect.DeepEqual(got, want) {
			t.Errorf("window %d sent again: %+v; want it as first sent: %+v", want.Seq, got, want)
		}
	}
	if _, err := p.OnCredit(0, "s2", credit(5, 0, 0, true)); err == nil {
		t.Error("a window forgotten (before durable 1) asked for again: no error")
	}
}

// TestProducerLetsPassARequestCrossingItsWindow: a request for a window
// sent less than the in-flight time ago crossed the window on its way, and
// sends nothing again; one made later sends it, and those after it, again;
// a consumer that replaced the one it was sent to gets it at once.
func TestProducerLetsPassARequestCrossingItsWindow(t *testing.T) {
	t.Parallel()
	p := NewProducer(testRun, "s1", 1, "s2", 0)
	p.SetInFlight(time.Second)
	p.OnCredit(0, "s2", credit(3, 0, 0, false))
	p.Send(sec(10), window(0, 1))
	seqs := func(envs []Envelope) []uint64 {
		var s []uint64
		for _, e := range envs {
			s = append(s, e.Msg.(*messages.Chunk).Seq)
		}
		return s
	}
	if again, err := p.OnCredit(sec(10.2), "s2", credit(3, 0, 0, true)); again != nil || err != nil {
		t.Fatalf("a request for window 0, 0.2s after it was sent = [%s], %v; want nothing again", describe(again), err)
	}
	if !p.CanSend() || p.Stats().InFlight != 1 {
		t.Fatalf("after a request crossing window 0: CanSend %v, Stats().InFlight %d; want true, 1", p.CanSend(), p.Stats().InFlight)
	}
	p.Send(sec(10.3), window(0, 2))
	again, err := p.OnCredit(sec(11.1), "s2", credit(3, 0, 0, true))
	if err != nil || !slices.Equal(seqs(again), []uint64{0, 1}) {
		t.Fatalf("a request for window 0, 1.1s after it was sent = [%s], %v; want windows 0 and 1 again", describe(again), err)
	}
	if again, _ := p.OnCredit(sec(11.5), "s2", credit(3, 0, 0, true)); again != nil {
		t.Errorf("a request 0.4s after window 0 was sent again = [%s]; want nothing again", describe(again))
	}
	p.Relink("s3")
	if again, _ := p.OnCredit(sec(11.6), "s3", credit(3, 0, 0, true)); !slices.Equal(seqs(again), []uint64{0, 1}) {
		t.Errorf("the replacement's request = [%s]; want windows 0 and 1, never sent to it", describe(again))
	}
}
