package messages

import (
	"encoding/binary"
	"errors"
	"runtime"
	"slices"
	"strings"
	"testing"
)

// hugeClaim is a well-formed 33-byte fragment, the last part of a layout
// of 16,384 parts of 16,384 bytes (all but the last), that claims a payload
// of almost 256 MiB: a Reassembler that believes it allocates the whole
// claim for one byte of data.
func hugeClaim(id uint64) []byte {
	const count, size = 1 << 14, 1 << 14
	total := uint32((count-1)*size + 1)
	f := make([]byte, FragmentHeaderSize+1)
	putFragmentHeader(f, fragHeader{id: id, index: count - 1, count: count, total: total})
	return f
}

// TestLimitsRefuseHugeClaim feeds a fragment that claims 256 MiB to the
// Reassembler of a registration subject, which carries only Register, a
// small message: it is refused as too large before anything is allocated
// for it, and nothing is held.
func TestLimitsRefuseHugeClaim(t *testing.T) {
	// Not parallel: it reads the process's allocation counter.
	frag := hugeClaim(1)
	if _, _, err := parseFragment(frag); err != nil {
		t.Fatalf("the forged fragment is malformed: %v", err)
	}
	if got := binary.LittleEndian.Uint32(frag[24:]); got < 255<<20 {
		t.Fatalf("the forged fragment claims %d bytes; want about 256 MiB", got)
	}
	r := NewReassembler(Limits([]Kind{KindRegister}))
	const runs = 100
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	for i := range runs {
		binary.LittleEndian.PutUint64(frag[8:], uint64(i)) // a new message each time
		if m, _, err := r.AddMessageFrom("", frag); m != nil || !errors.Is(err, ErrTooLarge) {
			t.Fatalf("AddMessage(fragment claiming 256 MiB) = %v, %v; want %v", m, err, ErrTooLarge)
		}
	}
	runtime.ReadMemStats(&after)
	if per := (after.TotalAlloc - before.TotalAlloc) / runs; per > 4<<10 {
		t.Errorf("each refusal allocated %d bytes; want at most 4 KiB (the error), not the claim", per)
	}
	want := ReassemblerStats{Rejected: runs}
	if s := r.Stats(); s != want {
		t.Errorf("Stats() = %+v; want %+v", s, want)
	}
}

// TestMaxSizeHoldsLargestMessages: the largest message of each kind that a
// sender of RBM_i sends (every name as long as CheckName allows, every
// array as long as the shape makes it, a mini-batch of one row each) fits
// MaxSize, and a Reassembler with Limits takes it in 2 KiB fragments, while
// one larger than the shape allows is refused at its first fragment.
func TestMaxSizeHoldsLargestMessages(t *testing.T) {
	t.Parallel()
	shape := Shape{Visible: 50, Hidden: 30, Epochs: 400, WindowRows: 120}
	name := strings.Repeat("n", 64)
	names := slices.Repeat([]string{name}, 64)
	epochs := make([]float64, shape.Epochs)
	ones := slices.Repeat([]int{1}, shape.WindowRows)
	cp := testCheckpoint(shape.Visible, shape.Hidden)
	cp.RunID, cp.ReconErrors = name, epochs
	w := testWeights(shape.Visible, shape.Hidden)
	w.RunID, w.ReconErrors = name, epochs
	chunk := testChunk(3, shape.Visible, ones...)
	chunk.RunID = name
	v, h := shape.Visible, shape.Hidden
	largest := []Message{
		&Register{Name: name, Host: strings.Repeat("h", 255)},
		&Assign{RunID: name, Units: UnitsGaussian, Middle: MiddleProbabilities, Upstream: names, Downstream: names, Visible: v, Hidden: h, RBM: 1, RBMs: 2, Epochs: 1, BatchSize: 1, K: 1, CDK: 1, BatchesPerEpoch: 1, RowsPerEpoch: 1, Replicas: 1, Credits: 1},
		&Admission{Slave: name, Outcome: Refused, Reason: strings.Repeat("r", 1000)},
		&Credit{RunID: name},
		&EndOfStream{RunID: name},
		&Stop{RunID: name, Reason: strings.Repeat("r", 1000)},
		&CheckpointAck{RunID: name, RBM: 1},
		&Error{RunID: name, RBM: 1, Text: strings.Repeat("e", 4000)},
		&Status{RunID: name, Slave: name, ReconErrors: epochs, Upstream: names, Downstream: names},
		chunk, w, cp,
		&Params{RunID: name, RBM: 1, Round: 1, Visible: v, Hidden: h, W: make([]float32, v*h), A: make([]float32, v), B: make([]float32, h)},
	}
	for _, m := range largest {
		t.Run(m.Kind().String(), func(t *testing.T) {
			t.Parallel()
			b, err := Encode(m)
			if err != nil {
				t.Fatal(err)
			}
			if max := MaxSize(m.Kind(), shape); int64(len(b)) > max {
				t.Fatalf("a %v of %d bytes; MaxSize = %d", m.Kind(), len(b), max)
			}
			r := NewReassembler(Limits([]Kind{m.Kind()}, shape))
			parts, err := EncodeParts(m, minPart, 5)
			if err != nil {
				t.Fatal(err)
			}
			for i, p := range parts {
				got, _, err := r.AddMessageFrom("s", p)
				if err != nil || (got != nil) != (i == len(parts)-1) {
					t.Fatalf("AddMessageFrom(part %d of %d) = %v, %v; want the message at the last part", i, len(parts), got, err)
				}
			}
			// The same kind about a larger RBM, or a longer window, is more
			// than its sender may send.
			big := MaxSize(m.Kind(), shape) + 1
			if m.Kind() == KindRegister {
				big = MaxSmall + 1
			}
			over := Split(make([]byte, big), minPart, 6)
			if _, err := r.Add(over[0]); !errors.Is(err, ErrTooLarge) {
				t.Errorf("Add(first part of %d bytes) = %v; want %v", big, err, ErrTooLarge)
			}
		})
	}
}

