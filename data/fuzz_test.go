package data

import (
	"bytes"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"testing"
)

var update = flag.Bool("update", false, "regenerate testdata/fuzz/FuzzReadIDX seeds")

// fuzzSeeds are tiny IDX files, good and bad, raw and gzip, that seed
// FuzzReadIDX; -update writes them to testdata/fuzz/FuzzReadIDX.
func fuzzSeeds(t testing.TB) map[string][]byte {
	imgs := idxBytes(t, TypeUint8, []int{3, 2, 2}, seq(12))
	lbls := idxBytes(t, TypeUint8, []int{3}, []byte{0, 9, 4})
	return map[string][]byte{
		"images-raw":            imgs,
		"images-gzip":           gzipBytes(t, imgs),
		"labels-raw":            lbls,
		"labels-gzip":           gzipBytes(t, lbls),
		"images-truncated":      imgs[:len(imgs)-5],
		"images-gzip-truncated": gzipBytes(t, imgs)[:20],
		"header-truncated":      imgs[:9],
		"trailing":              append(slices.Clone(lbls), 7, 7),
		"huge-claim":            append(header(0x803, 32768, 256, 256), 1, 2, 3),
		"zero-dim":              header(0x803, 0, 28, 28),
		"float-type":            append(header(0xd01, 1), 0, 0, 0, 0),
	}
}

func TestUpdateFuzzSeeds(t *testing.T) {
	if !*update {
		t.Skip("seeds in testdata/fuzz/FuzzReadIDX are regenerated with -update")
	}
	dir := filepath.Join("testdata", "fuzz", "FuzzReadIDX")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	for name, b := range fuzzSeeds(t) {
		// The corpus file format of go test -fuzz.
		text := fmt.Sprintf("go test fuzz v1\n[]byte(%s)\n", strconv.Quote(string(b)))
		if err := os.WriteFile(filepath.Join(dir, "seed-"+name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// FuzzReadIDX checks that ReadIDX never panics, that whatever it accepts is
// consistent (data as long as the dims say, within MaxIDXBytes) and that
// accepted files survive a WriteIDX/ReadIDX round trip. TestReadIDXAllocBound
// checks the allocation bound on headers that claim more than the input holds.
func FuzzReadIDX(f *testing.F) {
	for _, b := range fuzzSeeds(f) {
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		idx, err := ReadIDX(bytes.NewReader(in))
		if err != nil {
			if idx != nil {
				t.Fatalf("ReadIDX() = %v and error %q; want nil with an error", idx, err)
			}
			return
		}
		n := 1
		for _, d := range idx.Dims {
			n *= d
		}
		if idx.Type != TypeUint8 || len(idx.Dims) == 0 || len(idx.Data) != n || n > MaxIDXBytes {
			t.Fatalf("ReadIDX() = type %#x dims %v with %d data bytes", idx.Type, idx.Dims, len(idx.Data))
		}
		var b bytes.Buffer
		if err := WriteIDX(&b, idx); err != nil {
			t.Fatalf("WriteIDX(ReadIDX()) error %q", err)
		}
		again, err := ReadIDX(&b)
		if err != nil {
			t.Fatalf("ReadIDX(WriteIDX(ReadIDX())) error %q", err)
		}
		if !slices.Equal(again.Dims, idx.Dims) || !bytes.Equal(again.Data, idx.Data) {
			t.Fatalf("round trip changed dims %v -> %v or data", idx.Dims, again.Dims)
		}
	})
}
