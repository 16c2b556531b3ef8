package main

import (
	"bytes"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// longRun is a config whose pipelined run lasts far longer than the tests
// that interrupt it.
const longRun = `
name: watched
data: {source: synthetic, train_limit: 2000, test_limit: 64}
dbn: {layers: [64, 64, 32]}
pretrain: {mode: pipelined, epochs: 5000, batch_size: 20, k_batches: 2}
cluster: {transport: memory}
finetune: {epochs: 0}
`

// syncBuffer is a bytes.Buffer that a process writes while a test reads.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.String()
}

// startMaster starts the master binary with args and returns it with its
// stderr; it is killed when the test ends.
func startMaster(t *testing.T, args ...string) (*exec.Cmd, *syncBuffer) {
	t.Helper()
	cmd := exec.Command(masterBin, args...)
	stderr := &syncBuffer{}
	cmd.Stderr = stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cmd.Process.Kill()
		cmd.Wait()
		if t.Failed() {
			t.Logf("master's stderr:\n%s", stderr.String())
		}
	})
	return cmd, stderr
}

// getJSON decodes the JSON at url into v.
func getJSON(url string, v any) error {
	resp, err := http.Get(url)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return err
	}
	return json.Unmarshal(b, v)
}

// eventually polls cond every 100 ms for at most 60 s.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(60 * time.Second); !cond(); time.Sleep(100 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("no %s after 60 s", what)
		}
	}
}

// readURL returns the URL in dir/monitor.url, or "".
func readURL(dir string) string {
	b, _ := os.ReadFile(filepath.Join(dir, "monitor.url"))
	return strings.TrimSpace(string(b))
}

type runStatus struct {
	State string `json:"state"`
	RBMs  []struct {
		Index   int `json:"index"`
		Batches int `json:"batches"`
	} `json:"rbms"`
}

// `master run --http 127.0.0.1:0` serves the run's status and metrics on a
// free port, logs the URL and writes it to the output folder.
func TestRunServesMonitor(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	cfg := filepath.Join(dir, "watched.yaml")
	if err := os.WriteFile(cfg, []byte(longRun), 0o644); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "out")
	cmd, stderr := startMaster(t, "run", "--config", cfg, "--out", out, "--http", "127.0.0.1:0")
	eventually(t, "monitor.url", func() bool { return readURL(out) != "" })
	url := readURL(out)
	var s runStatus
	eventually(t, "RBM reports in /api/status", func() bool {
		return getJSON(url+"/api/status", &s) == nil && len(s.RBMs) == 2 && s.RBMs[1].Batches > 0
	})
	if s.State != "pre-training" {
		t.Errorf("state %q; want pre-training", s.State)
	}
	resp, err := http.Get(url + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if !bytes.Contains(b, []byte(`pipedbn_batches_trained_total{rbm="2",slave="memory-2"}`)) {
		t.Errorf("/metrics has no pipedbn_batches_trained_total of RBM 2:\n%s", b)
	}
	if !strings.Contains(stderr.String(), "watch this run at "+url) {
		t.Errorf("stderr does not name %s", url)
	}
	cmd.Process.Signal(syscall.SIGINT)
	cmd.Wait()
}

// `master run --http 0.0.0.0:0` warns once that other hosts reach the
// monitor, and logs and writes a URL of this host that serves the run, not
// 127.0.0.1's (unless the host has no other address).
func TestRunWarnsMonitorBeyondLoopback(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	cfg := filepath.Join(dir, "watched.yaml")
	if err := os.WriteFile(cfg, []byte(longRun), 0o644); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "out")
	cmd, stderr := startMaster(t, "run", "--config", cfg, "--out", out, "--http", "0.0.0.0:0")
	eventually(t, "monitor.url", func() bool { return readURL(out) != "" })
	url := readURL(out)
	var s runStatus
	eventually(t, "/api/status at "+url, func() bool { return getJSON(url+"/api/status", &s) == nil && s.State != "" })
	if !strings.Contains(stderr.String(), "watch this run at "+url) {
		t.Errorf("stderr does not name %s", url)
	}
	if n := strings.Count(stderr.String(), "reachable from other hosts"); n != 1 {
		t.Errorf("stderr warns %d times that other hosts reach the monitor; want once", n)
	}
	if hasOther := hostHasOtherAddress(t); hasOther && strings.Contains(url, "127.0.0.1") {
		t.Errorf("monitor.url = %s; want an address of this host that other hosts reach", url)
	}
	cmd.Process.Signal(syscall.SIGINT)
	cmd.Wait()
}

// hostHasOtherAddress reports whether this host has an address besides
// loopback and link-local ones.
func hostHasOtherAddress(t *testing.T) bool {
	addrs, err := net.InterfaceAddrs()
	if err != nil {
		t.Fatal(err)
	}
	for _, a := range addrs {
		if n, ok := a.(*net.IPNet); ok && n.IP.IsGlobalUnicast() {
			return true
		}
	}
	return false
}

// `master sweep` serves the grid of its runs; each run, a `master run` of
// its own, serves on a free port of the sweep's host, which the sweep's
// status links.
func TestSweepServesMonitor(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	cfg := filepath.Join(dir, "grid.yaml")
	if err := os.WriteFile(cfg, []byte(longRun+"sweep: {vary: [{key: seed, values: [1, 2]}]}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "out")
	cmd, stderr := startMaster(t, "sweep", "--config", cfg, "--out", out, "--http", "127.0.0.1:0")
	eventually(t, "the sweep's monitor.url", func() bool { return readURL(out) != "" })
	url := readURL(out)
	var s struct {
		State string `json:"state"`
		Runs  []struct {
			Index int    `json:"index"`
			State string `json:"state"`
			URL   string `json:"url"`
		} `json:"runs"`
	}
	eventually(t, "a running run with its URL in the sweep's /api/status", func() bool {
		return getJSON(url+"/api/status", &s) == nil && len(s.Runs) == 2 && s.Runs[0].URL != ""
	})
	if s.State != "running" || s.Runs[0].State != "running" || s.Runs[1].State != "pending" {
		t.Errorf("sweep status %+v; want running: run 1 running, run 2 pending", s)
	}
	if !strings.HasPrefix(s.Runs[0].URL, "http://127.0.0.1:") || s.Runs[0].URL == url {
		t.Errorf("run 1's URL %s; want a port of its own on 127.0.0.1", s.Runs[0].URL)
	}
	var r runStatus
	eventually(t, "run 1's own /api/status", func() bool {
		return getJSON(s.Runs[0].URL+"/api/status", &r) == nil && len(r.RBMs) == 2
	})
	if !strings.Contains(stderr.String(), "watch this sweep at "+url) {
		t.Errorf("stderr does not name %s", url)
	}
	cmd.Process.Signal(syscall.SIGINT)
	cmd.Wait()
}
