package monitor

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/pipedbn/pipedbn/pipeline"
	"github.com/pipedbn/pipedbn/pipeline/protocol"
)

// clock is a fake time.Now that tests move by hand.
type clock struct{ t time.Time }

func (c *clock) now() time.Time          { return c.t }
func (c *clock) advance(d time.Duration) { c.t = c.t.Add(d) }
func newClock() *clock                   { return &clock{time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)} }
func secs(s float64) time.Duration       { return time.Duration(s * float64(time.Second)) }
func stages(n, epochs, batch int) []pipeline.StageConfig {
	var cs []pipeline.StageConfig
	for i := 1; i <= n; i++ {
		cs = append(cs, pipeline.StageConfig{Index: i, Visible: 10 * i, Hidden: 10 * (i + 1), Epochs: epochs, BatchSize: batch, K: 2})
	}
	return cs
}

// newTestRun is a pipelined run of 2 RBMs, 2 epochs of 10 mini-batches of
// 5 rows each, on a fake clock.
func newTestRun(mode string) (*Run, *clock) {
	c := newClock()
	r := &Run{name: "t", mode: mode, url: "http://x", now: c.now}
	r.started = c.now()
	c.advance(time.Second)
	r.Pretraining(stages(2, 2, 5), 50)
	return r, c
}

// compare checks the run's metrics of the given names against want, in the
// text format.
func compare(t *testing.T, r *Run, want string, names ...string) {
	t.Helper()
	if err := testutil.CollectAndCompare(collector{r}, strings.NewReader(want), names...); err != nil {
		t.Error(err)
	}
}

// Counters sum the increments of successive reports: a report that goes
// back (a replacement resuming from a checkpoint) adds nothing, and the
// redone mini-batches count again from the checkpoint it resumed from.
func TestCountersOnlyGrow(t *testing.T) {
	r, _ := newTestRun("pipelined")
	report := func(batches int, busy, wait float64, worker string, rejected uint64) {
		r.Observe(pipeline.Stats{Index: 1, Batches: batches, Rows: 5 * batches, Busy: secs(busy), WaitInput: secs(wait),
			Worker: worker, State: pipeline.Training, Rejected: rejected})
	}
	report(4, 1, 0.5, "s1", 0)
	report(8, 2, 0.5, "s1", 1)
	r.Checkpointed(1, pipeline.StageState{Stats: pipeline.Stats{Index: 1, Batches: 8, Rows: 40, Busy: secs(2), WaitInput: secs(0.5)}})
	report(12, 3, 1, "s1", 1)
	r.Lost(1, "s1", 4*time.Second)
	if got := r.Status().RBMs[0].State; got != "lost" {
		t.Errorf("state after Lost = %q; want lost", got)
	}
	r.Recovered(protocol.Recovery{RBM: 1, Lost: "s1", Replacement: "s2", ResumedAtBatch: 8, LostAtBatch: 12, Redone: 4})
	report(10, 2.5, 0.5, "s2", 0) // resumed at 8: 2 more
	report(14, 3.5, 1.5, "s2", 2)

	compare(t, r, `
# HELP pipedbn_batches_trained_total Mini-batches the RBM trained, by the slave that trained them (redone ones after a replacement counted again).
# TYPE pipedbn_batches_trained_total counter
pipedbn_batches_trained_total{rbm="1",slave="s1"} 12
pipedbn_batches_trained_total{rbm="1",slave="s2"} 6
# HELP pipedbn_busy_seconds_total Seconds the RBM's worker spent training.
# TYPE pipedbn_busy_seconds_total counter
pipedbn_busy_seconds_total{rbm="1"} 4.5
pipedbn_busy_seconds_total{rbm="2"} 0
# HELP pipedbn_messages_rejected_total Messages the RBM's worker dropped on its input (corrupt, foreign, misshapen, duplicate, gap, stale).
# TYPE pipedbn_messages_rejected_total counter
pipedbn_messages_rejected_total{rbm="1"} 3
pipedbn_messages_rejected_total{rbm="2"} 0
# HELP pipedbn_recoveries_total Replacements that resumed the RBM after its slave was lost.
# TYPE pipedbn_recoveries_total counter
pipedbn_recoveries_total{rbm="1"} 1
pipedbn_recoveries_total{rbm="2"} 0
# HELP pipedbn_slaves_lost_total Times the RBM's slave was declared lost.
# TYPE pipedbn_slaves_lost_total counter
pipedbn_slaves_lost_total{rbm="1"} 1
pipedbn_slaves_lost_total{rbm="2"} 0
# HELP pipedbn_redone_batches_total Mini-batches the RBM's replacements redo (at least: what the lost slave reported since the checkpoint).
# TYPE pipedbn_redone_batches_total counter
pipedbn_redone_batches_total{rbm="1"} 4
pipedbn_redone_batches_total{rbm="2"} 0
`, "pipedbn_batches_trained_total", "pipedbn_busy_seconds_total", "pipedbn_messages_rejected_total",
		"pipedbn_recoveries_total", "pipedbn_slaves_lost_total", "pipedbn_redone_batches_total")

	// Waits: 0.5 + 0.5 from s1, then 1.5 - 0.5 (the checkpoint's) from s2.
	if got := r.rbms[0].waitInput; got != 2 {
		t.Errorf("wait for input = %v s; want 2", got)
	}
	if got := len(r.Status().Recoveries); got != 1 {
		t.Errorf("%d recoveries; want 1", got)
	}
}

