package pipeline

import (
	"fmt"
	"slices"

	"github.com/pipedbn/pipedbn/internal/narrow"
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

// outPrecision is the precision of the stage's middle result: samples are
// 0 or 1 and need no rounding.
func (c StageConfig) outPrecision() Precision {
	if c.Middle == rbm.Samples {
		return Binary
	}
	return c.MiddlePrecision
}
