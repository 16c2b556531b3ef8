package finetune

import (
	"math"
	"testing"
)

// TestProbabilities: rows sum to 1, follow refForward's logits, and their
// argmax is Predict's.
func TestProbabilities(t *testing.T) {
	t.Parallel()
	sizes := []int{6, 5, 4}
	n := FromPretrained(randomLayers(3, sizes, 1), 3, 9)
	rows := 300 // more than one batch of 256
	x := randomInputs(4, rows, 6)
	p := make([]float32, rows*3)
	n.Probabilities(p, x, rows)
	pred := make([]int, rows)
	n.Predict(pred, x, rows)
	for r := range rows {
		_, logits := refForward(n, x[r*6:(r+1)*6])
		var sum, ref float64
		for _, l := range logits {
			ref += math.Exp(l)
		}
		best := 0
		for j := range 3 {
			sum += float64(p[r*3+j])
			if want := math.Exp(logits[j]) / ref; math.Abs(float64(p[r*3+j])-want) > 1e-5 {
				t.Fatalf("row %d class %d: %g; want %g", r, j, p[r*3+j], want)
			}
			if p[r*3+j] > p[r*3+best] {
				best = j
			}
		}
		if math.Abs(sum-1) > 1e-5 || best != pred[r] {
			t.Fatalf("row %d: sum %g, argmax %d; want 1 and Predict's %d", r, sum, best, pred[r])
		}
	}
}
