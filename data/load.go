package data

import (
	"compress/gzip"
	"errors"
	"fmt"
	"io/fs"
	"math"
	"os"
	"path/filepath"
)

// FashionMNISTDir is where Debian's dataset-fashion-mnist package installs
// the Fashion-MNIST IDX files.
const FashionMNISTDir = "/usr/share/datasets/fashion-mnist"

// The MNIST file names, without the .gz that the distributed files carry.
const (
	TrainImagesFile = "train-images-idx3-ubyte"
	TrainLabelsFile = "train-labels-idx1-ubyte"
	TestImagesFile  = "t10k-images-idx3-ubyte"
	TestLabelsFile  = "t10k-labels-idx1-ubyte"
)

// fashionMNISTClasses is the number of Fashion-MNIST's classes (labels 0..9).
const fashionMNISTClasses = 10

// LoadIDX reads an images file (magic 0x00000803: uint8, dims n x rows x
// cols, or any n x d1 x ... with 2 or more dims) and its labels file (magic
// 0x00000801: uint8, dim n), each gzip-compressed or raw, into a Set.
// Pixels are scaled to [0,1] as x/255; each of the n examples becomes a row
// of Dim = rows*cols (the product of the dims after the first) features.
// Classes is the largest label in the whole labels file plus one, so a limit
// does not change it (LoadIDXDir and FashionMNIST check the labels against
// the classes). limit > 0 keeps only the first limit examples, and is an
// error if the files hold fewer; 0 keeps all. Name is imagesPath.
//
// Both files are read and checked in full. Errors are one line naming the
// file and what was expected against what was found; malformed contents
// wrap ErrFormat, a missing file fs.ErrNotExist.
func LoadIDX(imagesPath, labelsPath string, limit int) (*Set, error) {
	s, _, err := loadIDX(imagesPath, labelsPath, limit)
	return s, err
}

// loadIDX is LoadIDX that also returns the whole labels file, beyond the
// limit.
func loadIDX(imagesPath, labelsPath string, limit int) (*Set, []uint8, error) {
	if limit < 0 {
		return nil, nil, fmt.Errorf("load %s: limit %d, want >= 0 (0 = all examples)", imagesPath, limit)
	}
	images, err := readIDXFile(imagesPath, imagesExpect())
	if err != nil {
		return nil, nil, fmt.Errorf("images file %s: %w", imagesPath, err)
	}
	labels, err := readIDXFile(labelsPath, expect{
		what: "labels", minDims: 1, maxDims: 1,
		magic: "0x00000801 (uint8 labels: 1 dim, n)",
	})
	if err != nil {
		return nil, nil, fmt.Errorf("labels file %s: %w", labelsPath, err)
	}
	n, dim := images.Dims[0], len(images.Data)/max(images.Dims[0], 1)
	if n == 0 {
		return nil, nil, fmt.Errorf("images file %s: %w", imagesPath, formatf("header declares 0 examples (dims %s)", dimsString(images.Dims)))
	}
	if dim == 0 {
		return nil, nil, fmt.Errorf("images file %s: %w", imagesPath, formatf("header declares examples of 0 pixels (dims %s)", dimsString(images.Dims)))
	}
	if labels.Dims[0] != n {
		return nil, nil, formatf("images file %s holds %d examples but labels file %s holds %d labels", imagesPath, n, labelsPath, labels.Dims[0])
	}
	if limit > n {
		// Not capped: a limit above the data is a mistake to report, not
		// a smaller run to start.
		return nil, nil, fmt.Errorf("load %s: limit %d, want <= %d, the examples the file holds (0 = all examples)", imagesPath, limit, n)
	}
	classes := 0
	for _, l := range labels.Data {
		classes = max(classes, int(l)+1)
	}
	if limit > 0 {
		n = limit
	}
	s := &Set{
		X:       make([]float32, n*dim),
		Labels:  labels.Data[:n:n],
		N:       n,
		Dim:     dim,
		Classes: classes,
		Name:    imagesPath,
	}
	var scale [256]float32
	for i := range scale {
		scale[i] = float32(i) / 255
	}
	for i, p := range images.Data[:n*dim] {
		s.X[i] = scale[p]
	}
	return s, labels.Data, nil
}

// imagesExpect is what an images file must be.
func imagesExpect() expect {
	return expect{
		what: "pixels", minDims: 2, maxDims: 255,
		magic: "0x00000803 (uint8 images: n x rows x cols, or any 2 or more dims)",
	}
}