// A slave taken back (its own replacement) goes on where it was: nothing
// is counted twice.
func TestTakenBackCountsOnce(t *testing.T) {
	r, _ := newTestRun("pipelined")
	r.Observe(pipeline.Stats{Index: 2, Batches: 6, Rows: 30, Worker: "s"})
	r.Checkpointed(2, pipeline.StageState{Stats: pipeline.Stats{Index: 2, Batches: 4, Rows: 20}})
	r.Lost(2, "s", 5*time.Second)
	r.Recovered(protocol.Recovery{RBM: 2, Lost: "s", Replacement: "s", ResumedAtBatch: 4, LostAtBatch: 6})
	r.Observe(pipeline.Stats{Index: 2, Batches: 8, Rows: 40, Worker: "s"})
	compare(t, r, `
# HELP pipedbn_batches_trained_total Mini-batches the RBM trained, by the slave that trained them (redone ones after a replacement counted again).
# TYPE pipedbn_batches_trained_total counter
pipedbn_batches_trained_total{rbm="2",slave="s"} 8
`, "pipedbn_batches_trained_total")
}

// Greedy and in-master stages have no worker name: they are the master's.
func TestStatus(t *testing.T) {
	r, c := newTestRun("pipelined")
	if s := r.Status(); s.State != Pretraining || s.ETASeconds != nil || s.BatchesTotal != 40 || len(s.RBMs) != 2 {
		t.Fatalf("status at start = %+v; want pre-training, no ETA, 40 batches planned, 2 RBMs", s)
	}
	c.advance(10 * time.Second)
	r.Joined("s1", "h", 2)
	r.Joined("s1", "h", 2)
	r.Observe(pipeline.Stats{Index: 1, Epoch: 1, Batches: 15, Rows: 75, Busy: secs(5), WaitInput: secs(1), WaitCredit: secs(2),
		Recon: []float64{0.3}, LastRecon: 0.2, State: pipeline.WaitingCredit})
	r.Observe(pipeline.Stats{Index: 2, Batches: 5, Rows: 25, Busy: secs(5), State: pipeline.Training, Worker: "s2"})
	r.Checkpointed(2, pipeline.StageState{})
	c.advance(2 * time.Second)
	s := r.Status()
	if s.ElapsedSeconds != 13 || s.PretrainSeconds != 12 || s.Batches != 20 {
		t.Errorf("elapsed %v, pretrain %v, batches %d; want 13, 12, 20", s.ElapsedSeconds, s.PretrainSeconds, s.Batches)
	}
	// RBM 2 has 15 of 20 left at 5 per 12 s: 36 s; RBM 1 5 at 15 per 12 s.
	if s.ETASeconds == nil || *s.ETASeconds != 36 {
		t.Errorf("ETA = %v; want 36 s", s.ETASeconds)
	}
	want := RBMStatus{Index: 1, Visible: 10, Hidden: 20, Worker: "master", State: "waiting_credit", Epoch: 2, Epochs: 2,
		Batches: 15, BatchesTotal: 20, SamplesPerSecond: 15, BusySeconds: 5, WaitSeconds: 3, WaitInputSeconds: 1,
		WaitCreditSeconds: 2, LastReconError: 0.2, ReconError: []float64{0.3}, ReconTrace: [][2]float64{{15, 0.2}}}
	if got, _ := json.Marshal(s.RBMs[0]); string(got) != string(must(json.Marshal(want))) {
		t.Errorf("RBM 1 = %s; want %s", got, must(json.Marshal(want)))
	}
	if a := s.RBMs[1].CheckpointAgeSeconds; s.RBMs[1].Checkpoints != 1 || a == nil || *a != 2 {
		t.Errorf("RBM 2: %d checkpoints, age %v; want 1, 2 s", s.RBMs[1].Checkpoints, a)
	}
	if len(s.Slaves) != 1 || r.registrations != 2 {
		t.Errorf("slaves %+v, %d registrations; want s1 once, 2 registrations", s.Slaves, r.registrations)
	}

	r.FineTuning(3)
	if f := r.Status().Finetuning; f == nil || f.Epochs != 3 || len(f.History) != 0 {
		t.Errorf("finetuning as it starts = %+v; want 3 epochs planned, none trained", f)
	}
	r.FinetuneEpoch(FinetuneEpoch{Epoch: 1, Loss: 0.5, Seconds: 2})
	if f := r.Status().Finetuning; f == nil || len(f.History) != 1 || f.History[0].Loss != 0.5 {
		t.Errorf("finetuning after an epoch = %+v; want epoch 1, loss 0.5", f)
	}
	c.advance(5 * time.Second)
	confusion := [][]int{{3, 1}, {0, 4}}
	r.Finetuned(Finetune{Epochs: 1, TestAccuracy: 0.8, History: []FinetuneEpoch{{Epoch: 1}}, Confusion: confusion, Classes: []string{"a", "b"}})
	confusion[0][0] = 99 // the run keeps a copy
	r.Failed(errors.New("boom"))
	r.Done() // too late: the run failed
	c.advance(time.Hour)
	s = r.Status()
	if s.State != Failed || s.Error != "boom" || s.ETASeconds != nil || s.PretrainSeconds != 12 || s.ElapsedSeconds != 18 ||
		s.Finetune == nil || s.Finetune.TestAccuracy != 0.8 || fmt.Sprint(s.Finetune.Confusion) != "[[3 1] [0 4]]" {
		t.Errorf("status at the end = %+v; want failed (boom), pre-training 12 s, 18 s in all, fine-tuned", s)
	}
	b, err := json.Marshal(s)
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{`"state":"failed"`, `"eta_seconds":null`, `"started":"2026-01-02T03:04:05Z"`, `"recoveries":[]`,
		`"confusion":[[3,1],[0,4]]`, `"classes":["a","b"]`, `"finetuning":{"epochs":3,"history":[{"epoch":1,"loss":0.5,`} {
		if !strings.Contains(string(b), f) {
			t.Errorf("JSON %s: want %s", b, f)
		}
	}
}

