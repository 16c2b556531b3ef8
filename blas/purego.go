//go:build purego

package blas

import (
	gblas "gonum.org/v1/gonum/blas"
	"gonum.org/v1/gonum/blas/gonum"
)

const implName = "gonum"

var impl gonum.Implementation

func trans(t bool) gblas.Transpose {
	if t {
		return gblas.Trans
	}
	return gblas.NoTrans
}

// SetThreads is a no-op in the pure-Go build: gonum's BLAS parallelises with
// goroutines, bounded by GOMAXPROCS.
func SetThreads(n int) {}

// Threads reports 1 in the pure-Go build.
func Threads() int { return 1 }
