package protocol

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/pipedbn/pipedbn/messages"
)

func TestLinkWindowsCountsTheLinksWindows(t *testing.T) {
	t.Parallel()
	for q := 1; q <= 4; q++ {
		for r := 1; r <= 4; r++ {
			for a := range q {
				for b := range r {
					from, to := Replica{a, q}, Replica{b, r}
					want := uint64(0)
					for g := uint64(0); g < 60; g++ {
						if got := LinkWindows(g, from, to); got != want {
							t.Fatalf("LinkWindows(%d, %v, %v) = %d; want %d", g, from, to, got, want)
						}
						if g%uint64(q) == uint64(a) && g%uint64(r) == uint64(b) {
							want++
						}
					}
					if Shares(from, to) != (want > 0) {
						t.Fatalf("Shares(%v, %v) = %v; the link carries %d of 60 windows", from, to, Shares(from, to), want)
					}
				}
			}
		}
	}
}

// TestReplicasGetEveryWindowOnceInOrder runs q producer replicas dealing a
// stream of W windows to r consumer replicas, losing chunks and credits on
// the way: every consumer replica b must take exactly the windows g with
// g mod r = b, in order, each with its global Seq and its own values.
func TestReplicasGetEveryWindowOnceInOrder(t *testing.T) {
	t.Parallel()
	const W = 23
	for _, c := range []struct{ q, r int }{{1, 1}, {1, 3}, {3, 1}, {2, 2}, {2, 3}, {4, 2}} {
		for _, loss := range []float64{0, 0.2} {
			t.Run(fmt.Sprintf("q=%d,r=%d,loss=%v", c.q, c.r, loss), func(t *testing.T) {
				t.Parallel()
				checkReplicas(t, c.q, c.r, W, loss)
			})
		}
	}
}

func checkReplicas(t *testing.T, q, r, W int, loss float64) {
	rng := rand.New(rand.NewPCG(uint64(q*10+r), uint64(loss*100)))
	var producers, consumers []string
	for a := range q {
		producers = append(producers, fmt.Sprintf("p%d", a))
	}
	for b := range r {
		consumers = append(consumers, fmt.Sprintf("c%d", b))
	}
	dealers := map[string]*Dealer{}
	own := map[string]int{} // the windows each producer replica makes
	for a, p := range producers {
		dealers[p] = NewDealer(testRun, p, Replica{a, q}, 1, consumers, 0)
		for g := a; g < W; g += q {
			own[p]++
		}
	}
	gatherers := map[string]*Gatherer{}
	taken := map[string][]int{}
	var queue []Envelope
	now := time.Duration(0)
	for b, c := range consumers {
		gatherers[c] = NewGatherer(testRun, c, Replica{b, r}, producers, 1, 2, 2, 0, false, testTiming())
		queue = append(queue, gatherers[c].Start(now)...)
	}
	for step := 0; step < 10000; step++ {
		for _, p := range producers {
			d := dealers[p]
			for d.CanSend() && int(d.Sent()) < own[p] {
				g := Replica{slices.Index(producers, p), q}.Global(d.Sent())
				queue = append(queue, d.Send(0, window(0, float32(g))))
			}
			if int(d.Sent()) == own[p] && d.CanSend() {
				queue = append(queue, d.Close(0)...)
			}
		}
		next := queue
		queue = nil
		for _, e := range next {
			if _, ok := e.Msg.(*messages.Chunk); ok && rng.Float64() < loss {
				continue
			}
			if _, ok := e.Msg.(*messages.Credit); ok && rng.Float64() < loss {
				continue
			}
			switch m := e.Msg.(type) {
			case *messages.Chunk:
				queue = append(queue, gatherers[e.To].OnChunk(now, e.From, m)...)
			case *messages.EndOfStream:
				out, err := gatherers[e.To].OnEnd(now, e.From, m)
				if err != nil {
					t.Fatal(err)
				}
				queue = append(queue, out...)
			case *messages.Credit:
				out, err := dealers[e.To].OnCredit(0, e.From, m)
				if err != nil {
					t.Fatal(err)
				}
				queue = append(queue, out...)
			}
		}
		done := true
		for _, c := range consumers {
			gt := gatherers[c]
			for gt.Ready() {
				w := gt.Take()
				if w.X[0] != float32(w.Seq) {
					t.Fatalf("%s took window %d holding the values of window %v", c, w.Seq, w.X[0])
				}
				taken[c] = append(taken[c], w.Seq)
				queue = append(queue, gt.Trained(now))
			}
			queue = append(queue, gt.Tick(now)...)
			done = done && gt.Ended()
		}
		if done {
			break
		}
		now += 100 * time.Millisecond
	}
	for b, c := range consumers {
		var want []int
		for g := b; g < W; g += r {
			want = append(want, g)
		}
		if fmt.Sprint(taken[c]) != fmt.Sprint(want) {
			t.Errorf("replica %d took windows %v; want %v", b, taken[c], want)
		}
		if !gatherers[c].Ended() {
			t.Errorf("replica %d did not see the end of its stream", b)
		}
	}
}

