package dbn

import (
	"math"

	"github.com/pipedbn/pipedbn/rbm"
)

// finalReconRows bounds the examples the final reconstruction errors are
// measured on.
const finalReconRows = 10000

// finalRecon measures every RBM's mean squared reconstruction error on the
// same input at the end: the first rows of x transformed by the final RBMs
// below it. Unlike the per-epoch errors, which an upper RBM of the pipelined
// schedule measures on input that moves as the RBMs below learn, these
// compare across RBMs and across schedules.
func finalRecon(rbms []*rbm.RBM, x []float32, n int) []float64 {
	n = min(n, finalReconRows)
	out := make([]float64, len(rbms))
	in := x[:n*rbms[0].Visible]
	for i, r := range rbms {
		if out[i] = ReconError(r, in, n); math.IsNaN(out[i]) {
			return nil
		}
		if i+1 < len(rbms) {
			next := make([]float32, n*r.Hidden)
			r.HiddenProbs(next, in, n)
			in = next
		}
	}
	return out
}

// ReconError is r's mean squared reconstruction error on n rows of in (NaN
// if a step fails).
func ReconError(r *rbm.RBM, in []float32, n int) float64 {
	const batch = 500
	// A CD-1 step with a zero learning rate measures without changing
	// anything (on a clone, to be sure).
	tr := rbm.NewTrainer(r.Clone(), min(batch, n), 1, 1)
	sse := 0.0
	for lo := 0; lo < n; lo += batch {
		rows := min(batch, n-lo)
		e, err := tr.Step(in[lo*r.Visible:(lo+rows)*r.Visible], rows, rbm.Params{}, nil, rbm.Probabilities)
		if err != nil {
			return math.NaN()
		}
		sse += e
	}
	return sse / float64(n*r.Visible)
}
