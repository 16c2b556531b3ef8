package monitor_test

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
	"go.uber.org/goleak"

	"github.com/pipedbn/pipedbn/config"
	"github.com/pipedbn/pipedbn/dbn"
	"github.com/pipedbn/pipedbn/monitor"
	"github.com/pipedbn/pipedbn/pipeline/protocol"
)

// TestMain checks that every server, run and client connection a test
// started ended with it.
func TestMain(m *testing.M) {
	code := m.Run()
	if code == 0 {
		http.DefaultClient.CloseIdleConnections()
		if err := goleak.Find(); err != nil {
			fmt.Fprintln(os.Stderr, "goroutines leaked:", err)
			code = 1
		}
	}
	os.Exit(code)
}

// watched is a real pipelined run served by a monitor on a free loopback
// port.
type watched struct {
	url string
	out string
	// done receives the run's error when it ends.
	done chan error
	run  *monitor.Run
	// cancel interrupts the run.
	cancel context.CancelFunc
}

// startWatched serves a monitor on a free loopback port, and returns it
// with start, which starts the run it watches: a pipelined run on
// synthetic data over the in-memory transport (the protocol with its
// credits, status reports and checkpoints, every RBM on a slave of its
// own), of the DBN layers, epochs long, then one epoch of fine-tuning.
// The run is cancelled and the server stopped when the test ends.
// The settle windows lie after the epochs (pretrain.settle.schedule
// after), where the status counts them as one more epoch.
func startWatched(t *testing.T, layers string, epochs int) (w *watched, start func()) {
	t.Helper()
	p := filepath.Join(t.TempDir(), "live.yaml")
	body := fmt.Sprintf(`
data: {source: synthetic, train_limit: 2000, test_limit: 100}
dbn: {layers: %s}
pretrain: {mode: pipelined, epochs: %d, batch_size: 20, k_batches: 2, settle: {schedule: after}}
cluster: {transport: memory}
finetune: {epochs: 1}
reliability: {save_every: 0}
`, layers, epochs)
	if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	cfg, err := config.Load(p, nil)
	if err != nil {
		t.Fatal(err)
	}
	ln, err := monitor.Listen(cfg.Monitor.HTTP)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	w = &watched{url: monitor.URL(ln), out: t.TempDir(), done: make(chan error, 1), cancel: cancel}
	w.run = monitor.NewRun(cfg.Name, cfg.Pretrain.Mode.String(), w.url)
	srv := monitor.Serve(ln, w.run.Handler(), monitor.ServeOptions{Logger: hclog.NewNullLogger()})
	started := false
	t.Cleanup(func() {
		cancel()
		if started {
			<-w.done
		}
		srv.Close()
		http.DefaultClient.CloseIdleConnections()
	})
	start = func() {
		started = true
		go func() {
			_, err := dbn.Run(ctx, cfg, dbn.Options{OutDir: w.out, Monitor: w.run, Logger: hclog.NewNullLogger()})
			w.done <- err
		}()
	}
	return w, start
}

// wait returns the run's error once it ended.
func (w *watched) wait() error {
	err := <-w.done
	w.done <- err
	return err
}

// ended reports whether the run ended.
func (w *watched) ended() bool {
	select {
	case err := <-w.done:
		w.done <- err
		return true
	default:
		return false
	}
}

// get returns the body of url's path.
func get(t *testing.T, url string) string {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET %s: %s\n%s", url, resp.Status, b)
	}
	return string(b)
}

// status returns the run's /api/status.
func status(t *testing.T, url string) monitor.Status {
	t.Helper()
	var s monitor.Status
	if err := json.Unmarshal([]byte(get(t, url+"/api/status")), &s); err != nil {
		t.Fatalf("GET /api/status: %v", err)
	}
	return s
}

// series returns the samples of metric name in a text exposition, keyed by
// their labels ({rbm="1",slave="memory-1"}).
func series(t *testing.T, exposition, name string) map[string]float64 {
	t.Helper()
	m := map[string]float64{}
	sc := bufio.NewScanner(strings.NewReader(exposition))
	for sc.Scan() {
		line := sc.Text()
		rest, ok := strings.CutPrefix(line, name)
		if !ok || (rest != "" && rest[0] != '{' && rest[0] != ' ') {
			continue
		}
		i := strings.LastIndexByte(rest, ' ')
		v, err := strconv.ParseFloat(rest[i+1:], 64)
		if err != nil {
			t.Fatalf("metrics line %q: %v", line, err)
		}
		m[strings.TrimSpace(rest[:i])] = v
	}
	return m
}