// TestMeanWeighsReplicasByWindows checks the replicas' average: each
// replica's parameters weigh as many windows as it trained since the last
// average, those of replicas that sent none do not count, and replicas that
// trained nothing (after their last window) weigh alike. The cases share
// one accumulator, which starts with what an earlier, larger average left.
func TestMeanWeighsReplicasByWindows(t *testing.T) {
	t.Parallel()
	p := func(windows int, v float32) *messages.Params {
		return &messages.Params{RBM: 1, Visible: 1, Hidden: 1, Windows: windows, W: []float32{v}, A: []float32{-v}, B: []float32{2 * v}}
	}
	sum := []float64{7, 7, 7}
	for _, tc := range []struct {
		name string
		in   []*messages.Params
		want float32
	}{
		{"equal windows", []*messages.Params{p(2, 1), p(2, 3)}, 2},
		{"one window against three", []*messages.Params{p(1, 0), p(3, 4)}, 3},
		{"a replica that sent nothing", []*messages.Params{p(2, 1), nil, p(2, 5)}, 3},
		{"a replica past its last window", []*messages.Params{p(2, 1), p(0, 100)}, 1},
		{"none trained since", []*messages.Params{p(0, 1), p(0, 2)}, 1.5},
	} {
		avg := mean(tc.in, &sum)
		if avg.W[0] != tc.want || avg.A[0] != -tc.want || avg.B[0] != 2*tc.want {
			t.Errorf("%s: mean = W %v, A %v, B %v; want %v, %v, %v", tc.name, avg.W, avg.A, avg.B, tc.want, -tc.want, 2*tc.want)
		}
	}
}

// TestAveragesWithoutCheckpointsKeepOnlyTheLast: without checkpoints no
// replica restarts from one, so the master keeps only the latest of an
// RBM's averages, not one per round of the whole run, and still answers a
// replica that asks for it again.
func TestAveragesWithoutCheckpointsKeepOnlyTheLast(t *testing.T) {
	t.Parallel()
	r := newReplicaRig(t)
	st := r.stage(2)
	params := func(replica, round int) *messages.Params {
		p := &messages.Params{RunID: r.cfg.Run.ID, Incarnation: r.cfg.Run.Incarnation, RBM: 2, Replica: replica, Round: round, Windows: 1,
			Visible: st.Visible, Hidden: st.Hidden, W: make([]float32, st.Visible*st.Hidden), A: make([]float32, st.Visible), B: make([]float32, st.Hidden)}
		p.W[0] = float32(round)
		return p
	}
	averages := func(out Output, to string) []*messages.Params {
		var ps []*messages.Params
		for _, e := range out.Messages {
			if p, ok := e.Msg.(*messages.Params); ok && e.To == to {
				ps = append(ps, p)
			}
		}
		return ps
	}
	const rounds = 6
	for round := 1; round <= rounds; round++ {
		r.recv("a", params(0, round))
		out := r.recv("b", params(1, round))
		if got := averages(out, "b"); len(got) != 1 || got[0].Round != round || got[0].W[0] != float32(round) {
			t.Fatalf("round %d: b got the averages %+v; want round %d's, W[0] = %d", round, got, round, round)
		}
		if kept := len(r.m.averages[2].kept); kept != 1 {
			t.Fatalf("after round %d the master keeps %d averages; want 1, the latest", round, kept)
		}
	}
	if got := averages(r.recv("a", params(0, rounds)), "a"); len(got) != 1 || got[0].Round != rounds {
		t.Errorf("a asked again for round %d's average and got %+v; want it", rounds, got)
	}
}

// TestGathererAsksOnlyForTheNextWindow: of a gatherer's links, only the one
// that carries its next window asks for windows again after a silence, and
// from when the replica began to wait for it; the others repeat their
// credit. (Asking every link made the quickstart DBN on 8 machines send 5
// of 120 windows twice: a link's next window was on its way.)
func TestGathererAsksOnlyForTheNextWindow(t *testing.T) {
	t.Parallel()
	// Two producer replicas, one consumer: p0 carries windows 0, 2, ...,
	// p1 windows 1, 3, ...
	g := NewGatherer(testRun, "s2", Alone, []string{"p0", "p1"}, 1, 2, 2, 0, false, testTiming())
	start := 10 * time.Second
	g.Start(start)
	g.OnChunk(start+sec(0.1), "p0", chunk(0))
	if !g.Ready() {
		t.Fatal("window 0 arrived, but the gatherer is not ready")
	}
	g.Take()
	g.Trained(start + sec(2.5))
	resends := func(at float64) []string {
		var to []string
		for _, e := range g.Tick(start + sec(at)) {
			if cr, ok := e.Msg.(*messages.Credit); ok && cr.Resend {
				to = append(to, e.To)
			}
		}
		return to
	}
	if got := resends(3.4); got != nil {
		t.Errorf("Tick 0.9s after training window 0: resends asked of %v; want none yet", got)
	}
	if got := resends(3.5); !slices.Equal(got, []string{"p1"}) {
		t.Errorf("Tick 1s after training window 0: resends asked of %v; want p1's alone, which carries window 1", got)
	}
	if got := resends(30); !slices.Equal(got, []string{"p1"}) {
		t.Errorf("Tick much later: resends asked of %v; want p1's alone", got)
	}
}

// BenchmarkMean averages 8 replicas of the quickstart network's parameters
// (784-500-500-2000 and 10 classes, as fine-tuning sends them): its B/op is
// the average it returns, the accumulator being kept across rounds.
func BenchmarkMean(b *testing.B) {
	const replicas, n = 8, 784*500 + 500*500 + 500*2000 + 2000*10 + 500 + 500 + 2000 + 10
	ps := make([]*messages.Params, replicas)
	for k := range ps {
		ps[k] = &messages.Params{Windows: 1, Visible: n, Hidden: 1, W: make([]float32, n), A: make([]float32, n), B: make([]float32, 1)}
		for j := range ps[k].W {
			ps[k].W[j] = float32(k + j%7)
		}
	}
	var sum []float64
	b.ReportAllocs()
	b.SetBytes(replicas * int64(len(ps[0].W)+len(ps[0].A)+len(ps[0].B)) * 4)
	for b.Loop() {
		mean(ps, &sum)
	}
}