func must[T any](v T, err error) T {
	if err != nil {
		panic(err)
	}
	return v
}

// A cancelled run is interrupted, not failed.
func TestInterrupted(t *testing.T) {
	for _, err := range []error{context.Canceled, fmt.Errorf("pre-training: %w", protocol.ErrInterrupted)} {
		r, _ := newTestRun("pipelined")
		r.Failed(err)
		if s := r.Status(); s.State != Interrupted || s.Error != err.Error() {
			t.Errorf("Failed(%v): state %s, error %q; want interrupted", err, s.State, s.Error)
		}
	}
}

// Greedy RBMs train one after the other: the ETA is the time per
// mini-batch so far times the mini-batches left.
func TestGreedyETA(t *testing.T) {
	r, c := newTestRun("greedy")
	c.advance(10 * time.Second)
	r.Observe(pipeline.Stats{Index: 1, Batches: 10})
	if eta := r.Status().ETASeconds; eta == nil || *eta != 30 {
		t.Errorf("ETA = %v; want 30 s (10 batches in 10 s, 30 left)", eta)
	}
}

// A nil *Run is a run nobody watches: every method does nothing.
func TestNilRun(t *testing.T) {
	var r *Run
	r.Pretraining(stages(1, 1, 1), 1)
	r.Observe(pipeline.Stats{Index: 1})
	h := r.Hooks()
	if h.Window != nil || h.Epoch != nil {
		t.Error("nil Run's hooks are set")
	}
	r.Joined("a", "b", 1)
	r.Lost(1, "a", 0)
	r.Recovered(protocol.Recovery{RBM: 1})
	r.Checkpointed(1, pipeline.StageState{})
	r.FineTuning(1)
	r.FinetuneEpoch(FinetuneEpoch{})
	r.FinetunePlanned(FinetunePlan{})
	r.Finetuned(Finetune{})
	r.EndToEnd(1)
	r.Done()
	r.Failed(errors.New("x"))
	r.Linger()
	if r.URL() != "" || r.Status().Name != "" {
		t.Error("nil Run has a URL or a status")
	}
	var s *Sweep
	s.Set(SweepRun{Index: 1})
	s.End(true)
}

