package dbn

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/pipedbn/pipedbn/internal/atomicfile"
)

// A run from pretrain.weights fine-tunes the RBMs of the run that wrote
// them as that run did, bit for bit, without pre-training; a file of other
// sizes is refused, naming the key.
func TestPretrainedWeightsSkipPretraining(t *testing.T) {
	t.Parallel()
	const body = `
name: from-weights
data: {source: synthetic, train_limit: 240, test_limit: 40}
dbn: {layers: [16, 8, 6]}
pretrain: {epochs: 2, batch_size: 20, k_batches: 2}
cluster: {transport: memory}
finetune: {epochs: 2, batch_size: 20, validation: 0}
`
	first := t.TempDir()
	res, err := Run(context.Background(), loadConfig(t, body), Options{OutDir: first})
	if err != nil {
		t.Fatal(err)
	}
	saved := filepath.Join(first, WeightsFile)
	second := t.TempDir()
	again, err := Run(context.Background(), loadConfig(t, body, "pretrain.weights="+saved), Options{OutDir: second})
	if err != nil {
		t.Fatal(err)
	}
	if again.PretrainedFrom != saved || again.PretrainSeconds != 0 || len(again.RBMs) != 2 || again.RBMs[0].Batches != 0 {
		t.Errorf("result: pretrained_from %q, pretrain_seconds %v, rbms %+v; want %q, 0, two rows and no batches trained",
			again.PretrainedFrom, again.PretrainSeconds, again.RBMs, saved)
	}
	var summary strings.Builder
	PrintSummary(&summary, again)
	if !strings.Contains(summary.String(), "read from "+saved+", not pre-trained") {
		t.Errorf("summary:\n%s\nwant it to say where the RBMs were read from", summary.String())
	}
	for i := range res.RBMs {
		if again.RBMs[i].FinalReconError != res.RBMs[i].FinalReconError {
			t.Errorf("rbm %d: final recon error %v; want the first run's %v", i+1, again.RBMs[i].FinalReconError, res.RBMs[i].FinalReconError)
		}
	}
	if again.Finetune.TestAccuracy != res.Finetune.TestAccuracy || again.Finetune.History[1].Loss != res.Finetune.History[1].Loss {
		t.Errorf("fine-tuned: accuracy %v, last loss %v; want the first run's %v, %v", again.Finetune.TestAccuracy,
			again.Finetune.History[1].Loss, res.Finetune.TestAccuracy, res.Finetune.History[1].Loss)
	}
	a, err := readNPZ(saved)
	if err != nil {
		t.Fatal(err)
	}
	b, err := readNPZ(filepath.Join(second, WeightsFile))
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"W1", "b2", "a1", "ft_W1", "ft_Wout"} {
		if !slices.Equal(a[name], b[name]) {
			t.Errorf("weights.npz %s differs from the first run's", name)
		}
	}

	_, err = Run(context.Background(), loadConfig(t, strings.Replace(body, "[16, 8, 6]", "[16, 8, 5]", 1), "pretrain.weights="+saved), Options{OutDir: t.TempDir()})
	if err == nil || !strings.Contains(err.Error(), "pretrain.weights") || !strings.Contains(err.Error(), "[16 8 6]") {
		t.Errorf("layers [16 8 5] from a [16 8 6] file: error %v; want one naming pretrain.weights and the file's layers", err)
	}
}

// A master interrupted while it fine-tunes leaves its finished
// pre-training behind: the same command fine-tunes that network again,
// pre-training nothing, and ends as the uninterrupted run did; once done,
// the command starts a new run.
func TestInterruptedFinetuningRestarts(t *testing.T) {
	t.Parallel()
	cfg := loadConfig(t, `
name: restart
data: {source: synthetic, train_limit: 240, test_limit: 40}
dbn: {layers: [16, 8, 6]}
pretrain: {epochs: 2, batch_size: 20, k_batches: 2}
finetune: {epochs: 2, batch_size: 20, validation: 0}
`)
	out := t.TempDir()
	opt := Options{OutDir: out, SlaveCommand: []string{slaveBin}}
	first, err := Run(context.Background(), cfg, opt)
	if err != nil {
		t.Fatal(err)
	}
	// What the folder held while the master fine-tuned: the run state
	// "pretrained" and result.json without fine-tuning.
	interrupted := *first
	interrupted.Finetune = nil
	if err := atomicfile.WriteJSON(filepath.Join(out, ResultFile), &interrupted); err != nil {
		t.Fatal(err)
	}
	state := filepath.Join(out, RunStateFile)
	b, _ := os.ReadFile(state)
	if err := os.WriteFile(state, bytes.Replace(b, []byte(`"done"`), []byte(`"pretrained"`), 1), 0o644); err != nil || !bytes.Contains(b, []byte(`"done"`)) {
		t.Fatalf("run state %s: %v; want it done after the run", b, err)
	}

	again, err := Run(context.Background(), cfg, opt)
	if err != nil {
		t.Fatal(err)
	}
	if again.FinetuneRestarts != 1 || again.PretrainSeconds != first.PretrainSeconds || again.RBMs[1].Batches != first.RBMs[1].Batches {
		t.Errorf("restarted: finetune_restarts %d, pretrain_seconds %v, RBM_2's batches %d; want 1 and the first run's %v, %d",
			again.FinetuneRestarts, again.PretrainSeconds, again.RBMs[1].Batches, first.PretrainSeconds, first.RBMs[1].Batches)
	}
	if again.Finetune == nil || again.Finetune.TestAccuracy != first.Finetune.TestAccuracy || again.Finetune.History[1].Loss != first.Finetune.History[1].Loss {
		t.Errorf("restarted fine-tuning %+v; want the uninterrupted run's %+v", again.Finetune, first.Finetune)
	}
	if b, _ := os.ReadFile(state); !bytes.Contains(b, []byte(`"done"`)) {
		t.Errorf("run state %s; want done", b)
	}

	fresh, err := Run(context.Background(), cfg, opt)
	if err != nil {
		t.Fatal(err)
	}
	if fresh.FinetuneRestarts != 0 || fresh.PretrainSeconds == first.PretrainSeconds {
		t.Errorf("after a finished run: finetune_restarts %d, pretrain_seconds %v; want a new run that pre-trains", fresh.FinetuneRestarts, fresh.PretrainSeconds)
	}
}
