package finetune

import (
	"runtime"
	"testing"

	"github.com/pipedbn/pipedbn/blas"
)

// sinkLoss keeps the benchmarked steps' results alive.
var sinkLoss float64

// singleThread runs b's loop on one OpenBLAS thread, as a worker per core
// would, and restores the previous setting afterwards: the step and its
// GEMM bound are compared on one core.
func singleThread(b *testing.B) {
	prev := blas.Threads()
	blas.SetThreads(1)
	b.Cleanup(func() { blas.SetThreads(prev) })
}

// cpuClock reads the CPU time of the benchmark's OS thread, which runs the
// step and, on one BLAS thread, its GEMMs. On a box shared with other work
// the wall clock also counts the time the thread waits for a core; the
// thread's CPU time does not, so TrainStep and GEMMStep compare on it even
// when their rounds see different loads.
type cpuClock struct {
	start int64
	ok    bool
}

// startCPU locks b's goroutine to its OS thread until b ends and starts
// the clock.
func startCPU(b *testing.B) cpuClock {
	runtime.LockOSThread()
	b.Cleanup(runtime.UnlockOSThread)
	start, ok := threadCPU()
	return cpuClock{start, ok}
}

// report adds cpu-ns/op, the thread's CPU time per step, where it can be
// read.
func (c cpuClock) report(b *testing.B) {
	end, ok := threadCPU()
	if c.ok && ok && b.N > 0 {
		b.ReportMetric(float64(end-c.start)/float64(b.N), "cpu-ns/op")
	}
}

// benchNet returns a network of the given sizes and a trainer for batch
// rows with random inputs and cycling labels in its buffers.
func benchNet(sizes []int, classes, batch int) (*Network, *trainer) {
	n := Random(sizes, classes, 1)
	tr := newTrainer(n, batch)
	copy(tr.x, randomInputs(1, batch, sizes[0]))
	for i := range tr.labels {
		tr.labels[i] = uint8(i % classes)
	}
	return n, tr
}

// reportStep adds samples/s and GFLOP/s. The FLOPs are the GEMMs': 2 per
// multiply-add of the forward pass, the weight gradients and the deltas
// passed down to every hidden layer (not to the input), so that TrainStep
// and GEMMStep of one shape compare directly.
func reportStep(b *testing.B, sizes []int, classes, batch int) {
	var macs int // multiply-adds per example
	widths := append(append([]int(nil), sizes...), classes)
	for i := 0; i+1 < len(widths); i++ {
		w := widths[i] * widths[i+1]
		macs += 2 * w // forward and weight gradient
		if i > 0 {
			macs += w // delta passed down to layer i
		}
	}
	s := b.Elapsed().Seconds()
	samples := float64(b.N * batch)
	b.ReportMetric(samples/s, "samples/s")
	b.ReportMetric(2*float64(macs)*samples/s/1e9, "GFLOP/s")
}

// benchStep times one SGD step (forward, back-propagation, update) of a
// network with the given layer sizes on random inputs, on one BLAS thread.
func benchStep(b *testing.B, sizes []int, classes, batch int) {
	singleThread(b)
	_, tr := benchNet(sizes, classes, batch)
	b.ReportAllocs()
	b.ResetTimer()
	cpu := startCPU(b)
	for b.Loop() {
		// A small learning rate keeps the weights sane over many steps.
		loss, _, ok := tr.step(batch, 1e-4, 0.9, 0)
		if !ok {
			b.Fatal("diverged")
		}
		sinkLoss += loss
	}
	cpu.report(b)
	reportStep(b, sizes, classes, batch)
}

// benchGEMMStep times the GEMMs of one SGD step alone, on the same buffers
// and shapes, with the same transposes, alpha and beta as trainer.step: for
// every layer the forward product, the weight gradient into the momentum
// buffer, and the deltas passed down to every hidden layer. It is the bound
// a step can approach; the step's element-wise work (sigmoid, softmax,
// derivative, bias gradient, update) is what separates the two.
func benchGEMMStep(b *testing.B, sizes []int, classes, batch int) {
	singleThread(b)
	n, tr := benchNet(sizes, classes, batch)
	rows := batch
	alpha := float32(-1e-4) / float32(rows)
	b.ResetTimer()
	cpu := startCPU(b)
	for b.Loop() {
		in, inDim := tr.x, n.Inputs()
		for i := range n.Hidden {
			l := &n.Hidden[i]
			blas.Gemm(false, false, rows, l.Out, l.In, 1, in, inDim, l.W, l.Out, 0, tr.acts.hidden[i], l.Out)
			in, inDim = tr.acts.hidden[i], l.Out
		}
		blas.Gemm(false, false, rows, n.Out.Out, n.Out.In, 1, in, inDim, n.Out.W, n.Out.Out, 0, tr.acts.logits, n.Out.Out)
		delta := tr.acts.logits
		for i := len(n.Hidden); i >= 0; i-- {
			l := n.layer(i)
			in := tr.x
			if i > 0 {
				in = tr.acts.hidden[i-1]
			}
			blas.Gemm(true, false, l.In, l.Out, rows, alpha, in, l.In, delta, l.Out, 1, tr.velW[i], l.Out)
			if i == 0 {
				break
			}
			blas.Gemm(false, true, rows, l.In, l.Out, 1, delta, l.Out, l.W, l.Out, 0, tr.deltas[i-1], l.In)
			delta = tr.deltas[i-1]
		}
	}
	cpu.report(b)
	sinkLoss += float64(tr.velW[0][0])
	reportStep(b, sizes, classes, batch)
}

// The quickstart's network (784-500-500-2000, 10 classes) at the configured
// batch (finetune.batch_size, 128) and at twice it.

func BenchmarkTrainStep_784_500_500_2000(b *testing.B) {
	benchStep(b, []int{784, 500, 500, 2000}, 10, 128)
}

func BenchmarkGEMMStep_784_500_500_2000(b *testing.B) {
	benchGEMMStep(b, []int{784, 500, 500, 2000}, 10, 128)
}

func BenchmarkTrainStep_784_500_500_2000_Batch256(b *testing.B) {
	benchStep(b, []int{784, 500, 500, 2000}, 10, 256)
}

func BenchmarkGEMMStep_784_500_500_2000_Batch256(b *testing.B) {
	benchGEMMStep(b, []int{784, 500, 500, 2000}, 10, 256)
}

func BenchmarkTrainStep_64_32(b *testing.B) { benchStep(b, []int{64, 32}, 4, 32) }
func BenchmarkGEMMStep_64_32(b *testing.B)  { benchGEMMStep(b, []int{64, 32}, 4, 32) }
