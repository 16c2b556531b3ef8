package messages

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"math"
	"reflect"
	"unsafe"
)

// Version is the version of the wire format that Encode writes and Decode
// accepts. Change it whenever a body layout changes, or what a field
// means: in version 9 an Assign to a stage replica carries the stage's own
// learning rates (the replica takes a step per sub-batch), where 8 carried
// them scaled by the replicas; version 10 pads float32 arrays to 4-byte
// offsets (f32s); version 11 pads the fragment header to 32 bytes
// (FragmentHeaderSize), so that a message in one fragment decodes in place;
// version 12 adds a checkpoint's VelWCarry; version 13 a chunk's Labels
// and Encoding, an assignment's Net and MiddleEncoding, and Hidden 0 in
// parameters for a flat vector (paramsShape); version 14 an assignment's
// BlockMomentum and a checkpoint's BlockStep.
const Version uint16 = 14

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
	if err := checkEncode(m); err != nil {
		return nil, err
	}
	return encode(make([]byte, 0, encodedSizeHint(m)), m)
}

// checkEncode reports whether m may be encoded: not nil, and valid. It
// comes before encodedSizeHint, which reads m's fields.
func checkEncode(m Message) error {
	if m == nil || reflect.ValueOf(m).IsNil() {
		return fmt.Errorf("encode: nil message: %w", ErrInvalid)
	}
	if err := m.validate(); err != nil {
		return fmt.Errorf("encode %v: %w", m.Kind(), err)
	}
	return nil
}

// encode appends m, which checkEncode accepted, to dst in the wire format.
// It is the one encoding routine of Encode and EncodeEach: dst may hold
// bytes of the caller's before the message (EncodeEach's room for a
// fragment header), which are left alone and kept out of the checksum.
func encode(dst []byte, m Message) ([]byte, error) {
	k := m.Kind()
	start := len(dst)
	c := coder{b: append(dst, magic...), base: start}
	c.b = binary.LittleEndian.AppendUint16(c.b, Version)
	c.b = append(c.b, byte(k))
	c.b = append(c.b, 0, 0, 0, 0) // the body length, filled in below
	m.fields(&c)
	if c.err != nil {
		return nil, fmt.Errorf("encode %v: %w", k, c.err)
	}
	body := len(c.b) - start - headerSize
	if uint64(body) > math.MaxUint32 {
		return nil, fmt.Errorf("encode %v: body of %d bytes: %w", k, body, ErrTooLarge)
	}
	binary.LittleEndian.PutUint32(c.b[start+7:], uint32(body))
	return binary.LittleEndian.AppendUint32(c.b, crc32.Checksum(c.b[start:], castagnoli)), nil
}

// messageSum returns the CRC-32C of payload, and whether payload ends in
// the checksum of what comes before it, as a message in the wire format
// does (its trailer): one pass over payload for both.
func messageSum(payload []byte) (sum uint32, trailerOK bool) {
	if len(payload) < trailerSize {
		return crc32.Checksum(payload, castagnoli), false
	}
	end := len(payload) - trailerSize
	body := crc32.Checksum(payload[:end], castagnoli)
	return crc32.Update(body, castagnoli, payload[end:]), body == binary.LittleEndian.Uint32(payload[end:])
}

// payloadChecksum returns the CRC-32C of the whole of enc, a message that
// encode wrote, from the one in its trailer: the trailer is the checksum of
// everything before it, so four more bytes finish the sum, and a fragment
// header gets the checksum of its payload without a second pass over it.
func payloadChecksum(enc []byte) uint32 {
	trailer := enc[len(enc)-trailerSize:]
	return crc32.Update(binary.LittleEndian.Uint32(trailer), castagnoli, trailer)
}

// Decode parses one message in the wire format; b must hold exactly one.
// The result is a pointer to one of this package's structs and shares no
// memory with b. Errors wrap ErrMagic, ErrVersion, ErrTruncated,
// ErrTrailing, ErrChecksum, ErrKind, ErrShape or ErrInvalid.
func Decode(b []byte) (Message, error) { return decode(b, false, false) }

// DecodeOwned is Decode for a b the caller hands over and never touches
// again: where b's memory is 4-aligned, as a fresh allocation is, the
// message's float32 arrays are b's own bytes (on a little-endian host),
// not copies, so that a window's middle result comes in with no copy and
// no second allocation of its size.
func DecodeOwned(b []byte) (Message, error) { return decode(b, true, false) }

