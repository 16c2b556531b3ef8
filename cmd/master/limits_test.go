package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestLimitsBeforeWork runs master on DBNs that cannot run here (issue 13,
// item 3): each must be refused before any work, exit 1 like any bad
// config, with one line naming the file and dbn.layers (or the key at
// fault) and the estimate or limit, and never an out-of-memory crash.
func TestLimitsBeforeWork(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	write := func(name, body string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	const data = "data: {source: synthetic, train_limit: 256, test_limit: 10}\n"
	huge := write("huge.yaml", data+"dbn: {layers: [784, 100000000]}\n")
	// This machine, or this process's cgroup, is what the estimate is
	// compared with.
	limit := []string{"available (MemAvailable in /proc/meminfo)", "cgroup allows"}
	cases := []struct {
		name   string
		args   []string
		want   []string
		oneOf  []string // one of these too, if any
		output bool     // the run may create its output folder
	}{
		{"greedy", []string{"--config", huge, "--set", "pretrain.mode=greedy"},
			[]string{"huge.yaml: dbn.layers = [784, 100000000]: RBM_1 (784x100000000) needs about 1.14 TiB, the master (greedy pre-training and fine-tuning in this process) about "}, limit, false},
		{"in memory", []string{"--config", huge, "--set", "pretrain.mode=pipelined", "--set", "cluster.transport=memory"},
			[]string{"huge.yaml: dbn.layers = [784, 100000000]: RBM_1's slave (784x100000000) needs about ", "the master and its 1 slave in this process (cluster.transport: memory)"}, limit, false},
		{"local slaves", []string{"--config", huge, "--set", "pretrain.mode=pipelined"},
			[]string{"huge.yaml: dbn.layers = [784, 100000000]: RBM_1's slave (784x100000000) needs about ", "the master and its 1 local slave process about "}, limit, false},
		{"remote slaves", []string{"--config", huge, "--set", "pretrain.mode=pipelined", "--set", "cluster.slaves=1", "--set", "cluster.nats_url=nats://127.0.0.1:1"},
			[]string{"huge.yaml: dbn.layers = [784, 100000000]: the master needs about "}, limit, false},
		// Fits in memory, but its weights exceed what a NATS message carries:
		// the master would never receive them.
		{"weights beyond a NATS message", []string{"--config", write("wide.yaml", data+"dbn: {layers: [784, 90000]}\nreliability: {checkpoint_every: 0}\nfinetune: {epochs: 0}\n"), "--set", "pretrain.mode=pipelined"},
			[]string{"wide.yaml: dbn.layers = [784, 90000]: the trained weights of RBM_1 (784x90000) make a message of 270 MiB, more than the 256 MiB one may carry over NATS"}, nil, false},
		// Sizes that would overflow are refused by the config's validation.
		{"layer beyond BLAS", []string{"--config", huge, "--set", "dbn.layers=[784, 3000000000]"},
			[]string{"huge.yaml: dbn.layers[1] = 3000000000 (from --set dbn.layers): must be at most 2147483647: BLAS takes 32-bit sizes"}, nil, false},
		{"window beyond 64 bits", []string{"--config", huge, "--set", "pretrain.k_batches=100000000000"},
			[]string{"huge.yaml: pretrain.k_batches = 100000000000 (from --set pretrain.k_batches): must be at most 2147483647"}, nil, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			out := filepath.Join(t.TempDir(), "out")
			args := append([]string{"run", "--out", out}, tc.args...)
			code, stderr := master(t, nil, args...)
			if code != 1 {
				t.Errorf("master %v: exit %d; want 1, as for any bad config\n%s", args, code, stderr)
			}
			if strings.Contains(stderr, "panic") || strings.Contains(stderr, "goroutine ") || strings.Contains(stderr, "out of memory") {
				t.Fatalf("master %v: a crash:\n%s", args, stderr)
			}
			lines := strings.Split(strings.TrimRight(stderr, "\n"), "\n")
			if len(lines) != 1 {
				t.Fatalf("master %v: stderr has %d lines; want 1:\n%s", args, len(lines), stderr)
			}
			for _, w := range tc.want {
				if !strings.Contains(lines[0], w) {
					t.Errorf("master %v: stderr = %q; want it to contain %q", args, lines[0], w)
				}
			}
			if len(tc.oneOf) > 0 && !containsAny(lines[0], tc.oneOf) {
				t.Errorf("master %v: stderr = %q; want it to contain one of %q", args, lines[0], tc.oneOf)
			}
			// Refused before any work: nothing was written.
			if _, err := os.Stat(out); err == nil {
				t.Errorf("master %v: created %s; want nothing written", args, out)
			}
		})
	}
}

func containsAny(s string, subs []string) bool {
	for _, sub := range subs {
		if strings.Contains(s, sub) {
			return true
		}
	}
	return false
}

// TestSweepLimits runs a sweep with a point that cannot fit: the sweep is
// refused before any of its runs starts.
func TestSweepLimits(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	p := filepath.Join(dir, "grid.yaml")
	body := "data: {source: synthetic, train_limit: 64, test_limit: 16}\ndbn: {layers: [16, 8]}\n" +
		"pretrain: {mode: greedy, epochs: 1}\nfinetune: {epochs: 0}\n" +
		"sweep: {vary: [{key: dbn.layers, values: [[16, 8], [16, 2000000000]]}]}\n"
	if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "out")
	code, stderr := master(t, nil, "sweep", "--config", p, "--out", out)
	lines := strings.Split(strings.TrimRight(stderr, "\n"), "\n")
	want := "grid.yaml: sweep run dbn.layers=[16, 2000000000]: dbn.layers = [16, 2000000000]: RBM_1 (16x2000000000) needs about "
	if code != 1 || len(lines) != 1 || !strings.Contains(lines[0], want) {
		t.Fatalf("master sweep: exit %d, stderr %q; want exit 1 and one line holding %q", code, stderr, want)
	}
	if entries, _ := os.ReadDir(out); len(entries) > 0 {
		t.Errorf("master sweep wrote %d entries to %s; want none: no run may start", len(entries), out)
	}
}
