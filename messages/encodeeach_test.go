package messages

import (
	"bytes"
	"errors"
	"hash/crc32"
	"math"
	"math/rand/v2"
	"reflect"
	"strings"
	"sync"
	"testing"
)

// encodeEachParts returns copies of the fragments EncodeEach emits,
// checking on the way that each fits maxPart and that its capacity ends
// where it does, so that an emit that appends cannot write over the next.
func encodeEachParts(t *testing.T, m Message, maxPart int, id uint64) [][]byte {
	t.Helper()
	var parts [][]byte
	err := EncodeEach(m, maxPart, id, func(part []byte) error {
		if len(part) > maxPart {
			t.Errorf("part %d has %d bytes; want <= %d", len(parts), len(part), maxPart)
		}
		if cap(part) != len(part) {
			t.Errorf("part %d has capacity %d, length %d; want them equal", len(parts), cap(part), len(part))
		}
		parts = append(parts, bytes.Clone(part))
		return nil
	})
	if err != nil {
		t.Fatalf("EncodeEach(%v, %d) error: %v", m.Kind(), maxPart, err)
	}
	return parts
}

// maxPartsFor returns part limits that cut a payload of n bytes every way
// that matters: into one part with room to spare, one exactly full, parts
// of one byte, an exact multiple of equal parts, and parts with a short
// last one.
func maxPartsFor(n int) []int {
	ps := []int{FragmentHeaderSize + 1, FragmentHeaderSize + 7, FragmentHeaderSize + 64, 1000, DefaultMaxPart,
		FragmentHeaderSize + n, FragmentHeaderSize + n + 1, FragmentHeaderSize + max(1, n-1)}
	for d := 2; d < n; d++ {
		if n%d == 0 {
			ps = append(ps, FragmentHeaderSize+n/d)
			break
		}
	}
	return ps
}

// TestEncodeEachMatchesSplit checks that EncodeEach emits, byte for byte,
// the fragments that splitting Encode's output gives, for messages of
// every kind and a long window, cut every way. The cases run one after the
// other, long after short and back, so that pooled buffers of every size
// are reused.
func TestEncodeEachMatchesSplit(t *testing.T) {
	t.Parallel()
	msgs := append(testMessages(), benchChunk(), testChunk(4, 3, 1), testWeights(30, 20))
	for i, m := range msgs {
		enc, err := Encode(m)
		if err != nil {
			t.Fatal(err)
		}
		for _, maxPart := range maxPartsFor(len(enc)) {
			if maxPart < 1000 && len(enc) > 1<<16 {
				continue // a million tiny parts prove nothing more
			}
			id := uint64(i)<<32 | uint64(maxPart)
			want := Split(enc, maxPart, id)
			got := encodeEachParts(t, m, maxPart, id)
			if len(got) != len(want) {
				t.Errorf("%v of %d bytes, maxPart %d: EncodeEach gave %d parts; Split %d", m.Kind(), len(enc), maxPart, len(got), len(want))
				continue
			}
			for j := range want {
				if !bytes.Equal(got[j], want[j]) {
					t.Errorf("%v of %d bytes, maxPart %d: part %d of %d differs from Split's", m.Kind(), len(enc), maxPart, j, len(want))
				}
			}
			parts, err := EncodeParts(m, maxPart, id)
			if err != nil || !reflect.DeepEqual(parts, want) {
				t.Errorf("%v of %d bytes, maxPart %d: EncodeParts differs from Split (error %v)", m.Kind(), len(enc), maxPart, err)
			}
		}
	}
}

// TestEncodeEachConcurrent encodes from several goroutines at once, which
// share the pool of buffers; run with -race.
func TestEncodeEachConcurrent(t *testing.T) {
	t.Parallel()
	var wg sync.WaitGroup
	for g := range uint64(4) {
		wg.Go(func() {
			r := NewReassembler(ReassemblerConfig{})
			for n := range uint64(10) {
				m := testChunk(g*100+n, 64, 8+int(g), 8)
				var got Message
				err := EncodeEach(m, FragmentHeaderSize+1000+int(n), g<<32|n, func(part []byte) error {
					payload, err := r.Add(part)
					if err == nil && payload != nil {
						got, err = Decode(payload)
					}
					return err
				})
				if err != nil {
					t.Error(err)
					return
				}
				if !reflect.DeepEqual(got, m) {
					t.Errorf("goroutine %d message %d: reassembled chunk differs from the one sent", g, n)
				}
			}
		})
	}
	wg.Wait()
}

func TestEncodeEachEmitError(t *testing.T) {
	t.Parallel()
	stop := errors.New("connection lost")
	calls := 0
	err := EncodeEach(testChunk(2, 64, 16), FragmentHeaderSize+100, 1, func(part []byte) error {
		calls++
		if calls == 2 {
			return stop
		}
		return nil
	})
	if err != stop {
		t.Errorf("EncodeEach() = %v; want emit's own error %v", err, stop)
	}
	if calls != 2 {
		t.Errorf("emit called %d times; want 2, none after its error", calls)
	}
}

func TestEncodeEachErrors(t *testing.T) {
	t.Parallel()
	var nilChunk *Chunk
	tests := []struct {
		name    string
		m       Message
		maxPart int
		want    error
	}{
		{"maxPart is the header size", &Stop{}, FragmentHeaderSize, ErrInvalid},
		{"nil message", nil, DefaultMaxPart, ErrInvalid},
		{"nil chunk", nilChunk, DefaultMaxPart, ErrInvalid},
		{"bad weights", &Weights{RBM: 1}, DefaultMaxPart, ErrShape},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			err := EncodeEach(tt.m, tt.maxPart, 1, func([]byte) error {
				t.Errorf("emit called for a message that cannot be sent")
				return nil
			})
			if !errors.Is(err, tt.want) {
				t.Errorf("EncodeEach() = %v; want %v", err, tt.want)
			}
		})
	}
}

