package data

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"
)

// This file reads and writes NumPy's .npy format (numpy/lib/format.py,
// versions 1.0 to 3.0): the magic "\x93NUMPY", a version, a header length, a
// header that is a Python dict literal {'descr': '<f4', 'fortran_order':
// False, 'shape': (60000, 784), } padded with spaces and ended by '\n', then
// the elements.
//
// It is pipedbn's own reader, not github.com/sbinet/npyio's (which writes
// weights.npz): npyio v0.6.0 reads each element with one io.Reader.Read and
// ignores a short count, so a reader that returns fewer bytes than asked
// (legal for any io.Reader) silently shifts every value after it; a truncated
// array is silently completed with its last value; a header without its
// '\n' panics; and a shape whose element count overflows is read as empty,
// without error. See TestNPYioMisreads for the evidence on NumPy-written
// files.

// ErrMalformed is wrapped by every error that reports a malformed NumPy
// (.npy, .npz) or CSV file, or an array of the wrong type, shape or values,
// as opposed to an error opening or reading it. Test with errors.Is.
var ErrMalformed = errors.New("data: malformed data file")

// malformed is a one-line description of what is wrong with a file's
// contents; errors.Is finds ErrMalformed.
type malformed struct{ msg string }

func (e *malformed) Error() string        { return e.msg }
func (e *malformed) Is(target error) bool { return target == ErrMalformed }

func malformedf(format string, args ...any) error {
	return &malformed{msg: fmt.Sprintf(format, args...)}
}

// npyMagic starts every .npy file.
const npyMagic = "\x93NUMPY"

// MaxNPYHeader bounds the header length that a .npy file may declare. NumPy
// itself refuses headers longer than 10,000 bytes by default.
const MaxNPYHeader = 1 << 16

// MaxNPYBytes bounds the data an array may declare, so that a header cannot
// make the reader allocate more than that: 16 GiB.
const MaxNPYBytes = 1 << 34

// npyHeader is a decoded .npy header.
type npyHeader struct {
	// descr is the dtype as written, like <f4.
	descr string
	// kind is the dtype's kind: f (float), i (signed), u (unsigned), b (bool).
	kind byte
	// size is the bytes of one element.
	size int
	// order is the byte order of elements wider than a byte.
	order binary.ByteOrder
	// fortran says the elements are stored column-major.
	fortran bool
	// shape is the array's shape; () is a scalar.
	shape []int
	// count is the product of shape; headerLen the bytes before the data.
	count, headerLen int64
}

// bytes is the size of the array's data.
func (h npyHeader) bytes() int64 { return h.count * int64(h.size) }

// shapeString writes a shape as NumPy prints it: (60000, 784), (10,).
func shapeString(shape []int) string {
	parts := make([]string, len(shape))
	for i, d := range shape {
		parts[i] = strconv.Itoa(d)
	}
	if len(shape) == 1 {
		return "(" + parts[0] + ",)"
	}
	return "(" + strings.Join(parts, ", ") + ")"
}

// readNPYHeader reads and checks a .npy header from r. Errors describe the
// problem in one line without naming the file.
func readNPYHeader(r io.Reader) (npyHeader, error) {
	var pre [8]byte
	if n, err := io.ReadFull(r, pre[:]); err != nil {
		if n == 0 && errors.Is(err, io.EOF) {
			return npyHeader{}, malformedf("empty, want a NumPy .npy array (magic \\x93NUMPY)")
		}
		if errors.Is(err, io.ErrUnexpectedEOF) {
			return npyHeader{}, malformedf("truncated: %d bytes, want a NumPy .npy header", n)
		}
		return npyHeader{}, err
	}
	if string(pre[:6]) != npyMagic {
		return npyHeader{}, malformedf("not a NumPy .npy array: starts with %q, want \\x93NUMPY", pre[:6])
	}
	major, minor := pre[6], pre[7]
	var hlen, prefix int64
	switch major {
	case 1:
		var b [2]byte
		if _, err := io.ReadFull(r, b[:]); err != nil {
			return npyHeader{}, truncated(err, "header length")
		}
		hlen, prefix = int64(binary.LittleEndian.Uint16(b[:])), 10
	case 2, 3:
		var b [4]byte
		if _, err := io.ReadFull(r, b[:]); err != nil {
			return npyHeader{}, truncated(err, "header length")
		}
		hlen, prefix = int64(binary.LittleEndian.Uint32(b[:])), 12
	default:
		return npyHeader{}, malformedf("format version %d.%d, want 1.0, 2.0 or 3.0", major, minor)
	}
	if hlen > MaxNPYHeader {
		return npyHeader{}, malformedf("header of %d bytes, want at most %d", hlen, MaxNPYHeader)
	}
	text := make([]byte, hlen)
	if _, err := io.ReadFull(r, text); err != nil {
		return npyHeader{}, truncated(err, fmt.Sprintf("header of %d bytes", hlen))
	}
	h, err := parseNPYDict(string(text))
	if err != nil {
		return npyHeader{}, err
	}
	h.headerLen = prefix + hlen
	return h, nil
}

