package data

import (
	"errors"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// tinySet is 5 examples of 2x2 pixels whose values are exact in uint8.
func tinySet() *Set {
	s := &Set{N: 5, Dim: 4, Classes: 7, Name: "tiny", Labels: []uint8{3, 0, 6, 1, 3}}
	for i := range s.N * s.Dim {
		s.X = append(s.X, float32(i*13%256)/255)
	}
	return s
}

func writeFile(t *testing.T, path string, b []byte) {
	t.Helper()
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
}

func TestLoadIDX(t *testing.T) {
	t.Parallel()
	want := tinySet()
	for _, tt := range []struct {
		name      string
		gz        bool
		limit     int
		wantN     int
		imgs, lbl string
	}{
		{name: "raw", imgs: "i", lbl: "l", wantN: 5},
		{name: "gzip", gz: true, imgs: "i", lbl: "l", wantN: 5},
		// The name says gzip, the bytes do not: detection goes by magic.
		{name: "raw named gz", imgs: "i.gz", lbl: "l.gz", wantN: 5},
		{name: "gzip named raw", gz: true, imgs: "i.idx", lbl: "l.idx", wantN: 5},
		{name: "limit", limit: 2, imgs: "i", lbl: "l", wantN: 2},
		{name: "limit gzip", gz: true, limit: 3, imgs: "i", lbl: "l", wantN: 3},
		{name: "limit n", limit: 5, imgs: "i", lbl: "l", wantN: 5},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			if err := WriteIDXFiles(dir, want, tt.imgs, tt.lbl, tt.gz); err != nil {
				t.Fatal(err)
			}
			ip := filepath.Join(dir, tt.imgs)
			got, err := LoadIDX(ip, filepath.Join(dir, tt.lbl), tt.limit)
			if err != nil {
				t.Fatalf("LoadIDX() error %q; want none", err)
			}
			if got.N != tt.wantN || got.Dim != 4 || got.Classes != 7 || got.Name != ip {
				t.Errorf("LoadIDX() = N %d Dim %d Classes %d Name %q; want %d 4 7 %q", got.N, got.Dim, got.Classes, got.Name, tt.wantN, ip)
			}
			if !slices.Equal(got.X, want.X[:tt.wantN*4]) || len(got.X) != tt.wantN*4 {
				t.Errorf("LoadIDX() X = %v; want %v", got.X, want.X[:tt.wantN*4])
			}
			if !slices.Equal(got.Labels, want.Labels[:tt.wantN]) {
				t.Errorf("LoadIDX() Labels = %v; want %v", got.Labels, want.Labels[:tt.wantN])
			}
		})
	}
}

