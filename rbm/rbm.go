// Package rbm is a float32 restricted Boltzmann machine with Bernoulli hidden
// units and Bernoulli or unit-variance Gaussian visible units, trained by
// contrastive divergence (CD-k), as used to pre-train each layer of a deep
// belief network. In the pipelined pre-training of the paper, RBM_i joins
// L_{i-1} (or its copy, L_{i-1}-copy) to L_i and is trained on machine M_i; a
// Trainer step yields the middle result that M_{i+1} trains on, and the
// visible biases A of an L_{i-1}-copy may be overwritten between steps with
// the biases B_{i-1} received from the layer below.
//
// Speed matters more here than anywhere else in pipedbn, so the hot path
// allocates nothing: a Trainer owns every scratch buffer, matrix products go
// through package blas (OpenBLAS by default), and the element-wise work of a
// step runs in a few fused, vectorised blas kernels. Matrices are row-major
// []float32; a shape mismatch is a programmer error and panics.
package rbm

import (
	"fmt"
	"math"
	"math/rand/v2"
	"strings"

	"github.com/pipedbn/pipedbn/blas"
)

// Units is the kind of an RBM's visible units. The hidden units are always
// Bernoulli.
type Units int

const (
	// Bernoulli visible units are binary; p(v_i=1|h) = sigmoid(a_i + W_i h).
	// Data should lie in [0, 1].
	Bernoulli Units = iota
	// Gaussian visible units are real with unit variance; their mean given h
	// is a_i + W_i h. Data should be standardised to unit variance per
	// component (and usually zero mean).
	Gaussian
)

// String returns "bernoulli" or "gaussian".
func (u Units) String() string {
	switch u {
	case Bernoulli:
		return "bernoulli"
	case Gaussian:
		return "gaussian"
	}
	return fmt.Sprintf("Units(%d)", int(u))
}

// ParseUnits is the inverse of Units.String; it ignores case.
func ParseUnits(s string) (Units, error) {
	switch strings.ToLower(strings.TrimSpace(s)) {
	case "bernoulli":
		return Bernoulli, nil
	case "gaussian":
		return Gaussian, nil
	}
	return 0, fmt.Errorf("rbm: unknown units %q (want bernoulli or gaussian)", s)
}

// MarshalText returns String, so that JSON spells units as String does.
func (u Units) MarshalText() ([]byte, error) { return []byte(u.String()), nil }

// UnmarshalText is ParseUnits, for JSON and config decoders.
func (u *Units) UnmarshalText(b []byte) error {
	v, err := ParseUnits(string(b))
	if err != nil {
		return err
	}
	*u = v
	return nil
}

// Middle is the kind of middle result a Trainer step hands on: what the next
// RBM up trains on in the pipelined algorithm.
type Middle int

const (
	// Probabilities is the middle result p(h=1|v0) of the positive phase,
	// the activations the paper chooses as a layer's representation.
	Probabilities Middle = iota
	// Samples is the binary hidden state sampled from those probabilities in
	// the positive phase.
	Samples
)

// String returns "probabilities" or "samples".
func (m Middle) String() string {
	switch m {
	case Probabilities:
		return "probabilities"
	case Samples:
		return "samples"
	}
	return fmt.Sprintf("Middle(%d)", int(m))
}

// ParseMiddle is the inverse of Middle.String; it ignores case.
func ParseMiddle(s string) (Middle, error) {
	switch strings.ToLower(strings.TrimSpace(s)) {
	case "probabilities":
		return Probabilities, nil
	case "samples":
		return Samples, nil
	}
	return 0, fmt.Errorf("rbm: unknown middle result %q (want probabilities or samples)", s)
}

// MarshalText returns String, so that JSON spells a middle result as String
// does.
func (m Middle) MarshalText() ([]byte, error) { return []byte(m.String()), nil }

// UnmarshalText is ParseMiddle, for JSON and config decoders.
func (m *Middle) UnmarshalText(b []byte) error {
	v, err := ParseMiddle(string(b))
	if err != nil {
		return err
	}
	*m = v
	return nil
}

// RBM is a restricted Boltzmann machine: Visible units joined to Hidden units
// by the weights W, with visible biases A and hidden biases B. Its energy is
// E(v,h) = -vᵀWh - aᵀv - bᵀh for Bernoulli visible units and
// E(v,h) = |v-a|²/2 - vᵀWh - bᵀh for Gaussian ones.
type RBM struct {
	// Visible and Hidden are the numbers of units in each layer: the sizes
	// of L_{i-1} and L_i.
	Visible, Hidden int
	// Units is the kind of the visible units.
	Units Units
	// W is Visible x Hidden, row-major: W[i*Hidden+j] joins visible unit i
	// to hidden unit j.
	W []float32
	// A holds the visible biases (len Visible). In an L_{i-1}-copy the
	// pipeline overwrites them with B_{i-1} from the layer below.
	A []float32
	// B holds the hidden biases (len Hidden), B_i in the paper.
	B []float32
}

// InitStd is the standard deviation of the initial weights made by New, as
// Hinton's practical guide recommends.
const InitStd = 0.01