func truncated(err error, what string) error {
	if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
		return malformedf("truncated in the %s", what)
	}
	return err
}

// parseNPYDict parses the header's dict literal.
func parseNPYDict(text string) (npyHeader, error) {
	bad := func(why string) error {
		return malformedf("header %s: %s", quoteShort(text), why)
	}
	if !strings.HasSuffix(text, "\n") {
		return npyHeader{}, bad("does not end with a newline")
	}
	p := &pyLit{s: strings.TrimRight(text, " \n")}
	if !p.eat('{') {
		return npyHeader{}, bad("want a dict {...}")
	}
	var h npyHeader
	seen := map[string]bool{}
	for {
		p.space()
		if p.eat('}') {
			break
		}
		key, ok := p.str()
		if !ok {
			return npyHeader{}, bad("want a quoted key")
		}
		if seen[key] {
			return npyHeader{}, bad("key '" + key + "' twice")
		}
		seen[key] = true
		p.space()
		if !p.eat(':') {
			return npyHeader{}, bad("want ':' after '" + key + "'")
		}
		p.space()
		if err := h.setKey(p, key, bad); err != nil {
			return npyHeader{}, err
		}
		p.space()
		if p.eat('}') {
			break
		}
		if !p.eat(',') {
			return npyHeader{}, bad("want ',' or '}'")
		}
	}
	if p.space(); p.i != len(p.s) {
		return npyHeader{}, bad("text after the dict")
	}
	for _, k := range []string{"descr", "fortran_order", "shape"} {
		if !seen[k] {
			return npyHeader{}, bad("no '" + k + "'")
		}
	}
	if err := h.setCount(); err != nil {
		return npyHeader{}, err
	}
	return h, nil
}

// setKey reads the value of the dict's key at p: descr, fortran_order or
// shape. bad makes the error of a value it cannot read, or of another key.
func (h *npyHeader) setKey(p *pyLit, key string, bad func(why string) error) error {
	switch key {
	case "descr":
		d, ok := p.str()
		if !ok {
			return bad("'descr' is not a string: structured dtypes are not supported")
		}
		return h.setDescr(d)
	case "fortran_order":
		switch {
		case p.word("True"):
			h.fortran = true
		case p.word("False"):
		default:
			return bad("'fortran_order' must be True or False")
		}
	case "shape":
		shape, ok := p.tuple()
		if !ok {
			return bad("'shape' must be a tuple of integers >= 0")
		}
		h.shape = shape
	default:
		return bad("unknown key '" + key + "'")
	}
	return nil
}

// setCount sets h.count, the values of h.shape, refusing a shape of more
// than MaxNPYBytes bytes (checked before each product, which therefore
// cannot overflow).
func (h *npyHeader) setCount() error {
	h.count = 1
	for _, d := range h.shape {
		if d != 0 && h.count > MaxNPYBytes/int64(h.size)/int64(d) {
			return malformedf("shape %s: more than %d bytes of data", shapeString(h.shape), int64(MaxNPYBytes))
		}
		h.count *= int64(d)
	}
	return nil
}

// setDescr reads a dtype string like <f4 or |u1.
func (h *npyHeader) setDescr(d string) error {
	want := "a little- or big-endian number: <f4, <f8, |u1, |i1, <i2..<i8, <u2..<u8 or |b1"
	if len(d) < 3 {
		return malformedf("dtype '%s', want %s", d, want)
	}
	h.descr = d
	switch d[0] {
	case '<', '|', '=': // '=' is native: little-endian on every platform Go runs this on
		h.order = binary.LittleEndian
	case '>':
		h.order = binary.BigEndian
	default:
		return malformedf("dtype '%s', want %s", d, want)
	}
	size, err := strconv.Atoi(d[2:])
	if err != nil {
		return malformedf("dtype '%s', want %s", d, want)
	}
	h.kind, h.size = d[1], size
	ok := false
	switch h.kind {
	case 'f':
		ok = size == 4 || size == 8
	case 'i', 'u':
		ok = size == 1 || size == 2 || size == 4 || size == 8
	case 'b':
		ok = size == 1
	}
	if !ok {
		return malformedf("dtype '%s', want %s", d, want)
	}
	return nil
}

