package data

import (
	"bytes"
	"compress/gzip"
	"encoding/binary"
	"errors"
	"runtime"
	"slices"
	"strings"
	"testing"
)

// idxBytes encodes a raw IDX file with WriteIDX.
func idxBytes(t testing.TB, typ byte, dims []int, data []byte) []byte {
	t.Helper()
	var b bytes.Buffer
	if err := WriteIDX(&b, &IDX{Type: typ, Dims: dims, Data: data}); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// header encodes a magic and dims as they appear on disk, for headers
// WriteIDX would not write.
func header(magic uint32, dims ...uint32) []byte {
	b := binary.BigEndian.AppendUint32(nil, magic)
	for _, d := range dims {
		b = binary.BigEndian.AppendUint32(b, d)
	}
	return b
}

func gzipBytes(t testing.TB, b []byte) []byte {
	t.Helper()
	var z bytes.Buffer
	zw := gzip.NewWriter(&z)
	if _, err := zw.Write(b); err != nil {
		t.Fatal(err)
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return z.Bytes()
}

func seq(n int) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(i * 7)
	}
	return b
}

func TestReadIDX(t *testing.T) {
	t.Parallel()
	img := idxBytes(t, TypeUint8, []int{2, 3, 3}, seq(18))
	gzImg := gzipBytes(t, img)
	badCRC := slices.Clone(gzImg)
	badCRC[len(badCRC)-8] ^= 0xff // the CRC-32 precedes the 4-byte length at the end
	tests := []struct {
		name     string
		in       []byte
		wantDims []int
		wantData []byte
		wantErr  []string // substrings of the error; nil means success
	}{
		{name: "raw images", in: img, wantDims: []int{2, 3, 3}, wantData: seq(18)},
		{name: "gzip images", in: gzImg, wantDims: []int{2, 3, 3}, wantData: seq(18)},
		{name: "raw labels", in: idxBytes(t, TypeUint8, []int{4}, []byte{0, 9, 3, 255}), wantDims: []int{4}, wantData: []byte{0, 9, 3, 255}},
		{name: "no examples", in: header(0x803, 0, 28, 28), wantDims: []int{0, 28, 28}, wantData: []byte{}},
		{name: "empty", in: nil, wantErr: []string{"empty file", "want IDX magic 0x000008NN"}},
		{name: "empty gzip", in: gzipBytes(t, nil), wantErr: []string{"empty file (decompressed)"}},
		{name: "short magic", in: []byte{0, 0, 8}, wantErr: []string{"file holds 3 bytes, too short for the 4-byte IDX magic"}},
		{name: "bad magic", in: []byte("PK\x03\x04rest"), wantErr: []string{"bad magic 0x504b0304", "not an IDX file"}},
		{name: "float32 type", in: header(0x0d03, 1, 1, 1), wantErr: []string{"unsupported type code 0x0d (float32), want 0x08 (uint8)"}},
		{name: "unknown type", in: header(0x4203, 1, 1, 1), wantErr: []string{"unsupported type code 0x42 (unknown)"}},
		{name: "zero dims", in: header(0x800), wantErr: []string{"magic 0x00000800 declares 0 dims"}},
		{name: "dims cut gzip", in: gzipBytes(t, header(0x803, 60000, 28)[:10]), wantErr: []string{"declares 3 dims (12 header bytes) but the file (decompressed) ends after 6 of them"}},
		{name: "dims cut", in: header(0x803, 60000, 28)[:10], wantErr: []string{"declares 3 dims (12 header bytes) but the file ends after 6 of them"}},
		{name: "absurd dims", in: header(0x803, 0xffffffff, 0xffffffff, 0xffffffff), wantErr: []string{"dims 4294967295x4294967295x4294967295 exceed the 2147483648-byte limit"}},
		{name: "absurd after zero", in: header(0x804, 0, 0xffffffff, 0xffffffff, 1), wantErr: []string{"dims 0x4294967295x4294967295x1 exceed"}},
		{name: "truncated raw", in: img[:len(img)-8], wantErr: []string{"header says 2x3x3 = 18 bytes of data, found 10"}},
		{name: "truncated gzip content", in: gzipBytes(t, img[:len(img)-8]), wantErr: []string{"header says 2x3x3 = 18 bytes of data, found 10 (decompressed)"}},
		{name: "gzip cut off", in: gzImg[:len(gzImg)-12], wantErr: []string{"gzip stream cut off"}},
		{name: "gzip bad checksum", in: badCRC, wantErr: []string{"after the 18 bytes of data the header (2x3x3) declares: corrupt gzip stream: gzip: invalid checksum"}},
		{name: "gzip bad header", in: []byte{0x1f, 0x8b, 0, 0, 0}, wantErr: []string{"gzip header"}},
		{name: "trailing raw", in: append(slices.Clone(img), 1, 2, 3), wantErr: []string{"trailing garbage: 3 bytes after the 18 bytes of data the header (2x3x3) declares"}},
		{name: "trailing gzip content", in: gzipBytes(t, append(slices.Clone(img), 1, 2)), wantErr: []string{"trailing garbage: 2 bytes (decompressed) after"}},
		{name: "short junk after gzip", in: append(slices.Clone(gzImg), "junk"...), wantErr: []string{"after the 18 bytes of data the header (2x3x3) declares: gzip stream cut off or followed by garbage"}},
		{name: "junk after gzip", in: append(slices.Clone(gzImg), "more junk here"...), wantErr: []string{"after the 18 bytes of data the header (2x3x3) declares: corrupt gzip stream: gzip: invalid header"}},
		{name: "two gzip streams", in: append(gzipBytes(t, img[:10]), gzipBytes(t, img[10:])...), wantErr: nil, wantDims: []int{2, 3, 3}, wantData: seq(18)},
		{name: "trailing huge", in: append(slices.Clone(img), make([]byte, 3<<20)...), wantErr: []string{"trailing garbage: more than 1048576 bytes"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, err := ReadIDX(bytes.NewReader(tt.in))
			if tt.wantErr == nil {
				if err != nil {
					t.Fatalf("ReadIDX() error %q; want none", err)
				}
				if got.Type != TypeUint8 || !slices.Equal(got.Dims, tt.wantDims) || !bytes.Equal(got.Data, tt.wantData) {
					t.Errorf("ReadIDX() = type %#x dims %v data %v; want type 0x08 dims %v data %v", got.Type, got.Dims, got.Data, tt.wantDims, tt.wantData)
				}
				return
			}
			if err == nil {
				t.Fatalf("ReadIDX() = dims %v, no error; want error containing %q", got.Dims, tt.wantErr)
			}
			checkErr(t, err, tt.wantErr...)
			if !errors.Is(err, ErrFormat) {
				t.Errorf("ReadIDX() error %q does not wrap ErrFormat", err)
			}
		})
	}
}

