package dbn

import (
	"context"
	"path/filepath"
	"slices"
	"strings"
	"testing"
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
