package dbn

import (
	"context"
	"path/filepath"
	"slices"
	"syscall"
	"testing"
)

// TestKilledStageGroupRecovers: a stage group's process (RBM_1 and RBM_2 of
// plan 1-2,3) is SIGKILLed in the middle of pre-training; the master
// declares both its slaves lost, restarts the process once, both resume
// from their checkpoints, and the run ends with every mini-batch trained
// exactly once: the same weights, bit for bit, as the run nobody killed.
func TestKilledStageGroupRecovers(t *testing.T) {
	t.Parallel()
	const body = `
name: group
data: {source: synthetic, train_limit: 240, test_limit: 20}
dbn: {layers: [16, 8, 6, 4]}
pretrain: {epochs: 6, batch_size: 20, k_batches: 2}
reliability: {checkpoint_every: 2, lost_after: 1s}
cluster: {plan: "1-2,3"}
finetune: {epochs: 0}
`
	slave := []string{slaveBin, "--window-delay", "20ms", "--status-every", "50ms"}
	calm := t.TempDir()
	if _, err := Run(context.Background(), loadConfig(t, body), Options{OutDir: calm, SlaveCommand: slave}); err != nil {
		t.Fatal(err)
	}

	out := t.TempDir()
	sig := signalAfterEpoch(t, "local-1,local-2", syscall.SIGKILL)
	res, err := Run(context.Background(), loadConfig(t, body), Options{OutDir: out, SlaveCommand: slave, Logger: sig.log})
	if err != nil {
		t.Fatalf("%v\n%s", err, sig.logs)
	}
	if sig.pid() == 0 {
		t.Fatal("no stage group was killed")
	}
	var lost []string
	for _, r := range res.Recoveries {
		lost = append(lost, r.Lost)
		if r.Replacement != r.Lost {
			t.Errorf("recovery %+v: want a new process of the lost slave's name", r)
		}
	}
	slices.Sort(lost)
	if !slices.Equal(lost, []string{"local-1", "local-2"}) {
		t.Errorf("recoveries of %v; want local-1 and local-2, once each\n%s", lost, sig.logs)
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
	for _, r := range res.RBMs {
		if r.Batches != 6*12 {
			t.Errorf("rbm %d trained %d mini-batches; want %d", r.Index, r.Batches, 6*12)
		}
	}
}
