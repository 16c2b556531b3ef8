// Package sat is arithmetic on non-negative sizes that saturates at
// math.MaxInt64 instead of wrapping: the memory estimates and the limits
// on messages multiply sizes a user or a sender chose, and a product past
// the largest int64 must stay the largest, to be refused, not become small.
package sat

import (
	"math"
	"math/bits"
)

// Add returns a + b for non-negative a and b, at most math.MaxInt64.
func Add(a, b int64) int64 {
	if s := a + b; s >= a {
		return s
	}
	return math.MaxInt64
}

// Mul returns a · b for non-negative a and b, at most math.MaxInt64.
func Mul(a, b int64) int64 {
	hi, lo := bits.Mul64(uint64(a), uint64(b))
	if hi != 0 || lo > math.MaxInt64 {
		return math.MaxInt64
	}
	return int64(lo)
}
