package messages

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"math"
	"reflect"
)

// Version is the version of the wire format that Encode writes and Decode
// accepts. Change it whenever a body layout changes.
const Version uint16 = 2

const (
	magic = "PDBN"
	// headerSize is magic, version uint16, kind uint8, body length uint32.
	headerSize  = len(magic) + 2 + 1 + 4
	trailerSize = 4 // CRC-32C of header and body
)

// Errors that Decode, Check and the Reassembler wrap; test for them with
// errors.Is.
var (
	// ErrMagic: the input does not start with the magic bytes.
	ErrMagic = errors.New("messages: bad magic")
	// ErrVersion: the input was written by another version of the format.
	ErrVersion = errors.New("messages: unsupported version")
	// ErrKind: the kind byte names no known message kind.
	ErrKind = errors.New("messages: unknown kind")
	// ErrChecksum: the CRC-32C does not match the bytes.
	ErrChecksum = errors.New("messages: checksum mismatch")
	// ErrTruncated: the input ends before the header, a field or the
	// checksum does.
	ErrTruncated = errors.New("messages: truncated")
	// ErrTrailing: bytes are left after the message or its body.
	ErrTrailing = errors.New("messages: trailing bytes")
	// ErrShape: array lengths disagree with the dimensions they claim.
	ErrShape = errors.New("messages: shape mismatch")
	// ErrInvalid: a field has a value the message may not have.
	ErrInvalid = errors.New("messages: invalid field")
	// ErrMismatch: a well-formed message meant for another run or peer.
	ErrMismatch = errors.New("messages: not for this receiver")
	// ErrFragment: a fragment is inconsistent in itself or with the other
	// fragments of its message.
	ErrFragment = errors.New("messages: inconsistent fragment")
	// ErrTooLarge: a message exceeds a size limit.
	ErrTooLarge = errors.New("messages: too large")
	// ErrEvicted: a Reassembler dropped an incomplete message to stay
	// within its limits.
	ErrEvicted = errors.New("messages: incomplete message evicted")
)

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// Encode returns m in the wire format. It fails, with ErrShape or
// ErrInvalid, if m is inconsistent, so that a buggy sender learns of it
// rather than its peer.
func Encode(m Message) ([]byte, error) {
	if m == nil || reflect.ValueOf(m).IsNil() {
		return nil, fmt.Errorf("encode: nil message: %w", ErrInvalid)
	}
	k := m.Kind()
	if err := m.validate(); err != nil {
		return nil, fmt.Errorf("encode %v: %w", k, err)
	}
	w := writer{b: make([]byte, headerSize, headerSize+bodySizeHint(m)+trailerSize)}
	copy(w.b, magic)
	binary.LittleEndian.PutUint16(w.b[4:], Version)
	w.b[6] = byte(k)
	m.encode(&w)
	if w.err != nil {
		return nil, fmt.Errorf("encode %v: %w", k, w.err)
	}
	body := len(w.b) - headerSize
	if uint64(body) > math.MaxUint32 {
		return nil, fmt.Errorf("encode %v: body of %d bytes: %w", k, body, ErrTooLarge)
	}
	binary.LittleEndian.PutUint32(w.b[7:], uint32(body))
	return binary.LittleEndian.AppendUint32(w.b, crc32.Checksum(w.b, castagnoli)), nil
}

// Decode parses one message in the wire format; b must hold exactly one.
// The result is a pointer to one of this package's structs and shares no
// memory with b. Errors wrap ErrMagic, ErrVersion, ErrTruncated,
// ErrTrailing, ErrChecksum, ErrKind, ErrShape or ErrInvalid.
func Decode(b []byte) (Message, error) {
	if len(b) < len(magic) {
		return nil, fmt.Errorf("decode: %d bytes, shorter than the magic: %w", len(b), ErrTruncated)
	}
	if string(b[:len(magic)]) != magic {
		return nil, fmt.Errorf("decode: magic %q, want %q: %w", b[:len(magic)], magic, ErrMagic)
	}
	if len(b) < headerSize+trailerSize {
		return nil, fmt.Errorf("decode: %d bytes, shorter than header and checksum: %w", len(b), ErrTruncated)
	}
	if v := binary.LittleEndian.Uint16(b[4:]); v != Version {
		return nil, fmt.Errorf("decode: version %d, want %d: %w", v, Version, ErrVersion)
	}
	k := Kind(b[6])
	body := uint64(binary.LittleEndian.Uint32(b[7:]))
	if want := uint64(headerSize) + body + trailerSize; uint64(len(b)) < want {
		return nil, fmt.Errorf("decode %v: %d bytes, header says %d: %w", k, len(b), want, ErrTruncated)
	} else if uint64(len(b)) > want {
		return nil, fmt.Errorf("decode %v: %d bytes, header says %d: %w", k, len(b), want, ErrTrailing)
	}
	end := len(b) - trailerSize
	if got, want := crc32.Checksum(b[:end], castagnoli), binary.LittleEndian.Uint32(b[end:]); got != want {
		return nil, fmt.Errorf("decode %v: crc32c %08x, want %08x: %w", k, got, want, ErrChecksum)
	}
	m := newMessage(k)
	if m == nil {
		return nil, fmt.Errorf("decode: %v: %w", k, ErrKind)
	}
	r := reader{b: b[headerSize:end], kind: k}
	m.decode(&r)
	if r.err != nil {
		return nil, r.err
	}
	if len(r.b) != 0 {
		return nil, fmt.Errorf("decode %v: %d bytes after the last field: %w", k, len(r.b), ErrTrailing)
	}
	if err := m.validate(); err != nil {
		return nil, fmt.Errorf("decode %v: %w", k, err)
	}
	return m, nil
}