func TestLoadIDXErrors(t *testing.T) {
	t.Parallel()
	good := tinySet()
	goodImgs := func(t *testing.T) []byte { return idxBytes(t, TypeUint8, []int{5, 2, 2}, seq(20)) }
	goodLbls := func(t *testing.T) []byte { return idxBytes(t, TypeUint8, []int{5}, good.Labels) }
	tests := []struct {
		name  string
		imgs  func(t *testing.T) []byte // nil: no file
		lbls  func(t *testing.T) []byte
		limit int
		// wantErr are substrings of the error; IMGS and LBLS stand for the
		// files' paths.
		wantErr []string
		format  bool // the error wraps ErrFormat
		missing bool // the error wraps fs.ErrNotExist
	}{
		{name: "missing images", lbls: goodLbls, missing: true,
			wantErr: []string{"images file IMGS: cannot open: no such file or directory"}},
		{name: "missing labels", imgs: goodImgs, missing: true,
			wantErr: []string{"labels file LBLS: cannot open: no such file or directory"}},
		{name: "negative limit", imgs: goodImgs, lbls: goodLbls, limit: -1,
			wantErr: []string{"IMGS: limit -1, want >= 0"}},
		// A limit is never silently capped: data.train_limit: 70000 on
		// Fashion-MNIST's 60000 is a mistake worth reporting.
		{name: "limit above n", imgs: goodImgs, lbls: goodLbls, limit: 6,
			wantErr: []string{"load IMGS: limit 6, want <= 5, the examples the file holds (0 = all examples)"}},
		{name: "bad magic", format: true, lbls: goodLbls,
			imgs:    func(*testing.T) []byte { return []byte("<html>not found</html>") },
			wantErr: []string{"images file IMGS: bad magic 0x3c68746d, want 0x00000803"}},
		{name: "labels as images", format: true, lbls: goodLbls, imgs: goodLbls,
			wantErr: []string{"images file IMGS: magic 0x00000801 declares 1 dims, want 0x00000803"}},
		{name: "images as labels", format: true, lbls: goodImgs, imgs: goodImgs,
			wantErr: []string{"labels file LBLS: magic 0x00000803 declares 3 dims, want 0x00000801"}},
		{name: "float images", format: true, lbls: goodLbls,
			imgs:    func(*testing.T) []byte { return append(header(0x0d03, 5, 2, 2), make([]byte, 80)...) },
			wantErr: []string{"images file IMGS: magic 0x00000d03: unsupported type code 0x0d (float32), want 0x08 (uint8)"}},
		{name: "absurd dims", format: true, lbls: goodLbls,
			imgs:    func(*testing.T) []byte { return header(0x803, 60000, 60000, 60000) },
			wantErr: []string{"images file IMGS: dims 60000x60000x60000 exceed the 2147483648-byte limit"}},
		{name: "truncated pixels", format: true, lbls: goodLbls,
			imgs:    func(t *testing.T) []byte { return goodImgs(t)[:16+7] },
			wantErr: []string{"images file IMGS: header says 5x2x2 = 20 bytes of pixels, found 7"}},
		{name: "truncated pixels gzip", format: true, lbls: goodLbls,
			imgs:    func(t *testing.T) []byte { return gzipBytes(t, goodImgs(t)[:16+7]) },
			wantErr: []string{"images file IMGS: header says 5x2x2 = 20 bytes of pixels, found 7 (decompressed)"}},
		{name: "truncated labels", format: true, imgs: goodImgs,
			lbls:    func(t *testing.T) []byte { return goodLbls(t)[:10] },
			wantErr: []string{"labels file LBLS: header says 5 = 5 bytes of labels, found 2"}},
		{name: "trailing garbage", format: true, imgs: goodImgs,
			lbls:    func(t *testing.T) []byte { return append(goodLbls(t), 0) },
			wantErr: []string{"labels file LBLS: trailing garbage: 1 bytes after the 5 bytes of labels the header (5) declares"}},
		{name: "count mismatch", format: true, imgs: goodImgs,
			lbls:    func(t *testing.T) []byte { return idxBytes(t, TypeUint8, []int{4}, good.Labels[:4]) },
			wantErr: []string{"images file IMGS holds 5 examples but labels file LBLS holds 4 labels"}},
		{name: "no examples", format: true, imgs: func(*testing.T) []byte { return header(0x803, 0, 2, 2) },
			lbls:    func(*testing.T) []byte { return header(0x801, 0) },
			wantErr: []string{"images file IMGS: header declares 0 examples (dims 0x2x2)"}},
		{name: "no pixels", format: true, imgs: func(*testing.T) []byte { return header(0x803, 5, 0, 2) },
			lbls:    goodLbls,
			wantErr: []string{"images file IMGS: header declares examples of 0 pixels (dims 5x0x2)"}},
		{name: "empty labels", format: true, imgs: goodImgs,
			lbls:    func(*testing.T) []byte { return nil },
			wantErr: []string{"labels file LBLS: empty file, want IDX magic 0x00000801"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			ip, lp := filepath.Join(dir, "images.idx"), filepath.Join(dir, "labels.idx")
			if tt.imgs != nil {
				writeFile(t, ip, tt.imgs(t))
			}
			if tt.lbls != nil {
				writeFile(t, lp, tt.lbls(t))
			}
			s, err := LoadIDX(ip, lp, tt.limit)
			if err == nil {
				t.Fatalf("LoadIDX() = %d examples, no error; want error containing %q", s.N, tt.wantErr)
			}
			r := strings.NewReplacer("IMGS", ip, "LBLS", lp)
			for i, w := range tt.wantErr {
				tt.wantErr[i] = r.Replace(w)
			}
			checkErr(t, err, tt.wantErr...)
			if got := errors.Is(err, ErrFormat); got != tt.format {
				t.Errorf("errors.Is(%q, ErrFormat) = %v; want %v", err, got, tt.format)
			}
			if got := errors.Is(err, fs.ErrNotExist); got != tt.missing {
				t.Errorf("errors.Is(%q, fs.ErrNotExist) = %v; want %v", err, got, tt.missing)
			}
		})
	}
}

