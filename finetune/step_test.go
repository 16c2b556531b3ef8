package finetune

import (
	"math"
	"testing"

	"github.com/pipedbn/pipedbn/blas"
)

// The bias gradients are the column sums of each layer's deltas, summed in
// the passes that make the deltas, with and without dropout: after a
// backward pass at lr 1 and momentum 0, velB[i] = -(1/rows)·Σ_r δ_i[r,:],
// with δ_i the deltas backward leaves (t.deltas, and the logits for the
// output layer), summed here in float64.
func TestBiasGradientIsColumnSum(t *testing.T) {
	t.Parallel()
	for _, drop := range []float32{0, 0.4} {
		const rows = 7
		n := Random([]int{9, 6, 5}, 3, 4)
		tr := newTrainer(n, rows)
		copy(tr.x, randomInputs(5, rows, 9))
		for r := range tr.labels {
			tr.labels[r] = uint8(r % 3)
		}
		if drop > 0 {
			tr.dropout, tr.rng = drop, blas.NewRNG(6)
		}
		n.forwardDrop(tr.acts, tr.x, rows, tr.dropout, tr.rng)
		softmaxDeltas(tr.acts.logits, rows, 3, tr.labels, 0)
		tr.backward(rows, 1, 0)
		zeros := 0
		for i := 0; i <= len(n.Hidden); i++ {
			l := n.layer(i)
			delta := tr.acts.logits
			if i < len(n.Hidden) {
				delta = tr.deltas[i]
			}
			for j := 0; j < l.Out; j++ {
				var sum float64
				for r := 0; r < rows; r++ {
					sum += float64(delta[r*l.Out+j])
					if delta[r*l.Out+j] == 0 {
						zeros++
					}
				}
				want := -sum / rows
				if got := float64(tr.velB[i][j]); math.Abs(got-want) > 1e-6*(1+math.Abs(want)) {
					t.Errorf("dropout %v, layer %d: velB[%d] = %v; want -(column sum of the deltas)/rows = %v", drop, i, j, got, want)
				}
			}
		}
		if drop > 0 && zeros == 0 {
			t.Errorf("dropout %v zeroed no delta: the test checks nothing of it", drop)
		}
	}
}
