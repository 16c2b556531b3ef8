package rbm

import (
	"errors"
	"fmt"
	"math"

	"github.com/pipedbn/pipedbn/blas"
	"github.com/pipedbn/pipedbn/internal/sat"
)

// ErrDiverged reports that a training step produced a NaN or an infinity.
// The step's changes are undone back to the last Commit (see Trainer.Step).
var ErrDiverged = errors.New("rbm: diverged")

// Params are the hyper-parameters of one CD step. The zero value makes a step
// that changes nothing.
type Params struct {
	// LearningRate ε scales the gradient, which is averaged over the rows of
	// the mini-batch. The paper anneals it from 0.015 to 0.002 (see
	// Schedule).
	LearningRate float32
	// Momentum m in [0, 1) keeps that fraction of the previous update
	// (weights and both biases); 0 means plain gradient steps.
	Momentum float32
	// WeightDecay is the L2 penalty on W (not on the biases); 0 means none.
	// Hinton's guide suggests 1e-4 to 1e-5.
	WeightDecay float32
}

// Schedule returns the value of a hyper-parameter at epoch (0-based) of
// epochs, moving linearly from initial at epoch 0 to final at epoch epochs-1,
// as the paper's learning rate goes from 0.015 to 0.002 over 20 epochs.
// Epochs outside [0, epochs-1] get the nearer end value; with epochs <= 1 it
// returns initial.
func Schedule(initial, final float64, epoch, epochs int) float64 {
	if epochs <= 1 || epoch <= 0 {
		return initial
	}
	if epoch >= epochs-1 {
		return final
	}
	return initial + (final-initial)*float64(epoch)/float64(epochs-1)
}

// Trainer trains one RBM by CD-k on mini-batches. It owns the momentum
// buffers, every scratch buffer of a step and its own random generator, so
// Step allocates nothing and a seed fixes every sample it draws. A Trainer is
// not safe for concurrent use, and nothing else may use its RBM during Step.
type Trainer struct {
	r     *RBM
	batch int
	k     int
	rng   blas.RNG

	// Per-step scratch, batch rows each.
	h0 []float32 // p(h|v0), the positive statistics
	hs []float32 // sampled hidden states driving the Gibbs chain
	vk []float32 // reconstruction v_k = E[v|h_{k-1}]
	hk []float32 // p(h|v_k), the negative statistics

	sumH0 []float32 // Σ_rows h0
	sumHk []float32 // Σ_rows hk
	diffA []float32 // Σ_rows (v0 - vk)

	velW, velA, velB []float32
	// velCarry is the momentum velW already carries: each step leaves m·vel
	// there for the next, whose gradient GEMM then adds to it with beta 1
	// rather than scaling it first, a pass over Visible x Hidden values (0:
	// velW holds the velocity itself, as after a step of momentum 0).
	velCarry float32

	// The last committed W, A and B, restored on divergence.
	goodW, goodA, goodB []float32

	// cd is the step's arithmetic, kept here so that Step allocates nothing.
	cd blas.CDStep
}

// NewTrainer returns a Trainer for r with room for batches of up to
// batchSize rows, running cdK Gibbs steps per update (CD-k; the paper uses
// k=1) and drawing samples from a generator seeded with seed. r's current
// state counts as committed. It panics unless batchSize and cdK are positive.
func NewTrainer(r *RBM, batchSize, cdK int, seed uint64) *Trainer {
	r.check("NewTrainer")
	if batchSize < 1 || cdK < 1 {
		panic(fmt.Sprintf("rbm: NewTrainer: batch size %d, k %d; want both positive", batchSize, cdK))
	}
	V, H := r.Visible, r.Hidden
	t := &Trainer{
		r:     r,
		batch: batchSize,
		k:     cdK,
		h0:    make([]float32, batchSize*H),
		hs:    make([]float32, batchSize*H),
		vk:    make([]float32, batchSize*V),
		hk:    make([]float32, batchSize*H),
		sumH0: make([]float32, H),
		sumHk: make([]float32, H),
		diffA: make([]float32, V),
		velW:  make([]float32, V*H),
		velA:  make([]float32, V),
		velB:  make([]float32, H),
		goodW: make([]float32, V*H),
		goodA: make([]float32, V),
		goodB: make([]float32, H),
	}
	t.rng.Seed(seed)
	t.Commit()
	return t
}