func TestLoadIDXDirectory(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	_, err := LoadIDX(dir, dir, 0)
	if err == nil {
		t.Fatal("LoadIDX(directory) succeeded; want error")
	}
	checkErr(t, err, "images file "+dir+": is a directory")
}

func TestLoadIDXDir(t *testing.T) {
	t.Parallel()
	train, test := SyntheticPair(3, 40, 20, 9, 4)
	// Only the test set shows label 4: Classes must cover both sets.
	test.Labels[0], test.Classes = 4, 5

	write := func(t *testing.T, dir string, s *Set, imgs, lbls string, gz bool) {
		t.Helper()
		if err := WriteIDXFiles(dir, s, imgs, lbls, gz); err != nil {
			t.Fatal(err)
		}
	}
	for _, tt := range []struct {
		name  string
		files func(t *testing.T, dir string)
	}{
		{"gzip", func(t *testing.T, dir string) {
			write(t, dir, train, TrainImagesFile+".gz", TrainLabelsFile+".gz", true)
			write(t, dir, test, TestImagesFile+".gz", TestLabelsFile+".gz", true)
		}},
		{"raw", func(t *testing.T, dir string) {
			write(t, dir, train, TrainImagesFile, TrainLabelsFile, false)
			write(t, dir, test, TestImagesFile, TestLabelsFile, false)
		}},
		{"mixed", func(t *testing.T, dir string) {
			write(t, dir, train, TrainImagesFile+".gz", TrainLabelsFile, true)
			// Gzip content under the uncompressed name loads too.
			write(t, dir, test, TestImagesFile, TestLabelsFile+".gz", true)
		}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			tt.files(t, dir)
			gtrain, gtest, err := LoadIDXDir(dir, "mine", 30, 0)
			if err != nil {
				t.Fatalf("LoadIDXDir() error %q; want none", err)
			}
			if gtrain.N != 30 || gtest.N != 20 || gtrain.Dim != 9 || gtest.Dim != 9 {
				t.Errorf("LoadIDXDir() sizes train %dx%d test %dx%d; want 30x9 20x9", gtrain.N, gtrain.Dim, gtest.N, gtest.Dim)
			}
			if gtrain.Classes != 5 || gtest.Classes != 5 {
				t.Errorf("LoadIDXDir() Classes train %d test %d; want 5 5", gtrain.Classes, gtest.Classes)
			}
			if gtrain.Name != "mine train" || gtest.Name != "mine test" {
				t.Errorf("LoadIDXDir() names %q %q; want %q %q", gtrain.Name, gtest.Name, "mine train", "mine test")
			}
			if !slices.Equal(gtest.Labels, test.Labels) {
				t.Errorf("LoadIDXDir() test labels = %v; want %v", gtest.Labels, test.Labels)
			}
			for i, x := range gtrain.X {
				if d := math.Abs(float64(x - train.X[i])); d > 0.5/255+1e-6 {
					t.Fatalf("LoadIDXDir() train X[%d] = %v; want %v within 0.5/255", i, x, train.X[i])
				}
			}
		})
	}

	t.Run("missing", func(t *testing.T) {
		t.Parallel()
		dir := t.TempDir()
		write(t, dir, train, TrainImagesFile+".gz", TrainLabelsFile+".gz", true)
		_, _, err := LoadIDXDir(dir, "mine", 0, 0)
		if err == nil {
			t.Fatal("LoadIDXDir() without test files succeeded; want error")
		}
		checkErr(t, err, "mine test set: images file "+filepath.Join(dir, TestImagesFile+".gz")+": cannot open: file does not exist (nor "+TestImagesFile+")")
		if !errors.Is(err, fs.ErrNotExist) {
			t.Errorf("errors.Is(%q, fs.ErrNotExist) = false; want true", err)
		}
	})

	t.Run("dim mismatch", func(t *testing.T) {
		t.Parallel()
		dir := t.TempDir()
		write(t, dir, train, TrainImagesFile, TrainLabelsFile, false)
		write(t, dir, Synthetic(1, 5, 16, 4), TestImagesFile, TestLabelsFile, false)
		_, _, err := LoadIDXDir(dir, "mine", 0, 0)
		if err == nil {
			t.Fatal("LoadIDXDir() with 9- and 16-pixel sets succeeded; want error")
		}
		checkErr(t, err, "mine: train examples have 9 pixels", "but test examples 16")
	})
}

