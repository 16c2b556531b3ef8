package monitor

import (
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/pipedbn/pipedbn/pipeline"
	"github.com/pipedbn/pipedbn/pipeline/protocol"
)

// The cost of watching a run (README, "Watching a run"): what a report of
// an RBM costs the goroutine that delivers it (a slave's report, every
// second over NATS or in memory; every window for greedy), and what one
// poll of the status page costs the master. Compare with a mini-batch of
// the quickstart (BenchmarkCD1_784x500 in rbm/, or its result.json's
// busy_seconds / batches).

// quickstartRun is a run shaped like the quickstart's (784-500-500-2000,
// mini-batches of 256, 20 epochs), far into pre-training: every RBM with
// a full recon_trace and 19 finished epochs, a recovery, and fine-tuning's
// outcome with a 10-class confusion matrix: the most a poll returns.
func quickstartRun() *Run {
	r := NewRun("quickstart", "pipelined", "http://127.0.0.1:1")
	layers := []int{784, 500, 500, 2000}
	var cfgs []pipeline.StageConfig
	for i := 1; i < len(layers); i++ {
		cfgs = append(cfgs, pipeline.StageConfig{Index: i, Visible: layers[i-1], Hidden: layers[i], Epochs: 20, BatchSize: 256, K: 10})
	}
	r.Pretraining(cfgs, 60000)
	recon := make([]float64, 19)
	for e := range recon {
		recon[e] = 0.03 / float64(e+1)
	}
	for b := 1; b <= 4400; b += 5 {
		for i := 1; i < len(layers); i++ {
			r.Observe(pipeline.Stats{Index: i, Epoch: b / 235, Batches: b, Rows: 256 * b, Busy: time.Duration(b) * time.Millisecond,
				Recon: recon[:min(19, b/235)], LastRecon: 0.01, State: pipeline.Training, Worker: "local-1"})
		}
	}
	r.Joined("local-1", "box", 2)
	r.Recovered(protocol.Recovery{RBM: 2, Lost: "local-2", Replacement: "local-4", LostAtBatch: 2000, ResumedAtBatch: 1900, Redone: 100})
	conf := make([][]int, 10)
	for i := range conf {
		conf[i] = make([]int, 10)
		conf[i][i] = 900
	}
	r.FineTuning(20)
	r.Finetuned(Finetune{Epochs: 20, History: make([]FinetuneEpoch, 20), Confusion: conf, PerClass: make([]float64, 10)})
	return r
}

var sinkStatus Status

// BenchmarkObserve is one report of an RBM's statistics, 19 epochs into
// its training: what every report costs the goroutine that delivers it.
func BenchmarkObserve(b *testing.B) {
	r := quickstartRun()
	recon := make([]float64, 19)
	s := pipeline.Stats{Index: 2, Epoch: 19, Rows: 256 * 4400, Recon: recon, LastRecon: 0.01, State: pipeline.Training, Worker: "local-2"}
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		s.Batches = 4400 + i
		s.Busy = time.Duration(s.Batches) * time.Millisecond
		r.Observe(s)
	}
}

// BenchmarkObserveUnwatched is the same report to a run nobody watches
// (monitor.http ""): the baseline.
func BenchmarkObserveUnwatched(b *testing.B) {
	var r *Run
	s := pipeline.Stats{Index: 2, Epoch: 19, Batches: 4400, Recon: make([]float64, 19)}
	b.ReportAllocs()
	for b.Loop() {
		r.Observe(s)
	}
}

// BenchmarkStatus is Status alone: the part of a poll that holds the
// run's mutex, which reports wait on.
func BenchmarkStatus(b *testing.B) {
	r := quickstartRun()
	b.ReportAllocs()
	for b.Loop() {
		sinkStatus = r.Status()
	}
}

// BenchmarkPoll is one poll of the status page: GET /api/status, served
// whole (JSON), without the network.
func BenchmarkPoll(b *testing.B) { benchGet(b, "/api/status") }

// BenchmarkPage is loading the page: GET / (its script and style sheet
// come once more each, from the binary, cached by the browser after).
func BenchmarkPage(b *testing.B) { benchGet(b, "/") }

// BenchmarkScrape is one Prometheus scrape of /metrics.
func BenchmarkScrape(b *testing.B) { benchGet(b, "/metrics") }

func benchGet(b *testing.B, path string) {
	h := quickstartRun().Handler()
	req := httptest.NewRequest(http.MethodGet, path, nil)
	b.ReportAllocs()
	n := 0
	for b.Loop() {
		w := httptest.NewRecorder()
		h.ServeHTTP(w, req)
		if w.Code != http.StatusOK {
			b.Fatalf("GET %s: %d", path, w.Code)
		}
		n = w.Body.Len()
	}
	b.ReportMetric(float64(n), "bytes/response")
}
