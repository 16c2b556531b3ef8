package data

import (
	"fmt"
	"math"
	"slices"
)

// Scale is how features are scaled before training (data.scale), fitted on
// the training set only.
type Scale int

const (
	// ScaleNone keeps the features as they are.
	ScaleNone Scale = iota
	// ScaleUnit maps each feature to [0, 1] by its range on the training
	// set: (x - min) / (max - min); a constant feature becomes 0.
	ScaleUnit
	// ScaleStandardize gives each feature mean 0 and standard deviation 1
	// on the training set: (x - mean) / sd; a constant feature becomes 0.
	ScaleStandardize
)

var scaleNames = []string{ScaleNone: "none", ScaleUnit: "unit", ScaleStandardize: "standardize"}

// String returns the config spelling: none, unit or standardize.
func (s Scale) String() string {
	if s >= 0 && int(s) < len(scaleNames) {
		return scaleNames[s]
	}
	return fmt.Sprintf("Scale(%d)", int(s))
}

// MarshalText returns the config spelling.
func (s Scale) MarshalText() ([]byte, error) { return []byte(s.String()), nil }

// UnmarshalText reads the config spelling.
func (s *Scale) UnmarshalText(b []byte) error {
	i := slices.Index(scaleNames, string(b))
	if i < 0 {
		return fmt.Errorf("data: unknown scale %q (want none, unit or standardize)", b)
	}
	*s = Scale(i)
	return nil
}

// Scaler is a fitted affine scaling of every feature,
// x' = (x - Offset[j]) * Factor[j], computed in float32 (as NumPy computes
// (x - offset) * factor on float32 arrays, so that NumPy reproduces it bit
// for bit).
type Scaler struct {
	Offset, Factor []float32
}

// FitScaler fits the scaling s on the training set train (in float64; the
// result is rounded to float32). It returns nil for ScaleNone.
func FitScaler(s Scale, train *Set) *Scaler {
	if s == ScaleNone {
		return nil
	}
	d := train.Dim
	sc := &Scaler{Offset: make([]float32, d), Factor: make([]float32, d)}
	switch s {
	case ScaleUnit:
		lo, hi := make([]float32, d), make([]float32, d)
		copy(lo, train.Row(0))
		copy(hi, train.Row(0))
		for i := 1; i < train.N; i++ {
			for j, x := range train.Row(i) {
				lo[j] = min(lo[j], x)
				hi[j] = max(hi[j], x)
			}
		}
		for j := range d {
			sc.Offset[j], sc.Factor[j] = lo[j], factor(float64(hi[j])-float64(lo[j]))
		}
	case ScaleStandardize:
		mean, sq := make([]float64, d), make([]float64, d)
		for i := range train.N {
			for j, x := range train.Row(i) {
				mean[j] += float64(x)
			}
		}
		for j := range mean {
			mean[j] /= float64(train.N)
		}
		for i := range train.N {
			for j, x := range train.Row(i) {
				dev := float64(x) - mean[j]
				sq[j] += dev * dev
			}
		}
		for j := range d {
			sc.Offset[j], sc.Factor[j] = float32(mean[j]), factor(math.Sqrt(sq[j]/float64(train.N)))
		}
	default:
		panic(fmt.Sprintf("data: FitScaler(%v)", s))
	}
	return sc
}

// factor is 1/spread, or 1 for a constant feature (spread below 1e-12 or
// whose inverse is not a finite float32).
func factor(spread float64) float32 {
	f := float32(1 / spread)
	if spread < 1e-12 || math.IsInf(float64(f), 0) {
		return 1
	}
	return f
}

// Apply scales every row of x (rows of len(Offset) values) in place. A nil
// Scaler changes nothing. It panics if len(x) is not a multiple of the
// features.
func (sc *Scaler) Apply(x []float32) {
	if sc == nil {
		return
	}
	d := len(sc.Offset)
	if len(sc.Factor) != d || d == 0 || len(x)%d != 0 {
		panic(fmt.Sprintf("data: Scaler of %d offsets and %d factors applied to %d values", d, len(sc.Factor), len(x)))
	}
	for lo := 0; lo < len(x); lo += d {
		row := x[lo : lo+d]
		for j, o := range sc.Offset {
			row[j] = (row[j] - o) * sc.Factor[j]
		}
	}
}

// Range returns the smallest and largest value of x, for checks.
func Range(x []float32) (lo, hi float32) {
	if len(x) == 0 {
		return 0, 0
	}
	lo, hi = x[0], x[0]
	for _, v := range x[1:] {
		lo, hi = min(lo, v), max(hi, v)
	}
	return lo, hi
}
