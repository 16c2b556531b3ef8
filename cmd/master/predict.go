package main

import (
	"bytes"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/pipedbn/pipedbn/data"
	"github.com/pipedbn/pipedbn/dbn"
	"github.com/pipedbn/pipedbn/internal/atomicfile"
)

const modelUsage = `usage:
  master predict   --run DIR --in X --out P.npy [--labels] [--array NAME] [--label-column COL]
  master transform --run DIR --in X --out H.npy [--layer N] [--finetuned] [--array NAME] [--label-column COL]

predict writes the class probabilities of the run's fine-tuned network (float32, rows x classes),
or with --labels the most probable class of each row (int64). transform writes the DBN's hidden
activations at layer N (default: the top; float32, rows x units), from the pre-trained weights or,
with --finetuned, the fine-tuned network's. X is a .npy file, an .npz archive (--array NAME, default
x_test), a .csv file, or - for CSV on stdin; a CSV's first row is a header when it holds anything
but numbers, and --label-column drops its label column (a header name, or a number from 0). The
run's data.scale (scale.npz) and standardisation are applied to X first.
`

// runModel runs master predict or transform.
func runModel(cmd string, args []string, stdin io.Reader, stderr io.Writer) error {
	fs := flag.NewFlagSet("master "+cmd, flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() { fmt.Fprint(stderr, modelUsage) }
	run := fs.String("run", "", "the run's output `DIR` (its weights.npz)")
	in := fs.String("in", "", "the examples: a .npy, .npz or .csv `FILE`, or - for CSV on stdin")
	out := fs.String("out", "", "the .npy `FILE` to write")
	array := fs.String("array", "", "the array of an .npz `NAME` (default x_test)")
	labelCol := fs.String("label-column", "", "a CSV's label `COLUMN` to drop: a header name or a number from 0")
	labels := fs.Bool("labels", false, "predict: write the most probable class (int64) instead of the probabilities")
	layer := fs.Int("layer", 0, "transform: the hidden `LAYER`, 1 = RBM_1's (default: the top)")
	finetuned := fs.Bool("finetuned", false, "transform: use the fine-tuned network's hidden layers")
	if err := parseArgs(fs, args); err != nil {
		return err
	}
	for _, f := range []struct{ name, val string }{{"run", *run}, {"in", *in}, {"out", *out}} {
		if f.val == "" {
			return fmt.Errorf("%w: --%s is required", errUsage, f.name)
		}
	}
	switch {
	case cmd == "predict" && (flagGiven(fs, "layer") || *finetuned):
		return fmt.Errorf("%w: --layer and --finetuned are for master transform", errUsage)
	case cmd == "transform" && *labels:
		return fmt.Errorf("%w: --labels is for master predict", errUsage)
	case filepath.Ext(*out) != ".npy":
		return fmt.Errorf("%w: --out %s: want a .npy file", errUsage, *out)
	}
	m, err := dbn.LoadModel(*run)
	if err != nil {
		return err
	}
	x, err := data.ReadFeatures(*in, *array, data.CSVOptions{DetectHeader: true, LabelColumn: *labelCol}, stdin)
	if err != nil {
		return err
	}
	if err := m.Prepare(x); err != nil {
		return err
	}
	var write func(w io.Writer) error
	switch {
	case cmd == "predict" && *labels:
		l, err := m.Labels(x)
		if err != nil {
			return err
		}
		write = func(w io.Writer) error { return data.WriteNPY(w, []int{x.Rows}, l) }
	case cmd == "predict":
		p, err := m.Probabilities(x)
		if err != nil {
			return err
		}
		write = func(w io.Writer) error { return data.WriteNPY(w, []int{x.Rows, len(p) / x.Rows}, p) }
	default:
		h, width, err := m.Transform(x, *layer, *finetuned)
		if err != nil {
			return err
		}
		write = func(w io.Writer) error { return data.WriteNPY(w, []int{x.Rows, width}, h) }
	}
	var buf bytes.Buffer
	if err := write(&buf); err != nil {
		return err
	}
	if err := atomicfile.WriteFile(*out, buf.Bytes()); err != nil {
		return fmt.Errorf("--out %s: %w", *out, err)
	}
	return nil
}

// stdin is where master predict and transform read "-".
var stdin io.Reader = os.Stdin
