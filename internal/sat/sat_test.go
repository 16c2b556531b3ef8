package sat

import (
	"math"
	"testing"
)

func TestAddMul(t *testing.T) {
	for _, tc := range []struct{ a, b, add, mul int64 }{
		{0, 0, 0, 0},
		{3, 4, 7, 12},
		{math.MaxInt64, 0, math.MaxInt64, 0},
		{math.MaxInt64, 1, math.MaxInt64, math.MaxInt64},
		{math.MaxInt64 / 2, math.MaxInt64 / 2, math.MaxInt64 - 1, math.MaxInt64},
		{1 << 31, 1 << 31, 1 << 32, 1 << 62},
		{1 << 32, 1 << 31, 1<<32 + 1<<31, math.MaxInt64},
		{1 << 32, 1 << 32, 1<<32 + 1<<32, math.MaxInt64},
	} {
		if got := Add(tc.a, tc.b); got != tc.add {
			t.Errorf("Add(%d, %d) = %d; want %d", tc.a, tc.b, got, tc.add)
		}
		if got := Mul(tc.a, tc.b); got != tc.mul {
			t.Errorf("Mul(%d, %d) = %d; want %d", tc.a, tc.b, got, tc.mul)
		}
	}
}
