package blas

import "testing"

func TestGemmSmall(t *testing.T) {
	// A 2x3, B 3x2.
	a := []float32{1, 2, 3, 4, 5, 6}
	b := []float32{7, 8, 9, 10, 11, 12}
	c := []float32{1, 1, 1, 1}
	Gemm(false, false, 2, 2, 3, 1, a, 3, b, 2, 2, c, 2)
	want := []float32{58 + 2, 64 + 2, 139 + 2, 154 + 2}
	for i := range want {
		if c[i] != want[i] {
			t.Fatalf("Gemm = %v; want %v", c, want)
		}
	}
	// Aᵀ (3x2 stored as 2x3) times A (2x3): 3x3.
	d := make([]float32, 9)
	Gemm(true, false, 3, 3, 2, 1, a, 3, a, 3, 0, d, 3)
	wantD := []float32{17, 22, 27, 22, 29, 36, 27, 36, 45}
	for i := range wantD {
		if d[i] != wantD[i] {
			t.Fatalf("GemmTN = %v; want %v", d, wantD)
		}
	}
}
