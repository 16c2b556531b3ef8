package data

import (
	"bytes"
	"errors"
	"slices"
	"strings"
	"testing"
)

// npySeeds are .npy files, good and bad, that seed FuzzReadNPY and (zipped)
// FuzzReadNPZ.
func npySeeds(t testing.TB) [][]byte {
	good := npyBytes(t, []int{2, 3}, []float32{0, 0.5, 1, 2, 3, 4})
	return [][]byte{
		good,
		npyBytes(t, []int{3}, []int64{0, 1, 2}),
		good[:len(good)-2],
		append(slices.Clone(good), 1),
		rawNPY("{'descr': '|u1', 'fortran_order': True, 'shape': (2, 2), }", []byte{1, 2, 3, 4}),
		rawNPY("{'descr': '>i2', 'fortran_order': False, 'shape': (2, 1), }", []byte{0, 1, 0, 2}),
		rawNPY("{'descr': '<f8', 'fortran_order': False, 'shape': (1, 1), }", []byte{0, 0, 0, 0, 0, 0, 0xf8, 0x7f}),
		rawNPY("{'descr': '<f4', 'fortran_order': False, 'shape': (4611686018427387904, 4), }", nil),
		rawNPY("{'descr': [('a', '<f4')], 'fortran_order': False, 'shape': (1,), }", nil),
		[]byte(npyMagic + "\x02\x00\xff\xff\xff\xff"),
	}
}

// FuzzReadNPY: readNPY never panics, and what it accepts is consistent:
// as many values as the shape says (a limit keeps a prefix), all finite,
// and the same with the size known or not, and through short reads.
func FuzzReadNPY(f *testing.F) {
	for _, b := range npySeeds(f) {
		f.Add(b, false, 0)
		f.Add(b, true, 1)
	}
	f.Fuzz(func(t *testing.T, b []byte, labels bool, rows int) {
		rows = max(rows, 0) % 8
		want := arrayWant{labels: labels, rows: rows, size: int64(len(b))}
		a, err := readNPY(bytes.NewReader(b), want)
		if err != nil {
			if strings.Contains(err.Error(), "\n") {
				t.Fatalf("error of more than one line: %q", err)
			}
			if !errors.Is(err, ErrMalformed) {
				t.Fatalf("error %q does not wrap ErrMalformed", err)
			}
			return
		}
		n := 1
		for _, d := range a.shape {
			n *= d
		}
		got := len(a.floats)
		if labels {
			got = len(a.ints)
		}
		if rows > 0 && rows < a.shape[0] {
			n = n / a.shape[0] * rows
		}
		if got != n {
			t.Fatalf("shape %v (rows %d): %d values; want %d", a.shape, rows, got, n)
		}
		for _, v := range a.floats {
			if v != v || v-v != 0 {
				t.Fatalf("accepted a value %v", v)
			}
		}
		want.size = -1
		b2, err := readNPY(bytes.NewReader(b), want)
		if err != nil && !(rows > 0 && strings.Contains(err.Error(), "after")) {
			t.Fatalf("size known: ok; size unknown: %v", err)
		}
		if err == nil && (!slices.Equal(b2.floats, a.floats) || !slices.Equal(b2.ints, a.ints)) {
			t.Fatalf("size unknown: other values")
		}
	})
}

// FuzzReadNPZ: LoadNPZ's archive reading never panics and errors are one
// line wrapping ErrMalformed.
func FuzzReadNPZ(f *testing.F) {
	seeds := npySeeds(f)
	f.Add(npzBytes(f, false, map[string][]byte{"x_train": seeds[0], "y_train": seeds[1]}))
	f.Add(npzBytes(f, true, map[string][]byte{"x_train": seeds[0], "x_test": seeds[2]}))
	f.Add(npzBytes(f, true, map[string][]byte{"x_train": seeds[7]}))
	f.Add([]byte("PK\x03\x04"))
	f.Fuzz(func(t *testing.T, b []byte) {
		z, err := newNPZ("fuzz.npz", bytes.NewReader(b), int64(len(b)))
		if err != nil {
			if !errors.Is(err, ErrMalformed) || strings.Contains(err.Error(), "\n") {
				t.Fatalf("error %q", err)
			}
			return
		}
		for _, name := range []string{NPZTrainX, NPZTrainY, NPZTestX} {
			if _, err := z.header(name); err != nil {
				continue
			}
			_, err := z.read(name, arrayWant{labels: name == NPZTrainY})
			if err != nil && (!errors.Is(err, ErrMalformed) || strings.Contains(err.Error(), "\n")) {
				t.Fatalf("array %s: error %q", name, err)
			}
		}
	})
}

// FuzzReadCSV: readCSV never panics, errors are one line wrapping
// ErrMalformed, and what it accepts is a full table of finite numbers.
func FuzzReadCSV(f *testing.F) {
	for _, s := range []string{"a,label\n1,0\n2,1\n", "1,2,3\n4,5,6\n", "1,\"2\n", "x\n", "1,NaN\n", "1,2\n3\n", "\n\n1e39,1\n"} {
		f.Add(s, true, "label")
		f.Add(s, false, "1")
	}
	f.Fuzz(func(t *testing.T, s string, header bool, label string) {
		tab, err := readCSV(strings.NewReader(s), CSVOptions{Header: header, LabelColumn: label}, 0)
		if err != nil {
			if !errors.Is(err, ErrMalformed) || strings.Contains(err.Error(), "\n") {
				t.Fatalf("error %q", err)
			}
			return
		}
		if len(tab.x) != tab.rows*tab.cols || (tab.labels != nil && len(tab.labels) != tab.rows) {
			t.Fatalf("%d values, %d labels for %d rows of %d", len(tab.x), len(tab.labels), tab.rows, tab.cols)
		}
		for _, v := range tab.x {
			if v != v || v-v != 0 {
				t.Fatalf("accepted a value %v", v)
			}
		}
	})
}
