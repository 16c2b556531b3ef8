package pipeline

import (
	"fmt"
	"math"
	"slices"

	"github.com/pipedbn/pipedbn/internal/narrow"
	"github.com/pipedbn/pipedbn/internal/sat"
	"github.com/pipedbn/pipedbn/rbm"
)

// Precision is what the values of a window are exact in: what a stage
// rounds its middle result of probabilities to before it hands it on
// (pretrain.middle_precision), so that the wire can carry it narrower and
// lose nothing. Every transport, and Pipelined, trains on the rounded
// values: a run over NATS stays bit-identical to one in memory.
type Precision int

const (
	// Float32 rounds nothing: the data windows, and the default.
	Float32 Precision = iota
	// Float16 rounds to IEEE 754 binary16 (11 significant bits).
	Float16
	// Uint8 rounds to multiples of 1/255 in [0, 1], the nearest.
	Uint8
	// Binary: values that are 0 or 1, the sampled hidden states of
	// pretrain.middle: samples, whatever the precision asked. Not a
	// config value.
	Binary
)

var precisionNames = []string{Float32: "float32", Float16: "float16", Uint8: "uint8", Binary: "binary"}

// configPrecisions are the values of pretrain.middle_precision.
var configPrecisions = [...]Precision{Float32, Float16, Uint8}

// String returns the config spelling: float32, float16 or uint8 (binary for
// samples).
func (p Precision) String() string {
	if p >= 0 && int(p) < len(precisionNames) {
		return precisionNames[p]
	}
	return fmt.Sprintf("Precision(%d)", int(p))
}

// MarshalText returns the config spelling, so that JSON spells a precision
// as YAML does.
func (p Precision) MarshalText() ([]byte, error) { return []byte(p.String()), nil }

// UnmarshalText reads the config spelling: float32, float16 or uint8.
func (p *Precision) UnmarshalText(b []byte) error {
	i := slices.IndexFunc(configPrecisions[:], func(q Precision) bool { return q.String() == string(b) })
	if i < 0 {
		return fmt.Errorf("pipeline: unknown precision %q (want float32, float16 or uint8)", b)
	}
	*p = configPrecisions[i]
	return nil
}

// Round rounds every value of x to the nearest of p's, in place: nothing
// for Float32 and Binary.
func (p Precision) Round(x []float32) {
	switch p {
	case Float16:
		narrow.RoundFloat16(x)
	case Uint8:
		narrow.RoundUint8(x)
	}
}

// Bytes returns the bytes n values take on the wire at p: 4, 2 or 1 a
// value, or one bit (Binary), the last byte padded.
func (p Precision) Bytes(n int64) int64 {
	n = max(n, 0)
	switch p {
	case Float16:
		return sat.Mul(2, n)
	case Uint8:
		return n
	case Binary:
		return n/8 + min(n%8, 1)
	}
	return sat.Mul(4, n)
}

// ExactPrecision returns the narrowest precision every value of x is exact
// in: Binary if each is 0 or 1, Uint8 if each is a multiple of 1/255 in
// [0, 1] as the data package scales a pixel, Float16, or else Float32. Data
// windows travel at it and lose nothing.
func ExactPrecision(x []float32) Precision {
	isHalf := func(v float32) bool {
		return math.Float32bits(narrow.FromFloat16(narrow.Float16(v))) == math.Float32bits(v)
	}
	binary, bytes := true, true
	for i, v := range x {
		b := math.Float32bits(v)
		binary = binary && (b == 0 || b == 0x3f800000)
		if bytes && math.Float32bits(narrow.FromUint8(narrow.Uint8(v))) != b {
			// The values before were bytes: are they halves too?
			bytes = false
			if slices.ContainsFunc(x[:i], func(v float32) bool { return !isHalf(v) }) {
				return Float32
			}
		}
		if !bytes && !isHalf(v) {
			return Float32
		}
	}
	switch {
	case binary:
		return Binary
	case bytes:
		return Uint8
	}
	return Float16
}

// WireBytes returns the bytes a window of rows rows of width values at p
// takes on the wire, with its bias vector B_i in float32 when bias is set:
// what the planner prices a link by. In memory a window is float32
// (WindowBytes).
func WireBytes(rows, width int, bias bool, p Precision) int64 {
	b := p.Bytes(sat.Mul(int64(max(rows, 0)), int64(max(width, 0))))
	if bias {
		b = sat.Add(b, sat.Mul(4, int64(max(width, 0))))
	}
	return b
}

// OutPrecision is the precision of the stage's middle result on the wire:
// samples are 0 or 1 and need no rounding.
func (c StageConfig) OutPrecision() Precision {
	if c.Middle == rbm.Samples {
		return Binary
	}
	return c.MiddlePrecision
}