// readIDXFile opens and decodes path. The error names the problem, not the
// file: the caller adds which file it is.
func readIDXFile(path string, want expect) (*IDX, error) {
	f, err := openIDXFile(path, &want)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return readIDX(f, want)
}

// readIDXFileHeader reads and checks only the header of the IDX file at
// path. Errors are readIDXFile's.
func readIDXFileHeader(path string, want expect) (idxHeader, error) {
	f, err := openIDXFile(path, &want)
	if err != nil {
		return idxHeader{}, err
	}
	defer f.Close()
	src, gz, done, err := decompress(f, &want)
	if err != nil {
		return idxHeader{}, err
	}
	defer done()
	return readHeader(src, gz, want)
}

// openIDXFile opens path, a file that is not a folder, and sets want.size
// to its size.
func openIDXFile(path string, want *expect) (*os.File, error) {
	f, err := os.Open(path)
	if err != nil {
		var pe *fs.PathError
		if errors.As(err, &pe) {
			err = pe.Err // the caller names the path
		}
		return nil, fmt.Errorf("cannot open: %w", err)
	}
	st, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("stat: %w", err)
	}
	if st.IsDir() {
		f.Close()
		return nil, errors.New("is a directory, want an IDX file")
	}
	want.size = st.Size()
	return f, nil
}

// LoadIDXDir loads the train and test sets from the four MNIST-named IDX
// files in dir (TrainImagesFile, ...), each with a .gz suffix or, where the
// .gz is absent, without one. trainLimit and testLimit keep the first N
// examples of each (0 = all; more than a set holds is an error). The sets
// are named "<name> train" and "<name> test".
//
// The labels must number the classes 0..C-1, each shown by some example of
// either set (a class only the test set shows counts): both sets get
// Classes C, so that a classifier sized from either fits both. A label
// beyond a class that no example shows is refused (ErrFormat), naming the
// file, the label's index and value and the labels allowed, so that a
// stray label 200 cannot make a 201-class classifier.
func LoadIDXDir(dir, name string, trainLimit, testLimit int) (train, test *Set, err error) {
	return loadDir(dir, name, 0, trainLimit, testLimit)
}

// FashionMNIST loads the Fashion-MNIST train (60000) and test (10000) sets
// from dir (Debian's are in FashionMNISTDir): 28x28 = 784 pixels in [0,1],
// labels 0..9 (any other label is an error), Classes 10. trainLimit and
// testLimit keep the first N examples (0 = all). See LoadIDXDir.
func FashionMNIST(dir string, trainLimit, testLimit int) (train, test *Set, err error) {
	return loadDir(dir, "fashion-mnist", fashionMNISTClasses, trainLimit, testLimit)
}

// loadDir is LoadIDXDir for data sets of a known number of classes, or of
// classes derived from the labels when classes is 0.
func loadDir(dir, name string, classes, trainLimit, testLimit int) (train, test *Set, err error) {
	train, trainLabels, trainPath, err := loadPair(dir, TrainImagesFile, TrainLabelsFile, trainLimit)
	if err != nil {
		return nil, nil, fmt.Errorf("%s train set: %w", name, err)
	}
	test, testLabels, testPath, err := loadPair(dir, TestImagesFile, TestLabelsFile, testLimit)
	if err != nil {
		return nil, nil, fmt.Errorf("%s test set: %w", name, err)
	}
	if train.Dim != test.Dim {
		return nil, nil, formatf("%s: train examples have %d pixels (%s) but test examples %d (%s)", name, train.Dim, train.Name, test.Dim, test.Name)
	}
	// Fixed classes allow 0..classes-1; derived ones 0..C-1 where C is the
	// first label no example shows.
	why := fmt.Sprintf("%s has %d classes", name, classes)
	if classes == 0 {
		var shown [256]bool
		for _, ls := range [][]uint8{trainLabels, testLabels} {
			for _, l := range ls {
				shown[l] = true
			}
		}
		for classes < len(shown) && shown[classes] {
			classes++
		}
		why = fmt.Sprintf("no example has label %d; the classes must be numbered 0..C-1", classes)
	}
	for _, set := range []struct {
		what, path string
		labels     []uint8
	}{{"train", trainPath, trainLabels}, {"test", testPath, testLabels}} {
		for i, l := range set.labels {
			if int(l) < classes {
				continue
			}
			if classes == 0 {
				return nil, nil, formatf("%s %s set: labels file %s: label[%d] = %d, want 0..C-1 (no example has label 0)", name, set.what, set.path, i, l)
			}
			return nil, nil, formatf("%s %s set: labels file %s: label[%d] = %d, want 0..%d (%s)", name, set.what, set.path, i, l, classes-1, why)
		}
	}
	train.Name, test.Name = name+" train", name+" test"
	train.Classes, test.Classes = classes, classes
	return train, test, nil
}

