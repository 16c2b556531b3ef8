package main

import (
	"archive/zip"
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/pipedbn/pipedbn/data"
	"github.com/pipedbn/pipedbn/dbn"
	"github.com/pipedbn/pipedbn/internal/pytest"
)

// digits makes scikit-learn's digits as a Keras-layout .npz and as CSV with
// examples/digits/make_digits.py (Debian's python3-sklearn), or skips.
func digits(t *testing.T) (py, dir string) {
	t.Helper()
	py = pytest.Python(t, "numpy", "sklearn")
	dir = t.TempDir()
	cmd := exec.Command(py, filepath.Join("..", "..", "examples", "digits", "make_digits.py"), dir)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("make_digits.py: %v\n%s", err, out)
	}
	return py, dir
}

// runDigits runs configs/digits.yaml, shortened, with sets, into out, and
// returns the reported test accuracy.
func runDigits(t *testing.T, out string, sets ...string) float64 {
	t.Helper()
	args := []string{"run", "--config", filepath.Join("..", "..", "configs", "digits.yaml"), "--out", out, "--http", "",
		"--set", "pretrain.epochs=3", "--set", "finetune.epochs=5"}
	for _, s := range sets {
		args = append(args, "--set", s)
	}
	if code, stderr := master(t, nil, args...); code != 0 {
		t.Fatalf("master %s: exit %d\n%s", strings.Join(args, " "), code, stderr)
	}
	var res dbn.Result
	b, err := os.ReadFile(filepath.Join(out, dbn.ResultFile))
	if err == nil {
		err = json.Unmarshal(b, &res)
	}
	if err != nil || res.Finetune == nil {
		t.Fatalf("result.json: %v, %+v", err, res)
	}
	if res.Data.Scale != "unit" {
		t.Errorf("result.json data.scale = %q; want unit", res.Data.Scale)
	}
	return res.Finetune.TestAccuracy
}

// model runs master predict or transform and returns the .npy it wrote.
func model(t *testing.T, stdin []byte, args ...string) []byte {
	t.Helper()
	outPath := filepath.Join(t.TempDir(), "out.npy")
	cmd := exec.Command(masterBin, append(args, "--out", outPath)...)
	cmd.Stdin = bytes.NewReader(stdin)
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("master %s: %v\n%s", strings.Join(args, " "), err, b)
	}
	b, err := os.ReadFile(outPath)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestDigits: a user's .npz in Keras layout (scikit-learn's digits) trains a
