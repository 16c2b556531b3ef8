package dbn

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/hashicorp/go-hclog"

	"github.com/pipedbn/pipedbn/blas"
)

// cgroupLog is a run's log that, at the end of every fine-tuning epoch,
// notes which cgroups this process is in.
type cgroupLog struct {
	mu     sync.Mutex
	logs   bytes.Buffer
	during []string // /proc/self/cgroup at each fine-tuning epoch's end
}

func (l *cgroupLog) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if bytes.Contains(p, []byte("fine-tuning epoch done")) {
		b, _ := os.ReadFile("/proc/self/cgroup")
		l.during = append(l.during, string(b))
	}
	return l.logs.Write(p)
}

func (l *cgroupLog) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.logs.String()
}

// runCapped runs a tiny greedy run with cluster.cpus_per_worker 0.5 and
// fine-tuning, and reads its result.json back.
func runCapped(t *testing.T) (*Result, *cgroupLog) {
	t.Helper()
	cfg := loadConfig(t, `
data: {source: synthetic, train_limit: 200, test_limit: 50}
dbn: {layers: [16, 8]}
pretrain: {mode: greedy, epochs: 1, batch_size: 20}
finetune: {epochs: 2, batch_size: 500, validation: 0.2}
cluster: {cpus_per_worker: 0.5}
`)
	logs := &cgroupLog{}
	out := t.TempDir()
	log := hclog.New(&hclog.LoggerOptions{Output: logs, Level: hclog.Info})
	if _, err := Run(context.Background(), cfg, Options{OutDir: out, Logger: log}); err != nil {
		t.Fatalf("%v\n%s", err, logs)
	}
	res, err := ReadResult(filepath.Join(out, ResultFile))
	if err != nil {
		t.Fatal(err)
	}
	if res.Finetune == nil || res.Finetune.Plan == nil {
		t.Fatalf("result.json has no finetune.plan: %+v", res.Finetune)
	}
	return res, logs
}

// With cluster.cpus_per_worker, fine-tuning runs in a cgroup of its own
// capped at that many CPUs, with one worker's BLAS threads, and result.json
// says so; the master leaves the cgroup when fine-tuning ends.
func TestFinetuneCappedLikeAWorker(t *testing.T) {
	probe, err := newCPUGroup(fmt.Sprintf("pipedbn-%d-probe", os.Getpid()), 1)
	if probe != nil {
		probe.close()
	}
	if err != nil {
		t.Skipf("no CPU groups here (cgroups need root and a cpu controller): %v", err)
	}
	threadsBefore := blas.Threads()
	res, logs := runCapped(t)
	p := res.Finetune.Plan
	if p.Workers != 1 || p.SyncEvery != nil || p.BatchPerWorker != 160 || p.CPUs != 0.5 || p.Threads != 1 {
		t.Errorf("finetune.plan = %+v; want 1 worker, no sync_every, 160 per mini-batch (the 200 less the validation 20%%), 0.5 CPUs, 1 thread", *p)
	}
	if want := res.PretrainSeconds + res.Finetune.Seconds; res.EndToEndSeconds != want || want <= 0 {
		t.Errorf("end_to_end_seconds = %v; want pretrain_seconds + finetune.seconds = %v", res.EndToEndSeconds, want)
	}
	group := fmt.Sprintf("pipedbn-%d-finetune", os.Getpid())
	if len(logs.during) != 2 {
		t.Fatalf("saw %d fine-tuning epochs; want 2\n%s", len(logs.during), logs)
	}
	for e, cg := range logs.during {
		if !strings.Contains(cg, group) {
			t.Errorf("epoch %d: this process is in %q; want cgroup %s", e+1, cg, group)
		}
	}
	if b, _ := os.ReadFile("/proc/self/cgroup"); strings.Contains(string(b), "pipedbn-") {
		t.Errorf("after the run this process is still in %q; want uncapped", b)
	}
	if got := blas.Threads(); got != threadsBefore {
		t.Errorf("BLAS threads %d after the run; want them back at %d", got, threadsBefore)
	}
	if strings.Contains(logs.String(), "cannot cap") {
		t.Errorf("the run warned of a cap it could set:\n%s", logs)
	}
}

// Where no cgroup can be made, fine-tuning warns once and runs uncapped,
// and result.json records it: finetune.plan.cpus 0 beside cpus_per_worker.
func TestFinetuneCapFailedIsUncapped(t *testing.T) {
	before := cgroupRoot
	cgroupRoot = t.TempDir() // no hierarchies mounted here
	defer func() { cgroupRoot = before }()
	res, logs := runCapped(t)
	if p := res.Finetune.Plan; p.CPUs != 0 || p.Workers != 1 {
		t.Errorf("finetune.plan = %+v; want cpus 0 (uncapped), 1 worker", *p)
	}
	if res.CPUsPerWorker != 0.5 {
		t.Errorf("cpus_per_worker = %v; want 0.5, as asked", res.CPUsPerWorker)
	}
	if res.EndToEndSeconds <= 0 {
		t.Errorf("end_to_end_seconds = %v; want the run's seconds", res.EndToEndSeconds)
	}
	for _, what := range []string{"fine-tuning", "the greedy trainer"} {
		if n := strings.Count(logs.String(), "cannot cap the master's CPUs; "+what+" runs uncapped"); n != 1 {
			t.Errorf("%d warnings that %s runs uncapped; want 1\n%s", n, what, logs)
		}
	}
}
