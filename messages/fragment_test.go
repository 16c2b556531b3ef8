package messages

import (
	"bytes"
	"errors"
	"fmt"
	"hash/crc32"
	"math"
	"math/rand/v2"
	"reflect"
	"sync"
	"testing"
)

// TestBigChunkParts sends a K=10, B=256, H=1024 window the way the slaves
// do: split into 1 MiB parts that arrive shuffled, one of them twice.
func TestBigChunkParts(t *testing.T) {
	t.Parallel()
	batches := make([]int, 10)
	for i := range batches {
		batches[i] = 256
	}
	c := testChunk(11, 1024, batches...)
	parts, err := EncodeParts(c, DefaultMaxPart, 1<<32|47)
	if err != nil {
		t.Fatal(err)
	}
	if len(parts) != 11 {
		t.Errorf("EncodeParts(2560x1024 chunk) gave %d parts; want 11", len(parts))
	}
	for i, p := range parts {
		if len(p) > DefaultMaxPart {
			t.Errorf("part %d has %d bytes; want <= %d", i, len(p), DefaultMaxPart)
		}
	}
	rng := rand.New(rand.NewPCG(3, 3))
	rng.Shuffle(len(parts), func(i, j int) { parts[i], parts[j] = parts[j], parts[i] })
	parts = append(parts[:5:5], append([][]byte{parts[2]}, parts[5:]...)...)

	r := NewReassembler(ReassemblerConfig{})
	var payload []byte
	for i, p := range parts {
		got, err := r.Add(p)
		if err != nil {
			t.Fatalf("Add(part %d) error: %v", i, err)
		}
		if got != nil {
			if payload != nil {
				t.Fatalf("Add(part %d) completed the payload twice", i)
			}
			if i != len(parts)-1 {
				t.Fatalf("Add(part %d of %d) completed the payload early", i, len(parts))
			}
			payload = got
		}
	}
	m, err := Decode(payload)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(m, c) {
		t.Errorf("reassembled chunk differs from the one sent")
	}
	s := r.Stats()
	want := ReassemblerStats{Completed: 1, Duplicates: 1, Peak: int64(len(payload) + 11*partOverhead)}
	if s != want {
		t.Errorf("Stats() = %+v; want %+v", s, want)
	}
}

func TestSplitSizes(t *testing.T) {
	t.Parallel()
	const maxPart = FragmentHeaderSize + 10
	for _, n := range []int{0, 1, 9, 10, 11, 19, 20, 21, 99, 100, 101, 1000} {
		t.Run(fmt.Sprint(n), func(t *testing.T) {
			t.Parallel()
			payload := make([]byte, n)
			for i := range payload {
				payload[i] = byte(i * 7)
			}
			parts := Split(payload, maxPart, uint64(n))
			if want := max(1, (n+9)/10); len(parts) != want {
				t.Errorf("Split(%d bytes) gave %d parts; want %d", n, len(parts), want)
			}
			for i, p := range parts {
				if len(p) > maxPart || (n > 0 && len(p) == FragmentHeaderSize) {
					t.Errorf("part %d has %d bytes; want %d < len <= %d", i, len(p), FragmentHeaderSize, maxPart)
				}
			}
			for _, order := range []string{"forward", "backward"} {
				var r Reassembler
				var got []byte
				for i := range parts {
					p := parts[i]
					if order == "backward" {
						p = parts[len(parts)-1-i]
					}
					out, err := r.Add(p)
					if err != nil {
						t.Fatalf("%s: Add(part %d) error: %v", order, i, err)
					}
					if out != nil {
						got = out
					}
				}
				if got == nil || !bytes.Equal(got, payload) {
					t.Errorf("%s: reassembled %d bytes %v; want %d bytes", order, len(got), got == nil, n)
				}
			}
		})
	}
}

func TestFragmentHeaderSize(t *testing.T) {
	t.Parallel()
	if want := len(fragMagic) + 2 + 2 + 8 + 4 + 4 + 4 + 4; FragmentHeaderSize != want {
		t.Errorf("FragmentHeaderSize = %d; want %d, the header's fields", FragmentHeaderSize, want)
	}
}

func TestSplitPanics(t *testing.T) {
	t.Parallel()
	defer func() {
		if recover() == nil {
			t.Errorf("Split(maxPart = FragmentHeaderSize) did not panic")
		}
	}()
	Split([]byte("x"), FragmentHeaderSize, 1)
}