// TestReassemblerSenderFlood: one sender floods a Reassembler shared by
// several with thousands of first fragments of messages it never
// finishes. The memory held for incomplete messages stays within
// MaxBytes, the flooder's within MaxSenderBytes, and it evicts its own
// messages, not the one another sender is sending meanwhile.
func TestReassemblerSenderFlood(t *testing.T) {
	t.Parallel()
	const part = FragmentHeaderSize + 1000
	cfg := ReassemblerConfig{MaxMessages: 1 << 20, MaxBytes: 64 << 10, MaxSenderBytes: 16 << 10, MaxTotal: 8 << 10}
	r := NewReassembler(cfg)
	good := testChunk(9, 10, 40, 40, 20) // 4.8 KB of data: 5 parts
	goodParts, err := EncodeParts(good, part, 1)
	if err != nil {
		t.Fatal(err)
	}
	if m, _, err := r.AddMessageFrom("good", goodParts[0]); m != nil || err != nil {
		t.Fatalf("AddMessageFrom(good part 0) = %v, %v", m, err)
	}
	var evictions int
	for id := range uint64(5000) {
		// The flooder reuses the good sender's ids: they are its own.
		frag := Split(make([]byte, 8<<10), part, id)[0]
		if _, _, err := r.AddMessageFrom("flood", frag); errors.Is(err, ErrEvicted) {
			evictions++
		} else if err != nil {
			t.Fatalf("AddMessageFrom(flood %d) = %v", id, err)
		}
		if s := r.Stats(); s.Reserved > cfg.MaxBytes {
			t.Fatalf("after %d flood fragments: %d bytes held; want at most %d", id+1, s.Reserved, cfg.MaxBytes)
		}
	}
	s := r.Stats()
	// The good message is charged its length and its parts' bookkeeping.
	goodNeed := int64(len(goodParts)) * partOverhead
	for _, p := range goodParts {
		goodNeed += int64(len(p) - FragmentHeaderSize)
	}
	if flood := s.Reserved - goodNeed; flood > cfg.MaxSenderBytes {
		t.Errorf("the flooder holds %d bytes; want at most %d", flood, cfg.MaxSenderBytes)
	}
	if s.Peak > cfg.MaxBytes || evictions < 4990 {
		t.Errorf("Stats() = %+v after %d evictions; want the flood evicting itself within %d bytes", s, evictions, cfg.MaxBytes)
	}
	var got Message
	for i, p := range goodParts[1:] {
		m, _, err := r.AddMessageFrom("good", p)
		if err != nil {
			t.Fatalf("AddMessageFrom(good part %d) = %v; want it kept through the flood", i+1, err)
		}
		got = m
	}
	if c, ok := got.(*Chunk); !ok || !slices.Equal(c.Data, good.Data) {
		t.Errorf("the good sender's chunk = %v; want it whole after the flood", got)
	}
}

// TestReassemblerSetLimits: a receiver that learns what its sender may
// send raises its limits, and a message it refused before is taken.
func TestReassemblerSetLimits(t *testing.T) {
	t.Parallel()
	shape := Shape{Visible: 300, Hidden: 200, Epochs: 10}
	cp := testCheckpoint(shape.Visible, shape.Hidden)
	parts, err := EncodeParts(cp, 64<<10, 3)
	if err != nil {
		t.Fatal(err)
	}
	r := NewReassembler(Limits([]Kind{KindCheckpoint}))
	if _, _, err := r.AddMessage(parts[0]); !errors.Is(err, ErrTooLarge) {
		t.Fatalf("AddMessage(checkpoint of %dx%d) before SetLimits = %v; want %v", shape.Visible, shape.Hidden, err, ErrTooLarge)
	}
	r.SetLimits(Limits([]Kind{KindCheckpoint}, shape))
	var got Message
	for _, p := range parts {
		if got, _, err = r.AddMessage(p); err != nil {
			t.Fatal(err)
		}
	}
	if got == nil {
		t.Errorf("the checkpoint did not complete after SetLimits (%d parts)", len(parts))
	}
}