// pyLit scans the Python literals of a .npy header.
type pyLit struct {
	s string
	i int
}

func (p *pyLit) space() {
	for p.i < len(p.s) && (p.s[p.i] == ' ' || p.s[p.i] == '\t') {
		p.i++
	}
}

func (p *pyLit) eat(c byte) bool {
	if p.i < len(p.s) && p.s[p.i] == c {
		p.i++
		return true
	}
	return false
}

func (p *pyLit) word(w string) bool {
	if strings.HasPrefix(p.s[p.i:], w) {
		p.i += len(w)
		return true
	}
	return false
}

// str reads a quoted string without escapes (dtype strings and keys have
// none).
func (p *pyLit) str() (string, bool) {
	if p.i >= len(p.s) || (p.s[p.i] != '\'' && p.s[p.i] != '"') {
		return "", false
	}
	q := p.s[p.i]
	end := strings.IndexByte(p.s[p.i+1:], q)
	if end < 0 {
		return "", false
	}
	v := p.s[p.i+1 : p.i+1+end]
	if strings.ContainsRune(v, '\\') {
		return "", false
	}
	p.i += end + 2
	return v, true
}

// tuple reads (), (3,) or (3, 4) of integers >= 0, allowing Python 2's L
// suffix.
func (p *pyLit) tuple() ([]int, bool) {
	if !p.eat('(') {
		return nil, false
	}
	shape := []int{}
	for {
		p.space()
		if p.eat(')') {
			return shape, true
		}
		j := p.i
		for j < len(p.s) && p.s[j] >= '0' && p.s[j] <= '9' {
			j++
		}
		n, err := strconv.ParseInt(p.s[p.i:j], 10, 64)
		if err != nil {
			return nil, false
		}
		shape = append(shape, int(n))
		p.i = j
		p.eat('L')
		p.space()
		if p.eat(')') {
			return shape, true
		}
		if !p.eat(',') {
			return nil, false
		}
	}
}

// quoteShort quotes s, cut to 80 bytes, for an error line.
func quoteShort(s string) string {
	s = strings.TrimRight(s, " \n")
	if len(s) > 80 {
		return strconv.Quote(s[:80]) + "..."
	}
	return strconv.Quote(s)
}

// npyArray is a decoded numeric array: its shape and its values, row-major
// (C order) whatever the file's order.
type npyArray struct {
	shape []int
	descr string
	// floats holds the values of a float or integer array converted to
	// float32 (features); ints those of an integer array (labels). Only
	// the one asked for is set.
	floats []float32
	ints   []int64
}

// want says what an array must be and how much of it to keep.
type arrayWant struct {
	// labels asks for integers (a 1-D array, or n x 1) instead of floats
	// (a 1-D array of n scalars, or n x d1 x ... flattened to rows).
	labels bool
	// rows > 0 keeps the first rows rows only (a limit); 0 keeps all.
	rows int
	// size, when >= 0, is the bytes the stream holds after the header
	// (the file's size less the header, an npz entry's declared size).
	size int64
}

// readNPY decodes one .npy stream from r (a header, then the data).
// Floats must be finite (in float32 too); labels must be integers. Errors are
// one line that does not name the file. It allocates nothing beyond the
// header's claim, and checks that claim against want.size first when known.
func readNPY(r io.Reader, want arrayWant) (*npyArray, error) {
	h, err := readNPYHeader(r)
	if err != nil {
		return nil, err
	}
	return readNPYData(r, h, want)
}