// bodySizeHint estimates m's body size so that Encode allocates once.
func bodySizeHint(m Message) int {
	const small = 256
	switch m := m.(type) {
	case *Chunk:
		return small + 4*(len(m.Data)+len(m.Bias)) + 8*len(m.BatchRows)
	case *Weights:
		return small + 4*(len(m.W)+len(m.A)+len(m.B)) + 8*len(m.ReconErrors)
	case *Status:
		return small + 8*len(m.ReconErrors)
	}
	return small
}

// writer appends fields to a buffer in the wire format.
type writer struct {
	b   []byte
	err error
}

func (w *writer) u8(v uint8)   { w.b = append(w.b, v) }
func (w *writer) u16(v uint16) { w.b = binary.LittleEndian.AppendUint16(w.b, v) }
func (w *writer) u32(v uint32) { w.b = binary.LittleEndian.AppendUint32(w.b, v) }
func (w *writer) u64(v uint64) { w.b = binary.LittleEndian.AppendUint64(w.b, v) }

// int writes v as an int64, whatever the size of int.
func (w *writer) int(v int)     { w.u64(uint64(int64(v))) }
func (w *writer) f64(v float64) { w.u64(math.Float64bits(v)) }

func (w *writer) str(s string) {
	w.length(len(s))
	w.b = append(w.b, s...)
}

func (w *writer) bool(v bool) {
	if v {
		w.u8(1)
	} else {
		w.u8(0)
	}
}

func (w *writer) u32s(v []uint32) {
	w.length(len(v))
	extend(w, v, 4, func(b []byte, x uint32) { binary.LittleEndian.PutUint32(b, x) })
}

func (w *writer) ints(v []int) {
	w.length(len(v))
	extend(w, v, 8, func(b []byte, x int) { binary.LittleEndian.PutUint64(b, uint64(int64(x))) })
}

func (w *writer) f64s(v []float64) {
	w.length(len(v))
	extend(w, v, 8, func(b []byte, x float64) { binary.LittleEndian.PutUint64(b, math.Float64bits(x)) })
}

// length writes the uint32 length prefix of a string or slice.
func (w *writer) length(n int) {
	if uint64(n) > math.MaxUint32 && w.err == nil {
		w.err = fmt.Errorf("%d elements, more than a uint32 length prefix holds: %w", n, ErrTooLarge)
	}
	w.u32(uint32(n))
}

// f32s writes a length-prefixed float32 array as raw little-endian bits.
// It is the hot path of Encode for chunks and weights.
func (w *writer) f32s(v []float32) {
	w.length(len(v))
	n := len(w.b)
	w.b = grow(w.b, 4*len(v))
	putFloat32s(w.b[n:], v)
}

// putFloat32s stores v in dst as little-endian bits. Four values a step
// let the compiler drop the bounds checks: twice the speed of the plain
// loop.
func putFloat32s(dst []byte, v []float32) {
	dst = dst[:4*len(v)]
	for len(v) >= 4 && len(dst) >= 16 {
		binary.LittleEndian.PutUint32(dst[0:4], math.Float32bits(v[0]))
		binary.LittleEndian.PutUint32(dst[4:8], math.Float32bits(v[1]))
		binary.LittleEndian.PutUint32(dst[8:12], math.Float32bits(v[2]))
		binary.LittleEndian.PutUint32(dst[12:16], math.Float32bits(v[3]))
		dst, v = dst[16:], v[4:]
	}
	for i, x := range v {
		binary.LittleEndian.PutUint32(dst[4*i:], math.Float32bits(x))
	}
}

// getFloat32s loads dst from little-endian bits in src, like putFloat32s
// in reverse.
func getFloat32s(dst []float32, src []byte) {
	src = src[:4*len(dst)]
	for len(dst) >= 4 && len(src) >= 16 {
		dst[0] = math.Float32frombits(binary.LittleEndian.Uint32(src[0:4]))
		dst[1] = math.Float32frombits(binary.LittleEndian.Uint32(src[4:8]))
		dst[2] = math.Float32frombits(binary.LittleEndian.Uint32(src[8:12]))
		dst[3] = math.Float32frombits(binary.LittleEndian.Uint32(src[12:16]))
		dst, src = dst[4:], src[16:]
	}
	for i := range dst {
		dst[i] = math.Float32frombits(binary.LittleEndian.Uint32(src[4*i:]))
	}
}

