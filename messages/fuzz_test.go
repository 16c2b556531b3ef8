package messages

import (
	"bytes"
	"encoding/binary"
	"errors"
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "rewrite the seed corpora under testdata/fuzz")

// sentinels are the errors every Decode and Add failure must wrap.
var sentinels = []error{ErrMagic, ErrVersion, ErrKind, ErrChecksum, ErrTruncated, ErrTrailing,
	ErrShape, ErrInvalid, ErrFragment, ErrTooLarge, ErrEvicted}

func wrapsSentinel(err error) bool {
	for _, s := range sentinels {
		if errors.Is(err, s) {
			return true
		}
	}
	return false
}

// FuzzDecode checks that Decode never panics, that every failure wraps a
// sentinel, and that what it accepts re-encodes to the same bytes (the
// encoding is canonical, but for the length of Status.Rejected). Mutated
// inputs rarely keep a valid checksum, so it also decodes the input's body
// re-framed with a fresh header and checksum, to reach the body parsing and
// validation.
func FuzzDecode(f *testing.F) {
	f.Fuzz(func(t *testing.T, b []byte) {
		checkDecode(t, b)
		if len(b) >= headerSize+trailerSize {
			checkDecode(t, frame(Kind(b[6]), b[headerSize:len(b)-trailerSize]))
		}
	})
}

func checkDecode(t *testing.T, b []byte) {
	m, err := Decode(b)
	if err != nil {
		if m != nil {
			t.Fatalf("Decode() = %v, %v; want a nil message with the error", m, err)
		}
		if !wrapsSentinel(err) {
			t.Fatalf("Decode() error %q wraps no sentinel", err)
		}
		return
	}
	again, err := Encode(m)
	if err != nil {
		t.Fatalf("Encode(Decode(b)) error: %v", err)
	}
	if _, ok := m.(*Status); ok && !bytes.Equal(again, b) {
		// Decode accepts a Rejected list of any length up to a bound, and
		// Encode writes one count per reason it knows: its output must be
		// canonical.
		if m, err = Decode(again); err != nil {
			t.Fatalf("Decode(Encode(Decode(b))) error: %v", err)
		}
		b = again
		if again, err = Encode(m); err != nil {
			t.Fatalf("Encode(Decode(Encode(Decode(b)))) error: %v", err)
		}
	}
	if !bytes.Equal(again, b) {
		t.Fatalf("Encode(Decode(b)) = %x; want %x", again, b)
	}
	if c, ok := m.(*Chunk); ok && c.EncodedSize() != int64(len(b)) {
		t.Fatalf("EncodedSize() of a chunk of %d bytes = %d", len(b), c.EncodedSize())
	}
}

// fuzzLimits are small, so that the fuzzer reaches the eviction paths.
var fuzzLimits = ReassemblerConfig{MaxMessages: 3, MaxBytes: 4096, MaxSenderBytes: 3072, MaxTotal: 2048, Recent: 4}

// FuzzReassemble reads its input as a stream of fragments, each prefixed
// with its uint16 length, and checks that the Reassembler never panics,
// stays within its limits, and wraps a sentinel in every error. It then
// splits the input itself, in parts sized by its first byte, and checks that
// the parts reassemble to it in reverse order.
func FuzzReassemble(f *testing.F) {
	f.Fuzz(func(t *testing.T, stream []byte) {
		r := NewReassembler(fuzzLimits)
		for rest := stream; len(rest) >= 2; {
			n := min(int(binary.LittleEndian.Uint16(rest)), len(rest)-2)
			frag := rest[2 : 2+n]
			rest = rest[2+n:]
			payload, err := r.Add(frag)
			if err != nil && payload != nil {
				t.Fatalf("Add() = %d bytes and error %v; want one of them", len(payload), err)
			}
			if err != nil && !wrapsSentinel(err) {
				t.Fatalf("Add() error %q wraps no sentinel", err)
			}
			if payload != nil {
				Decode(payload) // must not panic
			}
			if s := r.Stats(); s.Reserved > fuzzLimits.MaxBytes || s.InFlight > fuzzLimits.MaxMessages || s.Reserved < 0 {
				t.Fatalf("Stats() = %+v; beyond limits %+v", s, fuzzLimits)
			}
		}

		if len(stream) == 0 {
			return
		}
		parts := Split(stream, FragmentHeaderSize+1+int(stream[0]), 7)
		var r2 Reassembler
		for i := len(parts) - 1; i >= 0; i-- {
			got, err := r2.Add(parts[i])
			if err != nil {
				t.Fatalf("Add(part %d of %d) error: %v", i, len(parts), err)
			}
			if (got != nil) != (i == 0) {
				t.Fatalf("Add(part %d of %d) = %d bytes; want the payload only at the last part", i, len(parts), len(got))
			}
			if got != nil && !bytes.Equal(got, stream) {
				t.Fatalf("reassembled payload differs from the one split")
			}
		}
		if got, err := r2.Add(parts[0]); got != nil || err != nil {
			t.Fatalf("Add(duplicate) = %d bytes, %v; want nil, nil", len(got), err)
		}
	})
}

