package finetune

import (
	"bytes"
	"math"
	"strings"
	"testing"

	"github.com/pipedbn/pipedbn/blas"
	"github.com/pipedbn/pipedbn/data"
)

func TestEvaluate(t *testing.T) {
	t.Parallel()
	_, test := data.SyntheticPair(4, 0, 2*EvalBatch+17, 20, 5)
	tests := []struct {
		name string
		set  *data.Set
	}{
		{"several batches", test},
		{"one row", test.Limit(1)},
		{"empty", &data.Set{Dim: 20, Classes: 5}},
	}
	n := Random([]int{20, 12}, 5, 9)
	for j := range n.Out.W {
		n.Out.W[j] *= 300 // an untrained net that doesn't predict one class only
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			e := n.Evaluate(tt.set)
			if e.N != tt.set.N {
				t.Errorf("N = %d; want %d", e.N, tt.set.N)
			}
			pred := make([]int, tt.set.N)
			n.Predict(pred, tt.set.X, tt.set.N)
			want := make([][]int, 5)
			for i := range want {
				want[i] = make([]int, 5)
			}
			correct := 0
			for i, p := range pred {
				want[tt.set.Labels[i]][p]++
				if p == int(tt.set.Labels[i]) {
					correct++
				}
			}
			sum, diag := 0, 0
			for tr, row := range e.Confusion {
				rowSum := 0
				for p, v := range row {
					if v != want[tr][p] {
						t.Errorf("Confusion[%d][%d] = %d; want %d", tr, p, v, want[tr][p])
					}
					rowSum += v
				}
				sum += rowSum
				diag += row[tr]
				wantRecall := 0.0
				if rowSum > 0 {
					wantRecall = float64(row[tr]) / float64(rowSum)
				}
				if e.PerClass[tr] != wantRecall {
					t.Errorf("PerClass[%d] = %v; want %v", tr, e.PerClass[tr], wantRecall)
				}
			}
			if sum != tt.set.N {
				t.Errorf("confusion matrix sums to %d; want N = %d", sum, tt.set.N)
			}
			wantAcc := 0.0
			if tt.set.N > 0 {
				wantAcc = float64(correct) / float64(tt.set.N)
				if got := float64(diag) / float64(tt.set.N); got != e.Accuracy {
					t.Errorf("diagonal/N = %v; want Accuracy = %v", got, e.Accuracy)
				}
			}
			if e.Accuracy != wantAcc {
				t.Errorf("Accuracy = %v; want %v", e.Accuracy, wantAcc)
			}
			if tt.set.N > EvalBatch && (e.Accuracy == 0 || e.Accuracy == 1 || math.IsNaN(e.Accuracy)) {
				t.Errorf("Accuracy = %v: the test network is degenerate", e.Accuracy)
			}
		})
	}
}

// TestEvaluateAllocs checks that Evaluate's allocations do not grow with
// the set: its buffers hold one batch, not the set.
func TestEvaluateAllocs(t *testing.T) {
	if blas.Name() == "gonum" {
		t.Skip("gonum's Sgemm starts goroutines for large products, allocating on every call; the OpenBLAS build runs this test")
	}
	n := Random([]int{20, 12}, 5, 9)
	_, big := data.SyntheticPair(4, 0, 10*EvalBatch, 20, 5)
	small := big.Limit(EvalBatch / 2)
	count := func(s *data.Set) float64 {
		return testing.AllocsPerRun(5, func() { n.Evaluate(s) })
	}
	aSmall, aBig := count(small), count(big)
	if aBig != aSmall {
		t.Errorf("Evaluate allocates %v times for %d rows and %v times for %d; want the same", aSmall, small.N, aBig, big.N)
	}
}

func TestFormatConfusion(t *testing.T) {
	t.Parallel()
	e := Evaluation{
		Accuracy:  7.0 / 10,
		Confusion: [][]int{{3, 1, 0}, {0, 4, 1}, {0, 1, 0}},
		PerClass:  []float64{0.75, 0.8, 0},
		N:         10,
	}
	tests := []struct {
		name  string
		names []string
		want  string
	}{
		{"names", []string{"cat", "dog", "hamster"}, `true \ predicted 0 1 2   recall
0 cat            3 1 0   75.00%
1 dog            0 4 1   80.00%
2 hamster        0 1 0    0.00%
accuracy 70.00% (7 / 10)
`},
		{"no names", nil, `true \ predicted 0 1 2   recall
0                3 1 0   75.00%
1                0 4 1   80.00%
2                0 1 0    0.00%
accuracy 70.00% (7 / 10)
`},
		{"some names, an empty class", []string{"a"}, `true \ predicted 0 1 2   recall
0 a              3 1 0   75.00%
1                0 4 1   80.00%
2                0 0 0        -
accuracy 77.78% (7 / 9)
`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			e := e
			if strings.Contains(tt.name, "empty") {
				e.Confusion = [][]int{{3, 1, 0}, {0, 4, 1}, {0, 0, 0}}
				e.N, e.Accuracy = 9, 7.0/9
			}
			var b bytes.Buffer
			if err := FormatConfusion(&b, e, tt.names); err != nil {
				t.Fatal(err)
			}
			if b.String() != tt.want {
				t.Errorf("FormatConfusion =\n%s\nwant\n%s", b.String(), tt.want)
			}
		})
	}
}
