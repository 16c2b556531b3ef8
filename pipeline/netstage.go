package pipeline

import (
	"errors"
	"fmt"
	"time"

	"github.com/pipedbn/pipedbn/finetune"
	"github.com/pipedbn/pipedbn/rbm"
)

// NetConfig describes the network of data-parallel fine-tuning as a stage
// (StageConfig.Net): the DBN unrolled into a classifier, trained with SGD
// on the master's windows of labelled mini-batches by StageConfig.Replicas
// replicas, each on its own windows (local SGD), averaging their
// parameters through the master. The stage's Epochs, BatchSize, K,
// LearningRate (first and last epoch's), Momentum[0], WeightDecay and Seed
// are finetune.Config's.
type NetConfig struct {
	// Sizes are the layers' widths: the inputs, the hidden layers, the
	// classes.
	Sizes []int
	// Init is the flat parameter vector to start from (the pre-trained
	// weights, finetune.Network.Params's layout); nil draws one from Seed.
	Init []float32
	// Dropout, InputDropout, MaxNorm and LabelSmoothing are
	// finetune.Config's.
	Dropout, InputDropout, MaxNorm, LabelSmoothing float64
	// LR is the rule that scales the rate with the replicas, over the
	// first WarmupWindows windows of each replica (finetune.Parallel).
	LR            finetune.LRRule
	WarmupWindows int
	// BlockMomentum is finetune.Parallel's: the momentum of each replica's
	// steps from one average to the next (0: it takes each as it is).
	BlockMomentum float64
	// Replica is the stage's place among the replicas, from 0.
	Replica int
}

// NumParams is the length of the network's flat parameter vector.
func (c *NetConfig) NumParams() int {
	n := 0
	for i := 1; i < len(c.Sizes); i++ {
		n += (c.Sizes[i-1] + 1) * c.Sizes[i]
	}
	return n
}

// NetStage trains the network of data-parallel fine-tuning on windows of
// labelled mini-batches, a step per mini-batch: one replica's part. Its
// statistics' Recon holds each epoch's mean loss (cross-entropy), LastRecon
// the last window's. It is not safe for concurrent use.
type NetStage struct {
	cfg    StageConfig
	net    *finetune.Network
	worker *finetune.Worker
	ft     finetune.Config
	par    finetune.Parallel

	epoch      int
	windows    int
	lossSum    float64 // over the epoch's rows so far
	lossRows   int
	stats      Stats
	epochEnded bool
	params     []float32 // Params's vector, refreshed by Params
	// With block momentum (NetConfig.BlockMomentum and replicas), origin
	// is the network at the last average, step the block step that led
	// there, and next room for the next.
	origin, step, next []float32
}

// NewNetStage returns the network stage cfg describes, at cfg.Net.Init.
func NewNetStage(cfg StageConfig) *NetStage {
	n := cfg.Net
	sizes := n.Sizes
	net := finetune.Random(sizes[:len(sizes)-1], sizes[len(sizes)-1], cfg.Seed)
	if n.Init != nil {
		net.SetParams(n.Init)
	}
	ft := finetune.Config{
		Epochs: cfg.Epochs, BatchSize: cfg.BatchSize, LearningRate: cfg.LearningRate[0], LearningRateFinal: cfg.LearningRate[1],
		Momentum: cfg.Momentum[0], WeightDecay: cfg.WeightDecay, Seed: cfg.Seed,
		Dropout: n.Dropout, InputDropout: n.InputDropout, MaxNorm: n.MaxNorm, LabelSmoothing: n.LabelSmoothing,
	}
	s := &NetStage{
		cfg: cfg, net: net, ft: ft, par: finetune.Parallel{Workers: max(cfg.Replicas, 1), LR: n.LR, BlockMomentum: n.BlockMomentum},
		worker: finetune.NewWorker(net, ft, n.Replica, cfg.BatchSize),
		stats:  Stats{Index: cfg.Index},
	}
	if s.blocks() {
		s.origin, s.step, s.next = net.Params(nil), make([]float32, n.NumParams()), make([]float32, n.NumParams())
	}
	return s
}

// blocks reports whether the stage takes the replicas' averages with block
// momentum.
func (s *NetStage) blocks() bool { return s.par.BlockMomentum != 0 && s.par.Workers > 1 }

// Config returns the stage's configuration.
func (s *NetStage) Config() StageConfig { return s.cfg }

// Train takes a step per mini-batch of the window in, at epoch in.Epoch's
// learning rate (scaled by the LR rule). Dropout's masks are drawn from
// generators seeded by the window's Seq, so that a replica that restarts
// from a checkpoint trains its windows again the same. out must be nil:
// the network emits no middle result.
func (s *NetStage) Train(in *Window, out *Window) error {
	if out != nil {
		return errors.New("fine-tuning: the network emits no middle result")
	}
	inputs := s.cfg.Visible
	rows := in.TotalRows()
	switch {
	case in.Epoch < s.epoch || in.Epoch >= s.cfg.Epochs:
		return fmt.Errorf("fine-tuning: window %d is for epoch %d, the network is at epoch %d of %d", in.Seq, in.Epoch, s.epoch, s.cfg.Epochs)
	case len(in.X) != rows*inputs:
		return fmt.Errorf("fine-tuning: window %d holds %d values, want %d rows x %d", in.Seq, len(in.X), rows, inputs)
	case len(in.Labels) != rows:
		return fmt.Errorf("fine-tuning: window %d carries %d labels for %d rows", in.Seq, len(in.Labels), rows)
	}
	if in.Epoch > s.epoch {
		s.EndEpoch()
		s.epoch = in.Epoch
	}
	s.epochEnded = false
	start := time.Now()
	lr := s.ft.Rate(in.Epoch+1) * s.par.RateScale(s.windows, s.cfg.Net.WarmupWindows)
	s.worker.Reseed(s.cfg.Seed ^ uint64(in.Seq+1)*0x9e3779b97f4a7c15)
	var loss float64
	lo := 0
	for b, r := range in.Rows {
		l, _, ok := s.worker.Step(in.X[lo*inputs:(lo+r)*inputs], in.Labels[lo:lo+r], r, lr)
		if !ok {
			return fmt.Errorf("fine-tuning: epoch %d, window %d, batch %d: the loss diverged (%g)", in.Epoch+1, in.Seq, b, l)
		}
		loss += l * float64(r)
		s.stats.Batches++
		lo += r
	}
	s.lossSum += loss
	s.lossRows += rows
	s.stats.Rows += rows
	s.stats.LastRecon = loss / float64(max(rows, 1))
	s.stats.Epoch = in.Epoch
	s.windows++
	s.stats.Busy += time.Since(start)
	return nil
}

