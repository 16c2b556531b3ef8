package finetune

import (
	"fmt"
	"math"
)

// Probabilities writes into dst[:rows*Classes] the class probabilities of
// each of the rows examples in x (rows x Inputs, row-major): the softmax of
// the output layer's logits, computed in float64 and rounded to float32. It
// runs the rows in the batches Evaluate and Predict use, so the logits are
// theirs bit for bit. It panics if dst or x is too short.
func (n *Network) Probabilities(dst, x []float32, rows int) {
	in, c := n.Inputs(), n.Out.Out
	if rows < 0 || len(dst) < rows*c || len(x) < rows*in {
		panic(fmt.Sprintf("finetune: Probabilities of %d rows of %d inputs into dst of length %d from x of length %d", rows, in, len(dst), len(x)))
	}
	if rows == 0 {
		return
	}
	a := newActivations(n, min(rows, EvalBatch))
	for lo := 0; lo < rows; lo += a.rows {
		k := min(a.rows, rows-lo)
		n.forward(a, x[lo*in:(lo+k)*in], k)
		for r := range k {
			softmax(dst[(lo+r)*c:(lo+r+1)*c], a.logits[r*c:(r+1)*c])
		}
	}
}

// softmax sets p to the softmax of z, stably (the largest logit subtracted).
func softmax(p, z []float32) {
	m := math.Inf(-1)
	for _, v := range z {
		m = math.Max(m, float64(v))
	}
	var sum float64
	for _, v := range z {
		sum += math.Exp(float64(v) - m)
	}
	for j, v := range z {
		p[j] = float32(math.Exp(float64(v)-m) / sum)
	}
}
