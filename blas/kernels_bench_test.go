package blas

import (
	"math/rand/v2"
	"testing"
)

var benchSink float64

// benchKernel reports elements/s of a kernel over a rows x cols matrix.
func benchKernel(b *testing.B, rows, cols int, f func(x, y []float32)) {
	rng := rand.New(rand.NewPCG(1, 2))
	x := randMat(rng, rows*cols, 2)
	y := randMat(rng, rows*cols, 1)
	orig := clone(x)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		copy(x, orig)
		f(x, y)
	}
	b.ReportMetric(float64(b.N)*float64(rows*cols)/b.Elapsed().Seconds()/1e6, "Melem/s")
}

func benchSigmoidBias(b *testing.B, rows, cols int) {
	bias, sum := make([]float32, cols), make([]float32, cols)
	benchKernel(b, rows, cols, func(x, _ []float32) { SigmoidBias(x, rows, cols, bias, sum) })
}

func benchSigmoidBiasSample(b *testing.B, rows, cols int) {
	bias, sum := make([]float32, cols), make([]float32, cols)
	g := NewRNG(1)
	benchKernel(b, rows, cols, func(x, s []float32) { SigmoidBiasSample(x, s, rows, cols, bias, sum, g) })
}

func benchReconstruct(b *testing.B, rows, cols int) {
	bias, diff := make([]float32, cols), make([]float32, cols)
	benchKernel(b, rows, cols, func(x, v0 []float32) { benchSink += Reconstruct(x, v0, rows, cols, bias, diff, true) })
}

func benchMomentumStep(b *testing.B, rows, cols int) {
	benchKernel(b, rows, cols, func(w, vel []float32) {
		if !MomentumStep(w, vel, 1e-6, 0.9) {
			b.Fatal("not finite")
		}
	})
}

func benchSigmoidDelta(b *testing.B, rows, cols int) {
	sum := make([]float32, cols)
	benchKernel(b, rows, cols, func(d, h []float32) { SigmoidDelta(d, h, rows, cols, sum) })
}

func BenchmarkSigmoidBias_256x500(b *testing.B)       { benchSigmoidBias(b, 256, 500) }
func BenchmarkSigmoidBiasSample_256x500(b *testing.B) { benchSigmoidBiasSample(b, 256, 500) }
func BenchmarkReconstruct_256x784(b *testing.B)       { benchReconstruct(b, 256, 784) }
func BenchmarkMomentumStep_784x500(b *testing.B)      { benchMomentumStep(b, 784, 500) }
func BenchmarkSigmoidDelta_128x500(b *testing.B)      { benchSigmoidDelta(b, 128, 500) }
