package monitor_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/pipedbn/pipedbn/monitor"
	"github.com/pipedbn/pipedbn/pipeline"
)

// promQuery asks the Prometheus at base for query's instant vector and
// returns its samples' values (nil while empty).
func promQuery(t *testing.T, base, query string) ([]string, error) {
	t.Helper()
	resp, err := http.Get(base + "/api/v1/query?query=" + url.QueryEscape(query))
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	var r struct {
		Status string `json:"status"`
		Error  string `json:"error"`
		Data   struct {
			Result []struct {
				Metric map[string]string `json:"metric"`
				Value  [2]any            `json:"value"`
			} `json:"result"`
		} `json:"data"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&r); err != nil {
		return nil, fmt.Errorf("query %s: %v", query, err)
	}
	if r.Status != "success" {
		return nil, fmt.Errorf("query %s: %s", query, r.Error)
	}
	var vals []string
	for _, s := range r.Data.Result {
		vals = append(vals, fmt.Sprintf("%v=%v", s.Metric, s.Value[1]))
	}
	return vals, nil
}

// freePort returns a loopback port nobody listens on (now).
func freePort(t *testing.T) int {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}

// A real Prometheus (Debian's prometheus, which `make deps` installs)
// scrapes the master every second during a pipelined run, and its HTTP API
// has pipedbn_batches_trained_total series that grew; beside it, the
// master of a run fine-tuning on two workers, and Prometheus has each
// worker's samples; every query of the example Grafana dashboard runs on
// it.
func TestPrometheusScrapesRun(t *testing.T) {
	bin, err := exec.LookPath("prometheus")
	if err != nil {
		t.Skip("no prometheus binary on PATH: `make deps` installs Debian's prometheus (apt-get install prometheus)")
	}
	w, start := startWatched(t, "[256, 256, 128]", 1000)
	ft := servedWorkers(t)
	dir := t.TempDir()
	conf := filepath.Join(dir, "prometheus.yml")
	target := strings.TrimPrefix(w.url, "http://")
	if err := os.WriteFile(conf, []byte(fmt.Sprintf(`
global: {scrape_interval: 1s, scrape_timeout: 1s, evaluation_interval: 1s}
scrape_configs:
  - job_name: pipedbn
    static_configs: [{targets: ['%s']}]
  - job_name: pipedbn-finetune
    static_configs: [{targets: ['%s']}]
`, target, strings.TrimPrefix(ft, "http://"))), 0o644); err != nil {
		t.Fatal(err)
	}
	addr := fmt.Sprintf("127.0.0.1:%d", freePort(t))
	prom := exec.Command(bin, "--config.file="+conf, "--storage.tsdb.path="+filepath.Join(dir, "data"),
		"--web.listen-address="+addr, "--log.level=warn")
	var logs bytes.Buffer
	prom.Stdout, prom.Stderr = &logs, &logs
	prom.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := prom.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- prom.Wait() }()
	t.Cleanup(func() {
		prom.Process.Signal(syscall.SIGTERM)
		select {
		case <-exited:
		case <-time.After(5 * time.Second):
			prom.Process.Kill()
			<-exited
		}
		if t.Failed() {
			t.Logf("prometheus's log:\n%s", logs.String())
		}
	})
	base := "http://" + addr

	// waitFor polls cond every 200 ms until it holds, for at most limit.
	waitFor := func(what string, limit time.Duration, cond func() (bool, string)) {
		t.Helper()
		deadline := time.Now().Add(limit)
		last := ""
		for {
			select {
			case err := <-exited:
				t.Fatalf("prometheus exited (%v) while waiting for %s:\n%s", err, what, logs.String())
			default:
			}
			ok, state := cond()
			if ok {
				return
			}
			if state != "" {
				last = state
			}
			if time.Now().After(deadline) {
				t.Fatalf("no %s after %v (last: %s)", what, limit, last)
			}
			time.Sleep(200 * time.Millisecond)
		}
	}
	// Prometheus scrapes the master before the run starts, so that no
	// second of the run is missed.
	waitFor(`the master's target up in prometheus`, 15*time.Second, func() (bool, string) {
		vals, err := promQuery(t, base, `up{job="pipedbn"} == 1`)
		if err != nil {
			return false, err.Error()
		}
		return len(vals) > 0, ""
	})
	start()
	waitFor("pipedbn_batches_trained_total series", 30*time.Second, func() (bool, string) {
		vals, err := promQuery(t, base, "pipedbn_batches_trained_total")
		if err != nil {
			return false, err.Error()
		}
		return len(vals) > 0, fmt.Sprint(vals)
	})
	var grew []string
	waitFor("pipedbn_batches_trained_total series that grew", 30*time.Second, func() (bool, string) {
		if w.ended() {
			t.Fatalf("the run ended (%v) before prometheus saw it grow", w.wait())
		}
		vals, err := promQuery(t, base, "max_over_time(pipedbn_batches_trained_total[5m]) > min_over_time(pipedbn_batches_trained_total[5m])")
		if err != nil {
			return false, err.Error()
		}
		grew = vals
		return len(vals) > 0, ""
	})
	t.Logf("prometheus saw grow: %v", grew)
	now, err := promQuery(t, base, "pipedbn_batches_trained_total")
	if err != nil || len(now) == 0 {
		t.Errorf("query pipedbn_batches_trained_total: %v, %v; want series", now, err)
	}
	t.Logf("pipedbn_batches_trained_total in prometheus: %v", now)
	waitFor("the fine-tuning workers' samples", 15*time.Second, func() (bool, string) {
		vals, err := promQuery(t, base, `sum by (worker) (pipedbn_finetune_worker_samples_trained_total{job="pipedbn-finetune"})`)
		if err != nil {
			return false, err.Error()
		}
		slices.Sort(vals)
		got := fmt.Sprint(vals)
		return got == "[map[worker:local-1-r0]=240 map[worker:local-1-r1]=280]", got
	})
	checkDashboardQueries(t, base)
}

// servedWorkers serves, until the test ends, the state of a run
// fine-tuning on two workers, local-1-r0 and local-1-r1 (12 and 14
// mini-batches of 20 examples), and returns its URL. The workers' reports
// are made by hand: real ones are slave processes, which dbn's tests run.
func servedWorkers(t *testing.T) string {
	t.Helper()
	r := monitor.NewRun("ft", "greedy", "")
	r.FineTuning(2)
	for k, batches := range []int{12, 14} {
		r.FinetuneWorker(pipeline.Stats{Index: 1, Worker: fmt.Sprintf("local-1-r%d", k), Batches: batches, Rows: 20 * batches,
			Busy: time.Second, LastRecon: 0.5, State: pipeline.Training})
	}
	srv := httptest.NewServer(r.Handler())
	t.Cleanup(srv.Close)
	return srv.URL
}
