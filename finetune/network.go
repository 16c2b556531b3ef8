package finetune

import (
	"fmt"
	"math"
	"math/rand/v2"

	"github.com/pipedbn/pipedbn/blas"
)

// Random-stream numbers of a network's initialisation: one stream per
// purpose, so that the output layer of FromPretrained and Random is the same
// for a given seed.
const (
	streamOutput uint64 = iota + 1
	streamHidden
	streamShuffle
	streamDropout
	streamInputDropout
)

// outputInitStd is the standard deviation of the output layer's Gaussian
// initial weights: small, so that the initial softmax is nearly uniform and
// the first gradients reaching the pre-trained layers are mild.
const outputInitStd = 0.01

// Layer is one fully connected layer: its output is f(x W + B) for an input
// row x, with f the sigmoid for hidden layers and the softmax for the output
// layer.
type Layer struct {
	// In and Out are the layer's input and output widths.
	In, Out int
	// W holds In x Out weights, row-major: the layout of an RBM's W_i
	// (visible x hidden) and of NumPy's x @ W.
	W []float32
	// B holds the Out biases.
	B []float32
}

// check panics unless l's slices match its shape.
func (l *Layer) check(name string) {
	if l.In < 1 || l.Out < 1 {
		panic(fmt.Sprintf("finetune: %s: shape %d x %d; want both >= 1", name, l.In, l.Out))
	}
	if len(l.W) != l.In*l.Out {
		panic(fmt.Sprintf("finetune: %s: len(W) = %d; want %d x %d = %d", name, len(l.W), l.In, l.Out, l.In*l.Out))
	}
	if len(l.B) != l.Out {
		panic(fmt.Sprintf("finetune: %s: len(B) = %d; want %d", name, len(l.B), l.Out))
	}
}

func (l Layer) clone() Layer {
	l.W = append([]float32(nil), l.W...)
	l.B = append([]float32(nil), l.B...)
	return l
}

// Network is a feed-forward classifier: sigmoid hidden layers followed by a
// softmax output layer. Train changes its weights in place; a Network is not
// safe for concurrent use while it trains, but Evaluate and Predict only read
// it.
type Network struct {
	// Hidden are the sigmoid layers, input side first; Hidden[i].Out ==
	// Hidden[i+1].In. It may be empty (softmax regression).
	Hidden []Layer
	// Out is the softmax layer; Out.Out is the number of classes.
	Out Layer
}

// FromPretrained returns a network whose hidden layers are copies of layers
// (RBM_i's W_i and hidden biases b_i, input side first) topped by a softmax
// layer of classes units with small Gaussian weights (standard deviation
// 0.01) drawn from seed and zero biases. It panics if layers is empty, a
// layer's slices do not match its shape, adjacent layers do not chain, or
// classes < 1.
func FromPretrained(layers []Layer, classes int, seed uint64) *Network {
	if len(layers) == 0 {
		panic("finetune: FromPretrained: no layers")
	}
	n := &Network{Hidden: make([]Layer, len(layers))}
	for i := range layers {
		n.Hidden[i] = layers[i].clone()
	}
	n.Out = outputLayer(layers[len(layers)-1].Out, classes, seed)
	n.check()
	return n
}

// Random returns a network of the given sizes with random weights, the
// baseline without pre-training. sizes lists the input width and then each
// hidden layer's width, like a DBN's layer sizes (e.g. [784 500 500 2000]);
// the softmax layer of classes units is added on top. Hidden weights are
// Glorot-uniform for sigmoid units, U(-r, r) with r = 4·sqrt(6/(in+out))
// (Glorot & Bengio 2010), hidden biases zero; the output layer is
// initialised as in FromPretrained, so that for one seed the two differ only
// in their hidden layers. It panics if len(sizes) < 1, a size is < 1 or
// classes < 1.
func Random(sizes []int, classes int, seed uint64) *Network {
	if len(sizes) < 1 {
		panic("finetune: Random: no sizes")
	}
	for i, s := range sizes {
		if s < 1 {
			panic(fmt.Sprintf("finetune: Random: sizes[%d] = %d; want >= 1", i, s))
		}
	}
	rng := rand.New(rand.NewPCG(seed, streamHidden))
	n := &Network{Hidden: make([]Layer, len(sizes)-1)}
	for i := range n.Hidden {
		in, out := sizes[i], sizes[i+1]
		l := Layer{In: in, Out: out, W: make([]float32, in*out), B: make([]float32, out)}
		r := 4 * math.Sqrt(6/float64(in+out))
		for j := range l.W {
			l.W[j] = float32((2*rng.Float64() - 1) * r)
		}
		n.Hidden[i] = l
	}
	n.Out = outputLayer(sizes[len(sizes)-1], classes, seed)
	n.check()
	return n
}

