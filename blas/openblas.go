//go:build !purego

package blas

/*
#cgo LDFLAGS: -lopenblas
void openblas_set_num_threads(int);
int openblas_get_num_threads(void);
*/
import "C"

import (
	"gonum.org/v1/netlib/blas/netlib"
)

const implName = "openblas"

var impl netlib.Implementation

// SetThreads sets how many threads OpenBLAS may use for one call; n < 1 means 1.
// It is process-wide: a worker sets it once, from its CPU budget.
func SetThreads(n int) {
	if n < 1 {
		n = 1
	}
	C.openblas_set_num_threads(C.int(n))
}

// Threads reports how many threads OpenBLAS uses.
func Threads() int { return int(C.openblas_get_num_threads()) }
