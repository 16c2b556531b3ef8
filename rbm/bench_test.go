package rbm

import (
	"math/rand/v2"
	"testing"

	"github.com/pipedbn/pipedbn/blas"
)

// sink keeps the benchmarks' results alive.
var sink float64

const benchBatches = 4 // distinct mini-batches cycled through, as in an epoch

// benchData returns benchBatches seeded binary mini-batches of batch x visible.
func benchData(visible, batch int) [][]float32 {
	rng := rand.New(rand.NewPCG(1, 2))
	data := make([][]float32, benchBatches)
	for i := range data {
		data[i] = make([]float32, batch*visible)
		for j := range data[i] {
			if rng.Float32() < 0.3 {
				data[i][j] = 1
			}
		}
	}
	return data
}

// singleThread runs b's loop on one OpenBLAS thread, as a pipeline slave per
// core would, and restores the previous setting afterwards.
func singleThread(b *testing.B) {
	prev := blas.Threads()
	blas.SetThreads(1)
	b.Cleanup(func() { blas.SetThreads(prev) })
}

// report adds samples/s and GFLOP/s, counting only the 5 GEMMs of a CD-1
// step (2·batch·visible·hidden flops each), so CD1 and GEMM5 compare directly.
func report(b *testing.B, visible, hidden, batch int) {
	s := b.Elapsed().Seconds()
	b.ReportMetric(float64(b.N*batch)/s, "samples/s")
	b.ReportMetric(float64(b.N)*5*2*float64(batch*visible*hidden)/s/1e9, "GFLOP/s")
}

// benchCD1 measures full CD-1 steps (Bernoulli, with the middle result).
func benchCD1(b *testing.B, visible, hidden, batch int) {
	singleThread(b)
	data := benchData(visible, batch)
	r := New(visible, hidden, Bernoulli, 1)
	t := NewTrainer(r, batch, 1, 2)
	middle := make([]float32, batch*hidden)
	p := Params{LearningRate: 0.015, Momentum: 0.9, WeightDecay: 1e-4}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		sse, err := t.Step(data[i%benchBatches], batch, p, middle, Probabilities)
		if err != nil {
			b.Fatal(err)
		}
		sink += sse
	}
	report(b, visible, hidden, batch)
}

// benchGEMM5 measures the five GEMMs of a CD-1 step alone, on the same
// shapes and with the same transposes, alpha and beta: the bound a CD-1 step
// can approach.
func benchGEMM5(b *testing.B, visible, hidden, batch int) {
	singleThread(b)
	data := benchData(visible, batch)
	r := New(visible, hidden, Bernoulli, 1)
	V, H, n := visible, hidden, batch
	rng := rand.New(rand.NewPCG(3, 4))
	fill := func(k int) []float32 {
		x := make([]float32, k)
		for i := range x {
			x[i] = rng.Float32()
		}
		return x
	}
	h0, hs, v1, h1 := fill(n*H), fill(n*H), fill(n*V), fill(n*H)
	vel := make([]float32, V*H)
	scale := float32(0.015) / float32(n)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		v0 := data[i%benchBatches]
		blas.Gemm(false, false, n, H, V, 1, v0, V, r.W, H, 0, h0, H)
		blas.Gemm(false, true, n, V, H, 1, hs, H, r.W, H, 0, v1, V)
		blas.Gemm(false, false, n, H, V, 1, v1, V, r.W, H, 0, h1, H)
		blas.Gemm(true, false, V, H, n, scale, v0, V, h0, H, 0.9, vel, H)
		blas.Gemm(true, false, V, H, n, -scale, v1, V, h1, H, 1, vel, H)
	}
	sink += float64(vel[0])
	report(b, visible, hidden, batch)
}

func BenchmarkCD1_784x500(b *testing.B)     { benchCD1(b, 784, 500, 256) }
func BenchmarkCD1_1024x1024(b *testing.B)   { benchCD1(b, 1024, 1024, 256) }
func BenchmarkGEMM5_784x500(b *testing.B)   { benchGEMM5(b, 784, 500, 256) }
func BenchmarkGEMM5_1024x1024(b *testing.B) { benchGEMM5(b, 1024, 1024, 256) }
