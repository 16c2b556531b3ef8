package finetune

import (
	"fmt"
	"io"
	"strings"

	"github.com/pipedbn/pipedbn/data"
)

// FashionMNISTClasses are the names of Fashion-MNIST's ten classes, in label
// order, for FormatConfusion.
var FashionMNISTClasses = []string{"T-shirt/top", "Trouser", "Pullover", "Dress", "Coat", "Sandal", "Shirt", "Sneaker", "Bag", "Ankle boot"}

// Evaluation is how well a network classifies a data set.
type Evaluation struct {
	// Accuracy is the fraction of examples classified correctly (0 for an
	// empty set).
	Accuracy float64
	// Confusion[t][p] counts the examples of true class t predicted as p;
	// it is classes x classes and sums to N.
	Confusion [][]int
	// PerClass[t] is the recall of class t: Confusion[t][t] over the
	// examples of class t, 0 where the set has none.
	PerClass []float64
	// N is the number of examples evaluated.
	N int
}

// evaluator runs data sets through a network in batches of fixed size.
type evaluator struct {
	net  *Network
	acts *activations
}

func newEvaluator(n *Network) *evaluator {
	return &evaluator{net: n, acts: newActivations(n, EvalBatch)}
}

// run counts the correct predictions on s and, when confusion is not nil,
// adds each example to confusion[true][predicted]. s's rows are contiguous,
// so batches are views of s.X: no copy.
func (e *evaluator) run(s *data.Set, confusion [][]int) (correct int) {
	n, c, in := e.net, e.net.Out.Out, e.net.Inputs()
	for lo := 0; lo < s.N; lo += e.acts.rows {
		k := min(e.acts.rows, s.N-lo)
		n.forward(e.acts, s.X[lo*in:(lo+k)*in], k)
		for r := range k {
			p, t := argmax(e.acts.logits[r*c:(r+1)*c]), int(s.Labels[lo+r])
			if p == t {
				correct++
			}
			if confusion != nil {
				confusion[t][p]++
			}
		}
	}
	return correct
}

// Evaluate classifies every example of s and returns the accuracy,
// confusion matrix and per-class recall. It works in batches of 256 rows
// through buffers allocated once per call, so its memory does not grow with
// s.N. It panics if s's width is not the network's input width or a label is
// not below Classes (Train checks both for its sets and returns an error).
func (n *Network) Evaluate(s *data.Set) Evaluation {
	checkSetShape(n, s)
	c := n.Out.Out
	e := Evaluation{N: s.N, Confusion: make([][]int, c), PerClass: make([]float64, c)}
	cells := make([]int, c*c)
	for t := range e.Confusion {
		e.Confusion[t] = cells[t*c : (t+1)*c : (t+1)*c]
	}
	if s.N == 0 {
		return e
	}
	correct := newEvaluator(n).run(s, e.Confusion)
	e.Accuracy = float64(correct) / float64(s.N)
	for t, row := range e.Confusion {
		total := 0
		for _, v := range row {
			total += v
		}
		if total > 0 {
			e.PerClass[t] = float64(row[t]) / float64(total)
		}
	}
	return e
}

// checkSetShape panics unless s fits n; see checkSet for the error form.
func checkSetShape(n *Network, s *data.Set) {
	if err := checkSet("set", s, n); err != nil {
		panic(err.Error())
	}
}

// FormatConfusion writes e as a table: one row per true class and one column
// per predicted class (columns numbered by class, rows by number and name),
// each row ending with the class's recall, then the overall accuracy.
// classNames may be nil or shorter than the classes; missing names are left
// blank.
func FormatConfusion(w io.Writer, e Evaluation, classNames []string) error {
	c := len(e.Confusion)
	name := func(t int) string {
		if t < len(classNames) {
			return classNames[t]
		}
		return ""
	}
	// Widths: the label column fits "N name"; count columns fit the largest
	// count and the class number.
	labelW := len("true \\ predicted")
	cellW := len(fmt.Sprint(c - 1))
	for t, row := range e.Confusion {
		labelW = max(labelW, len(fmt.Sprintf("%d %s", t, name(t))))
		for _, v := range row {
			cellW = max(cellW, len(fmt.Sprint(v)))
		}
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%-*s", labelW, "true \\ predicted")
	for p := range c {
		fmt.Fprintf(&b, " %*d", cellW, p)
	}
	b.WriteString("   recall\n")
	for t, row := range e.Confusion {
		fmt.Fprintf(&b, "%-*s", labelW, strings.TrimSpace(fmt.Sprintf("%d %s", t, name(t))))
		total := 0
		for _, v := range row {
			fmt.Fprintf(&b, " %*d", cellW, v)
			total += v
		}
		if total == 0 {
			b.WriteString("        -\n")
		} else {
			fmt.Fprintf(&b, "  %6.2f%%\n", 100*float64(row[t])/float64(total))
		}
	}
	correct := 0
	for t := range c {
		correct += e.Confusion[t][t]
	}
	fmt.Fprintf(&b, "accuracy %.2f%% (%d / %d)\n", 100*e.Accuracy, correct, e.N)
	_, err := io.WriteString(w, b.String())
	return err
}