func TestWriteIDXFilesRoundTrip(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	s := &Set{X: []float32{-1, 0, 0.5, 1, 2, float32(math.NaN())}, Labels: []uint8{4, 2}, N: 2, Dim: 3, Classes: 5}
	if err := WriteIDXFiles(dir, s, "i", "l", false); err != nil {
		t.Fatal(err)
	}
	got, err := LoadIDX(filepath.Join(dir, "i"), filepath.Join(dir, "l"), 0)
	if err != nil {
		t.Fatal(err)
	}
	want := []float32{0, 0, 128.0 / 255, 1, 1, 0}
	if !slices.Equal(got.X, want) {
		t.Errorf("LoadIDX(WriteIDXFiles(%v)) X = %v; want %v", s.X, got.X, want)
	}
	img, err := os.ReadFile(filepath.Join(dir, "i"))
	if err != nil {
		t.Fatal(err)
	}
	if idx, err := ReadIDX(strings.NewReader(string(img))); err != nil || !slices.Equal(idx.Dims, []int{2, 3}) {
		t.Errorf("WriteIDXFiles() dims %v, %v; want [2 3] (Dim 3 is not a square)", idx, err)
	}
}

func TestFashionMNIST(t *testing.T) {
	t.Parallel()
	if _, err := os.Stat(FashionMNISTDir); err != nil {
		t.Skipf("Fashion-MNIST not installed (%v): apt-get install dataset-fashion-mnist", err)
	}
	for _, tt := range []struct {
		name                  string
		trainLimit, testLimit int
		wantTrainN, wantTestN int
	}{
		{"all", 0, 0, 60000, 10000},
		{"limits", 1000, 500, 1000, 500},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			train, test, err := FashionMNIST(FashionMNISTDir, tt.trainLimit, tt.testLimit)
			if err != nil {
				t.Fatalf("FashionMNIST() error %q; want none", err)
			}
			for _, c := range []struct {
				s     *Set
				wantN int
			}{{train, tt.wantTrainN}, {test, tt.wantTestN}} {
				s := c.s
				if s.N != c.wantN || s.Dim != 784 || s.Classes != 10 || len(s.X) != s.N*784 || len(s.Labels) != s.N {
					t.Errorf("%s: N %d Dim %d Classes %d len(X) %d len(Labels) %d; want N %d Dim 784 Classes 10", s.Name, s.N, s.Dim, s.Classes, len(s.X), len(s.Labels), c.wantN)
				}
				lo, hi := float32(1), float32(0)
				for _, x := range s.X {
					lo, hi = min(lo, x), max(hi, x)
				}
				if lo != 0 || hi != 1 {
					t.Errorf("%s: pixels in [%v, %v]; want [0, 1]", s.Name, lo, hi)
				}
				var count [10]int
				for i, l := range s.Labels {
					if l >= 10 {
						t.Fatalf("%s: label %d = %d; want < 10", s.Name, i, l)
					}
					count[l]++
				}
				for c, n := range count {
					if n == 0 {
						t.Errorf("%s: no example of class %d", s.Name, c)
					}
				}
			}
		})
	}
}

// labelled returns a set of len(labels) examples of 4 pixels with these
// labels.
func labelled(labels ...uint8) *Set {
	s := &Set{N: len(labels), Dim: 4, Labels: labels, X: make([]float32, 4*len(labels))}
	for i := range s.X {
		s.X[i] = float32(i%5) / 4
	}
	return s
}