// readNPYData decodes the data of a .npy stream from r, after its header
// h, as readNPY describes.
func readNPYData(r io.Reader, h npyHeader, want arrayWant) (*npyArray, error) {
	if err := h.checkSize(want.size); err != nil {
		return nil, err
	}
	n, cols, err := h.rowsCols(want.labels)
	if err != nil {
		return nil, err
	}
	a := &npyArray{shape: h.shape, descr: h.descr}
	rows := n
	if want.rows > 0 && want.rows < n && !h.fortran {
		rows = want.rows // the rest is not read
	}
	count := int64(rows) * int64(cols)
	if cols == 0 || n == 0 {
		count = 0
	}
	if want.labels {
		a.ints = make([]int64, count)
	} else {
		a.floats = make([]float32, count)
	}
	br := bufio.NewReaderSize(r, 1<<16)
	if err := a.readElements(br, h, count, want.labels); err != nil {
		return nil, err
	}
	if count < h.count {
		return a, nil // a limit: the rest is not read
	}
	if want.rows > 0 && want.rows < n { // Fortran order: all was read
		a.floats = a.floats[:min(len(a.floats), want.rows*cols)]
		a.ints = a.ints[:min(len(a.ints), want.rows*cols)]
	}
	// Nothing may follow the data.
	if _, err := br.ReadByte(); err == nil {
		return nil, malformedf("data after the %d bytes of shape %s of %s (a corrupt header?)", h.bytes(), shapeString(h.shape), h.descr)
	} else if !errors.Is(err, io.EOF) {
		return nil, err
	}
	return a, nil
}

// checkSize checks the header's claim against size, arrayWant.size: the
// data must fill the bytes after the header exactly (size < 0: unknown,
// nothing to check).
func (h npyHeader) checkSize(size int64) error {
	if size < 0 {
		return nil
	}
	data := size - h.headerLen
	switch {
	case data < h.bytes():
		return malformedf("truncated: shape %s of %s needs %d bytes of data, the file holds %d", shapeString(h.shape), h.descr, h.bytes(), max(data, 0))
	case data > h.bytes():
		return malformedf("%d bytes after the data of shape %s of %s (a corrupt header?)", data-h.bytes(), shapeString(h.shape), h.descr)
	}
	return nil
}

// rowsCols returns the examples (n, the first dimension) and the values
// per example (cols, the product of the others) of the array, which must
// be one of examples: of labels (integers, shape (n,) or (n, 1)) if labels
// is set, else of numbers.
func (h npyHeader) rowsCols(labels bool) (n, cols int, err error) {
	if len(h.shape) == 0 {
		return 0, 0, malformedf("a scalar (shape ()), want an array of examples")
	}
	n = h.shape[0]
	cols = 1
	if n > 0 {
		cols = int(h.count / int64(n))
	} else {
		for _, d := range h.shape[1:] {
			cols *= d
		}
	}
	if labels {
		if len(h.shape) > 2 || (len(h.shape) == 2 && h.shape[1] != 1) {
			return 0, 0, malformedf("shape %s, want labels of shape (n,) or (n, 1)", shapeString(h.shape))
		}
		if h.kind != 'i' && h.kind != 'u' {
			return 0, 0, malformedf("dtype '%s', want integer labels (|u1, <i8, ...)", h.descr)
		}
	} else if h.kind == 'b' {
		return 0, 0, malformedf("dtype '%s' (bool), want numbers (<f4, <f8, |u1, ...)", h.descr)
	}
	return n, cols, nil
}

// readElements reads the first count elements of the array from br into
// a.ints (labels) or a.floats, in C order whatever the file's order;
// floats must be finite.
func (a *npyArray) readElements(br *bufio.Reader, h npyHeader, count int64, labels bool) error {
	// Elements go to dst[place(k)]: k itself in C order; for Fortran
	// order, the C index of the k-th column-major element.
	place := func(k int64) int64 { return k }
	if h.fortran && len(h.shape) > 1 {
		place = fortranPlace(h.shape)
	}
	var buf [8]byte
	for k := range count {
		if _, err := io.ReadFull(br, buf[:h.size]); err != nil {
			if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
				return malformedf("truncated: shape %s of %s needs %d bytes of data, the file ends within element %d", shapeString(h.shape), h.descr, h.bytes(), k)
			}
			return err
		}
		at := place(k)
		if labels {
			a.ints[at] = h.int(buf[:h.size])
			continue
		}
		v := h.float(buf[:h.size])
		if math.IsNaN(float64(v)) || math.IsInf(float64(v), 0) {
			return malformedf("value [%s] is %v, want finite numbers%s", index(h.shape, at), h.float64(buf[:h.size]), f32note(h))
		}
		a.floats[at] = v
	}
	return nil
}

