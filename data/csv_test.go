package data

import (
	"errors"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// A UTF-8 byte-order mark (Excel's "CSV UTF-8") is no part of the first
// field: a headerless file keeps its first row, and a header's first name
// is found as a label column.
func TestCSVByteOrderMark(t *testing.T) {
	t.Parallel()
	const bom = "\xef\xbb\xbf"
	for _, tt := range []struct {
		name, text string
		opt        CSVOptions
		rows       int
		x          []float32
		labels     []int64
		header     []string
	}{
		{"no header, detected", bom + "0.5,1\n0.25,0\n", CSVOptions{DetectHeader: true}, 2, []float32{0.5, 1, 0.25, 0}, nil, nil},
		{"no header, label index", bom + "1,0.5\n0,0.25\n", CSVOptions{LabelColumn: "0"}, 2, []float32{0.5, 0.25}, []int64{1, 0}, nil},
		{"header, detected, label name", bom + "label,a\n1,0.5\n0,0.25\n", CSVOptions{DetectHeader: true, LabelColumn: "label"}, 2, []float32{0.5, 0.25}, []int64{1, 0}, []string{"label", "a"}},
		{"header, label name", bom + "label,a\n1,0.5\n", CSVOptions{Header: true, LabelColumn: "label"}, 1, []float32{0.5}, []int64{1}, []string{"label", "a"}},
		{"a lone mark", bom, CSVOptions{DetectHeader: true}, -1, nil, nil, nil},
	} {
		t.Run(tt.name, func(t *testing.T) {
			tab, err := readCSV(strings.NewReader(tt.text), tt.opt, 0)
			if tt.rows < 0 {
				if err == nil || !strings.Contains(err.Error(), "empty") {
					t.Fatalf("readCSV(%q) = %+v, %v; want empty", tt.text, tab, err)
				}
				return
			}
			if err != nil {
				t.Fatalf("readCSV(%q): %v", tt.text, err)
			}
			if tab.rows != tt.rows || !slices.Equal(tab.x, tt.x) || !slices.Equal(tab.labels, tt.labels) || !slices.Equal(tab.header, tt.header) {
				t.Errorf("readCSV(%q) = rows %d x %v labels %v header %q; want %d %v %v %q", tt.text, tab.rows, tab.x, tab.labels, tab.header, tt.rows, tt.x, tt.labels, tt.header)
			}
		})
	}
	// The whole way in: a file for master predict and one for training.
	dir := t.TempDir()
	path := filepath.Join(dir, "x.csv")
	writeFile(t, path, []byte(bom+"0.5,1\n0.25,0\n0,0\n"))
	if f, err := ReadFeatures(path, "", CSVOptions{DetectHeader: true}, nil); err != nil || f.Rows != 3 || f.Header != nil {
		t.Errorf("ReadFeatures = %+v, %v; want 3 rows, no header", f, err)
	}
	if f, err := ReadFeatures("-", "", CSVOptions{DetectHeader: true}, strings.NewReader(bom+"p0,p1\n1,2\n")); err != nil || f.Rows != 1 || !slices.Equal(f.Header, []string{"p0", "p1"}) {
		t.Errorf("ReadFeatures(stdin) = %+v, %v; want 1 row, header p0, p1", f, err)
	}
	lab := filepath.Join(dir, "lab.csv")
	writeFile(t, lab, []byte(bom+"label,a\n1,0.5\n0,0.25\n"))
	if tr, _, err := LoadCSV(lab, lab, CSVOptions{Header: true, LabelColumn: "label"}, 0, 0); err != nil || tr.N != 2 {
		t.Errorf("LoadCSV = %+v, %v; want 2 examples", tr, err)
	}
	if n, err := CSVRows(lab, true, 0); n != 2 || err != nil {
		t.Errorf("CSVRows(header) = %d, %v; want 2", n, err)
	}
}

// A first row is taken for a header only when none of its fields is a
// number: a data row with one bad field is reported, never dropped, and the
// error says why the row was read as data.
func TestCSVHeaderDetection(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		name, text string
		header     bool
		want       string // the error, "" for none
	}{
		{"names", "a,b\n1,2\n", true, ""},
		{"empty name", "\"\",b\n1,2\n", true, ""},
		{"bad first field", "x1,2\n3,4\n", false, `line 1, column index 0: "x1" is not a number (the first row holds numbers, so it is data: a header row names every column)`},
		{"numeric names", ",0,1\n0,0.5,1\n", false, `line 1, column index 0: "" is not a number (the first row holds numbers`},
		{"a number out of range", "1e999,b\n1,2\n", false, `"1e999", want a finite number`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			tab, err := readCSV(strings.NewReader(tt.text), CSVOptions{DetectHeader: true}, 0)
			if tt.want != "" {
				if err == nil || !errors.Is(err, ErrMalformed) || !strings.Contains(err.Error(), tt.want) {
					t.Errorf("readCSV(%q) = %+v, %v; want an error saying %q", tt.text, tab, err, tt.want)
				}
				return
			}
			if err != nil || (tab.header != nil) != tt.header || tab.rows != 1 {
				t.Errorf("readCSV(%q) = %+v, %v; want header %v and 1 row", tt.text, tab, err, tt.header)
			}
		})
	}
}