// checkErr fails unless err is one line containing every want.
func checkErr(t *testing.T, err error, want ...string) {
	t.Helper()
	msg := err.Error()
	if strings.Contains(msg, "\n") {
		t.Errorf("error %q spans several lines; want one", msg)
	}
	for _, w := range want {
		if !strings.Contains(msg, w) {
			t.Errorf("error %q; want it to contain %q", msg, w)
		}
	}
}

// TestReadIDXAllocBound checks that a header claiming up to MaxIDXBytes over
// a tiny stream allocates little: the buffer grows with the data found, not
// with the claim.
func TestReadIDXAllocBound(t *testing.T) {
	// Not parallel: it measures the process's allocations.
	for _, tt := range []struct {
		name string
		in   []byte
	}{
		{"raw", append(header(0x803, 32768, 256, 256), seq(100)...)},
		{"gzip", gzipBytes(t, append(header(0x803, 32768, 256, 256), seq(100)...))},
	} {
		var before, after runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&before)
		_, err := ReadIDX(bytes.NewReader(tt.in))
		runtime.ReadMemStats(&after)
		if err == nil {
			t.Fatalf("%s: ReadIDX() of a truncated file succeeded", tt.name)
		}
		checkErr(t, err, "header says 32768x256x256 = 2147483648 bytes of data, found 100")
		if got := after.TotalAlloc - before.TotalAlloc; got > 1<<20 {
			t.Errorf("%s: ReadIDX() allocated %d bytes for a %d-byte stream claiming 2 GiB; want < 1 MiB", tt.name, got, len(tt.in))
		}
	}
}

func TestWriteIDXErrors(t *testing.T) {
	t.Parallel()
	var b bytes.Buffer
	if err := WriteIDX(&b, &IDX{Type: TypeUint8, Dims: make([]int, 256)}); err == nil {
		t.Error("WriteIDX(256 dims) succeeded; want error")
	}
	if err := WriteIDX(&b, &IDX{Type: TypeUint8, Dims: []int{-1}}); err == nil {
		t.Error("WriteIDX(dim -1) succeeded; want error")
	}
	if err := WriteIDX(&b, &IDX{Type: TypeUint8, Dims: []int{1 << 32}}); err == nil {
		t.Error("WriteIDX(dim 1<<32) succeeded; want error")
	}
}
