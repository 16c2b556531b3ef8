package main

import (
	"bytes"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/pipedbn/pipedbn/data"
	"github.com/pipedbn/pipedbn/dbn"
	"github.com/pipedbn/pipedbn/internal/atomicfile"
)

const modelUsage = `usage:
  master predict   --run DIR --in X --out P.npy [--labels] [--array NAME] [--label-column COL] [--header]
  master transform --run DIR --in X --out H.npy [--layer N] [--finetuned] [--array NAME] [--label-column COL] [--header]

predict writes the class probabilities of the run's fine-tuned network (float32, rows x classes),
or with --labels the most probable class of each row (int64). transform writes the DBN's hidden
activations at layer N (default: the top; float32, rows x units), from the pre-trained weights or,
with --finetuned, the fine-tuned network's. X is a .npy file, an .npz archive (--array NAME, default
x_test), a .csv file, or - for CSV on stdin (a UTF-8 byte-order mark is skipped); a CSV's first row
is a header when none of its fields is a number (--header: it is one; --header=false: it is data),
which is then said on stderr, and --label-column drops its label column (a header name, or a column
index from 0). The run's data.scale (scale.npz) and standardisation are applied to X first. --out
must not be the input file.
`

// runModel runs master predict or transform; its help goes to help, what
// it says of its input to stderr.
func runModel(cmd string, args []string, stdin io.Reader, help, stderr io.Writer) error {
	fs := flag.NewFlagSet("master "+cmd, flag.ContinueOnError)
	fs.SetOutput(help)
	fs.Usage = func() { fmt.Fprint(help, modelUsage) }
	run := fs.String("run", "", "the run's output `DIR` (its weights.npz)")
	in := fs.String("in", "", "the examples: a .npy, .npz or .csv `FILE`, or - for CSV on stdin")
	out := fs.String("out", "", "the .npy `FILE` to write")
	array := fs.String("array", "", "the array of an .npz `NAME` (default x_test)")
	labelCol := fs.String("label-column", "", "a CSV's label `COLUMN` to drop: a header name or a column index from 0")
	header := fs.Bool("header", false, "a CSV's first row is a header (--header=false: it is data; default: a header when none of its fields is a number)")
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
	if err := checkNotInput(*out, *in); err != nil {
		return err
	}
	m, err := dbn.LoadModel(*run)
	if err != nil {
		return err
	}
	opt := data.CSVOptions{DetectHeader: !flagGiven(fs, "header"), Header: *header, LabelColumn: *labelCol}
	x, err := data.ReadFeatures(*in, *array, opt, stdin)
	if err != nil {
		return err
	}
	if x.Header != nil {
		// A row not turned into an output row is never dropped unsaid.
		fmt.Fprintf(stderr, "master %s: %s: the first row is a header (%s), not an example; %d examples follow it\n", cmd, x.Name, headerText(x.Header), x.Rows)
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

// checkNotInput refuses an --out that is the --in file, by any path or
// link: the output would replace the examples it was computed from.
func checkNotInput(out, in string) error {
	if in == "-" {
		return nil
	}
	so, err := os.Stat(out)
	if err != nil {
		return nil // no such file yet: not the input
	}
	si, err := os.Stat(in)
	if err == nil && os.SameFile(si, so) {
		return fmt.Errorf("--out %s: is the input file --in %s, which it would overwrite: write to another file", out, in)
	}
	return nil
}

// headerText is a header row for one line: its first names, and how many
// more there are.
func headerText(names []string) string {
	const shown = 5
	var b strings.Builder
	for i, n := range names[:min(len(names), shown)] {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString(strconv.Quote(n))
	}
	if len(names) > shown {
		fmt.Fprintf(&b, ", ... %d more", len(names)-shown)
	}
	return b.String()
}

// stdin is where master predict and transform read "-".
var stdin io.Reader = os.Stdin
