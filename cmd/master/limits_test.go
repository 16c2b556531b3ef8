package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/pipedbn/pipedbn/data"
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
		// A window of 100000 mini-batches is the epoch's rows, and these
		// are more than a NATS message carries.
		{"window of the epoch beyond a NATS message", []string{"--config", write("long.yaml", "data: {source: synthetic, train_limit: 100000, test_limit: 10}\ndbn: {layers: [784, 16]}\n"), "--set", "pretrain.mode=pipelined", "--set", "pretrain.k_batches=100000"},
			[]string{"long.yaml: pretrain.k_batches = 100000: a window of the epoch's 100000 rows (fewer than 100000 mini-batches of 256 rows) of L_0 (784 values) makes a message of 299 MiB, more than the 256 MiB one may carry over NATS"}, nil, false},
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

// TestLongWindowRuns: a window of more mini-batches than the data has is
// one window of the epoch's rows, as the memory estimate counts it: the
// run trains, in every schedule, instead of allocating K x batch rows and
// dying out of memory.
func TestLongWindowRuns(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	cfg := filepath.Join(dir, "long.yaml")
	body := "data: {source: synthetic, train_limit: 300, test_limit: 10}\ndbn: {layers: [784, 16]}\n" +
		"pretrain: {epochs: 2}\nfinetune: {epochs: 0}\n"
	if err := os.WriteFile(cfg, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		sets []string
	}{
		// 8000000 x 256 rows of 784 values would be 6.4 TB.
		{"greedy", []string{"pretrain.mode=greedy", "pretrain.k_batches=8000000"}},
		{"in memory", []string{"pretrain.mode=pipelined", "cluster.transport=memory", "pretrain.k_batches=100000"}},
		{"local slaves", []string{"pretrain.mode=pipelined", "pretrain.k_batches=100000"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			out := filepath.Join(t.TempDir(), "out")
			args := []string{"run", "--config", cfg, "--out", out, "--http", ""}
			for _, s := range tc.sets {
				args = append(args, "--set", s)
			}
			code, stderr := master(t, nil, args...)
			if code != 0 || strings.Contains(stderr, "fatal error") || strings.Contains(stderr, "panic") {
				t.Fatalf("master %v: exit %d; want 0, the window the epoch's 300 rows\n%s", args, code, stderr)
			}
			if _, err := os.Stat(filepath.Join(out, "result.json")); err != nil {
				t.Errorf("master %v: no result: %v", args, err)
			}
		})
	}
}

// TestSizesBeforeData runs and plans configs whose sizes are out of
// bounds: more slaves than one run may have (pipeline.MaxSlaves), replica
// counts that would overflow, signed plan numbers, a window of the whole
// epoch longer than a NATS message. Each is refused by both commands in
// one line naming the file, the key and its value, with exit 1, before
// the data is read: the IDX files here have sound headers and a
// truncated body, so that reading them would fail otherwise.
func TestSizesBeforeData(t *testing.T) {
	t.Parallel()
	idx := writeIDXDir(t, false) // 64 examples of 16 values
	images := filepath.Join(idx, data.TrainImagesFile)
	st, err := os.Stat(images)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Truncate(images, st.Size()-100); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	cfg := filepath.Join(dir, "sizes.yaml")
	body := "data: {source: idx, dir: " + idx + "}\ndbn: {layers: [16, 8, 8, 8]}\npretrain: {mode: pipelined, epochs: 1}\nfinetune: {epochs: 0}\n"
	if err := os.WriteFile(cfg, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	// The data cannot be read: a config without a problem of size fails
	// when it loads it.
	if code, stderr := master(t, nil, "plan", "--config", cfg); code != 1 || !strings.Contains(stderr, "train-images") {
		t.Fatalf("master plan of truncated data: exit %d, stderr %q; want exit 1 naming the file it cannot read", code, stderr)
	}
	for _, tc := range []struct {
		name string
		sets []string
		want string
	}{
		{"local slaves", []string{"cluster.local_slaves=200"}, "sizes.yaml: cluster.local_slaves = 200: 200 local slave processes, more than the 128 slaves one run may have"},
		{"replicas", []string{"cluster.plan=1x198,2,3"}, `sizes.yaml: cluster.plan = "1x198,2,3": 200 local slaves (one per RBM of each stage group, on each of its replicas), more than the 128 slaves one run may have`},
		// `master plan` plans no slaves by hand: it refuses them for that.
		{"slaves by hand", []string{"cluster.slaves=200"}, "sizes.yaml: cluster.slaves = 200: "},
		{"replicas beyond 64 bits", []string{"cluster.plan=1x9223372036854775807,2,3"},
			`sizes.yaml: cluster.plan = "1x9223372036854775807,2,3" (from --set cluster.plan): must be auto, one-per-rbm, or stage groups covering RBMs 1 to 3 in order, each with xR for R replicas, like "1-2,3x2": group "1x9223372036854775807": "9223372036854775807" is no number of replicas in [1, 2147483647]`},
		{"signed RBM", []string{"cluster.plan=+1x2,2,3"}, `sizes.yaml: cluster.plan = "+1x2,2,3" (from --set cluster.plan): must be auto, one-per-rbm, or stage groups`},
		{"signed replicas", []string{"cluster.plan=1x+4,2,3"}, `sizes.yaml: cluster.plan = "1x+4,2,3" (from --set cluster.plan): must be auto, one-per-rbm, or stage groups covering RBMs 1 to 3 in order, each with xR for R replicas, like "1-2,3x2": group "1x+4": RBMs and replicas are plain numbers, without a sign`},
	} {
		for _, cmd := range []string{"run", "plan"} {
			t.Run(tc.name+"/"+cmd, func(t *testing.T) {
				t.Parallel()
				out := filepath.Join(t.TempDir(), "out")
				args := []string{cmd, "--config", cfg}
				if cmd == "run" {
					args = append(args, "--out", out, "--http", "")
				}
				for _, s := range tc.sets {
					args = append(args, "--set", s)
				}
				code, stderr := master(t, nil, args...)
				want := tc.want
				if cmd == "run" && tc.name == "slaves by hand" {
					want += "200 slaves, each with its own identity on the embedded NATS server, more than the 128 slaves one run may have"
				}
				if strings.Contains(stderr, "panic") || strings.Contains(stderr, "goroutine ") || strings.Contains(stderr, "fatal error") {
					t.Fatalf("master %v: a crash:\n%s", args, stderr)
				}
				lines := strings.Split(strings.TrimRight(stderr, "\n"), "\n")
				if code != 1 || len(lines) != 1 || !strings.Contains(lines[0], want) {
					t.Errorf("master %v: exit %d, stderr\n%s\nwant exit 1 and one line holding %q", args, code, stderr, want)
				}
				if _, err := os.Stat(out); err == nil {
					t.Errorf("master %v: created %s; want nothing written", args, out)
				}
			})
		}
	}
}
