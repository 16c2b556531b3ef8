package messages

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"maps"
	"reflect"
	"strings"
	"testing"
)

// unsetField returns the path of the first field of v that is zero, or of
// an element of its slices and arrays that is, or "" if every one is set.
func unsetField(v reflect.Value, path string) string {
	switch v.Kind() {
	case reflect.Pointer:
		return unsetField(v.Elem(), path)
	case reflect.Struct:
		for i := range v.NumField() {
			if p := unsetField(v.Field(i), path+"."+v.Type().Field(i).Name); p != "" {
				return p
			}
		}
		return ""
	case reflect.Slice, reflect.Array:
		if v.Len() == 0 {
			return path
		}
		for i := range v.Len() {
			if p := unsetField(v.Index(i), fmt.Sprintf("%s[%d]", path, i)); p != "" {
				return p
			}
		}
		return ""
	}
	if v.IsZero() {
		return path
	}
	return ""
}

// TestRoundTrip checks that Decode(Encode(m)) is m for the test messages,
// and that they hold, for every kind, one message with every field set, so
// that a field left out of its kind's field list would show.
func TestRoundTrip(t *testing.T) {
	t.Parallel()
	full := map[Kind]bool{}
	sparse := map[Kind]string{}
	for i, m := range testMessages() {
		if p := unsetField(reflect.ValueOf(m), m.Kind().String()); p == "" {
			full[m.Kind()] = true
		} else {
			sparse[m.Kind()] = p
		}
		t.Run(fmt.Sprintf("%02d-%v", i, m.Kind()), func(t *testing.T) {
			t.Parallel()
			b, err := Encode(m)
			if err != nil {
				t.Fatalf("Encode(%v) error: %v", m.Kind(), err)
			}
			got, err := Decode(b)
			if err != nil {
				t.Fatalf("Decode(Encode(%v)) error: %v", m.Kind(), err)
			}
			if !reflect.DeepEqual(got, m) {
				t.Errorf("Decode(Encode(m)) = %+v; want %+v", got, m)
			}
		})
	}
	for k := range kindEnd {
		if k.valid() && !full[k] {
			t.Errorf("testMessages has no %v with every field set (%s is zero)", k, sparse[k])
		}
	}
}

// fill sets every field of v, and every element of its slices (made of
// length 2) and arrays, to a value no other field has, n counting them.
func fill(v reflect.Value, n *int) {
	*n++
	switch v.Kind() {
	case reflect.Pointer:
		fill(v.Elem(), n)
	case reflect.Struct:
		for i := range v.NumField() {
			fill(v.Field(i), n)
		}
	case reflect.Slice:
		v.Set(reflect.MakeSlice(v.Type(), 2, 2))
		fallthrough
	case reflect.Array:
		for i := range v.Len() {
			fill(v.Index(i), n)
		}
	case reflect.String:
		v.SetString(fmt.Sprintf("field %d", *n))
	case reflect.Bool:
		v.SetBool(true)
	case reflect.Int, reflect.Int64:
		v.SetInt(int64(*n))
	case reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		v.SetUint(uint64(*n))
	case reflect.Float32, reflect.Float64:
		v.SetFloat(float64(*n) + 0.5)
	default:
		panic(fmt.Sprintf("fill: no value for a %v", v.Type()))
	}
}

// TestFieldsSymmetric proves each kind's field list symmetric, whatever
// fields a kind gains later: every field set to a value of its own is
// written and read back exactly, below validation, so a field listed
// twice, left out, or read into another would show.
func TestFieldsSymmetric(t *testing.T) {
	t.Parallel()
	for k := range kindEnd {
		if !k.valid() {
			continue
		}
		t.Run(k.String(), func(t *testing.T) {
			t.Parallel()
			want := newMessage(k)
			var n int
			fill(reflect.ValueOf(want), &n)
			if c, ok := want.(*Chunk); ok {
				// A narrow encoding the filled values (n + 0.5) travel
				// in exactly: a field's number is no encoding.
				c.Encoding = EncodingFloat16
			}
			w := coder{}
			want.fields(&w)
			if w.err != nil {
				t.Fatalf("writing %v: %v", k, w.err)
			}
			got := newMessage(k)
			r := coder{reading: true, b: w.b}
			got.fields(&r)
			if r.err != nil || len(r.b) != 0 {
				t.Fatalf("reading %v: %v, %d bytes left; want nil, 0", k, r.err, len(r.b))
			}
			if !reflect.DeepEqual(got, want) {
				t.Errorf("read %+v; want %+v", got, want)
			}
			// Every byte written is read: a truncated body always fails.
			for cut := range len(w.b) {
				r := coder{reading: true, b: w.b[:cut]}
				newMessage(k).fields(&r)
				if !errors.Is(r.err, ErrTruncated) {
					t.Fatalf("reading %v cut to %d of %d bytes: %v; want %v", k, cut, len(w.b), r.err, ErrTruncated)
				}
			}
		})
	}
}