// TestPayloadChecksum checks that finishing the trailer's checksum gives
// that of the whole encoding.
func TestPayloadChecksum(t *testing.T) {
	t.Parallel()
	for _, m := range testMessages() {
		enc, err := Encode(m)
		if err != nil {
			t.Fatal(err)
		}
		if got, want := payloadChecksum(enc), crc32.Checksum(enc, castagnoli); got != want {
			t.Errorf("payloadChecksum(%v) = %08x; want %08x", m.Kind(), got, want)
		}
	}
}

// TestFloat32sPortable checks that the copy of float32 memory that
// little-endian hosts use gives the bytes of the loop that others use, NaN
// payloads and signed zeros included.
func TestFloat32sPortable(t *testing.T) {
	t.Parallel()
	if !littleEndian {
		t.Skip("big-endian host: putFloat32s is the portable loop")
	}
	rng := rand.New(rand.NewPCG(9, 9))
	special := []float32{0, float32(math.Copysign(0, -1)), float32(math.Inf(1)), float32(math.Inf(-1)),
		math.Float32frombits(0x7fc00001), math.Float32frombits(0xffbfffff), math.SmallestNonzeroFloat32, math.MaxFloat32}
	for _, n := range []int{0, 1, 3, 4, 5, 8, 9, 1001} {
		v := make([]float32, n)
		for i := range v {
			if i < len(special) {
				v[i] = special[i]
			} else {
				v[i] = float32(rng.NormFloat64())
			}
		}
		got, want := make([]byte, 4*n), make([]byte, 4*n)
		putFloat32s(got, v)
		putFloat32sPortable(want, v)
		if !bytes.Equal(got, want) {
			t.Errorf("putFloat32s(%d values) differs from the portable loop", n)
		}
		back, wantBack := make([]float32, n), make([]float32, n)
		getFloat32s(back, want)
		getFloat32sPortable(wantBack, want)
		for i := range back {
			if math.Float32bits(back[i]) != math.Float32bits(v[i]) || math.Float32bits(wantBack[i]) != math.Float32bits(v[i]) {
				t.Errorf("getFloat32s(%d values)[%d] = %08x, portable %08x; want %08x", n, i,
					math.Float32bits(back[i]), math.Float32bits(wantBack[i]), math.Float32bits(v[i]))
			}
		}
	}
}

// TestReassemblerFresh checks that a payload shares no memory with the
// fragments it came in, which the caller (a NATS handler) may reuse.
func TestReassemblerFresh(t *testing.T) {
	t.Parallel()
	for _, n := range []int{0, 10, 25} {
		payload := bytes.Repeat([]byte("x"), n)
		parts := Split(payload, FragmentHeaderSize+10, uint64(n))
		var r Reassembler
		var got []byte
		for _, p := range parts {
			b, err := r.Add(p)
			if err != nil {
				t.Fatal(err)
			}
			if b != nil {
				got = b
			}
		}
		if got == nil {
			t.Fatalf("%d-byte payload: never completed", n)
		}
		for _, p := range parts {
			for i := range p {
				p[i] = 0
			}
		}
		if !bytes.Equal(got, payload) {
			t.Errorf("%d-byte payload changed with the fragments it came in", n)
		}
	}
}

// TestReassemblerEvictionText checks the eviction error's count of the
// parts that had arrived.
func TestReassemblerEvictionText(t *testing.T) {
	t.Parallel()
	r := NewReassembler(ReassemblerConfig{MaxMessages: 1})
	m1 := Split(bytes.Repeat([]byte("a"), 30), FragmentHeaderSize+10, 1)
	m2 := Split(bytes.Repeat([]byte("b"), 30), FragmentHeaderSize+10, 2)
	for _, f := range [][]byte{m1[2], m1[0], m1[0]} {
		if _, err := r.Add(f); err != nil {
			t.Fatal(err)
		}
	}
	_, err := r.Add(m2[1])
	if !errors.Is(err, ErrEvicted) || !strings.Contains(err.Error(), "the oldest 1 with 2 of 3 parts") {
		t.Errorf("Add(second message) = %v; want %v, the oldest 1 with 2 of 3 parts", err, ErrEvicted)
	}
	want := ReassemblerStats{Duplicates: 1, Evicted: 1, InFlight: 1, Reserved: 30 + 3*partOverhead, Peak: 30 + 3*partOverhead}
	if s := r.Stats(); s != want {
		t.Errorf("Stats() = %+v; want %+v", s, want)
	}
	if got, err := r.Add(m1[1]); got != nil || err != nil {
		t.Errorf("Add(part of evicted message) = %q, %v; want nil, nil", got, err)
	}
	for _, f := range [][]byte{m2[2], m2[0]} {
		got, err := r.Add(f)
		if err != nil {
			t.Fatal(err)
		}
		if got != nil && !bytes.Equal(got, bytes.Repeat([]byte("b"), 30)) {
			t.Errorf("Add() = %q; want the second payload", got)
		}
	}
	if s := r.Stats(); s.Completed != 1 || s.Stale != 1 || s.InFlight != 0 || s.Reserved != 0 {
		t.Errorf("Stats() = %+v; want 1 completed, 1 stale, nothing held", s)
	}
}