// extend appends size bytes per element of v, written by put.
func extend[T any](w *writer, v []T, size int, put func([]byte, T)) {
	n := len(w.b)
	w.b = grow(w.b, size*len(v))
	for i, x := range v {
		put(w.b[n+size*i:], x)
	}
}

// grow extends b by n bytes, reallocating at most once.
func grow(b []byte, n int) []byte {
	if cap(b)-len(b) < n {
		nb := make([]byte, len(b), 2*cap(b)+n)
		copy(nb, b)
		b = nb
	}
	return b[:len(b)+n]
}

// reader consumes fields of one body. The first failure is kept in err;
// after it every read returns a zero value, so decode methods need no error
// checks of their own.
type reader struct {
	b    []byte
	kind Kind
	err  error
}

// take consumes n bytes, or records ErrTruncated if fewer are left. Every
// length read from the input passes through here before anything is
// allocated for it.
func (r *reader) take(field string, n uint64) []byte {
	if r.err != nil {
		return nil
	}
	if n > uint64(len(r.b)) {
		r.err = fmt.Errorf("decode %v: %s: need %d bytes, have %d: %w", r.kind, field, n, len(r.b), ErrTruncated)
		return nil
	}
	p := r.b[:n:n]
	r.b = r.b[n:]
	return p
}

func (r *reader) u8(field string) uint8 {
	if p := r.take(field, 1); p != nil {
		return p[0]
	}
	return 0
}

func (r *reader) u16(field string) uint16 {
	if p := r.take(field, 2); p != nil {
		return binary.LittleEndian.Uint16(p)
	}
	return 0
}

func (r *reader) u32(field string) uint32 {
	if p := r.take(field, 4); p != nil {
		return binary.LittleEndian.Uint32(p)
	}
	return 0
}

func (r *reader) u64(field string) uint64 {
	if p := r.take(field, 8); p != nil {
		return binary.LittleEndian.Uint64(p)
	}
	return 0
}

func (r *reader) f64(field string) float64 { return math.Float64frombits(r.u64(field)) }

// int reads an int64 and fails with ErrInvalid if it does not fit an int.
func (r *reader) int(field string) int {
	v := int64(r.u64(field))
	if int64(int(v)) != v && r.err == nil {
		r.err = fmt.Errorf("decode %v: %s: %d overflows int: %w", r.kind, field, v, ErrInvalid)
	}
	return int(v)
}

func (r *reader) str(field string) string {
	n := r.u32(field)
	return string(r.take(field, uint64(n)))
}

// array consumes a length-prefixed array of size-byte elements and returns
// its count and bytes, checking the bytes are present before the caller
// allocates.
func (r *reader) array(field string, size uint64) (int, []byte) {
	n := uint64(r.u32(field))
	p := r.take(field, n*size)
	if p == nil || n == 0 {
		return 0, nil
	}
	return int(n), p
}

func (r *reader) f32s(field string) []float32 {
	n, p := r.array(field, 4)
	if n == 0 {
		return nil
	}
	v := make([]float32, n)
	getFloat32s(v, p)
	return v
}

func (r *reader) f64s(field string) []float64 {
	n, p := r.array(field, 8)
	if n == 0 {
		return nil
	}
	v := make([]float64, n)
	for i := range v {
		v[i] = math.Float64frombits(binary.LittleEndian.Uint64(p[8*i:]))
	}
	return v
}

// bool reads a byte that must be 0 or 1, so that the encoding stays
// canonical.
func (r *reader) bool(field string) bool {
	v := r.u8(field)
	if v > 1 && r.err == nil {
		r.err = fmt.Errorf("decode %v: %s: %d is not a boolean: %w", r.kind, field, v, ErrInvalid)
	}
	return v == 1
}

func (r *reader) u32s(field string) []uint32 {
	n, p := r.array(field, 4)
	if n == 0 {
		return nil
	}
	v := make([]uint32, n)
	for i := range v {
		v[i] = binary.LittleEndian.Uint32(p[4*i:])
	}
	return v
}

func (r *reader) ints(field string) []int {
	n, p := r.array(field, 8)
	if n == 0 {
		return nil
	}
	v := make([]int, n)
	for i := range v {
		x := int64(binary.LittleEndian.Uint64(p[8*i:]))
		if int64(int(x)) != x {
			r.err = fmt.Errorf("decode %v: %s[%d]: %d overflows int: %w", r.kind, field, i, x, ErrInvalid)
			return nil
		}
		v[i] = int(x)
	}
	return v
}
