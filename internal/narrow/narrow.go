// Package narrow rounds float32 values to the narrower formats a window of
// middle results may travel in, and reads them back: IEEE 754 binary16
// (float16), 8-bit fractions of [0, 1] (uint8, q/255) and single bits. It is
// the one definition that the stage which rounds its middle result
// (pipeline) and the codec which encodes it (messages) share, so that a
// value the stage rounded travels through the wire exactly, and a run over
// NATS trains on the same values as one in memory.
package narrow

import "math"

// Float16 returns the binary16 value nearest x, ties to even, as its bits:
// values beyond the largest finite binary16 (65504) become infinities,
// those below the smallest subnormal (2^-24) zeros of x's sign, and a NaN
// stays a NaN with the top 10 bits of its payload (one set, where all
// are zero).
func Float16(x float32) uint16 {
	b := math.Float32bits(x)
	if a := b & 0x7fffffff; a-minNormal16 < 0x47800000-minNormal16 {
		// A normal binary16, 2^-14 <= |x| < 2^16: round the 13 bits
		// dropped to nearest, ties to even; a carry into the exponent is
		// the right result, up to infinity.
		return uint16(b>>16)&0x8000 | uint16((a+0xfff+(a>>13)&1-rebias16)>>13)
	}
	return float16Rare(b)
}

const (
	// minNormal16 is the float32 bits of 2^-14, binary16's least normal.
	minNormal16 = (127 - 14) << 23
	// rebias16 moves a float32 exponent to binary16's, in float32 bits.
	rebias16 = (127 - 15) << 23
)

// float16Rare is Float16 off its fast path: infinities and NaNs, values
// beyond binary16's range and below its normal numbers.
func float16Rare(b uint32) uint16 {
	sign := uint16(b>>16) & 0x8000
	exp := int32(b>>23) & 0xff
	mant := b & 0x7fffff
	switch {
	case exp == 0xff && mant != 0:
		// The payload's top bits, and a NaN still where they are zeros.
		m := uint16(mant >> 13)
		if m == 0 {
			m = 0x200
		}
		return sign | 0x7c00 | m
	case exp > 127+15: // an infinity, or beyond binary16's exponents
		return sign | 0x7c00
	case exp >= 127-25: // a binary16 subnormal, or the rounding up to one
		m := mant | 0x800000 // the implicit bit
		shift := uint32(127 - 14 + 13 - exp)
		h := m >> shift
		rest, half := m&(1<<shift-1), uint32(1)<<(shift-1)
		if rest > half || (rest == half && h&1 == 1) {
			h++
		}
		return sign | uint16(h)
	}
	return sign // too small: a zero
}

// FromFloat16 returns the float32 of binary16 bits h: exact, since every
// binary16 value is a float32 value.
func FromFloat16(h uint16) float32 {
	if e := h & 0x7c00; e != 0 && e != 0x7c00 { // normal
		return math.Float32frombits(uint32(h&0x8000)<<16 | (uint32(h&0x7fff)<<13 + rebias16))
	}
	return fromFloat16Rare(h)
}

// fromFloat16Rare is FromFloat16 of zeros, subnormals, infinities and NaNs.
func fromFloat16Rare(h uint16) float32 {
	sign := uint32(h&0x8000) << 16
	mant := uint32(h & 0x3ff)
	switch {
	case h&0x7c00 != 0: // infinity or NaN
		return math.Float32frombits(sign | 0x7f800000 | mant<<13)
	case mant == 0:
		return math.Float32frombits(sign)
	}
	// Subnormal: a normal float32.
	e := uint32(127 - 15 + 1)
	for mant&0x400 == 0 {
		mant <<= 1
		e--
	}
	return math.Float32frombits(sign | e<<23 | (mant&0x3ff)<<13)
}

// Uint8 returns the 8-bit fraction nearest x in [0, 1]: round(x·255),
// halves up, with x clamped to [0, 1] and a NaN taken as 0.
func Uint8(x float32) uint8 {
	switch {
	case !(x > 0): // NaN too
		return 0
	case x >= 1:
		return 255
	}
	return uint8(x*255 + 0.5)
}

// FromUint8 returns the value of the 8-bit fraction q: q/255, the float32
// nearest it, as the data package scales a pixel.
func FromUint8(q uint8) float32 { return uint8Values[q] }

var uint8Values = func() (t [256]float32) {
	for q := range t {
		t[q] = float32(q) / 255
	}
	return t
}()

// Bit returns the bit nearest x: 1 for x >= 0.5, else 0 (NaN too).
func Bit(x float32) byte {
	if x >= 0.5 {
		return 1
	}
	return 0
}

// RoundFloat16 rounds every value of x to the binary16 value nearest it, in
// place: what x reads after a trip through Float16 and FromFloat16.
func RoundFloat16(x []float32) {
	for i, v := range x {
		b := math.Float32bits(v)
		if a := b & 0x7fffffff; a-minNormal16 < 0x47800000-minNormal16 {
			// Float16's fast path, left in float32 bits.
			r := (a + 0xfff + (a>>13)&1) &^ 0x1fff
			if r >= 0x47800000 {
				r = 0x7f800000 // rounded up to 2^16: binary16's infinity
			}
			x[i] = math.Float32frombits(b&0x80000000 | r)
			continue
		}
		x[i] = FromFloat16(float16Rare(b))
	}
}

// RoundUint8 rounds every value of x to the 8-bit fraction nearest it, in
// place: what x reads after a trip through Uint8 and FromUint8.
func RoundUint8(x []float32) {
	for i, v := range x {
		x[i] = uint8Values[Uint8(v)]
	}
}

// PutFloat16s stores the binary16 bits nearest each value of src in dst,
// little-endian, 2 bytes a value: Float16 with its fast path inlined.
func PutFloat16s(dst []byte, src []float32) {
	dst = dst[:2*len(src)]
	for i, v := range src {
		b := math.Float32bits(v)
		var h uint16
		if a := b & 0x7fffffff; a-minNormal16 < 0x47800000-minNormal16 {
			h = uint16(b>>16)&0x8000 | uint16((a+0xfff+(a>>13)&1-rebias16)>>13)
		} else {
			h = float16Rare(b)
		}
		dst[2*i], dst[2*i+1] = byte(h), byte(h>>8)
	}
}

// Float16s loads dst from the little-endian binary16 bits in src, like
// PutFloat16s in reverse: FromFloat16 with its fast path inlined.
func Float16s(dst []float32, src []byte) {
	src = src[:2*len(dst)]
	for i := range dst {
		h := uint16(src[2*i]) | uint16(src[2*i+1])<<8
		if e := h & 0x7c00; e != 0 && e != 0x7c00 {
			dst[i] = math.Float32frombits(uint32(h&0x8000)<<16 | (uint32(h&0x7fff)<<13 + rebias16))
			continue
		}
		dst[i] = fromFloat16Rare(h)
	}
}

// PutUint8s stores the 8-bit fraction nearest each value of src in dst.
func PutUint8s(dst []byte, src []float32) {
	dst = dst[:len(src)]
	for i, v := range src {
		dst[i] = Uint8(v)
	}
}

// Uint8s loads dst from the 8-bit fractions in src.
func Uint8s(dst []float32, src []byte) {
	src = src[:len(dst)]
	for i, q := range src {
		dst[i] = uint8Values[q]
	}
}
