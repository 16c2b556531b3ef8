package finetune

import (
	"math"

	"github.com/pipedbn/pipedbn/blas"
)

// trainer holds everything one SGD step needs, allocated once for mini-batches
// of up to batch rows, so that a step allocates nothing.
type trainer struct {
	net   *Network
	batch int
	// x and labels hold the mini-batch: batch x Inputs and batch.
	x      []float32
	labels []uint8
	// acts holds the forward pass; its logits become the output layer's
	// deltas (softmax minus one-hot).
	acts *activations
	// deltas[i] (batch x Hidden[i].Out) is ∂loss/∂(pre-activation) of
	// hidden layer i, times the batch size.
	deltas [][]float32
	// colSum (the widest layer's Out) holds the column sums of the deltas
	// of the layer backward is at, its bias gradient: SigmoidDelta adds
	// them up in the pass that makes a hidden layer's deltas, so that they
	// cost no GEMM and no pass of their own (the output layer's few
	// columns are summed apart).
	colSum []float32
	// velW[i], velB[i] are the momentum buffers of layer i (the output
	// layer last).
	velW, velB [][]float32
	// velCarry is the momentum the buffers already carry: each update
	// leaves momentum·vel there for the next backward pass, whose GEMMs
	// then add with beta 1 rather than scaling them first (0: they hold
	// the velocity itself), as rbm.Trainer does.
	velCarry float32
	// dropout is the hidden units' drop probability; rng draws the masks.
	dropout float32
	rng     *blas.RNG
	// inputDropout is the input values' drop probability; inputRNG draws
	// their masks into noise (batch x Inputs).
	inputDropout float32
	inputRNG     *blas.RNG
	noise        []float32
	// maxNorm bounds the norm of each unit's incoming weights (0: off);
	// norms (the widest layer's Out) is its scratch.
	maxNorm float32
	norms   []float32
	// smoothing is the label smoothing of the output layer's target.
	smoothing float64
}

func newTrainer(n *Network, batch int) *trainer {
	t := &trainer{
		net:    n,
		batch:  batch,
		x:      make([]float32, batch*n.Inputs()),
		labels: make([]uint8, batch),
		acts:   newActivations(n, batch),
		deltas: make([][]float32, len(n.Hidden)),
		colSum: make([]float32, n.Out.Out),
		velW:   make([][]float32, len(n.Hidden)+1),
		velB:   make([][]float32, len(n.Hidden)+1),
	}
	for i, l := range n.Hidden {
		t.deltas[i] = make([]float32, batch*l.Out)
		if l.Out > len(t.colSum) {
			t.colSum = make([]float32, l.Out)
		}
	}
	for i := range t.velW {
		l := n.layer(i)
		t.velW[i] = make([]float32, len(l.W))
		t.velB[i] = make([]float32, len(l.B))
	}
	return t
}

// step trains on the rows examples in t.x and t.labels: forward pass, loss,
// back-propagation into the momentum buffers, update. It returns the
// mini-batch's mean loss and correct count (both before the update), and
// ok = false, leaving the weights untouched, if the loss is NaN, infinite
// or above maxLoss, or after an update that made a weight non-finite.
func (t *trainer) step(rows int, lr, momentum, decay float32) (loss float64, correct int, ok bool) {
	if t.inputDropout > 0 {
		t.dropInputs(rows)
	}
	t.net.forwardDrop(t.acts, t.x, rows, t.dropout, t.rng)
	loss, correct = softmaxDeltas(t.acts.logits, rows, t.net.Out.Out, t.labels, t.smoothing)
	if !(loss <= maxLoss) { // NaN fails every comparison
		return loss, correct, false
	}
	t.backward(rows, lr, momentum)
	return loss, correct, t.update(decay, momentum)
}

// dropInputs applies inverted dropout to the rows examples in t.x, in
// place: each value is zeroed with probability t.inputDropout and the kept
// ones are scaled by 1/(1-t.inputDropout). t.x is a gathered copy of the
// training set, so the data is untouched, and backward then computes the
// first layer's gradient from the inputs the forward pass saw.
func (t *trainer) dropInputs(rows int) {
	x := t.x[:rows*t.net.Inputs()]
	if len(t.noise) < len(t.x) {
		t.noise = make([]float32, len(t.x)) // once: then no step allocates
	}
	u := t.noise[:len(x)]
	t.inputRNG.Uniform(u)
	invertedDropout(x, u, t.inputDropout)
}

// softmaxDeltas turns the rows x c logits z into the output deltas
// softmax(z) - target, row by row, where the target is one-hot on the label,
// or with label smoothing eps, 1-eps on the label plus eps/c on every class.
// It returns the mean cross-entropy against that target and the number of
// rows whose largest logit is the label. The softmax subtracts the row's
// largest logit before exponentiating, so no exp overflows, and works in
// float64; a non-finite logit gives a NaN loss.
func softmaxDeltas(z []float32, rows, c int, labels []uint8, eps float64) (loss float64, correct int) {
	share := eps / float64(c)
	for r := 0; r < rows; r++ {
		zr := z[r*c : (r+1)*c]
		y := int(labels[r])
		best := argmax(zr)
		if best == y {
			correct++
		}
		zmax := float64(zr[best])
		var sum float64
		for _, v := range zr {
			sum += math.Exp(float64(v) - zmax)
		}
		logSum := math.Log(sum)
		// -log p_j = logSum - (z_j - zmax); the target weighs them.
		loss += (1 - eps) * (logSum - (float64(zr[y]) - zmax))
		inv := 1 / sum
		for j, v := range zr {
			if eps > 0 {
				loss += share * (logSum - (float64(v) - zmax))
			}
			zr[j] = float32(math.Exp(float64(v)-zmax)*inv - share)
		}
		zr[y] -= float32(1 - eps)
	}
	return loss / float64(rows), correct
}