// While a pipelined run trains, /metrics has pipedbn_batches_trained_total
// series that grow between two scrapes, and /api/status is JSON listing
// every RBM; the URL is in the output folder. The run is far longer than
// the test needs (slaves report every second): the test interrupts it.
func TestLiveRun(t *testing.T) {
	w, start := startWatched(t, "[256, 256, 128]", 1000)
	start()
	deadline := time.Now().Add(60 * time.Second)
	var first map[string]float64
	grew := ""
	for grew == "" {
		if w.ended() {
			t.Fatalf("the run ended (%v) before a series grew between two scrapes; first scrape %v", w.wait(), first)
		}
		if time.Now().After(deadline) {
			t.Fatalf("no pipedbn_batches_trained_total series grew in 60 s: %v", first)
		}
		got := series(t, get(t, w.url+"/metrics"), "pipedbn_batches_trained_total")
		for k, v := range got {
			if old, ok := first[k]; ok && v > old {
				grew = fmt.Sprintf("%s %v -> %v", k, old, v)
			}
		}
		if first == nil && len(got) > 0 {
			first = got
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Logf("pipedbn_batches_trained_total%s", grew)

	// The ETA needs a report of every RBM; the top RBM reports its first
	// window at once, the others at their next heartbeat.
	s := status(t, w.url)
	for s.ETASeconds == nil && time.Now().Before(deadline) && !w.ended() {
		time.Sleep(50 * time.Millisecond)
		s = status(t, w.url)
	}
	if s.Name != "live" || s.Mode != "pipelined" || s.State != monitor.Pretraining || len(s.RBMs) != 2 || s.BatchesTotal != 2*1000*100+20000 {
		t.Fatalf("GET /api/status = %+v; want run live, pipelined, pre-training, 2 RBMs, 220000 mini-batches planned (RBM 2's settle phase: 20%% of 50,000 windows of 2)", s)
	}
	for i, r := range s.RBMs {
		v, h, total := []int{256, 256}[i], []int{256, 128}[i], []int{100000, 120000}[i]
		if r.Index != i+1 || r.Visible != v || r.Hidden != h || r.BatchesTotal != total || r.Worker != fmt.Sprintf("memory-%d", i+1) {
			t.Errorf("RBM %d = %+v; want RBM %d, %dx%d, %d mini-batches, on memory-%d", i+1, r, i+1, v, h, total, i+1)
		}
	}
	if s.Batches == 0 || s.ETASeconds == nil || *s.ETASeconds <= 0 {
		t.Errorf("GET /api/status: %d mini-batches trained, ETA %v; want some, and an ETA", s.Batches, s.ETASeconds)
	}
	if b, err := os.ReadFile(filepath.Join(w.out, monitor.URLFile)); err != nil || string(b) != w.url+"\n" {
		t.Errorf("%s = %q, %v; want %s", monitor.URLFile, b, err, w.url)
	}

	w.cancel()
	if err := w.wait(); !errors.Is(err, context.Canceled) && !errors.Is(err, protocol.ErrInterrupted) {
		t.Fatalf("interrupted run: %v; want an interruption", err)
	}
	if s := status(t, w.url); s.State != monitor.Interrupted || s.ETASeconds != nil {
		t.Errorf("status of the interrupted run: %s, ETA %v; want interrupted, no ETA", s.State, s.ETASeconds)
	}
}

// A run that ends is done: every RBM trained what was planned, and the
// counters say so; fine-tuning's outcome is in the status.
func TestRunEndsDone(t *testing.T) {
	w, start := startWatched(t, "[16, 8, 4]", 2)
	if s := status(t, w.url); s.State != monitor.Starting || len(s.RBMs) != 0 {
		t.Errorf("status before the run = %+v; want starting, no RBMs yet", s)
	}
	start()
	if err := w.wait(); err != nil {
		t.Fatal(err)
	}
	s := status(t, w.url)
	if s.State != monitor.Done || s.Finetune == nil || len(s.Finetune.History) != 1 || s.ETASeconds != nil || s.Batches != 440 {
		t.Errorf("status at the end = %+v; want done, fine-tuned 1 epoch, no ETA, 440 mini-batches", s)
	}
	if f := s.Finetuning; f == nil || f.Epochs != 1 || len(f.History) != 1 || f.History[0].Loss <= 0 {
		t.Errorf("fine-tuning as it went = %+v; want 1 epoch of 1, with its loss", f)
	}
	if f := s.Finetune; f != nil {
		n := 0
		for _, row := range f.Confusion {
			for _, c := range row {
				n += c
			}
		}
		if len(f.Confusion) != 10 || n != 100 || len(f.PerClass) != 10 {
			t.Errorf("confusion matrix %v (%d examples), per class %v; want 10 classes, the 100 test examples", f.Confusion, n, f.PerClass)
		}
	}
	// 2 epochs of 100 windows of 2 mini-batches, then a settle phase of
	// 20% of the windows: RBM_2 trains 20 more windows (40 mini-batches),
	// reported as one more epoch of reconstruction error.
	want := map[int][2]int{1: {200, 2}, 2: {240, 3}}
	for _, r := range s.RBMs {
		batches, epochs := want[r.Index][0], want[r.Index][1]
		if len(r.ReconTrace) == 0 || r.ReconTrace[len(r.ReconTrace)-1][0] != float64(batches) {
			t.Errorf("RBM %d's recon_trace = %v; want points up to mini-batch %d", r.Index, r.ReconTrace, batches)
		}
		if r.Batches != batches || r.State != "done" || len(r.ReconError) != epochs || r.Epoch != 2 {
			t.Errorf("RBM %d at the end = %d mini-batches, %s, %d epochs, epoch %d; want %d, done, %d, 2",
				r.Index, r.Batches, r.State, len(r.ReconError), r.Epoch, batches, epochs)
		}
	}
	checkAsResult(t, s, w.out)
	m := get(t, w.url+"/metrics")
	trained := series(t, m, "pipedbn_batches_trained_total")
	for i, rbm := range []string{"1", "2"} {
		if v := trained[`{rbm="`+rbm+`",slave="memory-`+rbm+`"}`]; v != float64(want[i+1][0]) {
			t.Errorf("pipedbn_batches_trained_total of RBM %s = %v at the end; want %d (%v)", rbm, v, want[i+1][0], trained)
		}
	}
	if v := series(t, m, "pipedbn_run_phase")[`{phase="done"}`]; v != 1 {
		t.Errorf(`pipedbn_run_phase{phase="done"} = %v; want 1`, v)
	}
	if v := series(t, m, "pipedbn_finetune_accuracy")[`{set="test"}`]; v != s.Finetune.TestAccuracy {
		t.Errorf(`pipedbn_finetune_accuracy{set="test"} = %v; want %v`, v, s.Finetune.TestAccuracy)
	}
}

// checkAsResult checks that the status of a finished run has the
// fine-tuning plan and the end-to-end seconds of its result.json in out.
func checkAsResult(t *testing.T, s monitor.Status, out string) {
	t.Helper()
	res, err := dbn.ReadResult(filepath.Join(out, dbn.ResultFile))
	if err != nil {
		t.Fatal(err)
	}
	if s.EndToEndSeconds <= 0 || s.EndToEndSeconds != res.EndToEndSeconds {
		t.Errorf("end_to_end_seconds = %v; want result.json's %v", s.EndToEndSeconds, res.EndToEndSeconds)
	}
	if res.Finetune == nil || res.Finetune.Plan == nil {
		t.Fatalf("result.json has no finetune.plan: %+v", res.Finetune)
	}
	if s.Finetuning == nil {
		t.Fatal("finetuning = null at the end; want the plan")
	}
	got, _ := json.Marshal(s.Finetuning.Plan)
	want, _ := json.Marshal(res.Finetune.Plan)
	if s.Finetuning.Plan == nil || string(got) != string(want) {
		t.Errorf("finetuning.plan = %s; want result.json's %s", got, want)
	}
}