// decode is Decode; alias lets float32 arrays share b (DecodeOwned), and
// summed says that the caller found b's trailer to be the checksum of the
// rest (messageSum), which decode then need not compute again.
func decode(b []byte, alias, summed bool) (Message, error) {
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
	if !summed {
		if got, want := crc32.Checksum(b[:end], castagnoli), binary.LittleEndian.Uint32(b[end:]); got != want {
			return nil, fmt.Errorf("decode %v: crc32c %08x, want %08x: %w", k, got, want, ErrChecksum)
		}
	}
	m := newMessage(k)
	if m == nil {
		return nil, fmt.Errorf("decode: %v: %w", k, ErrKind)
	}
	c := coder{reading: true, b: b[headerSize:end], read: headerSize, alias: alias}
	m.fields(&c)
	if c.err != nil {
		return nil, fmt.Errorf("decode %v: %w", k, c.err)
	}
	if len(c.b) != 0 {
		return nil, fmt.Errorf("decode %v: %d bytes after the last field: %w", k, len(c.b), ErrTrailing)
	}
	if err := m.validate(); err != nil {
		return nil, fmt.Errorf("decode %v: %w", k, err)
	}
	return m, nil
}

// bodySizeHint estimates m's body size so that Encode allocates once.
func bodySizeHint(m Message) int {
	const small = 256
	const pad = 3 // at most, before each float32 array (f32s)
	switch m := m.(type) {
	case *Chunk:
		return small + 2*pad + int(m.ValueBytes()) + 8*len(m.BatchRows) + len(m.Labels)
	case *Weights:
		return small + 3*pad + 4*(len(m.W)+len(m.A)+len(m.B)) + 8*len(m.ReconErrors)
	case *Params:
		return small + 3*pad + 4*(len(m.W)+len(m.A)+len(m.B))
	case *Status:
		return small + 8*len(m.ReconErrors)
	case *Checkpoint:
		return small + 6*pad + 4*(len(m.W)+len(m.A)+len(m.B)+len(m.VelW)+len(m.VelA)+len(m.VelB)+len(m.RNG)) + 8*len(m.ReconErrors)
	}
	return small
}

// encodedSizeHint estimates the length of m in the wire format.
func encodedSizeHint(m Message) int {
	return headerSize + bodySizeHint(m) + trailerSize
}

// coder writes the fields of a message body or reads them back, one field
// list per kind (its fields method) serving both, so that encoding and
// decoding cannot drift apart. Writing, it appends *v to b and never
// changes the message, which may be shared; reading, it consumes b and
// stores into *v. The first failure is kept in err; after it every call
// does nothing, so fields methods need no error checks of their own, and a
// field that was not read keeps its zero value.
type coder struct {
	reading bool
	// b is the encoding so far when writing, the unread rest of the body
	// when reading.
	b   []byte
	err error
	// base is where the message starts in b, writing; reading, read is
	// how far b's start lies into the message: pos needs either.
	base, read int
	// alias lets float32 arrays read back share b's memory (DecodeOwned).
	alias bool
}

// pos returns the offset from the message's start that the next field
// is written at or read from.
func (c *coder) pos() int {
	if c.reading {
		return c.read
	}
	return len(c.b) - c.base
}

func (c *coder) fail(field string, format string, args ...any) {
	if c.err == nil {
		c.err = fmt.Errorf("%s: "+format, append([]any{field}, args...)...)
	}
}

// take consumes n bytes, or records ErrTruncated if fewer are left. Every
// length read from the input passes through here before anything is
// allocated for it.
func (c *coder) take(field string, n uint64) []byte {
	if c.err != nil {
		return nil
	}
	if n > uint64(len(c.b)) {
		c.fail(field, "need %d bytes, have %d: %w", n, len(c.b), ErrTruncated)
		return nil
	}
	p := c.b[:n:n]
	c.b = c.b[n:]
	c.read += int(n)
	return p
}

func (c *coder) u8(v *uint8, field string) {
	if !c.reading {
		c.b = append(c.b, *v)
	} else if p := c.take(field, 1); p != nil {
		*v = p[0]
	}
}

func (c *coder) u16(v *uint16, field string) {
	if !c.reading {
		c.b = binary.LittleEndian.AppendUint16(c.b, *v)
	} else if p := c.take(field, 2); p != nil {
		*v = binary.LittleEndian.Uint16(p)
	}
}

func (c *coder) u32(v *uint32, field string) {
	if !c.reading {
		c.b = binary.LittleEndian.AppendUint32(c.b, *v)
	} else if p := c.take(field, 4); p != nil {
		*v = binary.LittleEndian.Uint32(p)
	}
}

func (c *coder) u64(v *uint64, field string) {
	if !c.reading {
		c.b = binary.LittleEndian.AppendUint64(c.b, *v)
	} else if p := c.take(field, 8); p != nil {
		*v = binary.LittleEndian.Uint64(p)
	}
}

func (c *coder) f64(v *float64, field string) {
	if !c.reading {
		c.b = binary.LittleEndian.AppendUint64(c.b, math.Float64bits(*v))
	} else if p := c.take(field, 8); p != nil {
		*v = math.Float64frombits(binary.LittleEndian.Uint64(p))
	}
}