func TestEncodePartsErrors(t *testing.T) {
	t.Parallel()
	if _, err := EncodeParts(&Stop{}, FragmentHeaderSize, 1); !errors.Is(err, ErrInvalid) {
		t.Errorf("EncodeParts(maxPart = header size) = %v; want %v", err, ErrInvalid)
	}
	if _, err := EncodeParts(&Weights{RBM: 1}, DefaultMaxPart, 1); !errors.Is(err, ErrShape) {
		t.Errorf("EncodeParts(bad weights) = %v; want %v", err, ErrShape)
	}
}

// fragment builds a fragment with any header, consistent or not.
func fragment(id uint64, index, count, total uint32, sum uint32, data []byte) []byte {
	p := make([]byte, FragmentHeaderSize, FragmentHeaderSize+len(data))
	putFragmentHeader(p, fragHeader{id: id, index: index, count: count, total: total, sum: sum})
	return append(p, data...)
}

func TestReassemblerRejects(t *testing.T) {
	t.Parallel()
	payload := []byte("0123456789")
	sum := crc32.Checksum(payload, castagnoli)
	good := Split(payload, FragmentHeaderSize+4, 9) // 3 parts: 4, 4, 2 bytes
	tests := []struct {
		name string
		frag []byte
		want error
	}{
		{"empty", nil, ErrTruncated},
		{"short header", good[0][:FragmentHeaderSize-1], ErrTruncated},
		{"bad magic", append([]byte("XDBF"), good[0][4:]...), ErrMagic},
		{"message not fragment", frame(KindStop, body(&Stop{})), ErrMagic},
		{"bad version", func() []byte { p := bytes.Clone(good[0]); p[4] = byte(Version + 1); return p }(), ErrVersion},
		{"padding not zero", func() []byte { p := bytes.Clone(good[0]); p[7] = 1; return p }(), ErrFragment},
		{"index out of range", fragment(9, 3, 3, 10, sum, []byte("89")), ErrFragment},
		{"zero parts", fragment(9, 0, 0, 10, sum, nil), ErrFragment},
		{"part too long", fragment(9, 0, 3, 10, sum, []byte("01234")), ErrFragment},
		{"part too short", fragment(9, 2, 3, 10, sum, []byte("8")), ErrFragment},
		{"empty parts in layout", fragment(9, 0, 4, 5, sum, []byte("01")), ErrFragment},
		{"count beyond total", fragment(9, 0, 1<<31, 10, sum, []byte("0")), ErrFragment},
		{"empty payload in 2 parts", fragment(9, 0, 2, 0, 0, nil), ErrFragment},
		{"total over limit", fragment(9, 0, 1<<11, 1<<21, 0, make([]byte, 1<<10)), ErrTooLarge},
		{"single part corrupt", fragment(9, 0, 1, 10, sum^1, payload), ErrChecksum},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			r := NewReassembler(ReassemblerConfig{MaxTotal: 1 << 20})
			got, err := r.Add(tt.frag)
			if !errors.Is(err, tt.want) || got != nil {
				t.Errorf("Add() = %q, %v; want error %v", got, err, tt.want)
			}
			if s := r.Stats(); s.Rejected != 1 || s.InFlight != 0 || s.Reserved != 0 {
				t.Errorf("Stats() = %+v; want 1 rejected, nothing held", s)
			}
		})
	}
}

func TestReassemblerConflicts(t *testing.T) {
	t.Parallel()
	payload := []byte("0123456789")
	parts := Split(payload, FragmentHeaderSize+4, 9)
	r := NewReassembler(ReassemblerConfig{})
	if _, err := r.Add(parts[0]); err != nil {
		t.Fatal(err)
	}
	// Same id, another layout: rejected, the message in flight is kept.
	other := Split([]byte("abcdefghijk"), FragmentHeaderSize+4, 9)
	if _, err := r.Add(other[1]); !errors.Is(err, ErrFragment) {
		t.Errorf("Add(conflicting fragment) = %v; want %v", err, ErrFragment)
	}
	// A corrupt part with a consistent header fails the payload checksum.
	bad := bytes.Clone(parts[1])
	bad[FragmentHeaderSize] ^= 0xff
	if _, err := r.Add(bad); err != nil {
		t.Fatal(err)
	}
	if got, err := r.Add(parts[2]); !errors.Is(err, ErrChecksum) || got != nil {
		t.Errorf("Add(last part of corrupt payload) = %q, %v; want %v", got, err, ErrChecksum)
	}
	// The retransmitted good part is a duplicate of a finished message.
	if got, err := r.Add(parts[1]); err != nil || got != nil {
		t.Errorf("Add(late part) = %q, %v; want nil, nil", got, err)
	}
	want := ReassemblerStats{Rejected: 2, Duplicates: 1, Peak: 10 + 3*partOverhead}
	if s := r.Stats(); s != want {
		t.Errorf("Stats() = %+v; want %+v", s, want)
	}
}

