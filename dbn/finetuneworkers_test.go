package dbn

import (
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"sync"
	"syscall"
	"testing"

	"github.com/pipedbn/pipedbn/monitor"
)

// workersBody is a small Fashion-MNIST job whose fine-tuning runs
// data-parallel on two local worker processes, averaging every two
// mini-batches, with checkpoints every two windows.
const workersBody = `
name: workers
data: {train_limit: 1200, test_limit: 300}
dbn: {layers: [784, 48, 32]}
pretrain: {mode: greedy, epochs: 1, batch_size: 20}
finetune: {epochs: 4, batch_size: 20, workers: 2, sync_every: 2, dropout: 0.1}
reliability: {checkpoint_every: 2, lost_after: 1s}
`

// Data-parallel fine-tuning on local worker processes: result.json gives
// its plan and a loss per epoch, falling, and the network it kept learned;
// the monitor shows each worker as it reported at the end.
func TestFinetuneOnWorkers(t *testing.T) {
	t.Parallel()
	out := t.TempDir()
	// The workers report every second: a second of silence is no loss here.
	cfg := loadConfig(t, workersBody, "reliability.lost_after=4s")
	mon := monitor.NewRun(cfg.Name, "greedy", "")
	res, err := Run(context.Background(), cfg, Options{OutDir: out, SlaveCommand: []string{slaveBin}, Monitor: mon})
	if err != nil {
		t.Fatal(err)
	}
	ft := res.Finetune
	if p := ft.Plan; p == nil || p.Workers != 2 || p.SyncEvery == nil || *p.SyncEvery != 2 || p.BlockMomentum != 0 || p.BatchPerWorker != 20 {
		t.Fatalf("plan %+v; want 2 workers, sync every 2, no block momentum, 20 examples a mini-batch", ft.Plan)
	}
	if len(ft.History) != 4 || !(ft.History[3].Loss < ft.History[0].Loss) {
		t.Errorf("history %+v; want 4 epochs, the loss falling", ft.History)
	}
	if ft.TestAccuracy < 0.5 {
		t.Errorf("test accuracy %.3f; want the workers' network to have learned the classes", ft.TestAccuracy)
	}
	if len(ft.Recoveries) != 0 {
		t.Errorf("recoveries %+v in a run nobody disturbed", ft.Recoveries)
	}
	// 1080 examples less the validation split: 54 mini-batches an epoch.
	var rows []string
	batches := 0
	for _, w := range mon.Status().Finetuning.Workers {
		rows = append(rows, fmt.Sprintf("%s %s epoch %d/%d", w.Name, w.State, w.Epoch, w.Epochs))
		batches += w.Batches
		if w.Batches == 0 || w.Samples != 20*w.Batches || !(w.Loss > 0) || !(w.BusySeconds > 0) {
			t.Errorf("worker %+v; want mini-batches of 20 examples, a loss and busy seconds", w)
		}
	}
	if want := "[local-1-r0 done epoch 4/4 local-1-r1 done epoch 4/4]"; fmt.Sprint(rows) != want || batches != 4*54 {
		t.Errorf("the monitor's workers %v, %d mini-batches in all; want %s, %d", rows, batches, want, 4*54)
	}
}

// TestKilledFinetuneWorkerRecovers: a worker of data-parallel fine-tuning
// is SIGKILLed after the first epoch; the master declares it lost, a new
// process of its name resumes from its last checkpoint, and the run ends
// with the network of the run nobody killed, bit for bit: no mini-batch
// lost or trained twice, and the killed worker's last block step (block
// momentum) restored. result.json says what was redone. It runs alone:
// the greedy pre-training before it runs in this process, whose BLAS
// thread count other tests' runs set, and a thread count of its own
// would give other bits.
func TestKilledFinetuneWorkerRecovers(t *testing.T) {
	slave := []string{slaveBin, "--window-delay", "20ms", "--status-every", "50ms"}
	const block = "finetune.block_momentum=0.25"
	calm := t.TempDir()
	first, err := Run(context.Background(), loadConfig(t, workersBody, block), Options{OutDir: calm, SlaveCommand: slave})
	if err != nil {
		t.Fatal(err)
	}
	if p := first.Finetune.Plan; p == nil || p.BlockMomentum != 0.25 {
		t.Fatalf("plan %+v; want block momentum 0.25", p)
	}
	out := t.TempDir()
	var mu sync.Mutex
	var url string
	killed := 0
	log, logs := watchLogs(t, func(l map[string]any) {
		mu.Lock()
		defer mu.Unlock()
		switch l["@message"] {
		case "embedded NATS server started":
			url, _ = l["url"].(string)
		case "fine-tuning epoch done":
			if l["epoch"] != "1/4" || killed != 0 {
				return
			}
			if killed = slavePID(url, "local-1-r1"); killed != 0 {
				syscall.Kill(killed, syscall.SIGKILL)
			}
		}
	})
	res, err := Run(context.Background(), loadConfig(t, workersBody, block), Options{OutDir: out, SlaveCommand: slave, Logger: log})
	if err != nil {
		t.Fatalf("%v\n%s", err, logs)
	}
	if killed == 0 {
		t.Fatalf("no worker was killed\n%s", logs)
	}
	recs := res.Finetune.Recoveries
	t.Logf("recoveries: %+v", recs)
	if len(recs) != 1 || recs[0].Lost != "local-1-r1" || recs[0].Replacement != "local-1-r1" || recs[0].Redone < 0 {
		t.Errorf("recoveries %+v; want local-1-r1 replaced once by a new process of its name\n%s", recs, logs)
	}
	want, err := readNPZ(filepath.Join(calm, WeightsFile))
	if err != nil {
		t.Fatal(err)
	}
	got, err := readNPZ(filepath.Join(out, WeightsFile))
	if err != nil {
		t.Fatal(err)
	}
	for name, w := range want {
		if !slices.Equal(got[name], w) {
			t.Errorf("weights.npz %s differs from the undisturbed run's: a mini-batch was lost or trained twice", name)
		}
	}
}