// TrainerValues returns the float32 values NewTrainer allocates for a
// visible x hidden RBM with room for batches of batch rows, besides the RBM
// itself: kept, the momentum and the last good copy of W, A and B
// (2·(V·H + V + H)), and scratch, the buffers of a CD-k step
// (batch·(V + 3H) + V + 2H). Memory estimates count a trainer by it; both
// saturate at math.MaxInt64, so that an absurd shape never counts small.
func TrainerValues(visible, hidden, batch int) (kept, scratch int64) {
	V, H, B := int64(max(visible, 0)), int64(max(hidden, 0)), int64(max(batch, 0))
	kept = sat.Mul(2, sat.Add(sat.Mul(V, H), sat.Add(V, H)))
	scratch = sat.Add(sat.Mul(B, sat.Add(V, sat.Mul(3, H))), sat.Add(V, sat.Mul(2, H)))
	return kept, scratch
}

// RBM returns the RBM t trains.
func (t *Trainer) RBM() *RBM { return t.r }

// Commit records the RBM's current W, A and B as the last good state, the
// one a diverging Step restores. Callers commit at the end of each epoch.
func (t *Trainer) Commit() {
	t.r.check("Commit")
	copy(t.goodW, t.r.W)
	copy(t.goodA, t.r.A)
	copy(t.goodB, t.r.B)
}

// Step does one CD-k update of the RBM on the mini-batch v0 (rows x Visible,
// 1 <= rows <= the trainer's batch size; the last batch of an epoch may be
// short):
//
//	h0 = p(h|v0) = sigmoid(v0 W + B), hs ~ h0
//	repeat k times: vk = E[v|hs], hk = p(h|vk) = sigmoid(vk W + B), hs ~ hk
//	grad = (v0ᵀh0 - vkᵀhk)/rows, and for A and B the matching column means
//	vel = m vel + ε (grad - wd W); W += vel (biases alike, without decay)
//
// where E[v|h] = sigmoid(h Wᵀ + A) for Bernoulli units and h Wᵀ + A for
// Gaussian ones; the reconstruction is not sampled and the last hk is left as
// probabilities, as in Hinton's practical guide. Step reads r.A afresh, so an
// L_{i-1}-copy's visible biases overwritten between steps take effect at once.
//
// If middle is not nil, it receives the middle result (rows x Hidden): h0, or
// the sampled states hs of the positive phase when kind is Samples.
//
// Step returns the sum over rows x Visible elements of (v0 - v1)², the
// squared error of the first reconstruction; callers average it. If a NaN or
// an infinity appears in the error, W, A or B, it restores W, A and B to the
// last Commit, zeroes the momentum and returns an error wrapping ErrDiverged.
// Step allocates nothing, and two Trainers built with the same arguments give
// bit-identical results for the same inputs in the same build (and with the
// same number of BLAS threads).
func (t *Trainer) Step(v0 []float32, rows int, p Params, middle []float32, kind Middle) (sse float64, err error) {
	r := t.r
	r.check("Step")
	V, H := r.Visible, r.Hidden
	if rows < 1 || rows > t.batch {
		panic(fmt.Sprintf("rbm: Step: %d rows; want 1 to %d", rows, t.batch))
	}
	checkMat("Step", "v0", v0, rows, V)
	if middle != nil {
		checkMat("Step", "middle", middle, rows, H)
		if kind != Probabilities && kind != Samples {
			panic(fmt.Sprintf("rbm: Step: invalid %v", kind))
		}
	}
	// The step's GEMMs and kernels in one call out of Go (blas.CDStep).
	// The gradient goes straight into the momentum buffer through GEMM's
	// alpha and beta, and one fused pass applies decay and velocity to W
	// while checking that it stayed finite, and leaves m·vel in the
	// buffer: while the momentum holds, beta is 1 and GEMM makes no pass
	// of its own over the buffer (velCarry).
	lr, m := p.LearningRate, p.Momentum
	scale := lr / float32(rows)
	t.cd = blas.CDStep{
		Rows: rows, Visible: V, Hidden: H, K: t.k, Logistic: r.Units == Bernoulli,
		V0: v0, W: r.W, A: r.A, B: r.B,
		H0: t.h0, HS: t.hs, VK: t.vk, HK: t.hk, SumH0: t.sumH0, SumHk: t.sumHk, DiffA: t.diffA,
		VelW: t.velW, Scale: scale, Beta: blas.MomentumBeta(m, t.velCarry), Decay: lr * p.WeightDecay, Carry: blas.MomentumCarry(m),
		Middle: middle, MiddleSamples: kind == Samples, RNG: &t.rng,
	}
	sse, finite := t.cd.Run()
	t.cd = blas.CDStep{} // keeps none of the caller's buffers alive between steps
	t.velCarry = m
	finite = updateBias(r.A, t.velA, t.diffA, nil, m, scale) && finite
	finite = updateBias(r.B, t.velB, t.sumH0, t.sumHk, m, scale) && finite
	if !finite || math.IsNaN(sse) || math.IsInf(sse, 0) {
		t.restore()
		return sse, fmt.Errorf("rbm: CD-%d step on %d rows (learning rate %g): %w", t.k, rows, lr, ErrDiverged)
	}
	return sse, nil
}

