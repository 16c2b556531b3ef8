//go:build !purego

package blas

import (
	"os"
	"testing"

	"golang.org/x/sys/cpu"
)

// TestCoreUsesTheCPUsVectors: on a CPU with AVX2 and FMA, OpenBLAS runs
// kernels that use them, even where it does not know the CPU (it would
// fall back to Prescott's SSE3 kernels, several times slower).
func TestCoreUsesTheCPUsVectors(t *testing.T) {
	if _, set := os.LookupEnv("OPENBLAS_CORETYPE"); set {
		t.Skip("OPENBLAS_CORETYPE is set: the user chose the kernels")
	}
	if !cpu.X86.HasAVX2 || !cpu.X86.HasFMA {
		t.Skip("this CPU has no AVX2 and FMA")
	}
	if got := Core(); got == genericCore {
		t.Errorf("Core() = %s, OpenBLAS's generic kernels, on a CPU with AVX2 and FMA", got)
	}
	t.Logf("kernels: %s; %s", Core(), CoreNote())
}
