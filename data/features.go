package data

import (
	"fmt"
	"io"
	"path/filepath"
	"strings"
)

// Array is a decoded numeric array: its shape and its values as float32,
// row-major.
type Array struct {
	Shape  []int
	Values []float32
}

// ReadNPZFloats reads every array of the .npz archive at path as float32
// (weights.npz, scale.npz). Errors name the file and the array.
func ReadNPZFloats(path string) (map[string]Array, error) {
	z, err := openNPZ(path)
	if err != nil {
		return nil, err
	}
	defer z.Close()
	out := map[string]Array{}
	for _, m := range z.z.File {
		name := strings.TrimSuffix(m.Name, ".npy")
		a, err := z.read(name, arrayWant{})
		if err != nil {
			return nil, err
		}
		out[name] = Array{Shape: a.shape, Values: a.floats}
	}
	return out, nil
}

// Features are examples to predict or transform: Rows rows of Dim values.
type Features struct {
	X         []float32
	Rows, Dim int
	// Name says where they came from, for errors.
	Name string
	// Header is a CSV file's header row, nil when its first row is data
	// (or for NumPy files): what the caller may say it decided.
	Header []string
}

// ReadFeatures reads the examples at path: a .npy file, the array name of
// an .npz archive (x_test when name is ""), or a CSV file (.csv, or "-" for
// CSV on stdin) laid out as opt says (a label column is dropped). Values
// must be finite; the rows are the first dim, the features the product of
// the others. Errors are one line naming the file (and array).
func ReadFeatures(path, name string, opt CSVOptions, stdin io.Reader) (*Features, error) {
	ext := strings.ToLower(filepath.Ext(path))
	if name != "" && ext != ".npz" {
		return nil, fmt.Errorf("--array %s: only an .npz archive has named arrays, not %s", name, path)
	}
	switch {
	case path == "-" || ext == ".csv":
		var t *csvTable
		var err error
		what := "csv file " + path
		if path == "-" {
			what = "csv on stdin"
			t, err = readCSV(stdin, opt, 0)
			if err != nil {
				err = fmt.Errorf("%s: %w", what, err)
			}
		} else {
			t, err = readCSVFile(path, opt, 0)
		}
		if err != nil {
			return nil, err
		}
		return &Features{X: t.x, Rows: t.rows, Dim: t.cols, Name: what, Header: t.header}, nil
	case ext == ".npy":
		a, err := readNPYFile(path, arrayWant{})
		if err != nil {
			return nil, err
		}
		return features(a, "npy file "+path), nil
	case ext == ".npz":
		if name == "" {
			name = NPZTestX
		}
		z, err := openNPZ(path)
		if err != nil {
			return nil, err
		}
		defer z.Close()
		a, err := z.read(name, arrayWant{})
		if err != nil {
			return nil, err
		}
		return features(a, fmt.Sprintf("npz file %s: array %s", path, name)), nil
	}
	return nil, fmt.Errorf("%s: want a .npy, .npz or .csv file, or - for CSV on stdin", path)
}

func features(a *npyArray, name string) *Features {
	f := &Features{X: a.floats, Name: name, Rows: a.shape[0], Dim: 1}
	for _, d := range a.shape[1:] {
		f.Dim *= d
	}
	return f
}
