package main

import (
	"archive/zip"
	"bytes"
	"math"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/pipedbn/pipedbn/data"
	"github.com/pipedbn/pipedbn/internal/pytest"
)

// exampleData writes a small labelled data set as a Keras-layout .npz: 16
// features in [0, 4] (so that Bernoulli units need data.scale), 3 classes
// by which third of the features holds the most.
func exampleData(t *testing.T, path string) {
	t.Helper()
	rng := rand.New(rand.NewPCG(7, 7))
	const dim, classes = 16, 3
	var b bytes.Buffer
	w := zip.NewWriter(&b)
	for _, set := range []struct {
		name string
		rows int
	}{{"train", 300}, {"test", 60}} {
		x := make([]float32, set.rows*dim)
		y := make([]int64, set.rows)
		for r := range set.rows {
			c := rng.IntN(classes)
			y[r] = int64(c)
			for j := range dim {
				v := rng.Float32() * 2
				if j*classes/dim == c {
					v += 2
				}
				x[r*dim+j] = v
			}
		}
		f, err := w.Create("x_" + set.name + ".npy")
		if err == nil {
			err = data.WriteNPY(f, []int{set.rows, dim}, x)
		}
		if err == nil {
			f, err = w.Create("y_" + set.name + ".npy")
		}
		if err == nil {
			err = data.WriteNPY(f, []int{set.rows}, y)
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, b.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestNumPyExample: examples/numpy/predict.py, NumPy alone on weights.npz
// (and scale.npz), computes what master predict and transform compute, to
// 1e-5, for a run scaled by data.scale and one with gaussian visible units
// (weights.npz's input_mean and input_scale).
func TestNumPyExample(t *testing.T) {
	t.Parallel()
	py := pytest.Python(t, "numpy")
	script := filepath.Join("..", "..", "examples", "numpy", "predict.py")
	dir := t.TempDir()
	npz := filepath.Join(dir, "data.npz")
	exampleData(t, npz)
	for _, tt := range []struct {
		name string
		sets []string
	}{
		{"scaled", []string{"data.scale=unit"}},
		{"gaussian", []string{"dbn.visible=gaussian"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			out := filepath.Join(dir, tt.name)
			args := []string{"run", "--config", filepath.Join("..", "..", "configs", "digits.yaml"), "--out", out, "--http", "",
				"--set", "data.path=" + npz, "--set", "dbn.layers=[16, 12, 8]", "--set", "pretrain.mode=greedy",
				"--set", "pretrain.epochs=2", "--set", "finetune.epochs=3", "--set", "data.scale=none"}
			for _, s := range tt.sets {
				args = append(args, "--set", s)
			}
			if code, stderr := master(t, nil, args...); code != 0 {
				t.Fatalf("master %v: exit %d\n%s", args, code, stderr)
			}
			for _, c := range []struct {
				name   string
				master []string
				numpy  []string
			}{
				{"probabilities", []string{"predict"}, nil},
				{"labels", []string{"predict", "--labels"}, []string{"--labels"}},
				{"layer 1", []string{"transform", "--layer", "1"}, []string{"--layer", "1"}},
				{"top layer", []string{"transform"}, []string{"--layer", "0"}},
			} {
				want := model(t, nil, append(c.master, "--run", out, "--in", npz)...)
				gotPath := filepath.Join(t.TempDir(), "numpy.npy")
				cmd := exec.Command(py, append([]string{script, out, npz, "--out", gotPath}, c.numpy...)...)
				if b, err := cmd.CombinedOutput(); err != nil {
					t.Fatalf("%s: %v\n%s", cmd, err, b)
				}
				got, err := os.ReadFile(gotPath)
				if err != nil {
					t.Fatal(err)
				}
				if c.name == "labels" {
					g, w := readNPY(t, got), readNPY(t, want)
					if len(g) != len(w) {
						t.Fatalf("labels: NumPy gave %d rows; master predict %d", len(g), len(w))
					}
					for i := range g {
						if g[i] != w[i] {
							t.Errorf("labels: row %d: NumPy %d; master predict %d", i, g[i], w[i])
						}
					}
					continue
				}
				g, w := readFloats(t, got), readFloats(t, want)
				if g.Rows != w.Rows || g.Dim != w.Dim {
					t.Fatalf("%s: NumPy gave %dx%d; master %dx%d", c.name, g.Rows, g.Dim, w.Rows, w.Dim)
				}
				diff := 0.0
				for i := range g.X {
					diff = math.Max(diff, math.Abs(float64(g.X[i]-w.X[i])))
				}
				if diff > 1e-5 {
					t.Errorf("%s: NumPy differs from master by %g; want at most 1e-5", c.name, diff)
				}
			}
		})
	}
}

// readFloats decodes a float32 .npy.
func readFloats(t *testing.T, b []byte) *data.Features {
	t.Helper()
	path := filepath.Join(t.TempDir(), "x.npy")
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
	f, err := data.ReadFeatures(path, "", data.CSVOptions{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	return f
}
