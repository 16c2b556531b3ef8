package data

import (
	"bufio"
	"compress/flate"
	"compress/gzip"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
)

// MaxIDXBytes bounds the data section of an IDX file (the product of its
// dims). Larger headers are rejected before anything is allocated, so a
// 16-byte file cannot ask for gigabytes; Fashion-MNIST's largest file holds
// 47,040,000 bytes.
const MaxIDXBytes = 1 << 31

// TypeUint8 is the IDX type code of unsigned bytes, the only element type
// this package reads (MNIST and Fashion-MNIST use it for pixels and labels).
const TypeUint8 = 0x08

// ErrFormat is wrapped by every error that reports a malformed IDX file
// (bad magic, unsupported type, absurd dims, truncated or trailing data),
// as opposed to an error opening or reading it. Test with errors.Is.
var ErrFormat = errors.New("data: malformed IDX file")

// formatError is a one-line description of what is wrong with a file's
// contents. Its text is the description alone (ErrFormat's text would only
// repeat it) but errors.Is still finds ErrFormat and any cause.
type formatError struct {
	msg   string
	cause error
}

func (e *formatError) Error() string { return e.msg }

func (e *formatError) Unwrap() []error {
	if e.cause == nil {
		return []error{ErrFormat}
	}
	return []error{ErrFormat, e.cause}
}

func formatf(format string, args ...any) error {
	return &formatError{msg: fmt.Sprintf(format, args...)}
}

// IDX is one decoded IDX file: a dense array of Dims[0] x Dims[1] x ...
// elements stored row-major in Data.
type IDX struct {
	// Type is the element type code; ReadIDX accepts only TypeUint8.
	Type byte
	// Dims holds the size of each dimension, outermost (examples) first.
	Dims []int
	// Data holds the product of Dims elements, one byte each for TypeUint8.
	Data []byte
}

// ReadIDX decodes one IDX file from r, gzip-compressed or raw: a stream
// starting with the gzip magic 1f 8b is decompressed first. The magic must be
// 0x000008NN (uint8 elements, NN >= 1 dims), the data exactly as long as the
// dims say, and nothing may follow it. Errors describe the problem in one
// line (wrapping ErrFormat for malformed contents) but do not name a file:
// the caller knows it. ReadIDX never allocates more than MaxIDXBytes, nor
// much more than twice the bytes the stream actually holds.
func ReadIDX(r io.Reader) (*IDX, error) {
	return readIDX(r, expect{what: "data", minDims: 1, maxDims: 255, size: -1})
}

// expect says what a caller wants from an IDX stream, to reject the wrong
// kind of file after its 4-byte magic rather than after reading it all.
type expect struct {
	what             string // noun for the data section in messages: "pixels", "labels"
	minDims, maxDims int
	magic            string // the wanted magic, for messages; "" derives it from the dims
	size             int64  // raw stream length if known (a file's size), else -1
}

func (e expect) wantMagic() string {
	if e.magic != "" {
		return e.magic
	}
	return fmt.Sprintf("0x000008NN (uint8, NN = %d..%d dims)", e.minDims, e.maxDims)
}

// typeName names the IDX type codes, known ones only.
func typeName(t byte) string {
	switch t {
	case 0x08:
		return "uint8"
	case 0x09:
		return "int8"
	case 0x0B:
		return "int16"
	case 0x0C:
		return "int32"
	case 0x0D:
		return "float32"
	case 0x0E:
		return "float64"
	}
	return "unknown"
}

// dimsString writes dims as 60000x28x28.
func dimsString(dims []int) string {
	var b strings.Builder
	for i, d := range dims {
		if i > 0 {
			b.WriteByte('x')
		}
		b.WriteString(strconv.Itoa(d))
	}
	return b.String()
}

