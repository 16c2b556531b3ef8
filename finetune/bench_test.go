package finetune

import "testing"

// sinkLoss keeps the benchmarked steps' results alive.
var sinkLoss float64

// benchStep times one SGD step (forward, back-propagation, update) of a
// network with the given layer sizes on random inputs, reporting samples/s
// and GFLOP/s. The FLOPs are the GEMMs': 2 per multiply-add of the forward
// pass, the weight gradients and the deltas passed down to every hidden
// layer (not to the input).
func benchStep(b *testing.B, sizes []int, classes, batch int) {
	n := Random(sizes, classes, 1)
	tr := newTrainer(n, batch)
	copy(tr.x, randomInputs(1, batch, sizes[0]))
	for i := range tr.labels {
		tr.labels[i] = uint8(i % classes)
	}
	var macs int // multiply-adds per example
	widths := append(append([]int(nil), sizes...), classes)
	for i := 0; i+1 < len(widths); i++ {
		w := widths[i] * widths[i+1]
		macs += 2 * w // forward and weight gradient
		if i > 0 {
			macs += w // delta passed down to layer i
		}
	}
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		// A small learning rate keeps the weights sane over many steps.
		loss, _, ok := tr.step(batch, 1e-4, 0.9, 0)
		if !ok {
			b.Fatal("diverged")
		}
		sinkLoss += loss
	}
	s := b.Elapsed().Seconds()
	samples := float64(b.N * batch)
	b.ReportMetric(samples/s, "samples/s")
	b.ReportMetric(2*float64(macs)*samples/s/1e9, "GFLOP/s")
}

func BenchmarkTrainStep_784_500_500_2000(b *testing.B) {
	benchStep(b, []int{784, 500, 500, 2000}, 10, 128)
}

func BenchmarkTrainStep_784_500_500_2000_Batch256(b *testing.B) {
	benchStep(b, []int{784, 500, 500, 2000}, 10, 256)
}

func BenchmarkTrainStep_64_32(b *testing.B) { benchStep(b, []int{64, 32}, 4, 32) }
