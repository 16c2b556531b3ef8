package finetune

import (
	"errors"
	"fmt"
	"math"

	"github.com/pipedbn/pipedbn/blas"
)

// Worker trains a network one mini-batch at a time with cfg's SGD
// (momentum, weight decay, dropout, input dropout, max-norm, label
// smoothing): the step Train takes, for a caller that deals the
// mini-batches itself, such as a worker of data-parallel fine-tuning. It
// sets no BLAS thread count (cfg.Threads is the caller's) and is not safe
// for concurrent use.
type Worker struct {
	t        *trainer
	momentum float64
	decay    float64
	// x is the mini-batch buffer that input dropout modifies in place; nil
	// without input dropout, when Step reads the caller's rows directly.
	x []float32
}

// NewWorker returns a worker that trains net in place with cfg for
// mini-batches of at most batch rows. replica selects the dropout streams:
// replica 0 draws Train's, so that a Worker fed Train's mini-batches in
// Train's order at cfg.Rate of each epoch reproduces Train bit for bit
// (without validation, best-epoch keeping or averaging), and replica k > 0
// those of TrainParallel's replica k. It panics if cfg is invalid, batch <
// 1 or replica < 0.
func NewWorker(net *Network, cfg Config, replica, batch int) *Worker {
	net.check()
	if err := cfg.Validate(); err != nil {
		panic(err)
	}
	if batch < 1 || replica < 0 {
		panic(fmt.Sprintf("finetune: NewWorker of replica %d for mini-batches of %d; want replica >= 0 and batch >= 1", replica, batch))
	}
	w := &Worker{t: newTrainerFor(net, cfg, batch, replica), momentum: cfg.Momentum, decay: cfg.WeightDecay}
	if w.t.inputDropout > 0 {
		// dropInputs sizes its draws by the rows it is given; size them
		// for the largest mini-batch now, so that no later Step allocates.
		w.x, w.t.noise = w.t.x, make([]float32, len(w.t.x))
	}
	// Step points the trainer at the mini-batch it is given.
	w.t.x, w.t.labels = nil, nil
	return w
}

// Network returns the network the worker trains.
func (w *Worker) Network() *Network { return w.t.net }

// Step trains on rows examples: x (rows x Inputs, row-major) and labels
// (rows), at learning rate lr, with cfg's momentum and weight decay. It
// returns the mini-batch's mean loss and correct count, both before the
// update, and ok = false, leaving the weights untouched, if the loss is
// NaN, infinite or above 1000 nats per example; ok is false too after an
// update that made a weight non-finite (a *DivergenceError's two cases).
// Neither x nor labels is changed or kept. It allocates nothing after its
// first call. It panics if rows is not in [1, batch], x or labels is too
// short, or a label is not a class of the network.
func (w *Worker) Step(x []float32, labels []uint8, rows int, lr float64) (loss float64, correct int, ok bool) {
	t := w.t
	n := rows * t.net.Inputs()
	if rows < 1 || rows > t.batch || len(x) < n || len(labels) < rows {
		panic(fmt.Sprintf("finetune: Step of %d rows (at most %d) with %d values and %d labels", rows, t.batch, len(x), len(labels)))
	}
	c := t.net.Classes()
	for r, l := range labels[:rows] {
		if int(l) >= c {
			panic(fmt.Sprintf("finetune: Step: example %d has label %d; the network has %d classes", r, l, c))
		}
	}
	t.x = x[:n]
	if w.x != nil {
		// Input dropout zeroes values in place: drop them from a copy.
		t.x = w.x[:n]
		copy(t.x, x)
	}
	t.labels = labels[:rows]
	loss, correct, ok = t.step(rows, float32(lr), float32(w.momentum), float32(lr*w.decay))
	t.x, t.labels = nil, nil
	return loss, correct, ok
}

// WorkerState is what resumes a Worker's training exactly besides its
// network's parameters (Network.Params).
type WorkerState struct {
	// Velocity holds the momentum buffers in Network.Params's layout: every
	// layer's weight velocity then its bias velocity, input side first, the
	// output layer last.
	Velocity []float32
	// VelCarry is the momentum Velocity already carries: the last step left
	// momentum x velocity there for the next (0: it is the velocity).
	VelCarry float32
	// RNG and InputRNG are the states of the dropout and input dropout
	// generators; zero for one the config does not use.
	RNG, InputRNG [blas.RNGStateLen]uint32
}

// State returns a copy of w's momentum buffers and generator states.
func (w *Worker) State() WorkerState {
	t := w.t
	s := WorkerState{Velocity: make([]float32, 0, t.net.numParams()), VelCarry: t.velCarry}
	for i := range t.velW {
		s.Velocity = append(s.Velocity, t.velW[i]...)
		s.Velocity = append(s.Velocity, t.velB[i]...)
	}
	if t.rng != nil {
		s.RNG = t.rng.State()
	}
	if t.inputRNG != nil {
		s.InputRNG = t.inputRNG.State()
	}
	return s
}

// Restore puts back a state returned by State, after the network's
// parameters were restored (Network.SetParams). The generator state of a
// dropout the worker's config turns off is ignored. It fails, changing
// nothing, when the velocity does not fit the network, the carry is not
// finite, or a generator state is one no seed produces.
func (w *Worker) Restore(s WorkerState) error {
	t := w.t
	if p := t.net.numParams(); len(s.Velocity) != p {
		return fmt.Errorf("finetune: restore: a velocity of %d values for a network of %d parameters", len(s.Velocity), p)
	}
	if c := float64(s.VelCarry); math.IsNaN(c) || math.IsInf(c, 0) {
		return fmt.Errorf("finetune: restore: a velocity that carries a momentum of %g", c)
	}
	var g, gIn blas.RNG
	if t.rng != nil && !g.SetState(s.RNG) {
		return errors.New("finetune: restore: a dropout generator state with an all-zero stream")
	}
	if t.inputRNG != nil && !gIn.SetState(s.InputRNG) {
		return errors.New("finetune: restore: an input dropout generator state with an all-zero stream")
	}
	v := s.Velocity
	for i := range t.velW {
		v = v[copy(t.velW[i], v):]
		v = v[copy(t.velB[i], v):]
	}
	t.velCarry = s.VelCarry
	if t.rng != nil {
		*t.rng = g
	}
	if t.inputRNG != nil {
		*t.inputRNG = gIn
	}
	return nil
}

// Reseed seeds the worker's dropout generators afresh from seed, as
// NewWorker seeds them from a config's Seed: a caller that draws each
// mini-batch's masks from the batch's own seed trains it the same however
// often it is trained again.
func (w *Worker) Reseed(seed uint64) {
	if w.t.rng != nil {
		w.t.rng.Seed(seed ^ streamDropout)
	}
	if w.t.inputRNG != nil {
		w.t.inputRNG.Seed(seed ^ streamInputDropout)
	}
}
