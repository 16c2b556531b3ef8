package messages

import (
	"fmt"

	"github.com/pipedbn/pipedbn/internal/narrow"
)

// Encoding is how a window's values travel (Chunk.Encoding): the producer
// chooses it for values it rounded to it beforehand, so that encoding them
// loses nothing, and a receiver reads any of them back as float32. Its
// numbers are part of the wire format: append new encodings at the end,
// never reorder.
type Encoding uint8

// The encodings, with the bytes each takes per value.
const (
	// EncodingFloat32: raw float32 bits, 4 bytes a value (the data, and
	// what a stage sends unrounded).
	EncodingFloat32 Encoding = iota
	// EncodingFloat16: IEEE 754 binary16, 2 bytes a value.
	EncodingFloat16
	// EncodingUint8: fractions of [0, 1] as q/255, 1 byte a value.
	EncodingUint8
	// EncodingBits: 0 or 1, a bit a value, the first in the lowest bit of
	// the first byte; the last byte's unused bits are zeros. Sampled
	// hidden states travel so.
	EncodingBits
	encodingEnd
)

var encodingNames = [...]string{
	EncodingFloat32: "float32",
	EncodingFloat16: "float16",
	EncodingUint8:   "uint8",
	EncodingBits:    "bits",
}

// String returns the encoding's name, such as "float16", or "Encoding(N)"
// for an unknown one.
func (e Encoding) String() string {
	if e < encodingEnd {
		return encodingNames[e]
	}
	return fmt.Sprintf("Encoding(%d)", uint8(e))
}

// Bytes returns the bytes n values take in encoding e (no padding, no
// length prefix); 0 for an unknown encoding.
func (e Encoding) Bytes(n int) int64 {
	m := int64(max(n, 0))
	switch e {
	case EncodingFloat32:
		return 4 * m
	case EncodingFloat16:
		return 2 * m
	case EncodingUint8:
		return m
	case EncodingBits:
		return (m + 7) / 8
	}
	return 0
}

// maxNarrowValues bounds the values of an array a narrow encoding reads
// back: no more than a float32 message may hold, so that a short message
// cannot make its receiver allocate up to 32 times its length beyond what
// the longest float32 window would take.
const maxNarrowValues = DefaultMaxMessage / 4

// values codes a length-prefixed array of float32 values in encoding e:
// as f32s for EncodingFloat32, else as e's codes right after the prefix.
// Reading, the codes are decoded into a new float32 array (no copy beyond
// that conversion); an empty array reads back as nil.
func (c *coder) values(v *[]float32, e Encoding, field string) {
	if e >= encodingEnd {
		c.fail(field, "%v: %w", e, ErrInvalid)
		return
	}
	if e == EncodingFloat32 {
		c.f32s(v, field)
		return
	}
	if !c.reading {
		c.length(len(*v), field)
		at := len(c.b)
		c.b = grow(c.b, int(e.Bytes(len(*v))))
		putNarrow(c.b[at:], *v, e)
		return
	}
	var n uint32
	c.u32(&n, field)
	if c.err != nil || n == 0 {
		return
	}
	if n > maxNarrowValues {
		c.fail(field, "%d %v values, more than %d: %w", n, e, maxNarrowValues, ErrTooLarge)
		return
	}
	p := c.take(field, uint64(e.Bytes(int(n))))
	if p == nil {
		return
	}
	if e == EncodingBits && n%8 != 0 && p[len(p)-1]>>(n%8) != 0 {
		c.fail(field, "unused bits %#x of the last byte, want 0: %w", p[len(p)-1], ErrInvalid)
		return
	}
	*v = make([]float32, n)
	getNarrow(*v, p, e)
}

// putNarrow stores v in dst in the narrow encoding e, each value rounded to
// the nearest code (package narrow).
func putNarrow(dst []byte, v []float32, e Encoding) {
	switch e {
	case EncodingFloat16:
		narrow.PutFloat16s(dst, v)
	case EncodingUint8:
		narrow.PutUint8s(dst, v)
	case EncodingBits:
		putBits(dst, v)
	}
}

// getNarrow loads dst from src in the narrow encoding e, like putNarrow in
// reverse.
func getNarrow(dst []float32, src []byte, e Encoding) {
	switch e {
	case EncodingFloat16:
		narrow.Float16s(dst, src)
	case EncodingUint8:
		narrow.Uint8s(dst, src)
	case EncodingBits:
		getBits(dst, src)
	}
}

// putBits packs the bit nearest each value of v into dst, eight a byte,
// the first in the lowest bit; the last byte's unused bits are zeros.
func putBits(dst []byte, v []float32) {
	dst = dst[:(len(v)+7)/8]
	for len(v) >= 8 {
		dst[0] = narrow.Bit(v[0]) | narrow.Bit(v[1])<<1 | narrow.Bit(v[2])<<2 | narrow.Bit(v[3])<<3 |
			narrow.Bit(v[4])<<4 | narrow.Bit(v[5])<<5 | narrow.Bit(v[6])<<6 | narrow.Bit(v[7])<<7
		dst, v = dst[1:], v[8:]
	}
	if len(v) > 0 {
		dst[0] = 0
		for i, x := range v {
			dst[0] |= narrow.Bit(x) << i
		}
	}
}

// getBits unpacks the bits of src into dst as 0 and 1, like putBits in
// reverse.
func getBits(dst []float32, src []byte) {
	src = src[:(len(dst)+7)/8]
	for len(dst) >= 8 {
		b := src[0]
		dst[0], dst[1], dst[2], dst[3] = float32(b&1), float32(b>>1&1), float32(b>>2&1), float32(b>>3&1)
		dst[4], dst[5], dst[6], dst[7] = float32(b>>4&1), float32(b>>5&1), float32(b>>6&1), float32(b>>7)
		dst, src = dst[8:], src[1:]
	}
	for i := range dst {
		dst[i] = float32(src[0] >> i & 1)
	}
}
