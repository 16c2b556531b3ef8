package main

import (
	"bytes"
	"encoding/csv"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestSweepEndToEnd runs `master sweep` on tiny synthetic DBNs: every run a
// real `master run` process; then again, reusing them all.
func TestSweepEndToEnd(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	cfg := filepath.Join(dir, "tiny.yaml")
	if err := os.WriteFile(cfg, []byte(`
name: tiny
data: {source: synthetic, train_limit: 128, test_limit: 32}
dbn: {layers: [16, 8]}
pretrain: {epochs: 1, batch_size: 16, k_batches: 2}
cluster: {transport: memory}
finetune: {epochs: 0}
sweep:
  repeats: 2
  vary:
    - key: dbn.layers
      values: [[16, 8], [16, 8, 8]]
    - key: pretrain.mode
      values: [greedy, pipelined]
`), 0o644); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "out")
	code, stderr := master(t, nil, "sweep", "--config", cfg, "--out", out)
	if code != 0 {
		t.Fatalf("master sweep: exit %d\n%s", code, stderr)
	}
	for _, w := range []string{"run 1 of 8", "run 8 of 8 done", "eta=", "sweep done"} {
		if !strings.Contains(stderr, w) {
			t.Errorf("stderr lacks %q:\n%s", w, stderr)
		}
	}
	f, err := os.Open(filepath.Join(out, "sweep.csv"))
	if err != nil {
		t.Fatal(err)
	}
	recs, err := csv.NewReader(f).ReadAll()
	f.Close()
	if err != nil {
		t.Fatal(err)
	}
	if len(recs) != 9 {
		t.Fatalf("sweep.csv: %d records; want a header and 8 runs", len(recs))
	}
	status := 0
	for i, h := range recs[0] {
		if h == "status" {
			status = i
		}
	}
	for _, r := range recs[1:] {
		if r[status] != "ok" {
			t.Errorf("run %s: status %s; want ok (%v)", r[1], r[status], r)
		}
	}
	for _, name := range []string{"report.md", "time_vs_layers.png", "busy_wait.png", "layers=16-8-8_mode=pipelined_r2/result.json", "layers=16-8_mode=greedy_r1/run.log"} {
		if st, err := os.Stat(filepath.Join(out, name)); err != nil || st.Size() == 0 {
			t.Errorf("%s: %v; want a non-empty file", name, err)
		}
	}
	report, _ := os.ReadFile(filepath.Join(out, "report.md"))
	if want := "go run ./cmd/master sweep --config " + cfg + " --out " + out; !bytes.Contains(report, []byte(want)) {
		t.Errorf("report.md does not name the command that regenerates it (%s):\n%s", want, report)
	}

	code, stderr = master(t, nil, "sweep", "--config", cfg, "--out", out)
	if code != 0 || !strings.Contains(stderr, "done_before=8 to_run=0") || strings.Contains(stderr, "run 1 of 8") {
		t.Errorf("second master sweep: exit %d; want every run reused\n%s", code, stderr)
	}
}

// Bad sweep input: one line naming the file, the key and the value.
func TestSweepBadInput(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	cases := []struct{ name, body, want string }{
		{"unknown key", "sweep: {vary: [{key: pretrain.sped, values: [1]}]}\n", `sweep.vary[0].key = "pretrain.sped"`},
		{"empty values", "sweep: {vary: [{key: pretrain.epochs, values: []}]}\n", "sweep.vary[0].values"},
		{"bad value", "sweep: {vary: [{key: pretrain.epochs, values: [1, -3]}]}\n", "pretrain.epochs = -3"},
	}
	for _, c := range cases {
		p := filepath.Join(dir, strings.ReplaceAll(c.name, " ", "-")+".yaml")
		os.WriteFile(p, []byte("data: {source: synthetic}\n"+c.body), 0o644)
		code, stderr := master(t, nil, "sweep", "--config", p, "--out", filepath.Join(dir, "out"))
		lines := strings.Split(strings.TrimRight(stderr, "\n"), "\n")
		if code != 1 || len(lines) != 1 || !strings.Contains(lines[0], p) || !strings.Contains(lines[0], c.want) {
			t.Errorf("%s: exit %d, stderr %q; want exit 1 and one line naming %s and %q", c.name, code, stderr, p, c.want)
		}
	}
}
