package data

import (
	"fmt"
)

// The arrays of a data set in an .npz archive, in the layout of Keras's
// data sets (keras.datasets.mnist's mnist.npz): features of shape (n, d) or
// (n, d1, d2, ...), labels of shape (n,).
const (
	NPZTrainX = "x_train"
	NPZTrainY = "y_train"
	NPZTestX  = "x_test"
	NPZTestY  = "y_test"
)

// MaxClasses is the most classes a labelled set may have: a label is a byte.
const MaxClasses = 256

// part is one decoded set before the checks that compare it with the other:
// its features, its labels if any, and what to call them in errors.
type part struct {
	what, labelsWhat string
	x                []float32
	n, dim           int
	labels           []int64
}

// LoadNPZ loads the train and test sets of the .npz archive at path (Keras
// layout: NPZTrainX, NPZTrainY, NPZTestX, NPZTestY). Features may be any
// float or integer dtype (float32, float64, uint8, ...) and are converted to
// float32 as they are, unscaled; they must be finite. The labels are
// optional (pre-training needs none) but go together: both y arrays or
// neither. trainLimit and testLimit keep the first N examples (0 = all; more
// than the array holds is an error). The arrays are streamed out of the
// archive: only the float32 result is held. Errors are one line naming the
// file, the array and what was expected; malformed contents wrap
// ErrMalformed.
func LoadNPZ(path string, trainLimit, testLimit int) (train, test *Set, err error) {
	z, err := openNPZ(path)
	if err != nil {
		return nil, nil, err
	}
	defer z.Close()
	load := func(xName, yName string, limit int) (*part, error) {
		p := &part{what: fmt.Sprintf("npz file %s: array %s", path, xName)}
		h, err := z.header(xName)
		if err != nil {
			return nil, err
		}
		if err := checkLimit(p.what, h, limit); err != nil {
			return nil, err
		}
		a, err := z.read(xName, arrayWant{rows: limit})
		if err != nil {
			return nil, err
		}
		p.setX(a)
		if !z.has(yName) {
			return p, nil
		}
		p.labelsWhat = fmt.Sprintf("npz file %s: array %s", path, yName)
		yh, err := z.header(yName)
		if err != nil {
			return nil, err
		}
		if err := checkCounts(p.what, h, p.labelsWhat, yh); err != nil {
			return nil, err
		}
		y, err := z.read(yName, arrayWant{labels: true, rows: limit})
		if err != nil {
			return nil, err
		}
		p.labels = y.ints
		return p, nil
	}
	tr, err := load(NPZTrainX, NPZTrainY, trainLimit)
	if err != nil {
		return nil, nil, err
	}
	te, err := load(NPZTestX, NPZTestY, testLimit)
	if err != nil {
		return nil, nil, err
	}
	return assemble(tr, te, "npz "+path)
}

// LoadNPY loads a train and a test set from .npy files: features in
// trainX and testX, labels (optional, both or neither: "" for none) in
// trainY and testY. Otherwise as LoadNPZ.
func LoadNPY(trainX, testX, trainY, testY string, trainLimit, testLimit int) (train, test *Set, err error) {
	load := func(xPath, yPath string, limit int) (*part, error) {
		p := &part{what: "npy file " + xPath}
		h, err := npyFileHeader(xPath)
		if err != nil {
			return nil, err
		}
		if err := checkLimit(p.what, h, limit); err != nil {
			return nil, err
		}
		a, err := readNPYFile(xPath, arrayWant{rows: limit})
		if err != nil {
			return nil, err
		}
		p.setX(a)
		if yPath == "" {
			return p, nil
		}
		p.labelsWhat = "npy file " + yPath
		yh, err := npyFileHeader(yPath)
		if err != nil {
			return nil, err
		}
		if err := checkCounts(p.what, h, p.labelsWhat, yh); err != nil {
			return nil, err
		}
		y, err := readNPYFile(yPath, arrayWant{labels: true, rows: limit})
		if err != nil {
			return nil, err
		}
		p.labels = y.ints
		return p, nil
	}
	tr, err := load(trainX, trainY, trainLimit)
	if err != nil {
		return nil, nil, err
	}
	te, err := load(testX, testY, testLimit)
	if err != nil {
		return nil, nil, err
	}
	return assemble(tr, te, "npy "+trainX)
}

// LoadCSV loads a train and a test set from CSV files laid out as opt says:
// every column a number but the label column (if any), whose values are
// integer labels. Otherwise as LoadNPZ.
func LoadCSV(trainPath, testPath string, opt CSVOptions, trainLimit, testLimit int) (train, test *Set, err error) {
	load := func(path string, limit int) (*part, error) {
		t, err := readCSVFile(path, opt, limit)
		if err != nil {
			return nil, err
		}
		if limit > 0 && t.rows < limit {
			return nil, fmt.Errorf("csv file %s: %w", path, malformedf("limit %d, want <= %d, the rows it holds (0 = all examples)", limit, t.rows))
		}
		p := &part{what: "csv file " + path, x: t.x, n: t.rows, dim: t.cols, labels: t.labels}
		if opt.LabelColumn != "" {
			p.labelsWhat = fmt.Sprintf("csv file %s: label column %s", path, opt.LabelColumn)
		}
		return p, nil
	}
	tr, err := load(trainPath, trainLimit)
	if err != nil {
		return nil, nil, err
	}
	te, err := load(testPath, testLimit)
	if err != nil {
		return nil, nil, err
	}
	return assemble(tr, te, "csv "+trainPath)
}