func readIDX(r io.Reader, want expect) (*IDX, error) {
	src, gz, done, err := decompress(r, &want)
	if err != nil {
		return nil, err
	}
	defer done()
	short := decompressed(gz)
	h, err := readHeader(src, gz, want)
	if err != nil {
		return nil, err
	}
	typ, dims, total := h.typ, h.dims, h.total
	header := int64(4 + 4*len(dims))
	avail := int64(-1)
	if want.size >= 0 {
		avail = want.size - header
	}
	data, err := readData(src, total, avail)
	if int64(len(data)) < total {
		if err == io.EOF {
			return nil, formatf("header says %s = %d bytes of %s, found %d%s", dimsString(dims), total, want.what, len(data), short)
		}
		return nil, streamErr(gz, fmt.Sprintf("read %s (header says %s, found %d bytes%s)", want.what, dimsString(dims), len(data), short), err)
	}
	after := fmt.Sprintf("after the %d bytes of %s the header (%s) declares", total, want.what, dimsString(dims))
	if err != nil {
		return nil, streamErr(gz, after, err)
	}

	// Nothing may follow the data; reading to the end also makes gzip
	// verify its checksum.
	const maxTrailing = 1 << 20
	extra, err := io.Copy(io.Discard, io.LimitReader(src, maxTrailing+1))
	if err != nil {
		return nil, streamErr(gz, after, err)
	}
	if extra > 0 {
		more := ""
		if extra > maxTrailing {
			extra, more = maxTrailing, "more than "
		}
		return nil, formatf("trailing garbage: %s%d bytes%s %s", more, extra, short, after)
	}
	return &IDX{Type: typ, Dims: dims, Data: data}, nil
}

// decompress returns the stream to decode from r: r itself, or its
// decompression when it starts with the gzip magic 1f 8b (then want.size,
// which would describe the compressed bytes, becomes unknown). done releases
// the decompressor.
func decompress(r io.Reader, want *expect) (src io.Reader, gz bool, done func(), err error) {
	br := bufio.NewReaderSize(r, 64<<10)
	if head, _ := br.Peek(2); len(head) != 2 || head[0] != 0x1f || head[1] != 0x8b {
		return br, false, func() {}, nil
	}
	zr, err := gzip.NewReader(br)
	if err != nil {
		return nil, true, nil, streamErr(true, "gzip header", err)
	}
	want.size = -1 // the file size says nothing about the decompressed size
	return zr, true, func() { zr.Close() }, nil
}

// decompressed qualifies the byte counts found in a short stream.
func decompressed(gz bool) string {
	if gz {
		return " (decompressed)"
	}
	return ""
}

// idxHeader is an IDX file's element type and dims, read and checked.
type idxHeader struct {
	typ   byte
	dims  []int
	total int64 // the product of dims: the elements of the data section
}

// readHeader reads and checks the magic and dims at the start of src (the
// decompressed stream if gz).
func readHeader(src io.Reader, gz bool, want expect) (idxHeader, error) {
	short := decompressed(gz)
	magic, err := readData(src, 4, want.size)
	if err != nil {
		if err != io.EOF {
			return idxHeader{}, streamErr(gz, "read magic", err)
		}
		if len(magic) == 0 {
			return idxHeader{}, formatf("empty file%s, want IDX magic %s", short, want.wantMagic())
		}
		return idxHeader{}, formatf("file holds %d bytes%s, too short for the 4-byte IDX magic %s", len(magic), short, want.wantMagic())
	}
	m := binary.BigEndian.Uint32(magic)
	if magic[0] != 0 || magic[1] != 0 {
		return idxHeader{}, formatf("bad magic 0x%08x, want %s: not an IDX file", m, want.wantMagic())
	}
	typ, ndims := magic[2], int(magic[3])
	if typ != TypeUint8 {
		return idxHeader{}, formatf("magic 0x%08x: unsupported type code 0x%02x (%s), want 0x%02x (uint8)", m, typ, typeName(typ), TypeUint8)
	}
	if ndims < want.minDims || ndims > want.maxDims {
		return idxHeader{}, formatf("magic 0x%08x declares %d dims, want %s", m, ndims, want.wantMagic())
	}

	raw, err := readData(src, 4*int64(ndims), want.size-4)
	if err != nil {
		if err != io.EOF {
			return idxHeader{}, streamErr(gz, "read dims", err)
		}
		return idxHeader{}, formatf("magic declares %d dims (%d header bytes) but the file%s ends after %d of them", ndims, 4*ndims, short, len(raw))
	}
	dims := make([]int, ndims)
	for i := range dims {
		dims[i] = int(binary.BigEndian.Uint32(raw[4*i:]))
	}
	total := int64(1) // product of all dims
	nonzero := int64(1)
	for _, d := range dims {
		// No overflow: nonzero stays <= MaxIDXBytes before each step and d < 1<<32.
		total *= int64(d)
		if d != 0 {
			nonzero *= int64(d)
		}
		if nonzero > MaxIDXBytes {
			return idxHeader{}, formatf("dims %s exceed the %d-byte limit of an IDX file", dimsString(dims), int64(MaxIDXBytes))
		}
	}
	return idxHeader{typ: typ, dims: dims, total: total}, nil
}