// TestRetiredKinds checks that the numbers of the kinds dropped in format
// 3, end-of-epoch (4) and heartbeat (10), are kept free and rejected.
func TestRetiredKinds(t *testing.T) {
	t.Parallel()
	if kindRetired4 != 4 || kindRetired10 != 10 || KindEndOfStream != 5 || KindStop != 11 || KindAdmission != 14 {
		t.Fatalf("kind numbers moved: retired %d and %d, end-of-stream %d, stop %d, admission %d; want 4, 10, 5, 11, 14",
			kindRetired4, kindRetired10, KindEndOfStream, KindStop, KindAdmission)
	}
	// Their format 2 bodies: run id, rbm, epoch, windows; run id, name,
	// unix nano.
	endOfEpoch := binary.LittleEndian.AppendUint32(nil, 1)
	endOfEpoch = append(endOfEpoch, 'r')
	endOfEpoch = binary.LittleEndian.AppendUint64(endOfEpoch, 1)
	endOfEpoch = binary.LittleEndian.AppendUint64(endOfEpoch, 3)
	endOfEpoch = binary.LittleEndian.AppendUint64(endOfEpoch, 96)
	heartbeat := append(binary.LittleEndian.AppendUint32(nil, 1), 'r')
	heartbeat = append(binary.LittleEndian.AppendUint32(heartbeat, 6), "master"...)
	heartbeat = binary.LittleEndian.AppendUint64(heartbeat, 1735732800123456789)
	for _, tt := range []struct {
		k    Kind
		body []byte
	}{{4, endOfEpoch}, {10, heartbeat}, {4, nil}, {10, nil}} {
		m, err := Decode(frame(tt.k, tt.body))
		if !errors.Is(err, ErrKind) || m != nil {
			t.Errorf("Decode(kind %d, %d-byte body) = %v, %v; want error %v", tt.k, len(tt.body), m, err, ErrKind)
		}
	}
}

// statusWithCounts returns the body of a Status whose Rejected list holds
// n counts, 1 to n.
func statusWithCounts(n int) []byte {
	b := body(&Status{Slave: "slave-2", State: StateTraining})
	b = b[:len(b)-4-8*len(Rejections{})]
	b = binary.LittleEndian.AppendUint32(b, uint32(n))
	for i := range n {
		b = binary.LittleEndian.AppendUint64(b, uint64(i+1))
	}
	return b
}

// TestStatusRejectedLength checks that a Status carrying fewer or more
// rejection counts than this version knows reasons decodes, with the
// missing counts zero and the extra ones dropped, and that Encode writes
// one count per reason.
func TestStatusRejectedLength(t *testing.T) {
	t.Parallel()
	known := len(Rejections{})
	tests := []struct {
		n    int
		want Rejections
	}{
		{0, Rejections{}},
		{2, Rejections{1, 2}},
		{known, Rejections{1, 2, 3, 4, 5, 6}},
		{known + 3, Rejections{1, 2, 3, 4, 5, 6}},
		{maxRejectReasons, Rejections{1, 2, 3, 4, 5, 6}},
	}
	for _, tt := range tests {
		in := frame(KindStatus, statusWithCounts(tt.n))
		m, err := Decode(in)
		if err != nil {
			t.Errorf("Decode(status with %d counts) error: %v", tt.n, err)
			continue
		}
		if got := m.(*Status).Rejected; got != tt.want {
			t.Errorf("Decode(status with %d counts).Rejected = %v; want %v", tt.n, got, tt.want)
		}
		again, err := Encode(m)
		if err != nil {
			t.Fatal(err)
		}
		if want := len(in) + 8*(known-tt.n); len(again) != want {
			t.Errorf("Encode(status read from %d counts) = %d bytes; want %d, %d counts", tt.n, len(again), want, known)
		}
	}
}