func TestReassemblerInterleaved(t *testing.T) {
	t.Parallel()
	var all [][]byte
	payloads := map[string]bool{}
	for id := range uint64(4) {
		p := bytes.Repeat([]byte{byte('a' + id)}, 50+int(id))
		payloads[string(p)] = false
		all = append(all, Split(p, FragmentHeaderSize+8, id)...)
	}
	all = append(all, all[3], all[17]) // duplicates, one after its message is done
	rng := rand.New(rand.NewPCG(1, 2))
	rng.Shuffle(len(all), func(i, j int) { all[i], all[j] = all[j], all[i] })
	r := NewReassembler(ReassemblerConfig{MaxMessages: 4})
	for _, f := range all {
		got, err := r.Add(f)
		if err != nil {
			t.Fatal(err)
		}
		if got != nil {
			if done, ok := payloads[string(got)]; !ok || done {
				t.Fatalf("Add() returned unexpected payload %q", got)
			}
			payloads[string(got)] = true
		}
	}
	for p, done := range payloads {
		if !done {
			t.Errorf("payload %q never completed", p[:1])
		}
	}
	if s := r.Stats(); s.Completed != 4 || s.Duplicates != 2 || s.InFlight != 0 || s.Reserved != 0 {
		t.Errorf("Stats() = %+v; want 4 completed, 2 duplicates, nothing held", s)
	}
}

func TestReassemblerBounds(t *testing.T) {
	t.Parallel()
	split := func(id uint64, n int) [][]byte {
		return Split(bytes.Repeat([]byte{byte(id)}, n), FragmentHeaderSize+100, id)
	}
	t.Run("max messages", func(t *testing.T) {
		t.Parallel()
		r := NewReassembler(ReassemblerConfig{MaxMessages: 2})
		m1, m2, m3 := split(1, 250), split(2, 250), split(3, 250)
		for _, f := range [][]byte{m1[0], m2[0]} {
			if _, err := r.Add(f); err != nil {
				t.Fatal(err)
			}
		}
		if _, err := r.Add(m3[0]); !errors.Is(err, ErrEvicted) {
			t.Fatalf("Add(third message) = %v; want %v", err, ErrEvicted)
		}
		// Message 1 was evicted: its late parts are dropped, 2 and 3 complete.
		for _, f := range [][]byte{m1[1], m1[2], m2[1], m2[2], m3[1], m3[2]} {
			if _, err := r.Add(f); err != nil {
				t.Fatal(err)
			}
		}
		want := ReassemblerStats{Completed: 2, Stale: 2, Evicted: 1, Peak: 2 * (250 + 3*partOverhead)}
		if s := r.Stats(); s != want {
			t.Errorf("Stats() = %+v; want %+v", s, want)
		}
	})
	t.Run("max bytes", func(t *testing.T) {
		t.Parallel()
		// Each 250-byte message in 3 parts is charged 250 + 3*64 = 442 bytes.
		r := NewReassembler(ReassemblerConfig{MaxBytes: 1000})
		for id := uint64(1); id <= 2; id++ {
			if _, err := r.Add(split(id, 250)[0]); err != nil {
				t.Fatal(err)
			}
		}
		if s := r.Stats(); s.Reserved != 884 || s.InFlight != 2 {
			t.Errorf("Stats() = %+v; want 884 bytes in 2 messages", s)
		}
		if _, err := r.Add(split(3, 250)[0]); !errors.Is(err, ErrEvicted) {
			t.Errorf("Add(message over MaxBytes) = %v; want %v", err, ErrEvicted)
		}
		if s := r.Stats(); s.Reserved != 884 || s.InFlight != 2 || s.Evicted != 1 {
			t.Errorf("Stats() = %+v; want 884 bytes in 2 messages, 1 evicted", s)
		}
		if _, err := r.Add(split(4, 950)[0]); !errors.Is(err, ErrTooLarge) {
			t.Errorf("Add(message larger than MaxBytes) = %v; want %v", err, ErrTooLarge)
		}
	})
	t.Run("max total", func(t *testing.T) {
		t.Parallel()
		r := NewReassembler(ReassemblerConfig{MaxTotal: 200})
		if _, err := r.Add(split(1, 200)[0]); err != nil {
			t.Errorf("Add(200-byte payload) = %v; want nil", err)
		}
		if _, err := r.Add(split(2, 201)[0]); !errors.Is(err, ErrTooLarge) {
			t.Errorf("Add(201-byte payload) = %v; want %v", err, ErrTooLarge)
		}
	})
	t.Run("recent", func(t *testing.T) {
		t.Parallel()
		r := NewReassembler(ReassemblerConfig{Recent: 2})
		for id := uint64(1); id <= 3; id++ {
			if got, err := r.Add(split(id, 10)[0]); err != nil || got == nil {
				t.Fatalf("Add(single part %d) = %v, %v", id, got, err)
			}
		}
		// 1 has left the ring of 2 recent messages: it completes again.
		if got, _ := r.Add(split(1, 10)[0]); got == nil {
			t.Errorf("Add(forgotten message) = nil; want it completed again")
		}
		if got, _ := r.Add(split(3, 10)[0]); got != nil {
			t.Errorf("Add(recent message) = %q; want nil, a duplicate", got)
		}
	})
}

