package dbn_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	"github.com/pipedbn/pipedbn/config"
	"github.com/pipedbn/pipedbn/dbn"
)

// A greedy run of a small DBN on synthetic data, without fine-tuning.
func ExampleRun() {
	dir, err := os.MkdirTemp("", "dbn-example")
	if err != nil {
		panic(err)
	}
	defer os.RemoveAll(dir)
	path := filepath.Join(dir, "tiny.yaml")
	yaml := "data: {source: synthetic, train_limit: 100, test_limit: 20}\n" +
		"dbn: {layers: [16, 8, 4]}\n" +
		"pretrain: {mode: greedy, epochs: 2, batch_size: 10}\n" +
		"finetune: {epochs: 0}\n"
	if err := os.WriteFile(path, []byte(yaml), 0o644); err != nil {
		panic(err)
	}
	cfg, err := config.Load(path, nil)
	if err != nil {
		fmt.Println(err)
		return
	}
	res, err := dbn.Run(context.Background(), cfg, dbn.Options{OutDir: filepath.Join(dir, "out")})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(res.Name, res.Mode, res.Layers, res.Weights)
	for _, r := range res.RBMs {
		fmt.Printf("RBM %d: %dx%d on %s, %d mini-batches, %d epochs\n", r.Index, r.Visible, r.Hidden, r.Worker, r.Batches, len(r.ReconError))
	}
	// Output:
	// tiny greedy [16 8 4] weights.npz
	// RBM 1: 16x8 on master, 20 mini-batches, 2 epochs
	// RBM 2: 8x4 on master, 20 mini-batches, 2 epochs
}