// streamErr wraps a read error with ctx. A gzip stream that is cut off or
// corrupt is a malformed file (ErrFormat); anything else is an I/O error.
func streamErr(gz bool, ctx string, err error) error {
	if gz {
		var corrupt flate.CorruptInputError
		switch {
		case errors.Is(err, io.ErrUnexpectedEOF), errors.Is(err, io.EOF):
			return &formatError{msg: ctx + ": gzip stream cut off or followed by garbage", cause: err}
		case errors.As(err, &corrupt), errors.Is(err, gzip.ErrChecksum), errors.Is(err, gzip.ErrHeader):
			return &formatError{msg: fmt.Sprintf("%s: corrupt gzip stream: %v", ctx, err), cause: err}
		}
	}
	return fmt.Errorf("%s: %w", ctx, err)
}

// readData reads n bytes from r. The header's n is not trusted for the
// allocation: unless avail (the bytes known to remain, -1 if unknown) shows
// they are there, the buffer starts small and doubles as data arrives, so a
// short stream costs at most about twice its own length. It returns what it
// read and the error that stopped it: io.EOF if the stream ended short,
// any other error even if it came with the last of the n bytes.
func readData(r io.Reader, n, avail int64) ([]byte, error) {
	if n == 0 {
		return []byte{}, nil
	}
	const initial = 64 << 10
	c := min(n, initial)
	if avail >= n {
		c = n
	}
	buf := make([]byte, 0, c)
	for int64(len(buf)) < n {
		if len(buf) == cap(buf) {
			grown := make([]byte, len(buf), min(n, 2*int64(cap(buf))))
			copy(grown, buf)
			buf = grown
		}
		k, err := r.Read(buf[len(buf):cap(buf)])
		buf = buf[:len(buf)+k]
		if err != nil && (int64(len(buf)) < n || err != io.EOF) {
			return buf, err
		}
	}
	return buf, nil
}

// WriteIDX writes idx to w as a raw (uncompressed) IDX file: the magic from
// Type and len(Dims), the dims, then Data as is. It does not check that Data
// matches the dims, so tests can write truncated or padded files on purpose.
func WriteIDX(w io.Writer, idx *IDX) error {
	if len(idx.Dims) > 255 {
		return fmt.Errorf("write IDX: %d dims, at most 255 fit the magic", len(idx.Dims))
	}
	head := make([]byte, 4+4*len(idx.Dims))
	head[2], head[3] = idx.Type, byte(len(idx.Dims))
	for i, d := range idx.Dims {
		if d < 0 || int64(d) > 1<<32-1 {
			return fmt.Errorf("write IDX: dim %d = %d does not fit in uint32", i, d)
		}
		binary.BigEndian.PutUint32(head[4+4*i:], uint32(d))
	}
	if _, err := w.Write(head); err != nil {
		return fmt.Errorf("write IDX header: %w", err)
	}
	if _, err := w.Write(idx.Data); err != nil {
		return fmt.Errorf("write IDX data: %w", err)
	}
	return nil
}
