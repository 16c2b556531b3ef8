package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestPlan: `master plan` prints on stdout the plan a pipelined run of the
// config would lay its local slaves out by, with its prediction, and trains
// nothing; a config it cannot plan is one line on stderr naming the file,
// key and value.
func TestPlan(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	cfg := filepath.Join(dir, "plan.yaml")
	body := "name: planned\ndata: {source: synthetic, train_limit: 2048}\ndbn: {layers: [64, 32, 32, 128]}\n" +
		"pretrain: {epochs: 2, batch_size: 32, k_batches: 4}\ncluster: {cpus_per_worker: 0.25, local_slaves: 4, max_replicas: 4}\n" +
		"output: {dir: " + filepath.Join(dir, "out") + "}\n"
	if err := os.WriteFile(cfg, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}

	for _, tc := range []struct {
		name string
		sets []string
		want []string
	}{
		{"auto", nil, []string{"auto plan", "3 RBMs on ", " of 4 machines", "speed-up", "group  RBMs", "process-1"}},
		{"one-per-rbm", []string{"--set", "cluster.plan=one-per-rbm", "--set", "cluster.local_slaves=3"},
			[]string{"one-per-rbm plan", "3 RBMs on 3 of 3 machines", "speed-up"}},
		{"explicit", []string{"--set", "cluster.plan=1-2,3x2", "--set", "cluster.local_slaves=3"},
			[]string{"1-2", "process-2,process-3", "speed-up"}},
	} {
		code, stdout, stderr := masterIO(t, nil, append([]string{"plan", "--config", cfg}, tc.sets...)...)
		if code != 0 || stderr != "" {
			t.Fatalf("%s: master plan: exit %d, stderr\n%s\nwant exit 0 and nothing on stderr", tc.name, code, stderr)
		}
		for _, w := range tc.want {
			if !strings.Contains(stdout, w) {
				t.Errorf("%s: master plan printed\n%s\nwant it to contain %q", tc.name, stdout, w)
			}
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "out")); !os.IsNotExist(err) {
		t.Errorf("master plan wrote its output folder (%v); it must train nothing", err)
	}

	for _, tc := range []struct {
		name string
		sets []string
		want string
	}{
		{"greedy", []string{"--set", "pretrain.mode=greedy"}, "plan.yaml: pretrain.mode = greedy: greedy pre-training has no plan"},
		{"slaves by hand", []string{"--set", "cluster.slaves=3", "--set", "cluster.local_slaves=0", "--set", "cluster.cpus_per_worker=0"}, "plan.yaml: cluster.slaves = 3: slaves started by hand are planned once they join"},
		{"in-process", []string{"--set", "cluster.transport=memory", "--set", "cluster.local_slaves=0", "--set", "cluster.cpus_per_worker=0"}, "plan.yaml: cluster.transport = memory: the in-process transport"},
	} {
		code, stderr := master(t, nil, append([]string{"plan", "--config", cfg}, tc.sets...)...)
		lines := strings.Split(strings.TrimRight(stderr, "\n"), "\n")
		if code != 1 || len(lines) != 1 || !strings.Contains(lines[0], tc.want) {
			t.Errorf("%s: master plan: exit %d, stderr\n%s\nwant exit 1 and one line containing %q", tc.name, code, stderr, tc.want)
		}
	}
}