// SampleHidden puts into dst (rows x Hidden) states of the hidden layer
// sampled from p(h|v) with the trainer's generator, and learns nothing: the
// positive phase of Step, which draws from the generator as Step's does
// (with CD-1, every draw of a Step), so that it gives what Step's Samples
// middle result would. One GEMM, where a Step of rate 0 takes five.
func (t *Trainer) SampleHidden(dst, v []float32, rows int) {
	r := t.r
	r.check("SampleHidden")
	if rows < 1 || rows > t.batch {
		panic(fmt.Sprintf("rbm: SampleHidden: %d rows; want 1 to %d", rows, t.batch))
	}
	checkMat("SampleHidden", "v", v, rows, r.Visible)
	checkMat("SampleHidden", "dst", dst, rows, r.Hidden)
	V, H := r.Visible, r.Hidden
	h := t.h0[:rows*H]
	blas.Gemm(false, false, rows, H, V, 1, v[:rows*V], V, r.W, H, 0, h, H)
	blas.SigmoidBiasSample(h, dst[:rows*H], rows, H, r.B, nil, &t.rng)
}

// updateBias does bias[i] += vel[i] = m vel[i] + scale (pos[i] - neg[i])
// (neg may be nil) and reports whether every new bias is finite.
func updateBias(bias, vel, pos, neg []float32, m, scale float32) bool {
	vel = vel[:len(bias)]
	pos = pos[:len(bias)]
	ok := true
	for i := range bias {
		g := pos[i]
		if neg != nil {
			g -= neg[i]
		}
		v := m*vel[i] + scale*g
		vel[i] = v
		b := bias[i] + v
		bias[i] = b
		if math.IsNaN(float64(b)) || math.IsInf(float64(b), 0) {
			ok = false
		}
	}
	return ok
}

// restore puts back the committed state and forgets the momentum, which
// holds the non-finite values.
func (t *Trainer) restore() {
	copy(t.r.W, t.goodW)
	copy(t.r.A, t.goodA)
	copy(t.r.B, t.goodB)
	clear(t.velW)
	clear(t.velA)
	clear(t.velB)
	t.velCarry = 0
}

// TrainerState is what a checkpoint keeps of a Trainer besides its RBM: the
// momentum buffers and the random generator's position. With the RBM's W, A
// and B it resumes training exactly where it stood.
type TrainerState struct {
	// VelW (Visible x Hidden), VelA (Visible) and VelB (Hidden) are the
	// momentum buffers.
	VelW, VelA, VelB []float32
	// VelWCarry is the momentum VelW already carries: the last step left
	// momentum x velocity there for the next (0: VelW is the velocity).
	VelWCarry float32
	// RNG is the sampling generator's state.
	RNG [blas.RNGStateLen]uint32
}

// State returns a copy of t's momentum buffers and generator state.
func (t *Trainer) State() TrainerState {
	return TrainerState{
		VelW:      append([]float32(nil), t.velW...),
		VelA:      append([]float32(nil), t.velA...),
		VelB:      append([]float32(nil), t.velB...),
		VelWCarry: t.velCarry,
		RNG:       t.rng.State(),
	}
}

// Restore puts back a state returned by State, after the RBM's W, A and B
// were restored, and commits the RBM as it now stands. It fails, changing
// nothing, when the buffers do not fit the RBM or the generator state is
// one no seed produces.
func (t *Trainer) Restore(s TrainerState) error {
	V, H := t.r.Visible, t.r.Hidden
	if len(s.VelW) != V*H || len(s.VelA) != V || len(s.VelB) != H {
		return fmt.Errorf("rbm: restore: momentum of %d, %d, %d values for a %dx%d RBM", len(s.VelW), len(s.VelA), len(s.VelB), V, H)
	}
	if c := float64(s.VelWCarry); math.IsNaN(c) || math.IsInf(c, 0) {
		return fmt.Errorf("rbm: restore: momentum buffers that carry a momentum of %g", c)
	}
	var g blas.RNG
	if !g.SetState(s.RNG) {
		return fmt.Errorf("rbm: restore: a generator state with an all-zero stream")
	}
	copy(t.velW, s.VelW)
	copy(t.velA, s.VelA)
	copy(t.velB, s.VelB)
	t.velCarry = s.VelWCarry
	t.rng = g
	t.Commit()
	return nil
}
