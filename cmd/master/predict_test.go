package main

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/pipedbn/pipedbn/data"
)

// npyFloats is a float32 .npy file of values in shape.
func npyFloats(t *testing.T, shape []int, values []float32) []byte {
	t.Helper()
	var b bytes.Buffer
	if err := data.WriteNPY(&b, shape, values); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// predictCSV runs master predict --labels on the CSV text (a file, or
// stdin for "-") with the extra flags, and returns the labels and stderr.
func predictCSV(t *testing.T, run, in string, text []byte, flags ...string) ([]int64, string) {
	t.Helper()
	var stdin []byte
	if in == "-" {
		stdin = text
	} else if err := os.WriteFile(in, text, 0o644); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(t.TempDir(), "labels.npy")
	cmd := exec.Command(masterBin, append([]string{"predict", "--run", run, "--in", in, "--out", out, "--labels"}, flags...)...)
	cmd.Stdin = bytes.NewReader(stdin)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("master predict --in %s %s: %v\n%s", in, strings.Join(flags, " "), err, stderr.String())
	}
	b, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	return readNPY(t, b), stderr.String()
}

// TestPredictCSVEveryRow: master predict gives one output row per input
// row of a CSV saved with a UTF-8 byte-order mark (Excel's "CSV UTF-8"),
// with or without a header, from a file or stdin; a header row it skips
// is said on stderr, and nothing else is.
func TestPredictCSVEveryRow(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	run, _ := runTiny(t, dir, 1)
	const bom = "\xef\xbb\xbf"
	rows := "0.5,0,1,0.25\n1,1,0,0\n0,0,0,0\n0.75,0.5,0.25,1\n1,0,1,0\n"
	labelled := "1,0.5,0,1,0.25\n0,1,1,0,0\n1,0,0,0,0\n0,0.75,0.5,0.25,1\n1,1,0,1,0\n"
	for _, tt := range []struct {
		name, text string
		flags      []string
		header     bool
	}{
		{"no header", bom + rows, nil, false},
		{"header", bom + "p0,p1,p2,p3\n" + rows, nil, true},
		{"header and label column", bom + "label,p0,p1,p2,p3\n" + labelled, []string{"--label-column", "label"}, true},
		{"label column index", bom + labelled, []string{"--label-column", "0"}, false},
		{"numbered header", bom + "0,1,2,3\n" + rows, []string{"--header"}, true},
		{"no header, said so", bom + rows, []string{"--header=false"}, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			for _, in := range []string{filepath.Join(t.TempDir(), "x.csv"), "-"} {
				labels, stderr := predictCSV(t, run, in, []byte(tt.text), tt.flags...)
				if len(labels) != 5 {
					t.Errorf("--in %s: %d output rows; want 5, one per input row", in, len(labels))
				}
				said := strings.Contains(stderr, "the first row is a header")
				if said != tt.header || (!tt.header && stderr != "") {
					t.Errorf("--in %s: stderr %q; want a header said: %v", in, stderr, tt.header)
				}
			}
		})
	}
	// A first row that holds a number is data: a bad field in it is an
	// error, not a header dropped.
	bad := filepath.Join(dir, "bad.csv")
	if err := os.WriteFile(bad, []byte(bom+"0.5,x,1,0.25\n"+rows), 0o644); err != nil {
		t.Fatal(err)
	}
	code, stderr := master(t, nil, "predict", "--run", run, "--in", bad, "--out", filepath.Join(dir, "bad.npy"))
	checkOneLine(t, code, stderr, `line 1, column index 1: "x" is not a number (the first row holds numbers`, bad)
}

// TestPredictOutIsIn: master predict and transform refuse an --out that
// is the --in file, by the same path, another spelling or a link, and
// leave the input as it was.
func TestPredictOutIsIn(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	run, _ := runTiny(t, dir, 1)
	in := filepath.Join(dir, "x.npy")
	x := npyFloats(t, []int{3, 4}, make([]float32, 12))
	csvIn := filepath.Join(dir, "x.csv")
	csvText := []byte("0,0,0,0\n1,1,1,1\n")
	for path, b := range map[string][]byte{in: x, csvIn: csvText} {
		if err := os.WriteFile(path, b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	link := filepath.Join(dir, "link.npy")
	if err := os.Symlink(csvIn, link); err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct{ cmd, in, out string }{
		{"predict", in, in},
		{"predict", in, filepath.Join(dir, ".", "..", filepath.Base(dir), "x.npy")},
		{"transform", in, in},
		{"predict", csvIn, link},
	} {
		code, stderr := master(t, nil, tt.cmd, "--run", run, "--in", tt.in, "--out", tt.out)
		checkOneLine(t, code, stderr, "is the input file --in "+tt.in, tt.out)
	}
	for path, want := range map[string][]byte{in: x, csvIn: csvText} {
		if b, err := os.ReadFile(path); err != nil || !bytes.Equal(b, want) {
			t.Errorf("%s changed (%v): the input must be kept", path, err)
		}
	}
	// Another file is written as before.
	if code, stderr := master(t, nil, "predict", "--run", run, "--in", in, "--out", filepath.Join(dir, "p.npy")); code != 0 {
		t.Errorf("predict to another file: exit %d\n%s", code, stderr)
	}
}

// TestCSVShorterThanLimit: a CSV data set with fewer rows than
// data.train_limit or data.test_limit stops master with one line naming
// the key, its value, the rows found and the file, as for NumPy files.
func TestCSVShorterThanLimit(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	train, test := filepath.Join(dir, "train.csv"), filepath.Join(dir, "test.csv")
	for path, text := range map[string]string{train: "a,b,label\n0,1,0\n1,0,1\n1,1,0\n", test: "a,b,label\n0,1,0\n"} {
		if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for _, tt := range []struct{ set, want, file string }{
		{"data.train_limit=5", "data.train_limit = 5 (from --set data.train_limit): must be at most 3, the examples of csv file " + train, train},
		{"data.test_limit=2", "data.test_limit = 2 (from --set data.test_limit): must be at most 1, the test examples of csv file " + test, test},
	} {
		cfg := filepath.Join(dir, "c.yaml")
		body := "data: {source: csv, train: " + train + ", test: " + test + ", header: true, label_column: label}\ndbn: {layers: [2, 2]}\npretrain: {mode: greedy, epochs: 1, batch_size: 1}\n"
		if err := os.WriteFile(cfg, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
		code, stderr := master(t, nil, "run", "--config", cfg, "--set", tt.set, "--out", filepath.Join(dir, "out"), "--http", "")
		checkOneLine(t, code, stderr, tt.want, tt.file)
	}
}