// TestReassemblerConcurrent feeds one Reassembler from several goroutines,
// as NATS handlers of several subscriptions would; run with -race.
func TestReassemblerConcurrent(t *testing.T) {
	t.Parallel()
	const senders, perSender = 4, 20
	r := NewReassembler(ReassemblerConfig{MaxMessages: senders})
	var wg sync.WaitGroup
	var mu sync.Mutex
	completed := 0
	for s := range uint64(senders) {
		wg.Go(func() {
			for n := range uint64(perSender) {
				payload := bytes.Repeat([]byte{byte(s), byte(n)}, 100)
				for _, f := range Split(payload, FragmentHeaderSize+64, s<<32|n) {
					got, err := r.Add(f)
					if err != nil {
						t.Error(err)
						return
					}
					if got != nil {
						if !bytes.Equal(got, payload) {
							t.Errorf("sender %d message %d: wrong payload", s, n)
						}
						mu.Lock()
						completed++
						mu.Unlock()
					}
				}
			}
		})
	}
	wg.Wait()
	if completed != senders*perSender {
		t.Errorf("completed %d payloads; want %d", completed, senders*perSender)
	}
}

// TestPendingBytes: what a Reassembler charges for a message, as the
// checks before a run count it, is what it reserves when the message's
// first fragment arrives.
func TestPendingBytes(t *testing.T) {
	t.Parallel()
	for _, total := range []int{0, 1, DefaultMaxPart - FragmentHeaderSize, DefaultMaxPart, 5 << 20, 62_800_000} {
		parts := Split(make([]byte, total), DefaultMaxPart, 1)
		r := NewReassembler(ReassemblerConfig{})
		if len(parts) > 1 {
			r.Add(parts[0])
		}
		reserved := r.Stats().Reserved
		if len(parts) == 1 {
			reserved = int64(total) + partOverhead // held whole at once, never reserved
		}
		if got := PendingBytes(int64(total), DefaultMaxPart); got < reserved || got > reserved+partOverhead {
			t.Errorf("PendingBytes(%d) = %d; want the %d reserved for its %d parts, or one part more", total, got, reserved, len(parts))
		}
	}
	if got := PendingBytes(math.MaxInt64, DefaultMaxPart); got != math.MaxInt64 {
		t.Errorf("PendingBytes(MaxInt64) = %d; want it to saturate", got)
	}
}

// Add sums every field of the stats: one left out would read zero in a sum.
func TestReassemblerStatsAdd(t *testing.T) {
	var one ReassemblerStats
	v := reflect.ValueOf(&one).Elem()
	for i := range v.NumField() {
		f := v.Field(i)
		if f.CanUint() {
			f.SetUint(uint64(i + 1))
		} else {
			f.SetInt(int64(i + 1))
		}
	}
	var sum ReassemblerStats
	sum.Add(one)
	sum.Add(one)
	w := reflect.ValueOf(sum)
	for i := range w.NumField() {
		got := w.Field(i)
		n := int64(0)
		if got.CanUint() {
			n = int64(got.Uint())
		} else {
			n = got.Int()
		}
		if n != int64(2*(i+1)) {
			t.Errorf("%s summed to %d; want %d", w.Type().Field(i).Name, n, 2*(i+1))
		}
	}
}
