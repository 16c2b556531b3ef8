package messages

import (
	"bytes"
	"errors"
	"reflect"
	"strings"
	"testing"
	"unsafe"
)

// floatsAt reports whether v's memory lies inside b.
func floatsAt(v []float32, b []byte) bool {
	if len(v) == 0 || len(b) == 0 {
		return false
	}
	p, lo := uintptr(unsafe.Pointer(&v[0])), uintptr(unsafe.Pointer(&b[0]))
	return p >= lo && p+4*uintptr(len(v)) <= lo+uintptr(len(b))
}

// float32Fields returns the float32 arrays of m, by field name.
func float32Fields(m Message) map[string][]float32 {
	switch m := m.(type) {
	case *Chunk:
		return map[string][]float32{"data": m.Data, "bias": m.Bias}
	case *Weights:
		return map[string][]float32{"w": m.W, "a": m.A, "b": m.B}
	case *Params:
		return map[string][]float32{"w": m.W, "a": m.A, "b": m.B}
	case *Checkpoint:
		return map[string][]float32{"w": m.W, "a": m.A, "b": m.B, "vel w": m.VelW, "vel a": m.VelA, "vel b": m.VelB}
	}
	return nil
}

// withRunID returns a copy of m, a message with a RunID, with its run ID n
// letters long, so that the fields after it move by n bytes.
func withRunID(m Message, n int) Message {
	c := reflect.New(reflect.TypeOf(m).Elem())
	c.Elem().Set(reflect.ValueOf(m).Elem())
	c.Elem().FieldByName("RunID").SetString(strings.Repeat("r", n))
	return c.Interface().(Message)
}

// TestFloat32ArraysAligned checks that every float32 array starts a
// multiple of 4 bytes into its message, whatever comes before it, so that
// DecodeOwned can hand out the payload's own memory.
func TestFloat32ArraysAligned(t *testing.T) {
	t.Parallel()
	for _, base := range []Message{testChunk(3, 5, 2, 1), testWeights(3, 2), testCheckpoint(3, 2),
		&Params{RunID: "run", RBM: 1, Round: 1, Visible: 2, Hidden: 1, Windows: 3, W: []float32{1, 2}, A: []float32{3, 4}, B: []float32{5}}} {
		for n := range 4 {
			m := withRunID(base, n)
			b, err := Encode(m)
			if err != nil {
				t.Fatalf("Encode(%v, run ID of %d) error: %v", m.Kind(), n, err)
			}
			owned := append(make([]byte, 0, len(b)), b...) // fresh: 8-aligned
			got, err := DecodeOwned(owned)
			if err != nil {
				t.Fatalf("DecodeOwned(%v, run ID of %d) error: %v", m.Kind(), n, err)
			}
			if !reflect.DeepEqual(got, m) {
				t.Errorf("DecodeOwned(%v, run ID of %d) = %+v; want %+v", m.Kind(), n, got, m)
			}
			for field, v := range float32Fields(got) {
				if len(v) == 0 {
					continue
				}
				if !floatsAt(v, owned) {
					t.Errorf("%v (run ID of %d): %s is a copy; want the payload's memory", m.Kind(), n, field)
					continue
				}
				if at := uintptr(unsafe.Pointer(&v[0])) - uintptr(unsafe.Pointer(&owned[0])); at%4 != 0 {
					t.Errorf("%v (run ID of %d): %s starts %d bytes into the message; want a multiple of 4", m.Kind(), n, field, at)
				}
			}
		}
	}
}

// TestDecodeCopies checks that Decode never shares memory with its input,
// and that DecodeOwned copies from memory that is not 4-aligned.
func TestDecodeCopies(t *testing.T) {
	t.Parallel()
	m := testChunk(1, 4, 3, 2)
	b, err := Encode(m)
	if err != nil {
		t.Fatal(err)
	}
	odd := append(make([]byte, 1, len(b)+1), b...)[1:] // 1 byte past an aligned start
	for _, tt := range []struct {
		name   string
		decode func([]byte) (Message, error)
		in     []byte
	}{
		{"Decode", Decode, append([]byte(nil), b...)},
		{"DecodeOwned unaligned", DecodeOwned, odd},
	} {
		got, err := tt.decode(tt.in)
		if err != nil {
			t.Fatalf("%s error: %v", tt.name, err)
		}
		c := got.(*Chunk)
		if floatsAt(c.Data, tt.in) || floatsAt(c.Bias, tt.in) {
			t.Errorf("%s: the chunk shares the input's memory; want copies", tt.name)
		}
		clear(tt.in)
		if !reflect.DeepEqual(c, m) {
			t.Errorf("%s after the input was cleared = %+v; want %+v", tt.name, c, m)
		}
	}
}