// Labels must fit the classes: Fashion-MNIST's 10, or for any IDX pair
// classes numbered 0..C-1 that some example shows, so that a stray label
// 200 cannot make a 201-class classifier. The error names the file, the
// first bad label's index and value, and the allowed range.
func TestIDXLabelRange(t *testing.T) {
	t.Parallel()
	fourClasses := labelled(0, 1, 2, 3, 3, 2)
	for _, tt := range []struct {
		name        string
		fmnist      bool // load with FashionMNIST, else LoadIDXDir
		train, test *Set
		wantClasses int      // when no error is wanted
		wantErr     []string // TRAIN and TEST stand for the labels files' paths
	}{
		{name: "fashion-mnist 200 and 250", fmnist: true,
			train: labelled(0, 1, 9, 200, 4, 250), test: fourClasses,
			wantErr: []string{"fashion-mnist train set: labels file TRAIN: label[3] = 200, want 0..9 (fashion-mnist has 10 classes)"}},
		{name: "fashion-mnist 10 in test", fmnist: true,
			train: fourClasses, test: labelled(5, 10, 11),
			wantErr: []string{"fashion-mnist test set: labels file TEST: label[1] = 10, want 0..9 (fashion-mnist has 10 classes)"}},
		// A subset of Fashion-MNIST that shows some classes is still a
		// 10-class problem.
		{name: "fashion-mnist subset", fmnist: true, train: fourClasses, test: labelled(1, 2), wantClasses: 10},
		{name: "idx stray labels", train: labelled(0, 1, 2, 200, 3, 250), test: fourClasses,
			wantErr: []string{"idx train set: labels file TRAIN: label[3] = 200, want 0..3 (no example has label 4; the classes must be numbered 0..C-1)"}},
		{name: "idx stray in test", train: fourClasses, test: labelled(3, 0, 9),
			wantErr: []string{"idx test set: labels file TEST: label[2] = 9, want 0..3 (no example has label 4; the classes must be numbered 0..C-1)"}},
		{name: "idx numbered from 1", train: labelled(1, 2, 3, 4), test: labelled(4, 1),
			wantErr: []string{"idx train set: labels file TRAIN: label[0] = 1, want 0..C-1 (no example has label 0)"}},
		// A class only the test set shows is a class.
		{name: "idx class only in test", train: fourClasses, test: labelled(4, 0), wantClasses: 5},
		{name: "idx 256 classes", train: labelled(seq256()...), test: labelled(255, 0), wantClasses: 256},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			if err := WriteIDXFiles(dir, tt.train, TrainImagesFile, TrainLabelsFile, false); err != nil {
				t.Fatal(err)
			}
			if err := WriteIDXFiles(dir, tt.test, TestImagesFile+".gz", TestLabelsFile+".gz", true); err != nil {
				t.Fatal(err)
			}
			load := func() (*Set, *Set, error) { return LoadIDXDir(dir, "idx", 0, 0) }
			if tt.fmnist {
				load = func() (*Set, *Set, error) { return FashionMNIST(dir, 0, 0) }
			}
			train, test, err := load()
			if tt.wantErr == nil {
				if err != nil {
					t.Fatalf("load error %q; want none", err)
				}
				if train.Classes != tt.wantClasses || test.Classes != tt.wantClasses {
					t.Errorf("Classes train %d test %d; want %d", train.Classes, test.Classes, tt.wantClasses)
				}
				return
			}
			if err == nil {
				t.Fatalf("load = %d classes, no error; want error %q", train.Classes, tt.wantErr)
			}
			r := strings.NewReplacer("TRAIN", filepath.Join(dir, TrainLabelsFile), "TEST", filepath.Join(dir, TestLabelsFile+".gz"))
			for i, w := range tt.wantErr {
				tt.wantErr[i] = r.Replace(w)
			}
			checkErr(t, err, tt.wantErr...)
			if !errors.Is(err, ErrFormat) {
				t.Errorf("errors.Is(%q, ErrFormat) = false; want true", err)
			}
		})
	}
}

func seq256() []uint8 {
	b := make([]uint8, 256)
	for i := range b {
		b[i] = uint8(i)
	}
	return b
}

// IDXDirSizes reads only the headers: it counts the examples of a set
// without loading it.
func TestIDXDirSizes(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	train, test := SyntheticPair(1, 30, 7, 9, 3)
	if err := WriteIDXFiles(dir, train, TrainImagesFile+".gz", TrainLabelsFile+".gz", true); err != nil {
		t.Fatal(err)
	}
	if err := WriteIDXFiles(dir, test, TestImagesFile, TestLabelsFile, false); err != nil {
		t.Fatal(err)
	}
	if n, m, err := IDXDirSizes(dir); err != nil || n != 30 || m != 7 {
		t.Errorf("IDXDirSizes() = %d, %d, %v; want 30, 7, nil", n, m, err)
	}
	if err := os.WriteFile(filepath.Join(dir, TestImagesFile), []byte("<html>"), 0o644); err != nil {
		t.Fatal(err)
	}
	_, _, err := IDXDirSizes(dir)
	if err == nil || !errors.Is(err, ErrFormat) {
		t.Fatalf("IDXDirSizes() with a bad test images file: error %v; want ErrFormat", err)
	}
	checkErr(t, err, "images file "+filepath.Join(dir, TestImagesFile)+": bad magic")
	if _, _, err := IDXDirSizes(t.TempDir()); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("IDXDirSizes(empty folder) error %v; want fs.ErrNotExist", err)
	}
}