// New returns an RBM with weights drawn from N(0, InitStd²) by a generator
// seeded with seed, and zero biases. The same arguments always give the same
// RBM. It panics unless visible and hidden are positive.
func New(visible, hidden int, units Units, seed uint64) *RBM {
	if visible < 1 || hidden < 1 {
		panic(fmt.Sprintf("rbm: New: shape %d x %d; want positive sizes", visible, hidden))
	}
	if units != Bernoulli && units != Gaussian {
		panic(fmt.Sprintf("rbm: New: invalid %v", units))
	}
	r := &RBM{
		Visible: visible,
		Hidden:  hidden,
		Units:   units,
		W:       make([]float32, visible*hidden),
		A:       make([]float32, visible),
		B:       make([]float32, hidden),
	}
	rng := rand.New(rand.NewPCG(seed, 0x5851f42d4c957f2d))
	for i := range r.W {
		r.W[i] = float32(rng.NormFloat64() * InitStd)
	}
	return r
}

// Clone returns a deep copy of r.
func (r *RBM) Clone() *RBM {
	c := *r
	c.W = append([]float32(nil), r.W...)
	c.A = append([]float32(nil), r.A...)
	c.B = append([]float32(nil), r.B...)
	return &c
}

// CopyFrom sets r's units, weights and biases to o's, reusing r's storage.
// It panics if the shapes differ.
func (r *RBM) CopyFrom(o *RBM) {
	if r.Visible != o.Visible || r.Hidden != o.Hidden {
		panic(fmt.Sprintf("rbm: CopyFrom: shape %d x %d into %d x %d", o.Visible, o.Hidden, r.Visible, r.Hidden))
	}
	r.check("CopyFrom")
	o.check("CopyFrom")
	r.Units = o.Units
	copy(r.W, o.W)
	copy(r.A, o.A)
	copy(r.B, o.B)
}

// check panics if r's slices don't match its shape.
func (r *RBM) check(fn string) {
	if len(r.W) != r.Visible*r.Hidden || len(r.A) != r.Visible || len(r.B) != r.Hidden {
		panic(fmt.Sprintf("rbm: %s: RBM %d x %d has len(W), len(A), len(B) = %d, %d, %d",
			fn, r.Visible, r.Hidden, len(r.W), len(r.A), len(r.B)))
	}
}

func checkMat(fn, name string, x []float32, rows, cols int) {
	if rows < 0 {
		panic(fmt.Sprintf("rbm: %s: negative rows %d", fn, rows))
	}
	if len(x) < rows*cols {
		panic(fmt.Sprintf("rbm: %s: len(%s) = %d; want at least %d x %d", fn, name, len(x), rows, cols))
	}
}

// HiddenProbs sets dst (rows x Hidden) to p(h=1|v) = sigmoid(vW + B) for the
// rows x Visible batch v: the greedy layer-wise transform, the input of the
// next RBM up. dst must not overlap v.
func (r *RBM) HiddenProbs(dst, v []float32, rows int) {
	r.check("HiddenProbs")
	checkMat("HiddenProbs", "v", v, rows, r.Visible)
	checkMat("HiddenProbs", "dst", dst, rows, r.Hidden)
	if rows == 0 {
		return
	}
	blas.Gemm(false, false, rows, r.Hidden, r.Visible, 1, v, r.Visible, r.W, r.Hidden, 0, dst, r.Hidden)
	blas.SigmoidBias(dst, rows, r.Hidden, r.B, nil)
}

// FreeEnergy returns the mean free energy F(v) = -log Σ_h exp(-E(v,h)) of
// the rows x Visible batch v:
//
//	Bernoulli: F(v) = -aᵀv - Σ_j softplus(b_j + (vW)_j)
//	Gaussian:  F(v) = |v-a|²/2 - Σ_j softplus(b_j + (vW)_j)
//
// It is meant for monitoring (comparing training and held-out data), so it
// favours accuracy over speed: it allocates and sums in float64. It returns 0
// for rows == 0.
func (r *RBM) FreeEnergy(v []float32, rows int) float64 {
	r.check("FreeEnergy")
	checkMat("FreeEnergy", "v", v, rows, r.Visible)
	if rows == 0 {
		return 0
	}
	vw := make([]float32, rows*r.Hidden)
	blas.Gemm(false, false, rows, r.Hidden, r.Visible, 1, v, r.Visible, r.W, r.Hidden, 0, vw, r.Hidden)
	var total float64
	for n := 0; n < rows; n++ {
		var f float64
		vn := v[n*r.Visible : (n+1)*r.Visible]
		for i, x := range vn {
			if r.Units == Gaussian {
				d := float64(x) - float64(r.A[i])
				f += d * d / 2
			} else {
				f -= float64(r.A[i]) * float64(x)
			}
		}
		for j, x := range vw[n*r.Hidden : (n+1)*r.Hidden] {
			f -= softplus(float64(x) + float64(r.B[j]))
		}
		total += f
	}
	return total / float64(rows)
}

// softplus returns log(1 + e^x) without overflow.
func softplus(x float64) float64 {
	if x > 0 {
		return x + math.Log1p(math.Exp(-x))
	}
	return math.Log1p(math.Exp(x))
}