// int codes v as an int64, whatever the size of int; reading, a value that
// does not fit an int fails with ErrInvalid.
func (c *coder) int(v *int, field string) {
	if !c.reading {
		c.b = binary.LittleEndian.AppendUint64(c.b, uint64(int64(*v)))
	} else if p := c.take(field, 8); p != nil {
		*v = c.toInt(int64(binary.LittleEndian.Uint64(p)), field)
	}
}

func (c *coder) toInt(x int64, field string) int {
	if int64(int(x)) != x {
		c.fail(field, "%d overflows int: %w", x, ErrInvalid)
		return 0
	}
	return int(x)
}

// bool codes v as one byte; reading, only 0 and 1 are accepted, so that
// the encoding stays canonical.
func (c *coder) bool(v *bool, field string) {
	if !c.reading {
		if *v {
			c.b = append(c.b, 1)
		} else {
			c.b = append(c.b, 0)
		}
	} else if p := c.take(field, 1); p != nil {
		if p[0] > 1 {
			c.fail(field, "%d is not a boolean: %w", p[0], ErrInvalid)
			return
		}
		*v = p[0] == 1
	}
}

func (c *coder) str(v *string, field string) {
	if !c.reading {
		c.length(len(*v), field)
		c.b = append(c.b, *v...)
		return
	}
	var n uint32
	c.u32(&n, field)
	if p := c.take(field, uint64(n)); p != nil {
		*v = string(p)
	}
}

// strs codes a length-prefixed list of strings. Reading, it checks that
// the input holds the count's length prefixes before it allocates.
func (c *coder) strs(v *[]string, field string) {
	if !c.reading {
		c.length(len(*v), field)
		for i := range *v {
			c.str(&(*v)[i], field)
		}
		return
	}
	var n uint32
	c.u32(&n, field)
	if c.err != nil || n == 0 {
		return
	}
	if uint64(n)*4 > uint64(len(c.b)) {
		c.fail(field, "%d strings, %d bytes left: %w", n, len(c.b), ErrTruncated)
		return
	}
	s := make([]string, n)
	for i := range s {
		c.str(&s[i], field)
	}
	*v = s
}

// length writes the uint32 length prefix of a string or slice.
func (c *coder) length(n int, field string) {
	if uint64(n) > math.MaxUint32 {
		c.fail(field, "%d elements, more than a uint32 length prefix holds: %w", n, ErrTooLarge)
	}
	c.b = binary.LittleEndian.AppendUint32(c.b, uint32(n))
}

// put writes the length prefix of a slice of n size-byte elements and
// returns the room for them, reallocating at most once.
func (c *coder) put(n, size int, field string) []byte {
	c.length(n, field)
	at := len(c.b)
	c.b = grow(c.b, size*n)
	return c.b[at:]
}

// get reads a length-prefixed array of size-byte elements and returns its
// count and bytes, checking that the bytes are present before the caller
// allocates; an empty array gives 0, nil.
func (c *coder) get(field string, size uint64) (int, []byte) {
	var n uint32
	c.u32(&n, field)
	p := c.take(field, uint64(n)*size)
	if p == nil || n == 0 {
		return 0, nil
	}
	return int(n), p
}

// f32s codes a length-prefixed float32 array as raw little-endian bits,
// from a multiple of 4 bytes into the message: zero bytes (0 to 3) pad the
// length prefix of a non-empty array to it. It is the hot path of chunks
// and weights: one tight loop each way, no call per element, and, in a
// message DecodeOwned reads from 4-aligned memory, no copy at all. An empty
// array reads back as nil.
func (c *coder) f32s(v *[]float32, field string) {
	if !c.reading {
		c.length(len(*v), field)
		if len(*v) > 0 {
			c.b = append(c.b, make([]byte, pad4(c.pos()))...)
			at := len(c.b)
			c.b = grow(c.b, 4*len(*v))
			putFloat32s(c.b[at:], *v)
		}
		return
	}
	var n uint32
	c.u32(&n, field)
	if n == 0 {
		return
	}
	for _, b := range c.take(field, uint64(pad4(c.pos()))) {
		if b != 0 {
			c.fail(field, "padding byte %#x, want 0: %w", b, ErrInvalid)
		}
	}
	p := c.take(field, 4*uint64(n))
	if p == nil {
		return
	}
	if c.alias && littleEndian && uintptr(unsafe.Pointer(unsafe.SliceData(p)))%4 == 0 {
		*v = unsafe.Slice((*float32)(unsafe.Pointer(unsafe.SliceData(p))), n)
		return
	}
	*v = make([]float32, n)
	getFloat32s(*v, p)
}