// EndEpoch closes the current epoch: it records its mean loss. Calling it
// again before more training is a no-op.
func (s *NetStage) EndEpoch() {
	if s.epochEnded || s.lossRows == 0 {
		return
	}
	s.stats.Recon = append(s.stats.Recon, s.lossSum/float64(s.lossRows))
	s.lossSum, s.lossRows = 0, 0
	s.epochEnded = true
}

// Waited adds time spent waiting to the statistics and sets the state.
func (s *NetStage) Waited(input, credit time.Duration, now State) {
	s.stats.WaitInput += input
	s.stats.WaitCredit += credit
	s.stats.State = now
}

// Windows returns the number of windows trained so far.
func (s *NetStage) Windows() int { return s.windows }

// Stats returns a copy of the stage's statistics.
func (s *NetStage) Stats() Stats {
	st := s.stats
	st.Recon = append([]float64(nil), s.stats.Recon...)
	return st
}

// Params returns the network's flat parameter vector as W: a copy the
// stage keeps (the network holds its parameters per layer), valid until
// the next call.
func (s *NetStage) Params() (w, a, b []float32) {
	s.params = s.net.Params(s.params)
	return s.params, nil, nil
}

// SetParams takes the replicas' average w, a flat parameter vector: the
// network becomes w, or with block momentum the block step toward it
// (finetune.BlockStep), which leaves the replicas alike, as all take the
// same steps from the same average. a and b must be empty.
func (s *NetStage) SetParams(w, a, b []float32) {
	if len(a) != 0 || len(b) != 0 {
		panic("pipeline: a network's parameters are one flat vector")
	}
	if s.blocks() {
		copy(s.next, w)
		finetune.BlockStep(s.next, s.origin, s.step, float32(s.par.BlockMomentum))
		w = s.next
	}
	s.net.SetParams(w)
}

// Network returns the network the stage trains.
func (s *NetStage) Network() *finetune.Network { return s.net }

// Snapshot returns a copy of the stage's state: its flat parameters as W,
// its momentum buffers as the trainer's VelW, and with block momentum the
// last block step. A replica's snapshot that a restart uses is taken at
// an average, where the network is the block's origin (RestoreNetStage).
func (s *NetStage) Snapshot() StageState {
	ws := s.worker.State()
	return StageState{
		Windows: s.windows, Epoch: s.epoch, EpochSSE: s.lossSum, EpochElems: float64(s.lossRows),
		EpochEnded: s.epochEnded, Stats: s.Stats(), W: s.net.Params(nil),
		Trainer:   rbm.TrainerState{VelW: ws.Velocity, VelWCarry: ws.VelCarry},
		BlockStep: append([]float32(nil), s.step...),
	}
}

// RestoreNetStage returns the network stage cfg describes in the state st
// a Snapshot of it took.
func RestoreNetStage(cfg StageConfig, st StageState) (*NetStage, error) {
	p := cfg.Net.NumParams()
	if len(st.W) != p || len(st.Trainer.VelW) != p || len(st.A) != 0 || len(st.B) != 0 {
		return nil, fmt.Errorf("fine-tuning: checkpoint holds %d parameters and %d velocities (and %d, %d biases) for a network of %d", len(st.W), len(st.Trainer.VelW), len(st.A), len(st.B), p)
	}
	s := NewNetStage(cfg)
	if want := len(s.step); len(st.BlockStep) != want {
		return nil, fmt.Errorf("fine-tuning: checkpoint holds a block step of %d values; block momentum %g on %d replicas wants %d", len(st.BlockStep), cfg.Net.BlockMomentum, cfg.Replicas, want)
	}
	if st.Windows < 0 || st.Epoch < 0 || st.Epoch >= max(cfg.Epochs, 1) || st.EpochElems < 0 {
		return nil, fmt.Errorf("fine-tuning: checkpoint at window %d, epoch %d of %d: out of range", st.Windows, st.Epoch, cfg.Epochs)
	}
	s.net.SetParams(st.W)
	if s.blocks() {
		copy(s.origin, st.W)
		copy(s.step, st.BlockStep)
	}
	ws := s.worker.State() // the generators: Train reseeds them every window
	ws.Velocity, ws.VelCarry = st.Trainer.VelW, st.Trainer.VelWCarry
	if err := s.worker.Restore(ws); err != nil {
		return nil, fmt.Errorf("fine-tuning: %w", err)
	}
	s.windows, s.epoch, s.epochEnded = st.Windows, st.Epoch, st.EpochEnded
	s.lossSum, s.lossRows = st.EpochSSE, int(st.EpochElems)
	s.stats = st.Stats
	s.stats.Index = cfg.Index
	s.stats.Recon = append([]float64(nil), st.Stats.Recon...)
	return s, nil
}