func outputLayer(in, classes int, seed uint64) Layer {
	if classes < 1 {
		panic(fmt.Sprintf("finetune: classes = %d; want >= 1", classes))
	}
	rng := rand.New(rand.NewPCG(seed, streamOutput))
	l := Layer{In: in, Out: classes, W: make([]float32, in*classes), B: make([]float32, classes)}
	for j := range l.W {
		l.W[j] = float32(rng.NormFloat64() * outputInitStd)
	}
	return l
}

// check panics unless n's layers are well formed and chain.
func (n *Network) check() {
	for i := range n.Hidden {
		n.Hidden[i].check(fmt.Sprintf("hidden layer %d", i+1))
		if i > 0 && n.Hidden[i].In != n.Hidden[i-1].Out {
			panic(fmt.Sprintf("finetune: hidden layer %d has %d inputs; layer %d has %d outputs", i+1, n.Hidden[i].In, i, n.Hidden[i-1].Out))
		}
	}
	n.Out.check("output layer")
	if k := len(n.Hidden); k > 0 && n.Out.In != n.Hidden[k-1].Out {
		panic(fmt.Sprintf("finetune: output layer has %d inputs; hidden layer %d has %d outputs", n.Out.In, k, n.Hidden[k-1].Out))
	}
}

// Clone returns a deep copy of n.
func (n *Network) Clone() *Network {
	c := &Network{Hidden: make([]Layer, len(n.Hidden)), Out: n.Out.clone()}
	for i := range n.Hidden {
		c.Hidden[i] = n.Hidden[i].clone()
	}
	return c
}

// Inputs returns the width of the network's input.
func (n *Network) Inputs() int {
	if len(n.Hidden) > 0 {
		return n.Hidden[0].In
	}
	return n.Out.In
}

// Classes returns the number of output classes.
func (n *Network) Classes() int { return n.Out.Out }

// Sizes returns the input width followed by each hidden layer's width: the
// sizes Random takes.
func (n *Network) Sizes() []int {
	s := []int{n.Inputs()}
	for _, l := range n.Hidden {
		s = append(s, l.Out)
	}
	return s
}

// layer returns layer i, counting the hidden layers from 0 and the output
// layer as len(n.Hidden).
func (n *Network) layer(i int) *Layer {
	if i == len(n.Hidden) {
		return &n.Out
	}
	return &n.Hidden[i]
}

// numParams returns the number of weights and biases of n.
func (n *Network) numParams() int {
	p := 0
	for i := 0; i <= len(n.Hidden); i++ {
		l := n.layer(i)
		p += len(l.W) + len(l.B)
	}
	return p
}

// saveParams copies every weight and bias of n into dst, which must hold
// numParams values.
func (n *Network) saveParams(dst []float32) {
	for i := 0; i <= len(n.Hidden); i++ {
		l := n.layer(i)
		dst = dst[copy(dst, l.W):]
		dst = dst[copy(dst, l.B):]
	}
}

// loadParams is the inverse of saveParams.
func (n *Network) loadParams(src []float32) {
	for i := 0; i <= len(n.Hidden); i++ {
		l := n.layer(i)
		src = src[copy(l.W, src):]
		src = src[copy(l.B, src):]
	}
}

// activations holds, for up to rows examples, the output of every hidden
// layer and the output layer's logits: the buffers of one forward pass.
type activations struct {
	rows   int
	hidden [][]float32 // hidden[i]: rows x Hidden[i].Out
	logits []float32   // rows x classes
	noise  []float32   // dropout's uniform draws, sized for the widest layer
}