// f32note explains why a finite float64 is not finite: it is beyond float32.
func f32note(h npyHeader) string {
	if h.kind == 'f' && h.size == 8 {
		return " (a float64 beyond float32's range reads as infinite)"
	}
	return ""
}

// index writes the multi-index of C-order element at of shape: 12, 3.
func index(shape []int, at int64) string {
	idx := make([]string, len(shape))
	for i := len(shape) - 1; i >= 0; i-- {
		d := int64(max(shape[i], 1))
		idx[i] = strconv.FormatInt(at%d, 10)
		at /= d
	}
	return strings.Join(idx, ", ")
}

// fortranPlace returns the C-order index of the k-th element stored in
// Fortran (column-major) order.
func fortranPlace(shape []int) func(k int64) int64 {
	strides := make([]int64, len(shape)) // C strides
	s := int64(1)
	for i := len(shape) - 1; i >= 0; i-- {
		strides[i] = s
		s *= int64(shape[i])
	}
	return func(k int64) int64 {
		var c int64
		for i, d := range shape { // the first index varies fastest
			c += (k % int64(d)) * strides[i]
			k /= int64(d)
		}
		return c
	}
}

// float converts one element to float32.
func (h npyHeader) float(b []byte) float32 {
	switch h.kind {
	case 'f':
		if h.size == 4 {
			return math.Float32frombits(h.order.Uint32(b))
		}
		return float32(math.Float64frombits(h.order.Uint64(b)))
	case 'u':
		return float32(h.uint(b))
	default:
		return float32(h.int(b))
	}
}

// float64 is the element as written, for messages.
func (h npyHeader) float64(b []byte) float64 {
	if h.kind == 'f' && h.size == 8 {
		return math.Float64frombits(h.order.Uint64(b))
	}
	return float64(h.float(b))
}

func (h npyHeader) uint(b []byte) uint64 {
	switch h.size {
	case 1:
		return uint64(b[0])
	case 2:
		return uint64(h.order.Uint16(b))
	case 4:
		return uint64(h.order.Uint32(b))
	}
	return h.order.Uint64(b)
}

// int converts an integer element to int64; a uint64 above MaxInt64 becomes
// -1, which no label range admits.
func (h npyHeader) int(b []byte) int64 {
	if h.kind == 'u' {
		u := h.uint(b)
		if u > math.MaxInt64 {
			return -1
		}
		return int64(u)
	}
	switch h.size {
	case 1:
		return int64(int8(b[0]))
	case 2:
		return int64(int16(h.order.Uint16(b)))
	case 4:
		return int64(int32(h.order.Uint32(b)))
	}
	return int64(h.order.Uint64(b))
}

// WriteNPY writes a .npy array (format 1.0, C order, little-endian) of the
// given shape to w: float32 values as <f4, int64 values as <i8. The values
// must number the product of shape.
func WriteNPY[T float32 | int64](w io.Writer, shape []int, values []T) error {
	n := 1
	for _, d := range shape {
		n *= d
	}
	if n != len(values) {
		return fmt.Errorf("data: WriteNPY: %d values for shape %s", len(values), shapeString(shape))
	}
	descr := "<f4"
	if _, ok := any(values).([]int64); ok {
		descr = "<i8"
	}
	dict := fmt.Sprintf("{'descr': '%s', 'fortran_order': False, 'shape': %s, }", descr, shapeString(shape))
	// Pad so that the data starts at a multiple of 64, as NumPy does.
	total := 10 + len(dict) + 1
	pad := (64 - total%64) % 64
	hdr := make([]byte, 0, total+pad)
	hdr = append(hdr, npyMagic...)
	hdr = append(hdr, 1, 0)
	hdr = binary.LittleEndian.AppendUint16(hdr, uint16(len(dict)+pad+1))
	hdr = append(hdr, dict...)
	hdr = append(hdr, strings.Repeat(" ", pad)...)
	hdr = append(hdr, '\n')
	bw := bufio.NewWriterSize(w, 1<<16)
	if _, err := bw.Write(hdr); err != nil {
		return err
	}
	var b [8]byte
	for _, v := range values {
		switch x := any(v).(type) {
		case float32:
			binary.LittleEndian.PutUint32(b[:4], math.Float32bits(x))
			_, _ = bw.Write(b[:4])
		case int64:
			binary.LittleEndian.PutUint64(b[:], uint64(x))
			_, _ = bw.Write(b[:])
		}
	}
	return bw.Flush()
}
