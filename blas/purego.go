//go:build purego

package blas

import (
	"gonum.org/v1/gonum/blas/gonum"
)

const implName = "gonum"

var impl gonum.Implementation

// SetThreads is a no-op in the pure-Go build: gonum's BLAS parallelises with
// goroutines, bounded by GOMAXPROCS.
func SetThreads(n int) {}

// Threads reports 1 in the pure-Go build.
func Threads() int { return 1 }

// Core reports "go" in the pure-Go build: gonum's kernels, the same on
// every CPU.
func Core() string { return "go" }

// CoreNote reports "" in the pure-Go build.
func CoreNote() string { return "" }