// Every metric passes Prometheus's linter (names, units, help).
func TestMetricsLint(t *testing.T) {
	r, _ := newTestRun("pipelined")
	r.Observe(pipeline.Stats{Index: 1, Batches: 3, Recon: []float64{0.1}, Worker: "s1"})
	r.Checkpointed(1, pipeline.StageState{})
	r.Finetuned(Finetune{})
	s := NewSweep("sw", t.TempDir())
	s.Set(SweepRun{Index: 1})
	for _, c := range []prometheus.Collector{collector{r}, sweepCollector{s}} {
		problems, err := testutil.CollectAndLint(c)
		if err != nil {
			t.Fatal(err)
		}
		for _, p := range problems {
			t.Errorf("%s: %s", p.Metric, p.Text)
		}
	}
	if n := testutil.CollectAndCount(collector{r}); n < 40 {
		t.Errorf("%d metrics; want every one of the run's", n)
	}
}

// The handler serves the status as JSON, the metrics in the text format,
// and the status page with its script and style sheet, from the binary.
func TestHandler(t *testing.T) {
	r, _ := newTestRun("pipelined")
	r.Observe(pipeline.Stats{Index: 1, Batches: 3, Worker: "s1"})
	srv := httptest.NewServer(r.Handler())
	defer srv.Close()
	get := func(path string) (*http.Response, string) {
		t.Helper()
		resp, err := http.Get(srv.URL + path)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		if err != nil {
			t.Fatal(err)
		}
		return resp, string(b)
	}
	resp, body := get("/api/status")
	var s Status
	if err := json.Unmarshal([]byte(body), &s); err != nil || resp.Header.Get("Content-Type") != "application/json" {
		t.Fatalf("GET /api/status: %v, %s; want JSON:\n%s", err, resp.Header.Get("Content-Type"), body)
	}
	if s.Name != "t" || len(s.RBMs) != 2 || s.RBMs[0].Batches != 3 {
		t.Errorf("GET /api/status = %+v; want run t, 2 RBMs, RBM 1 at 3 batches", s)
	}
	resp, body = get("/metrics")
	for _, want := range []string{`pipedbn_batches_trained_total{rbm="1",slave="s1"} 3`, "go_goroutines", "process_cpu_seconds_total"} {
		if !strings.Contains(body, want) {
			t.Errorf("GET /metrics: no %s in\n%s", want, body)
		}
	}
	if ct := resp.Header.Get("Content-Type"); !strings.HasPrefix(ct, "text/plain") {
		t.Errorf("GET /metrics: Content-Type %s; want text/plain", ct)
	}
	if _, body = get("/"); !strings.Contains(body, `href="api/status"`) || !strings.Contains(body, `href="metrics"`) ||
		!strings.Contains(body, `<script src="static/app.js"`) || !strings.Contains(body, `name="viewport"`) {
		t.Errorf("GET / = %s; want the page: its script, a viewport, links to api/status and metrics", body)
	}
	for path, want := range map[string]string{"/static/app.js": "text/javascript", "/static/style.css": "text/css"} {
		resp, body := get(path)
		if ct := resp.Header.Get("Content-Type"); resp.StatusCode != http.StatusOK || !strings.HasPrefix(ct, want) || len(body) < 1000 {
			t.Errorf("GET %s: %s, %s, %d bytes; want 200, %s", path, resp.Status, ct, len(body), want)
		}
	}
	if resp, _ = get("/nothing"); resp.StatusCode != http.StatusNotFound {
		t.Errorf("GET /nothing: %s; want 404", resp.Status)
	}
}