func newActivations(n *Network, rows int) *activations {
	a := &activations{rows: rows, hidden: make([][]float32, len(n.Hidden)), logits: make([]float32, rows*n.Out.Out)}
	for i, l := range n.Hidden {
		a.hidden[i] = make([]float32, rows*l.Out)
	}
	return a
}

// forward runs rows examples x (rows x Inputs, row-major) through n, leaving
// each hidden layer's sigmoid output in a.hidden and the output layer's
// logits (before the softmax) in a.logits.
func (n *Network) forward(a *activations, x []float32, rows int) {
	n.forwardDrop(a, x, rows, 0, nil)
}

// forwardDrop is forward with inverted dropout on the hidden units: each is
// zeroed with probability drop, and the kept ones are scaled by 1/(1-drop).
func (n *Network) forwardDrop(a *activations, x []float32, rows int, drop float32, rng *blas.RNG) {
	if rows > a.rows {
		panic(fmt.Sprintf("finetune: forward of %d rows with buffers for %d", rows, a.rows))
	}
	in, inDim := x, n.Inputs()
	for i := range n.Hidden {
		l := &n.Hidden[i]
		h := a.hidden[i][:rows*l.Out]
		blas.Gemm(false, false, rows, l.Out, l.In, 1, in, inDim, l.W, l.Out, 0, h, l.Out)
		blas.SigmoidBias(h, rows, l.Out, l.B, nil)
		if drop > 0 {
			if len(a.noise) < len(h) {
				widest := 0
				for _, hb := range a.hidden {
					widest = max(widest, len(hb))
				}
				a.noise = make([]float32, widest) // once: then no step allocates
			}
			u := a.noise[:len(h)]
			rng.Uniform(u)
			invertedDropout(h, u, drop)
		}
		in, inDim = h, l.Out
	}
	c := n.Out.Out
	z := a.logits[:rows*c]
	blas.Gemm(false, false, rows, c, n.Out.In, 1, in, inDim, n.Out.W, c, 0, z, c)
	for r := 0; r < rows; r++ {
		zr := z[r*c : (r+1)*c]
		for j, b := range n.Out.B[:c] {
			zr[j] += b
		}
	}
}

// invertedDropout zeroes every x[j] whose uniform draw u[j] is below drop
// and scales the others by 1/(1-drop), so that the expected value of each is
// unchanged and evaluation needs no rescaling.
func invertedDropout(x, u []float32, drop float32) {
	scale := 1 / (1 - drop)
	for j := range x {
		if u[j] < drop {
			x[j] = 0
		} else {
			x[j] *= scale
		}
	}
}

// argmax returns the index of the largest value of z, the first on ties; a
// NaN is never largest.
func argmax(z []float32) int {
	best := 0
	for j := 1; j < len(z); j++ {
		if z[j] > z[best] || z[best] != z[best] {
			best = j
		}
	}
	return best
}

// EvalBatch is how many rows Evaluate and Predict push through the network
// at once: big enough for efficient GEMMs, small enough that the buffers
// (about 3 MB for 784-500-500-2000) don't grow with the data set. Memory
// estimates count their buffers by it.
const EvalBatch = 256

// Predict writes into dst[:rows] the most probable class of each of the rows
// examples in x (rows x Inputs, row-major), the argmax of the output layer's
// logits (the softmax does not change it). It allocates buffers for at most
// 256 rows whatever rows is. It panics if dst or x is too short.
func (n *Network) Predict(dst []int, x []float32, rows int) {
	in := n.Inputs()
	if rows < 0 || len(dst) < rows || len(x) < rows*in {
		panic(fmt.Sprintf("finetune: Predict of %d rows of %d inputs into dst of length %d from x of length %d", rows, in, len(dst), len(x)))
	}
	if rows == 0 {
		return
	}
	a := newActivations(n, min(rows, EvalBatch))
	c := n.Out.Out
	for lo := 0; lo < rows; lo += a.rows {
		k := min(a.rows, rows-lo)
		n.forward(a, x[lo*in:(lo+k)*in], k)
		for r := range k {
			dst[lo+r] = argmax(a.logits[r*c : (r+1)*c])
		}
	}
}
