package config

import (
	"archive/zip"
	"os"
	"path/filepath"
	"testing"

	"github.com/pipedbn/pipedbn/data"
)

// writeNPZ writes an .npz of x_train (4 x 2), x_test (3 x 2) and, with
// labels, y_train and y_test.
func writeNPZ(t *testing.T, path string, labels bool) {
	t.Helper()
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	z := zip.NewWriter(f)
	add := func(name string, write func(w *zip.Writer, name string) error) {
		if err := write(z, name); err != nil {
			t.Fatal(err)
		}
	}
	x := func(n int) func(*zip.Writer, string) error {
		return func(w *zip.Writer, name string) error {
			m, err := w.Create(name + ".npy")
			if err == nil {
				err = data.WriteNPY(m, []int{n, 2}, make([]float32, 2*n))
			}
			return err
		}
	}
	y := func(n int) func(*zip.Writer, string) error {
		return func(w *zip.Writer, name string) error {
			m, err := w.Create(name + ".npy")
			if err == nil {
				err = data.WriteNPY(m, []int{n}, make([]int64, n))
			}
			return err
		}
	}
	add("x_train", x(4))
	add("x_test", x(3))
	if labels {
		add("y_train", y(4))
		add("y_test", y(3))
	}
	if err := z.Close(); err != nil {
		t.Fatal(err)
	}
}

func TestUserDataKeys(t *testing.T) {
	dir := t.TempDir()
	labelled, unlabelled := filepath.Join(dir, "l.npz"), filepath.Join(dir, "u.npz")
	writeNPZ(t, labelled, true)
	writeNPZ(t, unlabelled, false)
	csv := filepath.Join(dir, "d.csv")
	if err := os.WriteFile(csv, []byte("1,2\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	csv3 := filepath.Join(dir, "three.csv")
	if err := os.WriteFile(csv3, []byte("\xef\xbb\xbfa,y\n1,0\n2,1\n3,0\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	missing := filepath.Join(dir, "none.npz")
	for _, tt := range []struct {
		name, body string
		want       []string
	}{
		{"npz", "data: {source: npz, path: " + labelled + ", train_limit: 4, scale: unit}\n", nil},
		{"npz pre-training only", "data: {source: npz, path: " + unlabelled + "}\nfinetune: {epochs: 0}\n", nil},
		{"npz without labels", "data: {source: npz, path: " + unlabelled + "}\n",
			[]string{"finetune.epochs = 10 (default): fine-tuning needs labels (finetune.epochs: 0 pre-trains only): " + unlabelled + " has no y_train"}},
		{"npz missing", "data: {source: npz, path: " + missing + "}\n",
			[]string{`data.path = "` + missing + `": not readable: no such file or directory`}},
		{"npz folder", "data: {source: npz, path: " + dir + "}\n",
			[]string{`data.path = "` + dir + `": is a directory, want a file`}},
		{"npz no path", "data: {source: npz}\n",
			[]string{`data.path = "" (default): must name a file: data.source npz reads it`}},
		{"npz limits", "data: {source: npz, path: " + labelled + ", train_limit: 5, test_limit: 4}\n",
			[]string{"data.train_limit = 5: must be at most 4, the examples of " + labelled + " (0 keeps all)",
				"data.test_limit = 4: must be at most 3, the test examples of " + labelled + " (0 keeps all)"}},
		{"npy one labels file", "data: {source: npy, train: " + csv + ", test: " + csv + ", train_labels: " + csv + "}\n",
			[]string{`data.test_labels = "" (default): must be given with data.train_labels and data.test_labels both, or neither`}},
		{"npy no labels", "data: {source: npy, train: " + csv + ", test: " + csv + "}\n",
			[]string{"finetune.epochs = 10 (default): fine-tuning needs labels (finetune.epochs: 0 pre-trains only): set data.train_labels and data.test_labels"}},
		{"csv", "data: {source: csv, train: " + csv + ", test: " + csv + ", header: true, label_column: y}\n", nil},
		{"csv no label column", "data: {source: csv, train: " + csv + ", test: " + csv + "}\n",
			[]string{"finetune.epochs = 10 (default): fine-tuning needs labels (finetune.epochs: 0 pre-trains only): set data.label_column"}},
		{"csv limits", "data: {source: csv, train: " + csv3 + ", test: " + csv + ", header: true, label_column: y, train_limit: 4, test_limit: 1}\n",
			[]string{"data.train_limit = 4: must be at most 3, the examples of csv file " + csv3 + " (0 keeps all)",
				"data.test_limit = 1: must be at most 0, the test examples of csv file " + csv + " (0 keeps all)"}},
		{"csv limits as rows", "data: {source: csv, train: " + csv3 + ", test: " + csv3 + ", header: true, label_column: y, train_limit: 3, test_limit: 3}\n", nil},
		{"keys of another source", "data: {source: synthetic, path: x.npz, label_column: y, header: true}\n",
			[]string{`data.path = "x.npz": is read only with data.source npz (data.source is synthetic)`,
				`data.label_column = "y": is read only with data.source csv (data.source is synthetic)`,
				`data.header = true: is read only with data.source csv (data.source is synthetic)`}},
		{"bad scale", "data: {source: synthetic, scale: minmax}\n",
			[]string{`data.scale = "minmax": must be one of none, unit, standardize`}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			p := write(t, "c.yaml", tt.body)
			c, err := Load(p, nil)
			if tt.want == nil {
				if err != nil {
					t.Fatalf("Load: %v", err)
				}
				if c.Data.Source.String() != "npz" && c.Data.Source.String() != "csv" {
					t.Errorf("source %v", c.Data.Source)
				}
				return
			}
			checkProblems(t, loadProblems(t, tt.body), tt.want...)
		})
	}
}
