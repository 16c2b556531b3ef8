package natsnet

import (
	"fmt"
	"testing"

	"github.com/pipedbn/pipedbn/messages"
	"github.com/pipedbn/pipedbn/pipeline"
	"github.com/pipedbn/pipedbn/pipeline/protocol"
	"github.com/pipedbn/pipedbn/rbm"
)

// BenchmarkCheckpoint measures what a slave spends on one checkpoint
// between two windows: the stage's snapshot and its encoding into the
// fragments it publishes. Compare with the training of C windows of K
// mini-batches (rbm's BenchmarkStep).
func BenchmarkCheckpoint(b *testing.B) {
	for _, sh := range [][2]int{{784, 500}, {500, 2000}} {
		b.Run(fmt.Sprintf("%dx%d", sh[0], sh[1]), func(b *testing.B) {
			cfg := pipeline.StageConfig{Index: 1, Visible: sh[0], Hidden: sh[1], Units: rbm.Bernoulli,
				Epochs: 1, BatchSize: 256, K: 10, CDK: 1, Seed: 1}
			st := pipeline.NewStage(cfg)
			b.SetBytes(int64(2 * 4 * sh[0] * sh[1]))
			b.ReportAllocs()
			for b.Loop() {
				c := protocol.CheckpointOf(protocol.Run{ID: "bench"}, cfg, st.Snapshot())
				if _, err := messages.EncodeParts(c, 8<<20, 1); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