// seedCorpora returns the seed inputs of the fuzzers, by fuzzer and name:
// real encoded messages of every kind, and fragment streams cut from them.
func seedCorpora(t *testing.T) map[string]map[string][]byte {
	decode := map[string][]byte{}
	reassemble := map[string][]byte{}
	rng := rand.New(rand.NewPCG(5, 5))
	for i, m := range testMessages() {
		b, err := Encode(m)
		if err != nil {
			t.Fatal(err)
		}
		name := fmt.Sprintf("%02d-%v", i, m.Kind())
		decode[name] = b
		if len(b) > 200 {
			// Stream the fragments shuffled, with a duplicate, as the
			// fuzzer's stream format: uint16 length, fragment.
			parts := Split(b, FragmentHeaderSize+64, uint64(i))
			rng.Shuffle(len(parts), func(i, j int) { parts[i], parts[j] = parts[j], parts[i] })
			parts = append(parts, parts[0])
			var stream []byte
			for _, p := range parts {
				stream = binary.LittleEndian.AppendUint16(stream, uint16(len(p)))
				stream = append(stream, p...)
			}
			reassemble[name] = stream
		}
	}
	// A Status with more rejection counts than this version knows reasons,
	// as a later version may send: Decode takes it, Encode drops the rest.
	decode[fmt.Sprintf("%02d-status-extra-counts", len(decode))] = frame(KindStatus, statusWithCounts(len(Rejections{})+2))
	return map[string]map[string][]byte{"FuzzDecode": decode, "FuzzReassemble": reassemble}
}

// seedName matches the names seedCorpora gives; other files under
// testdata/fuzz, such as inputs the fuzzer found, are left alone.
var seedName = regexp.MustCompile(`^[0-9]{2}-[a-z-]+$`)

// TestSeedCorpora checks that the seed corpora under testdata/fuzz are the
// current encodings of testMessages, and no more: a change to the wire
// format shows up here. go test ./messages -run TestSeedCorpora -update
// rewrites them.
func TestSeedCorpora(t *testing.T) {
	for fuzzer, seeds := range seedCorpora(t) {
		dir := filepath.Join("testdata", "fuzz", fuzzer)
		if *update {
			if err := os.MkdirAll(dir, 0o755); err != nil {
				t.Fatal(err)
			}
		}
		entries, err := os.ReadDir(dir)
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range entries {
			if _, ok := seeds[e.Name()]; ok || !seedName.MatchString(e.Name()) {
				continue
			}
			path := filepath.Join(dir, e.Name())
			if !*update {
				t.Errorf("%s is no current seed (run go test ./messages -run TestSeedCorpora -update)", path)
			} else if err := os.Remove(path); err != nil {
				t.Fatal(err)
			}
		}
		for name, b := range seeds {
			path := filepath.Join(dir, name)
			want := "go test fuzz v1\n[]byte(" + strconv.Quote(string(b)) + ")\n"
			if *update {
				if err := os.WriteFile(path, []byte(want), 0o644); err != nil {
					t.Fatal(err)
				}
				continue
			}
			got, err := os.ReadFile(path)
			if err != nil {
				t.Errorf("%v (run go test ./messages -run TestSeedCorpora -update)", err)
				continue
			}
			if string(got) != want {
				t.Errorf("%s differs from the current encoding: %.60q...; want %.60q... (if the wire format changed on purpose, bump Version and run with -update)",
					path, strings.TrimPrefix(string(got), "go test fuzz v1\n"), strings.TrimPrefix(want, "go test fuzz v1\n"))
			}
		}
	}
}