// loadPair loads the images and labels files base names images and labels
// in dir (see idxPath), and returns the whole labels file and its path too.
func loadPair(dir, images, labels string, limit int) (*Set, []uint8, string, error) {
	ip, err := idxPath(dir, images, "images")
	if err != nil {
		return nil, nil, "", err
	}
	lp, err := idxPath(dir, labels, "labels")
	if err != nil {
		return nil, nil, "", err
	}
	s, all, err := loadIDX(ip, lp, limit)
	return s, all, lp, err
}

// IDXDirSizes returns how many examples the train and test images files of
// dir (named as LoadIDXDir reads them) declare, reading only their headers:
// what a limit may be at most. Errors are LoadIDXDir's.
func IDXDirSizes(dir string) (train, test int, err error) {
	for _, f := range []struct {
		base string
		n    *int
	}{{TrainImagesFile, &train}, {TestImagesFile, &test}} {
		p, err := idxPath(dir, f.base, "images")
		if err != nil {
			return 0, 0, err
		}
		h, err := readIDXFileHeader(p, imagesExpect())
		if err != nil {
			return 0, 0, fmt.Errorf("images file %s: %w", p, err)
		}
		*f.n = h.dims[0]
	}
	return train, test, nil
}

// idxPath prefers base.gz in dir and falls back to the uncompressed base.
// A path that exists but cannot be used is returned for LoadIDX to report.
func idxPath(dir, base, kind string) (string, error) {
	gz := filepath.Join(dir, base+".gz")
	if _, err := os.Stat(gz); !errors.Is(err, fs.ErrNotExist) {
		return gz, nil
	}
	plain := filepath.Join(dir, base)
	if _, err := os.Stat(plain); !errors.Is(err, fs.ErrNotExist) {
		return plain, nil
	}
	return "", fmt.Errorf("%s file %s: cannot open: %w (nor %s)", kind, gz, fs.ErrNotExist, base)
}

// WriteIDXFiles writes s as an images and a labels IDX file in dir, named
// imagesName and labelsName, gzip-compressed if gz. Pixels are stored as
// uint8, round(x*255) with x clamped to [0,1] (NaN as 0), so values that came
// from an IDX file round-trip exactly. The images have dims n x r x r when
// Dim is a square r*r, else n x Dim. It exists for tests that need IDX files
// on disk, good or (after editing them) bad.
func WriteIDXFiles(dir string, s *Set, imagesName, labelsName string, gz bool) error {
	dims := []int{s.N, s.Dim}
	if r := int(math.Sqrt(float64(s.Dim))); r*r == s.Dim {
		dims = []int{s.N, r, r}
	}
	pix := make([]byte, s.N*s.Dim)
	for i, x := range s.X[:s.N*s.Dim] {
		switch {
		case x >= 1:
			pix[i] = 255
		case x > 0:
			pix[i] = uint8(x*255 + 0.5)
		} // x <= 0 and NaN stay 0
	}
	if err := writeIDXFile(filepath.Join(dir, imagesName), &IDX{Type: TypeUint8, Dims: dims, Data: pix}, gz); err != nil {
		return err
	}
	return writeIDXFile(filepath.Join(dir, labelsName), &IDX{Type: TypeUint8, Dims: []int{s.N}, Data: s.Labels[:s.N]}, gz)
}

func writeIDXFile(path string, idx *IDX, gz bool) (err error) {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	defer func() {
		if cerr := f.Close(); err == nil && cerr != nil {
			err = cerr
		}
	}()
	if !gz {
		if err := WriteIDX(f, idx); err != nil {
			return fmt.Errorf("%s: %w", path, err)
		}
		return nil
	}
	zw := gzip.NewWriter(f)
	if err := WriteIDX(zw, idx); err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	if err := zw.Close(); err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	return nil
}