// Listen says why it cannot, in a few words.
func TestListenErrors(t *testing.T) {
	ln, err := Listen("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	if u := URL(ln); !strings.HasPrefix(u, "http://127.0.0.1:") {
		t.Errorf("URL = %s; want http://127.0.0.1:PORT", u)
	}
	for _, tc := range []struct{ addr, want string }{
		{ln.Addr().String(), "cannot listen: address already in use"},
		{"host.invalid:80", "cannot listen: no such host"},
		{"127.0.0.1:99999", "cannot listen: address 99999: invalid port"},
	} {
		if _, err := Listen(tc.addr); err == nil || err.Error() != tc.want {
			t.Errorf("Listen(%s) = %v; want %q", tc.addr, err, tc.want)
		}
	}
}

// A sweep lists its runs, with the URL of the one running.
func TestSweepStatus(t *testing.T) {
	c := newClock()
	s := &Sweep{name: "sw", dir: "d", now: c.now, state: "running"}
	s.started = c.now()
	dir := t.TempDir()
	s.Set(SweepRun{Index: 1, Name: "a", State: RunDone, Reused: true})
	s.Set(SweepRun{Index: 2, Name: "b", Dir: dir})
	s.Set(SweepRun{Index: 3, Name: "c"})
	s.Set(SweepRun{Index: 2, Name: "b", Dir: dir, State: RunRunning})
	if err := WriteURL(dir, "http://127.0.0.1:1234"); err != nil {
		t.Fatal(err)
	}
	c.advance(3 * time.Second)
	st := s.Status()
	if r := st.Runs[1]; r.State != RunRunning || r.URL != "http://127.0.0.1:1234" || r.WallSeconds != 3 {
		t.Errorf("running run = %+v; want running for 3 s at http://127.0.0.1:1234", r)
	}
	if st.ETASeconds != nil {
		t.Errorf("ETA = %v before any run ended; want none", *st.ETASeconds)
	}
	s.Set(SweepRun{Index: 2, Name: "b", Dir: dir, State: RunFailed, Error: "bad", WallSeconds: 3})
	st = s.Status()
	if r := st.Runs[1]; r.State != RunFailed || r.URL != "" {
		t.Errorf("failed run = %+v; want failed, no URL", r)
	}
	if st.ETASeconds == nil || *st.ETASeconds != 3 {
		t.Errorf("ETA = %v; want 3 s (one run left, 3 s each)", st.ETASeconds)
	}
	s.End(true)
	b := must(json.Marshal(s.Status()))
	for _, f := range []string{`"state":"interrupted"`, `"state":"pending"`, `"state":"failed"`, `"reused":true`} {
		if !strings.Contains(string(b), f) {
			t.Errorf("JSON %s: want %s", b, f)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, URLFile)); err != nil {
		t.Error(err)
	}
}

// The plan of a run's slaves is served as printed; a run without one
// serves none.
func TestRunPlan(t *testing.T) {
	t.Parallel()
	r := NewRun("p", "pipelined", "")
	if got := r.Status().Plan; got != "" {
		t.Errorf("plan before Planned = %q; want none", got)
	}
	r.Planned("auto plan (exact): 3 RBMs on 1 of 1 machines\n")
	if got := r.Status().Plan; got != "auto plan (exact): 3 RBMs on 1 of 1 machines\n" {
		t.Errorf("plan = %q; want the printed plan", got)
	}
	var nilRun *Run
	nilRun.Planned("ignored") // a run without a monitor
}