// pad4 returns the bytes from offset at to the next multiple of 4.
func pad4(at int) int { return (4 - at%4) % 4 }

func (c *coder) f64s(v *[]float64, field string) {
	if !c.reading {
		dst := c.put(len(*v), 8, field)
		for i, x := range *v {
			binary.LittleEndian.PutUint64(dst[8*i:], math.Float64bits(x))
		}
	} else if n, p := c.get(field, 8); n > 0 {
		s := make([]float64, n)
		for i := range s {
			s[i] = math.Float64frombits(binary.LittleEndian.Uint64(p[8*i:]))
		}
		*v = s
	}
}

func (c *coder) u32s(v *[]uint32, field string) {
	if !c.reading {
		dst := c.put(len(*v), 4, field)
		for i, x := range *v {
			binary.LittleEndian.PutUint32(dst[4*i:], x)
		}
	} else if n, p := c.get(field, 4); n > 0 {
		s := make([]uint32, n)
		for i := range s {
			s[i] = binary.LittleEndian.Uint32(p[4*i:])
		}
		*v = s
	}
}

// bytes codes a length-prefixed byte array; an empty one reads back as nil.
// Reading, the result is a copy, never a view of the message.
func (c *coder) bytes(v *[]byte, field string) {
	if !c.reading {
		copy(c.put(len(*v), 1, field), *v)
	} else if n, p := c.get(field, 1); n > 0 {
		*v = append([]byte(nil), p...)
	}
}

// ints codes each element as an int64, like int.
func (c *coder) ints(v *[]int, field string) {
	if !c.reading {
		dst := c.put(len(*v), 8, field)
		for i, x := range *v {
			binary.LittleEndian.PutUint64(dst[8*i:], uint64(int64(x)))
		}
	} else if n, p := c.get(field, 8); n > 0 {
		s := make([]int, n)
		for i := range s {
			x := int64(binary.LittleEndian.Uint64(p[8*i:]))
			if s[i] = int(x); int64(s[i]) != x {
				c.fail(fmt.Sprintf("%s[%d]", field, i), "%d overflows int: %w", x, ErrInvalid)
				return
			}
		}
		*v = s
	}
}

// maxRejectReasons bounds the rejection counts a Status may carry: a later
// format may add reasons, but never this many.
const maxRejectReasons = 32

// rejections codes v as a length-prefixed list of uint64 counts, one per
// RejectReason in order. Reading, it accepts up to maxRejectReasons counts:
// missing ones stay zero and those of reasons this version does not know
// are dropped.
func (c *coder) rejections(v *Rejections, field string) {
	if !c.reading {
		dst := c.put(len(v), 8, field)
		for i, x := range v {
			binary.LittleEndian.PutUint64(dst[8*i:], x)
		}
		return
	}
	n, p := c.get(field, 8)
	if n > maxRejectReasons {
		c.fail(field, "%d counts, more than %d: %w", n, maxRejectReasons, ErrInvalid)
		return
	}
	for i := range min(n, len(v)) {
		v[i] = binary.LittleEndian.Uint64(p[8*i:])
	}
}

// littleEndian says whether this host stores a float32 in memory as its
// little-endian wire bits, so that arrays can be copied as they are.
var littleEndian = binary.NativeEndian.Uint16([]byte{1, 0}) == 1

// float32Bytes returns the memory of v as bytes, in the host's order.
func float32Bytes(v []float32) []byte {
	return unsafe.Slice((*byte)(unsafe.Pointer(unsafe.SliceData(v))), 4*len(v))
}

// putFloat32s stores v in dst as little-endian bits. On a little-endian
// host that is a plain copy of v's memory, as fast as memmove.
func putFloat32s(dst []byte, v []float32) {
	dst = dst[:4*len(v)]
	if littleEndian {
		copy(dst, float32Bytes(v))
		return
	}
	putFloat32sPortable(dst, v)
}

// getFloat32s loads dst from little-endian bits in src, like putFloat32s
// in reverse.
func getFloat32s(dst []float32, src []byte) {
	src = src[:4*len(dst)]
	if littleEndian {
		copy(float32Bytes(dst), src)
		return
	}
	getFloat32sPortable(dst, src)
}

// putFloat32sPortable is putFloat32s on a host of any byte order. Four
// values a step let the compiler drop the bounds checks: twice the speed of
// the plain loop.
func putFloat32sPortable(dst []byte, v []float32) {
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

// getFloat32sPortable is getFloat32s on a host of any byte order.
func getFloat32sPortable(dst []float32, src []byte) {
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

// grow extends b by n bytes, reallocating at most once.
func grow(b []byte, n int) []byte {
	if cap(b)-len(b) < n {
		nb := make([]byte, len(b), 2*cap(b)+n)
		copy(nb, b)
		b = nb
	}
	return b[:len(b)+n]
}