// TestPaddingMustBeZero checks that a float32 array's padding reads back
// only as zeros, so that a message has one encoding.
func TestPaddingMustBeZero(t *testing.T) {
	t.Parallel()
	w := coder{b: []byte{0}} // one byte into the message: the length prefix ends at 5
	v := []float32{1.5}
	w.f32s(&v, "v")
	if want := 1 + 4 + 3 + 4; len(w.b) != want || !bytes.Equal(w.b[5:8], []byte{0, 0, 0}) {
		t.Fatalf("f32s wrote % x; want %d bytes, 3 of padding at 5", w.b, want)
	}
	for _, tt := range []struct {
		pad  byte
		want error
	}{{0, nil}, {7, ErrInvalid}} {
		b := bytes.Clone(w.b)
		b[6] = tt.pad
		r := coder{reading: true, b: b[1:], read: 1}
		var got []float32
		r.f32s(&got, "v")
		if !errors.Is(r.err, tt.want) || (tt.want == nil && !reflect.DeepEqual(got, v)) {
			t.Errorf("f32s(padding byte %d) = %v, error %v; want %v, error %v", tt.pad, got, r.err, v, tt.want)
		}
	}
}

// TestAddMessage checks that a Reassembler hands out whole messages whose
// float32 arrays are the payload, and that the message's own checksum is
// still checked when the fragments' agrees with a corrupt payload.
func TestAddMessage(t *testing.T) {
	t.Parallel()
	m := testChunk(5, 16, 8, 8, 3)
	parts, err := EncodeParts(m, 97, 42)
	if err != nil {
		t.Fatal(err)
	}
	var r Reassembler
	for i, p := range parts {
		got, size, err := r.AddMessage(p)
		if err != nil {
			t.Fatalf("AddMessage(part %d) error: %v", i, err)
		}
		if i < len(parts)-1 {
			if got != nil || size != 0 {
				t.Fatalf("AddMessage(part %d of %d) = %v, %d; want nothing yet", i, len(parts), got, size)
			}
			continue
		}
		if !reflect.DeepEqual(got, m) {
			t.Errorf("AddMessage(last part) = %+v; want %+v", got, m)
		}
		if want, _ := Encode(m); size != len(want) {
			t.Errorf("AddMessage(last part) size %d; want %d", size, len(want))
		}
	}

	// A message in one fragment is decoded in place: its arrays are the
	// fragment's bytes, which AddMessage took over.
	one, err := EncodeParts(m, DefaultMaxPart, 44)
	if err != nil || len(one) != 1 {
		t.Fatalf("EncodeParts(a small chunk, 1 MiB parts) = %d parts, %v; want 1", len(one), err)
	}
	got, _, err := r.AddMessage(one[0])
	if err != nil || !reflect.DeepEqual(got, m) {
		t.Fatalf("AddMessage(the only part) = %+v, %v; want %+v", got, err, m)
	}
	data := got.(*Chunk).Data
	frag := uintptr(unsafe.Pointer(unsafe.SliceData(one[0])))
	if at := uintptr(unsafe.Pointer(&data[0])); at < frag || at >= frag+uintptr(len(one[0])) {
		t.Errorf("AddMessage(the only part): Data at %#x, outside the fragment's %d bytes at %#x; want it decoded in place", at, len(one[0]), frag)
	}
	// Add, which lets the caller reuse its fragment, copies it.
	var r3 Reassembler
	payload, err := r3.Add(one[0])
	if err != nil || &payload[0] == &one[0][FragmentHeaderSize] {
		t.Errorf("Add(the only part) = %d bytes at the fragment's own, %v; want a copy", len(payload), err)
	}

	// The trailer no longer checks, but the fragments carry the checksum of
	// the corrupt payload: only the message's own checksum can tell.
	b, err := Encode(m)
	if err != nil {
		t.Fatal(err)
	}
	b[len(b)-1] ^= 0x10
	var r2 Reassembler
	got = nil
	for _, p := range Split(b, 97, 43) {
		if got, _, err = r2.AddMessage(p); err != nil {
			break
		}
	}
	if got != nil || !errors.Is(err, ErrChecksum) {
		t.Errorf("AddMessage(a payload with a corrupt trailer) = %v, %v; want error %v", got, err, ErrChecksum)
	}
}