func TestReasonOf(t *testing.T) {
	t.Parallel()
	tests := []struct {
		err  error
		want RejectReason
	}{
		{ErrMagic, RejectCorrupt}, {ErrVersion, RejectCorrupt}, {ErrKind, RejectCorrupt},
		{ErrChecksum, RejectCorrupt}, {ErrTruncated, RejectCorrupt}, {ErrTrailing, RejectCorrupt},
		{ErrFragment, RejectCorrupt}, {ErrTooLarge, RejectCorrupt}, {ErrEvicted, RejectCorrupt},
		{ErrMismatch, RejectForeign}, {ErrShape, RejectShape}, {ErrInvalid, RejectShape},
		{io.ErrUnexpectedEOF, RejectCorrupt},
		{fmt.Errorf("link 2: %w", testChunk(1, 4, 2).Check("other-run", 1, 4)), RejectForeign},
		{testChunk(1, 4, 2).Check("quickstart-20250101T120000", 1, 5), RejectShape},
		{func() error { _, err := Decode([]byte("garbage!garbage!")); return err }(), RejectCorrupt},
	}
	for _, tt := range tests {
		if got := ReasonOf(tt.err); got != tt.want {
			t.Errorf("ReasonOf(%v) = %v; want %v", tt.err, got, tt.want)
		}
	}
}

func TestRejections(t *testing.T) {
	t.Parallel()
	var r Rejections
	if r.Total() != 0 {
		t.Errorf("Rejections{}.Total() = %d; want 0", r.Total())
	}
	for _, reason := range []RejectReason{RejectCorrupt, RejectGap, RejectGap, RejectStale, ReasonOf(ErrMismatch)} {
		r.Add(reason)
	}
	if want := (Rejections{RejectCorrupt: 1, RejectForeign: 1, RejectGap: 2, RejectStale: 1}); r != want {
		t.Errorf("Rejections = %v; want %v", r, want)
	}
	if got := r.Total(); got != 5 {
		t.Errorf("Total() = %d; want 5", got)
	}
	if got, want := r.String(), "corrupt=1 foreign=1 gap=2 stale=1"; got != want {
		t.Errorf("String() = %q; want %q", got, want)
	}
	if got := (Rejections{}).String(); got != "none" {
		t.Errorf("Rejections{}.String() = %q; want %q", got, "none")
	}
	if got, want := r.ByReason(), map[string]uint64{"corrupt": 1, "foreign": 1, "gap": 2, "stale": 1}; !maps.Equal(got, want) {
		t.Errorf("ByReason() = %v; want %v", got, want)
	}
	if got := (Rejections{}).ByReason(); got != nil {
		t.Errorf("Rejections{}.ByReason() = %v; want nil (absent from JSON)", got)
	}
	defer func() {
		if p := recover(); p == nil || !strings.Contains(fmt.Sprint(p), "RejectReason(6)") {
			t.Errorf("Add(RejectReason(6)) panicked with %v; want a panic naming the reason", p)
		}
	}()
	r.Add(rejectEnd)
}

func TestEnumStrings(t *testing.T) {
	t.Parallel()
	tests := []struct {
		v    fmt.Stringer
		want string
	}{
		{Admitted, "admitted"}, {Full, "full"}, {Refused, "refused"}, {InUse, "in use"}, {Outcome(0), "Outcome(0)"}, {outcomeEnd, "Outcome(5)"},
		{RejectCorrupt, "corrupt"}, {RejectForeign, "foreign"}, {RejectShape, "shape"},
		{RejectDuplicate, "duplicate"}, {RejectGap, "gap"}, {RejectStale, "stale"}, {rejectEnd, "RejectReason(6)"},
		{EncodingFloat32, "float32"}, {EncodingFloat16, "float16"}, {EncodingUint8, "uint8"}, {EncodingBits, "bits"}, {encodingEnd, "Encoding(4)"},
	}
	for _, tt := range tests {
		if got := tt.v.String(); got != tt.want {
			t.Errorf("%T(%v).String() = %q; want %q", tt.v, tt.v, got, tt.want)
		}
	}
}