// DBN, greedy and pipelined (local slave processes over NATS), with
// fine-tuning; master predict on the test features reproduces the reported
// test accuracy exactly; NumPy computes the same probabilities and
// activations from weights.npz and scale.npz; CSV gives the same results.
func TestDigits(t *testing.T) {
	t.Parallel()
	py, dir := digits(t)
	npz := filepath.Join(dir, "digits.npz")
	trainCSV, testCSV := filepath.Join(dir, "digits-train.csv"), filepath.Join(dir, "digits-test.csv")
	_, test, err := data.LoadNPZ(npz, 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	csvText, err := os.ReadFile(testCSV)
	if err != nil {
		t.Fatal(err)
	}
	runs := t.TempDir()
	for _, mode := range []string{"greedy", "pipelined"} {
		t.Run(mode, func(t *testing.T) {
			out := filepath.Join(runs, mode)
			acc := runDigits(t, out, "data.path="+npz, "pretrain.mode="+mode)
			labels := readNPY(t, model(t, nil, "predict", "--run", out, "--in", npz, "--labels"))
			correct := 0
			for i, l := range labels {
				if int(l) == int(test.Labels[i]) {
					correct++
				}
			}
			if got := float64(correct) / float64(test.N); got != acc || len(labels) != test.N {
				t.Errorf("master predict --labels: accuracy %v on %d rows; want the reported %v on %d", got, len(labels), acc, test.N)
			}
			probs := model(t, nil, "predict", "--run", out, "--in", npz)
			if csvProbs := model(t, nil, "predict", "--run", out, "--in", testCSV, "--label-column", "label"); !bytes.Equal(csvProbs, probs) {
				t.Error("master predict: the CSV test set gives other probabilities than the npz")
			}
			if stdinProbs := model(t, csvText, "predict", "--run", out, "--in", "-", "--label-column", "64"); !bytes.Equal(stdinProbs, probs) {
				t.Error("master predict: CSV on stdin gives other probabilities than the npz")
			}
			work := t.TempDir()
			files := map[string][]byte{
				"probs.npy": probs,
				"h1.npy":    model(t, nil, "transform", "--run", out, "--in", npz, "--layer", "1"),
				"top.npy":   model(t, nil, "transform", "--run", out, "--in", npz),
				"ft1.npy":   model(t, nil, "transform", "--run", out, "--in", npz, "--layer", "1", "--finetuned"),
			}
			for name, b := range files {
				if err := os.WriteFile(filepath.Join(work, name), b, 0o644); err != nil {
					t.Fatal(err)
				}
			}
			// NumPy alone, from the saved weights and scaling.
			report := pytest.Run(t, py, `
import sys, numpy as np
run, work, npz = sys.argv[1:4]
w, s, d = np.load(run + '/weights.npz'), np.load(run + '/scale.npz'), np.load(npz)
x = d['x_test'].reshape(len(d['x_test']), -1).astype(np.float32)
x = (x - s['offset']) * s['factor']
sig = lambda z: 1 / (1 + np.exp(-z))
h1 = sig(x @ w['W1'] + w['b1'])
top = sig(h1 @ w['W2'] + w['b2'])
f1 = sig(x @ w['ft_W1'] + w['ft_b1'])
z = sig(f1 @ w['ft_W2'] + w['ft_b2']) @ w['ft_Wout'] + w['ft_bout']
p = np.exp(z - z.max(1, keepdims=True)); p /= p.sum(1, keepdims=True)
for name, want in [('h1', h1), ('top', top), ('ft1', f1), ('probs', p)]:
    got = np.load(work + '/' + name + '.npy')
    assert got.dtype == np.float32 and got.shape == want.shape, (name, got.dtype, got.shape, want.shape)
    print(name, float(np.abs(got - want).max()))
print('accuracy', float((p.argmax(1) == d['y_test']).mean()))
`, out, work, npz)
			for _, line := range strings.Split(strings.TrimSpace(report), "\n") {
				name, val, _ := strings.Cut(line, " ")
				var v float64
				if err := json.Unmarshal([]byte(val), &v); err != nil {
					t.Fatalf("NumPy said %q", line)
				}
				// Activations to float32 rounding; NumPy computes the
				// probabilities in float32 too, a few ulps apart.
				tol := 1e-6
				if name == "accuracy" {
					if v != acc {
						t.Errorf("NumPy's accuracy from weights.npz: %v; want the reported %v", v, acc)
					}
					continue
				}
				if v > tol {
					t.Errorf("%s: NumPy differs by %g; want at most %g", name, v, tol)
				}
				t.Logf("%s %s: NumPy differs by %g", mode, name, v)
			}
		})
	}
	// CSV gives the same results as the npz: the same weights.
	t.Run("csv", func(t *testing.T) {
		out := filepath.Join(runs, "csv")
		runDigits(t, out, "data.source=csv", "data.path=", "data.train="+trainCSV, "data.test="+testCSV,
			"data.header=true", "data.label_column=label", "pretrain.mode=greedy")
		a, errA := os.ReadFile(filepath.Join(out, dbn.WeightsFile))
		b, errB := os.ReadFile(filepath.Join(runs, "greedy", dbn.WeightsFile))
		if errA != nil || errB != nil || !bytes.Equal(a, b) {
			t.Errorf("weights.npz of the CSV run differs from the npz run's (%v, %v)", errA, errB)
		}
	})
}

// readNPY decodes a 1-D int64 .npy as master predict --labels writes it.
func readNPY(t *testing.T, b []byte) []int64 {
	t.Helper()
	h := bytes.IndexByte(b, '\n') + 1
	if h == 0 || !bytes.Contains(b[:h], []byte("'<i8'")) || (len(b)-h)%8 != 0 {
		t.Fatalf("not an int64 .npy: %q", b[:min(len(b), 80)])
	}
	out := make([]int64, (len(b)-h)/8)
	for i := range out {
		var v uint64
		for k := 7; k >= 0; k-- {
			v = v<<8 | uint64(b[h+8*i+k])
		}
		out[i] = int64(v)
	}
	return out
}

// TestBadDataFilesExit: bad NumPy and CSV data sets, and bad predict and
// transform input, each stop master with exit status 1 and one line on
// stderr naming the file and what was expected, never a panic.
func TestBadDataFilesExit(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	npy := func(shape []int, v any) []byte {
		var b bytes.Buffer
		var err error
		switch x := v.(type) {
		case []float32:
			err = data.WriteNPY(&b, shape, x)
		case []int64:
			err = data.WriteNPY(&b, shape, x)
		}
		if err != nil {
			t.Fatal(err)
		}
		return b.Bytes()
	}
	x := func(n, d int) []byte { return npy([]int{n, d}, make([]float32, n*d)) }
	y := func(v ...int64) []byte { return npy([]int{len(v)}, v) }
	zipped := func(m map[string][]byte) []byte {
		var b bytes.Buffer
		w := zip.NewWriter(&b)
		for name, a := range m {
			f, err := w.Create(name + ".npy")
			if err == nil {
				_, err = f.Write(a)
			}
			if err != nil {
				t.Fatal(err)
			}
		}
		if err := w.Close(); err != nil {
			t.Fatal(err)
		}
		return b.Bytes()
	}
	keras := func(edit func(m map[string][]byte)) []byte {
		m := map[string][]byte{"x_train": x(8, 4), "y_train": y(0, 1, 0, 1, 0, 1, 0, 1), "x_test": x(2, 4), "y_test": y(1, 0)}
		edit(m)
		return zipped(m)
	}
	nan := make([]float32, 8)
	nan[5] = float32(math.NaN())
	for _, tt := range []struct {
		name   string
		file   []byte
		csv    bool
		layers string
		want   string
	}{
		{"empty", []byte{}, false, "", "empty, want a zip archive"},
		{"not a zip", []byte("hello\n"), false, "", "not a zip archive"},
		{"truncated zip", keras(func(map[string][]byte) {})[:100], false, "", "not a zip archive"},
		{"no x_test", keras(func(m map[string][]byte) { delete(m, "x_test"); delete(m, "y_test") }), false, "", "no array x_test"},
		{"wrong dtype", keras(func(m map[string][]byte) { m["x_train"] = x(8, 4)[:64] }), false, "", "array x_train: truncated"},
		{"complex", keras(func(m map[string][]byte) {
			m["x_test"] = bytes.Replace(x(2, 4), []byte("'<f4'"), []byte("'<c8'"), 1)
		}), false, "", "dtype '<c8'"},
		{"NaN", keras(func(m map[string][]byte) { m["x_test"] = npy([]int{2, 4}, nan) }), false, "", "array x_test: value [1, 1] is NaN"},
		{"wrong shape", keras(func(map[string][]byte) {}), false, "[5, 3]", "dbn.layers[0] = 5: the data"},
		{"label out of range", keras(func(m map[string][]byte) { m["y_test"] = y(1, 9) }), false, "", "array y_test: label[1] = 9, want 0..1"},
		{"mismatched counts", keras(func(m map[string][]byte) { m["y_train"] = y(0, 1) }), false, "", "holds 8 examples (shape (8, 4)) but"},
		{"features differ", keras(func(m map[string][]byte) { m["x_test"] = x(2, 5) }), false, "", "has 4 values per example but"},
		{"2-D labels", keras(func(m map[string][]byte) { m["y_test"] = npy([]int{2, 2}, []int64{1, 0, 1, 0}) }), false, "", "want labels of shape (n,) or (n, 1)"},
		{"no labels to fine-tune", keras(func(m map[string][]byte) { delete(m, "y_train"); delete(m, "y_test") }), false, "", "finetune.epochs = 10: fine-tuning needs labels"},
		{"raw pixels", keras(func(m map[string][]byte) {
			m["x_train"] = npy([]int{8, 4}, []float32{0, 255, 3, 4, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0})
		}), false, "",
			`data.scale = "none": the training features (npz`},
		{"csv ragged", []byte("a,b,c,d,label\n0,0,0,0,1\n0,0,0\n"), true, "", "line 3: 3 fields, want 5"},
		{"csv not a number", []byte("a,b,c,d,label\n0,0,x,0,1\n"), true, "", `line 2, column index 2 (c): "x" is not a number`},
		{"csv label", []byte("a,b,c,d,label\n0,0,0,0,one\n"), true, "", `label "one", want an integer`},
		{"csv empty", []byte{}, true, "", "empty, want rows of numbers"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			ext := ".npz"
			if tt.csv {
				ext = ".csv"
			}
			path := filepath.Join(dir, strings.ReplaceAll(tt.name, " ", "_")+ext)
			if err := os.WriteFile(path, tt.file, 0o644); err != nil {
				t.Fatal(err)
			}
			dataCfg := "data: {source: npz, path: " + path + "}\n"
			if tt.csv {
				dataCfg = "data: {source: csv, train: " + path + ", test: " + path + ", header: true, label_column: label}\n"
			}
			layers := tt.layers
			if layers == "" {
				layers = "[4, 3]"
			}
			cfg := filepath.Join(dir, strings.ReplaceAll(tt.name, " ", "_")+".yaml")
			body := dataCfg + "dbn: {layers: " + layers + "}\npretrain: {mode: greedy, epochs: 1, batch_size: 2}\nfinetune: {epochs: 10}\n"
			if err := os.WriteFile(cfg, []byte(body), 0o644); err != nil {
				t.Fatal(err)
			}
			code, stderr := master(t, nil, "run", "--config", cfg, "--out", filepath.Join(dir, "out-"+tt.name), "--http", "")
			checkOneLine(t, code, stderr, tt.want, path)
		})
	}
	// Bad input to predict and transform.
	out, _ := runTiny(t, dir, 0)
	good := filepath.Join(dir, "good.npy")
	if err := os.WriteFile(good, x(3, 4), 0o644); err != nil {
		t.Fatal(err)
	}
	wide := filepath.Join(dir, "wide.npy")
	if err := os.WriteFile(wide, x(3, 6), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		args       []string
		want, name string
	}{
		{[]string{"predict", "--run", out, "--in", wide}, "6 values per example, want 4", wide},
		{[]string{"predict", "--run", out, "--in", good}, "the run has no fine-tuned network", out},
		{[]string{"transform", "--run", out, "--in", good, "--layer", "3"}, "--layer 3: the DBN in", out},
		{[]string{"transform", "--run", dir, "--in", good}, "no weights.npz: not the output folder of a finished run", dir},
		{[]string{"transform", "--run", out, "--in", filepath.Join(dir, "none.npy")}, "no such file or directory", "none.npy"},
		{[]string{"transform", "--run", out, "--in", good, "--array", "x"}, "--array x: only an .npz archive has named arrays", good},
	} {
		code, stderr := master(t, nil, append(tt.args, "--out", filepath.Join(dir, "o.npy"))...)
		checkOneLine(t, code, stderr, tt.want, tt.name)
	}
}

