package data

import (
	"archive/zip"
	"bytes"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"testing/iotest"

	"github.com/sbinet/npyio/npy"

	"github.com/pipedbn/pipedbn/internal/pytest"
)

// npyBytes is a .npy file of values in shape, written by WriteNPY.
func npyBytes[T float32 | int64](t testing.TB, shape []int, values []T) []byte {
	t.Helper()
	var b bytes.Buffer
	if err := WriteNPY(&b, shape, values); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// rawNPY is a .npy file with the given header dict and data, padded as NumPy
// pads it.
func rawNPY(dict string, data []byte) []byte {
	total := 10 + len(dict) + 1
	pad := (64 - total%64) % 64
	h := append([]byte(npyMagic), 1, 0, byte(len(dict)+pad+1), byte((len(dict)+pad+1)>>8))
	h = append(h, dict...)
	h = append(h, strings.Repeat(" ", pad)...)
	h = append(h, '\n')
	return append(h, data...)
}

// npzBytes zips the arrays (name -> .npy bytes) as numpy.savez does, stored
// or deflated.
func npzBytes(t testing.TB, deflate bool, arrays map[string][]byte) []byte {
	t.Helper()
	var b bytes.Buffer
	w := zip.NewWriter(&b)
	names := make([]string, 0, len(arrays))
	for n := range arrays {
		names = append(names, n)
	}
	slices.Sort(names)
	for _, n := range names {
		method := zip.Store
		if deflate {
			method = zip.Deflate
		}
		f, err := w.CreateHeader(&zip.FileHeader{Name: n + ".npy", Method: method})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := f.Write(arrays[n]); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

func floats(n int, f func(i int) float32) []float32 {
	v := make([]float32, n)
	for i := range v {
		v[i] = f(i)
	}
	return v
}

func TestNPYRoundTrip(t *testing.T) {
	t.Parallel()
	x := floats(12, func(i int) float32 { return float32(i)/7 - 0.5 })
	for _, shape := range [][]int{{12}, {3, 4}, {2, 3, 2}} {
		b := npyBytes(t, shape, x)
		if h := bytes.IndexByte(b, '\n') + 1; h%64 != 0 {
			t.Errorf("shape %v: header of %d bytes; want the data to start at a multiple of 64", shape, h)
		}
		// A reader that returns one byte at a time must not matter.
		a, err := readNPY(iotest.OneByteReader(bytes.NewReader(b)), arrayWant{size: -1})
		if err != nil {
			t.Fatalf("shape %v: %v", shape, err)
		}
		if !slices.Equal(a.floats, x) || !slices.Equal(a.shape, shape) {
			t.Errorf("shape %v: read %v %v; want %v", shape, a.shape, a.floats, x)
		}
	}
	labels := []int64{3, 0, 9}
	a, err := readNPY(bytes.NewReader(npyBytes(t, []int{3}, labels)), arrayWant{labels: true, size: -1})
	if err != nil || !slices.Equal(a.ints, labels) {
		t.Errorf("labels: %v, %v; want %v", a, err, labels)
	}
	// A limit reads the first rows only.
	a, err = readNPY(bytes.NewReader(npyBytes(t, []int{3, 4}, x)), arrayWant{rows: 2, size: -1})
	if err != nil || !slices.Equal(a.floats, x[:8]) {
		t.Errorf("limit 2: %v, %v; want %v", a.floats, err, x[:8])
	}
}

// TestNPYHeaders reads headers as NumPy's versions and dtypes write them.
func TestNPYHeaders(t *testing.T) {
	t.Parallel()
	le := []byte{0, 0, 0x80, 0x3f, 0, 0, 0, 0x40} // 1, 2 as <f4
	be := []byte{0x3f, 0x80, 0, 0, 0x40, 0, 0, 0} // 1, 2 as >f4
	for _, tt := range []struct {
		name, dict string
		data       []byte
		want       []float32
	}{
		{"keys in another order", "{'shape': (2,), 'fortran_order': False, 'descr': '<f4', }", le, []float32{1, 2}},
		{"double quotes, no trailing comma", `{"descr": "<f4", "fortran_order": False, "shape": (2,)}`, le, []float32{1, 2}},
		{"big-endian", "{'descr': '>f4', 'fortran_order': False, 'shape': (2,), }", be, []float32{1, 2}},
		{"python 2 long", "{'descr': '<f4', 'fortran_order': False, 'shape': (2L,), }", le, []float32{1, 2}},
		{"uint8", "{'descr': '|u1', 'fortran_order': False, 'shape': (1, 2), }", []byte{0, 255}, []float32{0, 255}},
		{"int16", "{'descr': '<i2', 'fortran_order': False, 'shape': (2,), }", []byte{0xff, 0xff, 7, 0}, []float32{-1, 7}},
		{"float64", "{'descr': '<f8', 'fortran_order': False, 'shape': (1,), }", []byte{0, 0, 0, 0, 0, 0, 0xf8, 0x3f}, []float32{1.5}},
		// Column-major 2x3 [[0 1 2] [3 4 5]] is stored 0 3 1 4 2 5.
		{"fortran", "{'descr': '|u1', 'fortran_order': True, 'shape': (2, 3), }", []byte{0, 3, 1, 4, 2, 5}, []float32{0, 1, 2, 3, 4, 5}},
	} {
		a, err := readNPY(bytes.NewReader(rawNPY(tt.dict, tt.data)), arrayWant{size: -1})
		if err != nil {
			t.Errorf("%s: %v", tt.name, err)
			continue
		}
		if !slices.Equal(a.floats, tt.want) {
			t.Errorf("%s: %v; want %v", tt.name, a.floats, tt.want)
		}
	}
	// Format 2.0: a 4-byte header length.
	v1 := npyBytes(t, []int{2}, []float32{1, 2})
	v2 := append([]byte(npyMagic), 2, 0, byte(bytes.IndexByte(v1, '\n')+1-10), 0, 0, 0)
	v2 = append(v2, v1[10:]...)
	if a, err := readNPY(bytes.NewReader(v2), arrayWant{size: int64(len(v2))}); err != nil || !slices.Equal(a.floats, []float32{1, 2}) {
		t.Errorf("format 2.0: %v, %v", a, err)
	}
}

// TestNPYErrors: every malformed array gives one line saying what was
// expected, wrapping ErrMalformed, and never a panic.
func TestNPYErrors(t *testing.T) {
	t.Parallel()
	good := npyBytes(t, []int{2, 2}, []float32{1, 2, 3, 4})
	hdr := func(dict string) []byte { return rawNPY(dict, nil) }
	noNewline := slices.Clone(good)
	noNewline[bytes.IndexByte(good, '\n')] = ' '
	for _, tt := range []struct {
		name   string
		b      []byte
		labels bool
		want   string
	}{
		{"empty", nil, false, "empty, want a NumPy .npy array"},
		{"not npy", []byte("x_train,y\n1,2\n"), false, `not a NumPy .npy array: starts with "x_trai"`},
		{"short", good[:7], false, "truncated: 7 bytes"},
		{"version", append([]byte(npyMagic), 4, 0, 0, 0), false, "format version 4.0"},
		{"header cut", good[:40], false, "truncated in the header of 118 bytes"},
		{"no newline", noNewline, false, "does not end with a newline"},
		{"truncated data", good[:len(good)-3], false, "truncated: shape (2, 2) of <f4 needs 16 bytes of data, the file "},
		{"trailing data", append(slices.Clone(good), 0), false, "of shape (2, 2) of <f4 (a corrupt header?)"},
		{"structured", hdr("{'descr': [('a', '<f4')], 'fortran_order': False, 'shape': (1,), }"), false, "structured dtypes are not supported"},
		{"complex", hdr("{'descr': '<c8', 'fortran_order': False, 'shape': (1,), }"), false, "dtype '<c8', want a little- or big-endian number"},
		{"unicode", hdr("{'descr': '<U5', 'fortran_order': False, 'shape': (1,), }"), false, "dtype '<U5'"},
		{"bool features", rawNPY("{'descr': '|b1', 'fortran_order': False, 'shape': (1,), }", []byte{1}), false, "dtype '|b1' (bool), want numbers"},
		{"float labels", npyBytes(t, []int{2}, []float32{1, 2}), true, "dtype '<f4', want integer labels"},
		{"2-D labels", npyBytes(t, []int{1, 2}, []int64{1, 2}), true, "shape (1, 2), want labels of shape (n,) or (n, 1)"},
		{"scalar", rawNPY("{'descr': '<f4', 'fortran_order': False, 'shape': (), }", []byte{0, 0, 0, 0}), false, "a scalar (shape ())"},
		{"negative dim", hdr("{'descr': '<f4', 'fortran_order': False, 'shape': (-1, 2), }"), false, "'shape' must be a tuple of integers >= 0"},
		{"huge shape", hdr("{'descr': '<f4', 'fortran_order': False, 'shape': (4611686018427387904, 4), }"), false, "more than 17179869184 bytes"},
		{"no shape", hdr("{'descr': '<f4', 'fortran_order': False, }"), false, "no 'shape'"},
		{"unknown key", hdr("{'descr': '<f4', 'fortran_order': False, 'shape': (1,), 'x': 1}"), false, "unknown key 'x'"},
		{"fortran_order", hdr("{'descr': '<f4', 'fortran_order': 0, 'shape': (1,), }"), false, "'fortran_order' must be True or False"},
		{"NaN", npyBytes(t, []int{2, 2}, []float32{1, 2, float32(math.NaN()), 4}), false, "value [1, 0] is NaN, want finite numbers"},
		{"Inf", npyBytes(t, []int{2, 2}, []float32{1, float32(math.Inf(-1)), 3, 4}), false, "value [0, 1] is -Inf"},
		{"float64 beyond float32", rawNPY("{'descr': '<f8', 'fortran_order': False, 'shape': (1,), }", []byte{0, 0, 0, 0, 0, 0, 0xf0, 0x7f - 0x0f}), false, "beyond float32's range"},
	} {
		for _, known := range []bool{true, false} {
			size := int64(len(tt.b))
			if !known {
				size = -1
			}
			a, err := readNPY(bytes.NewReader(tt.b), arrayWant{labels: tt.labels, size: size})
			if err == nil {
				t.Errorf("%s (size known %v): read %v; want an error", tt.name, known, a)
				continue
			}
			if !errors.Is(err, ErrMalformed) || strings.Contains(err.Error(), "\n") {
				t.Errorf("%s: error %q (%T); want one line wrapping ErrMalformed", tt.name, err, err)
			}
			if !strings.Contains(err.Error(), tt.want) {
				t.Errorf("%s (size known %v): error %q; want it to say %q", tt.name, known, err, tt.want)
			}
		}
	}
}

// TestNPYioMisreads is the evidence for reading .npy with this package's own
// reader rather than github.com/sbinet/npyio v0.6.0 (which still writes
// weights.npz): on a valid file npyio returns wrong values without an error
// when its reader returns short reads (any io.Reader may), and completes a
// truncated file silently. Should a new npyio read both right, this test
// fails, and the choice can be made again.
func TestNPYioMisreads(t *testing.T) {
	t.Parallel()
	x := floats(1000, func(i int) float32 { return float32(i) + 0.25 })
	b := npyBytes(t, []int{10, 100}, x)
	var got []float32
	err := npy.Read(iotest.HalfReader(bytes.NewReader(b)), &got)
	wrong := 0
	for i := range x {
		if i >= len(got) || got[i] != x[i] {
			wrong++
		}
	}
	var cut []float32
	cutErr := npy.Read(bytes.NewReader(b[:len(b)/2]), &cut)
	if (err == nil && wrong > 0) && cutErr == nil {
		t.Logf("npyio: %d of %d values wrong without an error on short reads; a truncated file read without an error", wrong, len(x))
	} else {
		t.Errorf("npyio now reads short reads right (err %v, %d wrong) or refuses a truncated file (%v): reconsider data/npy.go", err, wrong, cutErr)
	}
	// Ours reads both right.
	a, err := readNPY(iotest.HalfReader(bytes.NewReader(b)), arrayWant{size: -1})
	if err != nil || !slices.Equal(a.floats, x) {
		t.Errorf("readNPY on short reads: %v", err)
	}
}

// TestReadNumPyFiles reads what NumPy itself writes: every dtype pipedbn
// accepts, C and Fortran order, 3-D features, .npy, np.savez and
// np.savez_compressed, against values computed here.
func TestReadNumPyFiles(t *testing.T) {
	t.Parallel()
	py := pytest.Python(t, "numpy")
	dir := t.TempDir()
	pytest.Run(t, py, `
import sys, numpy as np
d = sys.argv[1]
base = (np.arange(5 * 2 * 3) % 251).reshape(5, 2, 3)
arrays = {}
for dt in ['<f4', '<f8', '|u1', '<i2', '<i4', '<i8', '<u2', '>f4', '>i8']:
    a = base.astype(dt)
    if dt[1] == 'f':
        a = a / 4 - 3
    arrays['c' + dt[1:] + ('be' if dt[0] == '>' else '')] = a.astype(dt)
    arrays['f' + dt[1:] + ('be' if dt[0] == '>' else '')] = np.asfortranarray(a.reshape(5, 6).astype(dt))
for k, a in arrays.items():
    np.save(d + '/' + k + '.npy', a)
np.savez(d + '/stored.npz', **arrays)
np.savez_compressed(d + '/deflated.npz', **arrays)
np.save(d + '/labels.npy', np.array([3, 1, 4, 1, 5], dtype=np.int64))
`, dir)
	want := func(name string) []float32 {
		v := make([]float32, 30)
		for i := range v {
			v[i] = float32(i % 251)
			if name[1] == 'f' {
				v[i] = v[i]/4 - 3
			}
		}
		return v
	}
	entries, _ := filepath.Glob(filepath.Join(dir, "*.npy"))
	if len(entries) != 19 {
		t.Fatalf("NumPy wrote %d arrays; want 19", len(entries))
	}
	for _, path := range entries {
		name := strings.TrimSuffix(filepath.Base(path), ".npy")
		if name == "labels" {
			a, err := readNPYFile(path, arrayWant{labels: true})
			if err != nil || !slices.Equal(a.ints, []int64{3, 1, 4, 1, 5}) {
				t.Errorf("labels.npy: %v, %v", a, err)
			}
			continue
		}
		a, err := readNPYFile(path, arrayWant{})
		if err != nil {
			t.Errorf("%s: %v", path, err)
			continue
		}
		if !slices.Equal(a.floats, want(name)) {
			t.Errorf("%s: %v; want %v", path, a.floats, want(name))
		}
		for _, archive := range []string{"stored.npz", "deflated.npz"} {
			z, err := openNPZ(filepath.Join(dir, archive))
			if err != nil {
				t.Fatal(err)
			}
			b, err := z.read(name, arrayWant{})
			z.Close()
			if err != nil || !slices.Equal(b.floats, a.floats) || !slices.Equal(b.shape, a.shape) {
				t.Errorf("%s in %s: %v, %v; want the .npy's values", name, archive, b, err)
			}
		}
	}
}

// TestWriteNPYReadByNumPy: NumPy reads what WriteNPY writes, bit for bit.
func TestWriteNPYReadByNumPy(t *testing.T) {
	t.Parallel()
	py := pytest.Python(t, "numpy")
	dir := t.TempDir()
	x := floats(6, func(i int) float32 { return float32(i)/3 - 1 })
	for name, b := range map[string][]byte{
		"x.npy": npyBytes(t, []int{2, 3}, x),
		"y.npy": npyBytes(t, []int{3}, []int64{-1, 0, 1 << 40}),
	} {
		writeFile(t, filepath.Join(dir, name), b)
	}
	out := pytest.Run(t, py, `
import sys, numpy as np
x = np.load(sys.argv[1] + '/x.npy'); y = np.load(sys.argv[1] + '/y.npy')
assert x.dtype == np.float32 and x.shape == (2, 3) and y.dtype == np.int64 and y.shape == (3,)
print(x.tobytes().hex(), list(y))
`, dir)
	var raw []byte
	for _, v := range x {
		raw = binary.LittleEndian.AppendUint32(raw, math.Float32bits(v))
	}
	if want := strings.TrimSpace(strings.Join([]string{hex.EncodeToString(raw), "[-1, 0, 1099511627776]"}, " ")); strings.TrimSpace(out) != want {
		t.Errorf("NumPy read %q; want %q", out, want)
	}
}

func TestLoadNPZ(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	xTrain := floats(12, func(i int) float32 { return float32(i) })
	xTest := floats(6, func(i int) float32 { return -float32(i) })
	path := filepath.Join(dir, "d.npz")
	writeFile(t, path, npzBytes(t, true, map[string][]byte{
		"x_train": npyBytes(t, []int{4, 3}, xTrain), "y_train": npyBytes(t, []int{4}, []int64{0, 2, 1, 0}),
		"x_test": npyBytes(t, []int{2, 3}, xTest), "y_test": npyBytes(t, []int{2}, []int64{1, 1}),
	}))
	train, test, err := LoadNPZ(path, 3, 0)
	if err != nil {
		t.Fatal(err)
	}
	if train.N != 3 || train.Dim != 3 || train.Classes != 3 || !slices.Equal(train.X, xTrain[:9]) || !slices.Equal(train.Labels, []uint8{0, 2, 1}) {
		t.Errorf("train = %+v", train)
	}
	if test.N != 2 || test.Classes != 3 || !slices.Equal(test.X, xTest) || !slices.Equal(test.Labels, []uint8{1, 1}) {
		t.Errorf("test = %+v", test)
	}
	n, m, labels, err := NPZSizes(path)
	if n != 4 || m != 2 || !labels || err != nil {
		t.Errorf("NPZSizes = %d, %d, %v, %v; want 4, 2, true", n, m, labels, err)
	}
	// Without labels: pre-training only; views work without labels.
	path = filepath.Join(dir, "unlabelled.npz")
	writeFile(t, path, npzBytes(t, false, map[string][]byte{
		"x_train": npyBytes(t, []int{4, 3}, xTrain), "x_test": npyBytes(t, []int{2, 3}, xTest),
	}))
	train, _, err = LoadNPZ(path, 0, 0)
	if err != nil || train.Labels != nil || train.Classes != 0 {
		t.Fatalf("unlabelled: %+v, %v", train, err)
	}
	if a, b := train.Split(1); a.N != 1 || b.N != 3 || b.Labels != nil {
		t.Errorf("Split of an unlabelled set: %+v %+v", a, b)
	}
}

// TestBadDataFiles: each bad data set gives one line naming the file, the
// array and what was expected, wrapping ErrMalformed (or the open error).
func TestBadDataFiles(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	x := func(n, d int) []byte {
		return npyBytes(t, []int{n, d}, floats(n*d, func(i int) float32 { return float32(i % 2) }))
	}
	y := func(v ...int64) []byte { return npyBytes(t, []int{len(v)}, v) }
	keras := func(edit func(m map[string][]byte)) []byte {
		m := map[string][]byte{"x_train": x(4, 3), "y_train": y(0, 1, 0, 1), "x_test": x(2, 3), "y_test": y(1, 0)}
		edit(m)
		return npzBytes(t, true, m)
	}
	good := keras(func(map[string][]byte) {})
	// A stored archive with a byte of x_test's data changed: its CRC fails.
	corrupt := npzBytes(t, false, map[string][]byte{"x_train": x(4, 3), "x_test": x(2, 3)})
	corrupt[len(x(2, 3))-1+30+len("x_test.npy")] ^= 0x01
	for _, tt := range []struct {
		name string
		file []byte
		want []string
	}{
		{"empty file", []byte{}, []string{"empty, want a zip archive"}},
		{"not a zip", []byte("x_train,y_train\n1,2\n"), []string{"not a zip archive"}},
		{"truncated zip", good[:len(good)/2], []string{"not a zip archive"}},
		{"corrupt member", corrupt, []string{"array x_test", "corrupt member"}},
		{"no x_train", keras(func(m map[string][]byte) { delete(m, "x_train"); delete(m, "y_train") }), []string{"no array x_train (it holds: x_test, y_test)"}},
		{"wrong dtype", keras(func(m map[string][]byte) {
			m["x_train"] = rawNPY("{'descr': '<c8', 'fortran_order': False, 'shape': (4, 3), }", make([]byte, 96))
		}), []string{"array x_train", "dtype '<c8'"}},
		{"NaN", keras(func(m map[string][]byte) {
			m["x_test"] = npyBytes(t, []int{2, 3}, []float32{0, 1, 0, 1, float32(math.NaN()), 0})
		}), []string{"array x_test", "value [1, 1] is NaN, want finite numbers"}},
		{"truncated array", keras(func(m map[string][]byte) { m["x_train"] = x(4, 3)[:150] }), []string{"array x_train", "truncated: shape (4, 3) of <f4 needs 48 bytes"}},
		{"float labels", keras(func(m map[string][]byte) { m["y_train"] = npyBytes(t, []int{4}, []float32{0, 1, 0, 1}) }), []string{"array y_train", "want integer labels"}},
		{"label out of range", keras(func(m map[string][]byte) { m["y_test"] = y(1, 7) }), []string{"array y_test: label[1] = 7, want 0..1 (no example has label 2"}},
		{"negative label", keras(func(m map[string][]byte) { m["y_train"] = y(0, -1, 0, 1) }), []string{"array y_train: label[1] = -1"}},
		{"label above 255", keras(func(m map[string][]byte) { m["y_train"] = y(0, 1, 300, 1) }), []string{"label[2] = 300, want 0..255"}},
		{"mismatched counts", keras(func(m map[string][]byte) { m["y_train"] = y(0, 1, 0) }), []string{"array x_train holds 4 examples (shape (4, 3)) but", "array y_train holds 3 labels"}},
		{"features differ", keras(func(m map[string][]byte) { m["x_test"] = x(2, 4) }), []string{"array x_train has 3 values per example but", "array x_test has 4"}},
		{"no examples", keras(func(m map[string][]byte) { m["x_test"] = x(0, 3); m["y_test"] = y() }), []string{"array x_test: 0 examples"}},
		{"labels for one set", keras(func(m map[string][]byte) { delete(m, "y_test") }), []string{"has labels", "array x_test has none: want labels for both sets or neither"}},
		{"labels of shape (n, 2)", keras(func(m map[string][]byte) { m["y_test"] = npyBytes(t, []int{2, 2}, []int64{1, 0, 1, 0}) }), []string{"array y_test", "want labels of shape (n,) or (n, 1)"}},
	} {
		path := filepath.Join(dir, strings.ReplaceAll(tt.name, " ", "_")+".npz")
		writeFile(t, path, tt.file)
		_, _, err := LoadNPZ(path, 0, 0)
		if err == nil {
			t.Errorf("%s: no error", tt.name)
			continue
		}
		msg := err.Error()
		if !errors.Is(err, ErrMalformed) || strings.Contains(msg, "\n") || !strings.Contains(msg, path) {
			t.Errorf("%s: error %q; want one line naming %s, wrapping ErrMalformed", tt.name, msg, path)
		}
		for _, w := range tt.want {
			if !strings.Contains(msg, w) {
				t.Errorf("%s: error %q; want it to say %q", tt.name, msg, w)
			}
		}
	}
	// A limit beyond the data, a folder and a missing file.
	path := filepath.Join(dir, "good.npz")
	writeFile(t, path, good)
	if _, _, err := LoadNPZ(path, 5, 0); err == nil || !strings.Contains(err.Error(), "array x_train: limit 5, want <= 4") {
		t.Errorf("limit 5: %v", err)
	}
	if _, _, err := LoadNPZ(dir, 0, 0); err == nil || !strings.Contains(err.Error(), "is a directory") {
		t.Errorf("a folder: %v", err)
	}
	if _, _, err := LoadNPZ(filepath.Join(dir, "none.npz"), 0, 0); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("a missing file: %v", err)
	}
}

func TestLoadNPY(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	p := func(name string, b []byte) string {
		path := filepath.Join(dir, name)
		writeFile(t, path, b)
		return path
	}
	xtr := p("xtr.npy", npyBytes(t, []int{3, 2}, []float32{0, 1, 1, 0, 1, 1}))
	xte := p("xte.npy", npyBytes(t, []int{1, 2}, []float32{0, 0}))
	ytr := p("ytr.npy", npyBytes(t, []int{3}, []int64{1, 0, 1}))
	yte := p("yte.npy", npyBytes(t, []int{1}, []int64{0}))
	train, test, err := LoadNPY(xtr, xte, ytr, yte, 0, 0)
	if err != nil || train.N != 3 || test.N != 1 || train.Classes != 2 || !slices.Equal(train.Labels, []uint8{1, 0, 1}) {
		t.Fatalf("LoadNPY = %+v, %+v, %v", train, test, err)
	}
	if _, _, err := LoadNPY(xtr, xte, "", "", 0, 0); err != nil {
		t.Errorf("without labels: %v", err)
	}
	bad := p("bad.npy", npyBytes(t, []int{2}, []int64{1, 0}))
	if _, _, err := LoadNPY(xtr, xte, bad, yte, 0, 0); err == nil || !strings.Contains(err.Error(), "npy file "+xtr+" holds 3 examples (shape (3, 2)) but npy file "+bad+" holds 2 labels") {
		t.Errorf("mismatched counts: %v", err)
	}
	if n, err := NPYRows(xtr); n != 3 || err != nil {
		t.Errorf("NPYRows = %d, %v", n, err)
	}
}

func TestLoadCSV(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	p := func(name, text string) string {
		path := filepath.Join(dir, name)
		writeFile(t, path, []byte(text))
		return path
	}
	tr := p("train.csv", "a,label,b\n0.5,1,2\n1e-1, 0 ,3\n0,2.0,4\n")
	te := p("test.csv", "a,label,b\n1,0,1\n")
	train, test, err := LoadCSV(tr, te, CSVOptions{Header: true, LabelColumn: "label"}, 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	if train.N != 3 || train.Dim != 2 || train.Classes != 3 || !slices.Equal(train.X, []float32{0.5, 2, 0.1, 3, 0, 4}) || !slices.Equal(train.Labels, []uint8{1, 0, 2}) || test.N != 1 {
		t.Errorf("LoadCSV = %+v, %+v", train, test)
	}
	// By number, without a header; a header detected.
	tr2 := p("train2.csv", "0.5,1,2\n0.1,0,3\n")
	if s, _, err := LoadCSV(tr2, p("t2.csv", "1,1,1\n"), CSVOptions{LabelColumn: "1"}, 0, 0); err != nil || !slices.Equal(s.X, []float32{0.5, 2, 0.1, 3}) {
		t.Errorf("label column 1: %+v, %v", s, err)
	}
	if tab, err := readCSVFile(tr, CSVOptions{DetectHeader: true}, 0); err != nil || tab.rows != 3 || tab.cols != 3 {
		t.Errorf("detected header: %+v, %v", tab, err)
	}
	for _, tt := range []struct {
		name, text string
		opt        CSVOptions
		want       string
	}{
		{"empty", "", CSVOptions{}, "empty, want rows of numbers"},
		{"not a number", "1,2\n3,x\n", CSVOptions{}, `line 2, column index 1: "x" is not a number`},
		{"NaN", "a,b\n1,NaN\n", CSVOptions{Header: true}, `line 2, column index 1 (b): "NaN", want a finite number`},
		{"beyond float32", "1,1e39\n", CSVOptions{}, `"1e39", want a finite number (float32)`},
		{"ragged", "1,2\n3\n", CSVOptions{}, "line 2: 1 fields, want 2 as in the first row"},
		{"label not an integer", "1,0.5\n", CSVOptions{LabelColumn: "1"}, `line 1, column index 1: label "0.5", want an integer`},
		{"no such label column", "a,b\n1,2\n", CSVOptions{Header: true, LabelColumn: "y"}, `label column "y" is not in the header row (a, b)`},
		{"label column by name without header", "1,2\n", CSVOptions{LabelColumn: "y"}, "without a header row the label column must be a column index"},
		{"label column beyond", "1,2\n", CSVOptions{LabelColumn: "2"}, "label column index 2: the rows have 2 columns, indices 0..1"},
		{"quote", "1,\"2\n", CSVOptions{}, "line 1, byte"},
	} {
		path := p(strings.ReplaceAll(tt.name, " ", "_")+".csv", tt.text)
		_, _, err := LoadCSV(path, te, tt.opt, 0, 0)
		if err == nil || !errors.Is(err, ErrMalformed) || !strings.Contains(err.Error(), path) || !strings.Contains(err.Error(), tt.want) || strings.Contains(err.Error(), "\n") {
			t.Errorf("%s: error %v; want one line naming %s and saying %q", tt.name, err, path, tt.want)
		}
	}
	if _, _, err := LoadCSV(tr, te, CSVOptions{Header: true, LabelColumn: "label"}, 4, 0); err == nil || !strings.Contains(err.Error(), "limit 4, want <= 3") {
		t.Errorf("limit 4: %v", err)
	}
}

func TestScaler(t *testing.T) {
	t.Parallel()
	train := &Set{X: []float32{0, 10, 5, 2, 10, 20, 5, 5, 5}, N: 3, Dim: 3}
	u := FitScaler(ScaleUnit, train)
	x := slices.Clone(train.X)
	u.Apply(x)
	if want := []float32{0, 1, 0, 0.4, 1, 1, 1, 0, 0}; !slices.Equal(x, want) && !approx(x, want, 1e-6) {
		t.Errorf("unit: %v; want %v", x, want)
	}
	s := FitScaler(ScaleStandardize, train)
	x = slices.Clone(train.X)
	s.Apply(x)
	for j := range 3 {
		var mean, sq float64
		for i := range 3 {
			mean += float64(x[i*3+j]) / 3
		}
		for i := range 3 {
			sq += (float64(x[i*3+j]) - mean) * (float64(x[i*3+j]) - mean) / 3
		}
		if math.Abs(mean) > 1e-6 || math.Abs(sq-1) > 1e-5 {
			t.Errorf("standardize: feature %d has mean %g, variance %g; want 0, 1", j, mean, sq)
		}
	}
	if FitScaler(ScaleNone, train) != nil {
		t.Error("FitScaler(none) is not nil")
	}
	// A constant feature becomes 0, not NaN.
	c := FitScaler(ScaleStandardize, &Set{X: []float32{3, 3}, N: 2, Dim: 1})
	x = []float32{3, 4}
	c.Apply(x)
	if x[0] != 0 || x[1] != 1 {
		t.Errorf("constant feature: %v; want [0 1]", x)
	}
}

func approx(a, b []float32, tol float64) bool {
	for i := range a {
		if math.Abs(float64(a[i]-b[i])) > tol {
			return false
		}
	}
	return len(a) == len(b)
}