// setX takes a decoded features array: n rows of the product of the other
// dims.
func (p *part) setX(a *npyArray) {
	p.x = a.floats
	p.n = a.shape[0]
	p.dim = 1
	for _, d := range a.shape[1:] {
		p.dim *= d
	}
	if p.dim > 0 {
		p.n = len(a.floats) / p.dim // a limit keeps fewer rows
	}
}

// checkLimit refuses a limit beyond the examples of the features array h.
func checkLimit(what string, h npyHeader, limit int) error {
	if limit < 0 {
		return fmt.Errorf("%s: limit %d, want >= 0 (0 = all examples)", what, limit)
	}
	if len(h.shape) > 0 && limit > h.shape[0] {
		return fmt.Errorf("%s: %w", what, malformedf("limit %d, want <= %d, the examples of shape %s (0 = all examples)", limit, h.shape[0], shapeString(h.shape)))
	}
	return nil
}

// checkCounts refuses labels that do not number the examples.
func checkCounts(what string, x npyHeader, labelsWhat string, y npyHeader) error {
	if len(x.shape) == 0 || len(y.shape) == 0 || x.shape[0] == y.shape[0] {
		return nil // a scalar is refused when it is read
	}
	return malformedf("%s holds %d examples (shape %s) but %s holds %d labels (shape %s): want one label per example", what, x.shape[0], shapeString(x.shape), labelsWhat, y.shape[0], shapeString(y.shape))
}

// assemble checks the two parts against each other and makes the sets:
// examples and features present, the same features in both, labels in both
// or neither, numbering the classes 0..C-1 as for LoadIDXDir (a class only
// the test set shows counts; a label beyond a class that no example shows is
// refused), C at most MaxClasses.
func assemble(tr, te *part, name string) (train, test *Set, err error) {
	for _, p := range []*part{tr, te} {
		if p.n == 0 {
			return nil, nil, malformedf("%s: 0 examples, want at least 1", p.what)
		}
		if p.dim == 0 {
			return nil, nil, malformedf("%s: examples of 0 values, want at least 1", p.what)
		}
		if p.labels != nil && len(p.labels) != p.n {
			return nil, nil, malformedf("%s holds %d examples but %s holds %d labels: want one label per example", p.what, p.n, p.labelsWhat, len(p.labels))
		}
	}
	if tr.dim != te.dim {
		return nil, nil, malformedf("%s has %d values per example but %s has %d: want the same features", tr.what, tr.dim, te.what, te.dim)
	}
	if (tr.labels == nil) != (te.labels == nil) {
		has, lacks := tr, te
		if tr.labels == nil {
			has, lacks = te, tr
		}
		return nil, nil, malformedf("%s has labels (%s) but %s has none: want labels for both sets or neither", has.what, has.labelsWhat, lacks.what)
	}
	classes := 0
	if tr.labels != nil {
		var shown [MaxClasses]bool
		for _, p := range []*part{tr, te} {
			for i, l := range p.labels {
				if l < 0 || l >= MaxClasses {
					return nil, nil, malformedf("%s: label[%d] = %d, want 0..%d (classes are numbered from 0; at most %d)", p.labelsWhat, i, l, MaxClasses-1, MaxClasses)
				}
				shown[l] = true
			}
		}
		for classes < MaxClasses && shown[classes] {
			classes++
		}
		for _, p := range []*part{tr, te} {
			for i, l := range p.labels {
				if int(l) >= classes {
					return nil, nil, malformedf("%s: label[%d] = %d, want 0..%d (no example has label %d; the classes must be numbered 0..C-1)", p.labelsWhat, i, l, max(classes-1, 0), classes)
				}
			}
		}
	}
	mk := func(p *part, suffix string) *Set {
		s := &Set{X: p.x, N: p.n, Dim: p.dim, Classes: classes, Name: name + " " + suffix}
		if p.labels != nil {
			s.Labels = make([]uint8, p.n)
			for i, l := range p.labels {
				s.Labels[i] = uint8(l)
			}
		}
		return s
	}
	return mk(tr, "train"), mk(te, "test"), nil
}

// Sizes of data sets in NumPy files, read from their headers only: what a
// limit may be at most. A file that cannot be read gives an error, as its
// loader would.

// NPZSizes returns the examples of NPZTrainX and NPZTestX in the archive at
// path, and whether it holds labels (NPZTrainY).
func NPZSizes(path string) (train, test int, labels bool, err error) {
	z, err := openNPZ(path)
	if err != nil {
		return 0, 0, false, err
	}
	defer z.Close()
	for _, a := range []struct {
		name string
		n    *int
	}{{NPZTrainX, &train}, {NPZTestX, &test}} {
		h, err := z.header(a.name)
		if err != nil {
			return 0, 0, false, err
		}
		if len(h.shape) > 0 {
			*a.n = h.shape[0]
		}
	}
	return train, test, z.has(NPZTrainY), nil
}

// NPYRows returns the examples (the first dim) of the .npy file at path.
func NPYRows(path string) (int, error) {
	h, err := npyFileHeader(path)
	if err != nil || len(h.shape) == 0 {
		return 0, err
	}
	return h.shape[0], nil
}