// runTiny pre-trains a 4-3-2 DBN on a tiny npz, and fine-tunes it for
// finetune epochs (0: none; else the npz has labels 0 and 1). It returns
// the run's folder and the npz.
func runTiny(t *testing.T, dir string, finetune int) (string, string) {
	t.Helper()
	var b bytes.Buffer
	w := zip.NewWriter(&b)
	for _, a := range []struct {
		name string
		rows int
	}{{"x_train", 8}, {"x_test", 2}} {
		f, err := w.Create(a.name + ".npy")
		if err == nil {
			err = data.WriteNPY(f, []int{a.rows, 4}, make([]float32, a.rows*4))
		}
		if err == nil && finetune > 0 {
			labels := make([]int64, a.rows)
			for i := range labels {
				labels[i] = int64(i % 2)
			}
			f, err = w.Create("y" + strings.TrimPrefix(a.name, "x") + ".npy")
			if err == nil {
				err = data.WriteNPY(f, []int{a.rows}, labels)
			}
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	name := fmt.Sprintf("tiny-ft%d", finetune)
	path := filepath.Join(dir, name+".npz")
	cfg := filepath.Join(dir, name+".yaml")
	out := filepath.Join(dir, name+"-run")
	if err := os.WriteFile(path, b.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	body := "data: {source: npz, path: " + path + "}\ndbn: {layers: [4, 3, 2]}\npretrain: {mode: greedy, epochs: 1, batch_size: 2}\n" +
		fmt.Sprintf("finetune: {epochs: %d, batch_size: 2}\n", finetune)
	if err := os.WriteFile(cfg, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	if code, stderr := master(t, nil, "run", "--config", cfg, "--out", out, "--http", ""); code != 0 {
		t.Fatalf("tiny run: exit %d\n%s", code, stderr)
	}
	return out, path
}

// checkOneLine fails unless master exited 1 with one line naming name and
// saying want.
func checkOneLine(t *testing.T, code int, stderr, want, name string) {
	t.Helper()
	lines := strings.Split(strings.TrimSpace(stderr), "\n")
	if code != 1 || len(lines) != 1 || strings.Contains(stderr, "panic") {
		t.Errorf("exit %d, stderr:\n%s\nwant exit 1 and one line", code, stderr)
		return
	}
	if !strings.Contains(lines[0], want) || !strings.Contains(lines[0], name) {
		t.Errorf("stderr %q; want it to name %s and say %q", lines[0], name, want)
	}
}