// backward back-propagates the output deltas left in t.acts.logits and sets
// every momentum buffer to vel = momentum·vel - lr·∂loss/∂param, where the
// loss is the mini-batch mean. The GEMMs fold the momentum in through beta
// (1 while the buffers carry it already, velCarry) and the 1/rows and -lr
// through alpha; the bias gradients, the deltas' column sums, take the same
// alpha and beta. Each layer's deltas are passed down before any weight
// changes.
func (t *trainer) backward(rows int, lr, momentum float32) {
	n := t.net
	alpha := -lr / float32(rows)
	beta := blas.MomentumBeta(momentum, t.velCarry)
	delta := t.acts.logits[:rows*n.Out.Out]
	columnSums(t.colSum[:n.Out.Out], delta, rows, n.Out.Out)
	for i := len(n.Hidden); i >= 0; i-- {
		l := n.layer(i)
		in := t.x
		if i > 0 {
			in = t.acts.hidden[i-1]
		}
		// vel_W = m·vel_W - lr/rows · inᵀ δ; vel_b = m·vel_b - lr/rows · 1ᵀ δ.
		blas.Gemm(true, false, l.In, l.Out, rows, alpha, in, l.In, delta, l.Out, beta, t.velW[i], l.Out)
		biasVelocity(t.velB[i], t.colSum[:l.Out], alpha, beta)
		if i == 0 {
			break
		}
		delta = t.passDown(i, rows, delta)
	}
}

// passDown returns the deltas of hidden layer i-1, (δ W_iᵀ) ⊙ h(1-h) with δ
// layer i's deltas and h layer i-1's sigmoid output, and leaves their column
// sums in t.colSum.
func (t *trainer) passDown(i, rows int, delta []float32) []float32 {
	l := t.net.layer(i)
	below := t.deltas[i-1][:rows*l.In]
	blas.Gemm(false, true, rows, l.In, l.Out, 1, delta, l.Out, l.W, l.Out, 0, below, l.In)
	h := t.acts.hidden[i-1][:rows*l.In]
	sum := t.colSum[:l.In]
	clear(sum)
	if t.dropout == 0 {
		blas.SigmoidDelta(below, h, rows, l.In, sum)
	} else {
		dropoutDeltas(below, h, rows, l.In, 1-t.dropout, sum)
	}
	return below
}

// dropoutDeltas is SigmoidDelta for a layer trained with dropout: h holds
// the kept units' outputs scaled by 1/keep, and 0 for the dropped ones,
// whose deltas are 0 too.
func dropoutDeltas(delta, h []float32, rows, cols int, keep float32, sum []float32) {
	for r := 0; r < rows; r++ {
		dr, hr := delta[r*cols:(r+1)*cols], h[r*cols:(r+1)*cols]
		for j, d := range dr {
			var v float32
			if hk := hr[j]; hk != 0 {
				hj := hk * keep
				v = d / keep * (hj * (1 - hj))
			}
			dr[j] = v
			sum[j] += v
		}
	}
}

// columnSums sets sum to the column sums of the rows x cols matrix z, row
// by row.
func columnSums(sum, z []float32, rows, cols int) {
	clear(sum)
	for r := 0; r < rows; r++ {
		for j, v := range z[r*cols : (r+1)*cols] {
			sum[j] += v
		}
	}
}

// biasVelocity sets vel = beta·vel + alpha·sum, the bias's share of its
// layer's gradient GEMM; beta 0 ignores what vel held, as GEMM does. The
// conversions keep each product rounded, whatever the compiler fuses.
func biasVelocity(vel, sum []float32, alpha, beta float32) {
	vel = vel[:len(sum)]
	if beta == 0 {
		for j, s := range sum {
			vel[j] = alpha * s
		}
		return
	}
	for j, s := range sum {
		vel[j] = float32(beta*vel[j]) + float32(alpha*s)
	}
}

// update applies the momentum buffers, with weight decay on the weights
// only, leaves momentum·vel in them for the next step (velCarry), and
// reports whether every new value is finite.
func (t *trainer) update(decay, momentum float32) bool {
	carry := blas.MomentumCarry(momentum)
	ok := true
	for i := range t.velW {
		l := t.net.layer(i)
		ok = blas.MomentumStep(l.W, t.velW[i], decay, carry) && ok
		ok = blas.MomentumStep(l.B, t.velB[i], 0, carry) && ok
		if t.maxNorm > 0 {
			clipColumns(l.W, l.In, l.Out, t.maxNorm, t.norms[:l.Out])
		}
	}
	t.velCarry = momentum
	return ok
}

// clipColumns scales every column of the rows x cols row-major w whose L2
// norm exceeds c down to norm c; norms (cols values) is scratch. The sums of
// squares are taken row by row, so w is read in memory order.
func clipColumns(w []float32, rows, cols int, c float32, norms []float32) {
	clear(norms)
	for r := 0; r < rows; r++ {
		for j, v := range w[r*cols : (r+1)*cols] {
			norms[j] += v * v
		}
	}
	clipped := false
	for j, ss := range norms {
		if n := float32(math.Sqrt(float64(ss))); n > c {
			norms[j] = c / n
			clipped = true
		} else {
			norms[j] = 1
		}
	}
	if !clipped {
		return
	}
	for r := 0; r < rows; r++ {
		row := w[r*cols : (r+1)*cols]
		for j := range row {
			row[j] *= norms[j]
		}
	}
}
