package protocol

import (
	"fmt"
	"time"

	"github.com/pipedbn/pipedbn/finetune"
	"github.com/pipedbn/pipedbn/messages"
	"github.com/pipedbn/pipedbn/pipeline"
	"github.com/pipedbn/pipedbn/rbm"
)

// StageConfig turns an assignment into the stage it describes.
func StageConfig(a *messages.Assign) (pipeline.StageConfig, error) {
	units, err := rbm.ParseUnits(a.Units)
	if err != nil {
		return pipeline.StageConfig{}, err
	}
	middle, err := rbm.ParseMiddle(a.Middle)
	if err != nil {
		return pipeline.StageConfig{}, err
	}
	net, err := netConfig(a)
	if err != nil {
		return pipeline.StageConfig{}, err
	}
	return pipeline.StageConfig{
		Index: a.RBM, Visible: a.Visible, Hidden: a.Hidden, Units: units,
		Epochs: a.Epochs, BatchSize: a.BatchSize, K: a.K, CDK: a.CDK, Middle: middle,
		LearningRate: [2]float64{a.LearningRate.Initial, a.LearningRate.Final},
		Momentum:     [2]float64{a.Momentum.Initial, a.Momentum.Final},
		WeightDecay:  a.WeightDecay, Seed: a.Seed, LCopyOnce: a.LCopyOnce, MiddlePrecision: PrecisionOf(a.MiddleEncoding),
		Settle:   pipeline.Settle{From: a.SettleFrom, Windows: a.SettleWindows, Start: a.SettleStart, Train: a.SettleTrain, LearningRate: a.SettleLearningRate},
		Replicas: a.Replicas, Net: net,
	}, nil
}

// netConfig is the network an assignment describes; nil for an RBM.
func netConfig(a *messages.Assign) (*pipeline.NetConfig, error) {
	if len(a.Net) == 0 {
		return nil, nil
	}
	if a.Hidden > 256 {
		return nil, fmt.Errorf("a network of %d classes: labels are bytes, want at most 256", a.Hidden)
	}
	lr := finetune.LRConstant
	if a.RateRule != "" {
		r, err := finetune.ParseLRRule(a.RateRule)
		if err != nil {
			return nil, err
		}
		lr = r
	}
	return &pipeline.NetConfig{
		Sizes: a.Net, Dropout: a.Dropout, InputDropout: a.InputDropout, MaxNorm: a.MaxNorm, LabelSmoothing: a.LabelSmoothing,
		LR: lr, WarmupWindows: a.WarmupWindows, BlockMomentum: a.BlockMomentum, Replica: a.Replica,
	}, nil
}

// assignment is the Assign that gives stage c, one of rbms, to a slave
// between up and down (the replicas below and above it, in order).
func assignment(run Run, c pipeline.StageConfig, rbms, rows, credits, checkpointEvery int, up, down []string) *messages.Assign {
	a := &messages.Assign{
		RunID: run.ID, Incarnation: run.Incarnation, RBM: c.Index, RBMs: rbms, Visible: c.Visible, Hidden: c.Hidden,
		Units: c.Units.String(), Epochs: c.Epochs, BatchSize: c.BatchSize, K: c.K, CDK: c.CDK,
		Middle:       c.Middle.String(),
		LearningRate: messages.Schedule{Initial: c.LearningRate[0], Final: c.LearningRate[1]},
		Momentum:     messages.Schedule{Initial: c.Momentum[0], Final: c.Momentum[1]},
		WeightDecay:  c.WeightDecay, Seed: c.Seed,
		BatchesPerEpoch: pipeline.BatchesPerEpoch(rows, c.BatchSize), RowsPerEpoch: rows,
		Upstream: up, Downstream: down, Credits: credits, CheckpointEvery: checkpointEvery,
		SettleFrom: c.Settle.From, SettleWindows: c.Settle.Windows, SettleStart: c.Settle.Start, SettleTrain: c.Settle.Train, SettleLearningRate: c.Settle.LearningRate,
		LCopyOnce: c.LCopyOnce, MiddleEncoding: EncodingOf(c.MiddlePrecision),
	}
	if n := c.Net; n != nil {
		a.Net, a.Dropout, a.InputDropout, a.MaxNorm, a.LabelSmoothing = n.Sizes, n.Dropout, n.InputDropout, n.MaxNorm, n.LabelSmoothing
		a.RateRule, a.WarmupWindows, a.BlockMomentum = n.LR.String(), n.WarmupWindows, n.BlockMomentum
	}
	return a
}

// pairs maps the local form of a value to its wire form and back; values
// it does not name map to the fallbacks.
type pairs[L, W comparable] struct {
	of    []pair[L, W]
	local L
	wire  W
}

type pair[L, W comparable] struct {
	local L
	wire  W
}

func (p pairs[L, W]) toWire(l L) W {
	for _, x := range p.of {
		if x.local == l {
			return x.wire
		}
	}
	return p.wire
}

func (p pairs[L, W]) toLocal(w W) L {
	for _, x := range p.of {
		if x.wire == w {
			return x.local
		}
	}
	return p.local
}

// encodings pairs each precision a window's values may be exact in with
// the encoding that carries them so; Float32 is the fallback both ways.
var encodings = pairs[pipeline.Precision, messages.Encoding]{
	of: []pair[pipeline.Precision, messages.Encoding]{
		{pipeline.Float16, messages.EncodingFloat16},
		{pipeline.Uint8, messages.EncodingUint8},
		{pipeline.Binary, messages.EncodingBits},
	},
	local: pipeline.Float32, wire: messages.EncodingFloat32,
}

// EncodingOf is the encoding that carries values exact in precision p
// without loss.
func EncodingOf(p pipeline.Precision) messages.Encoding { return encodings.toWire(p) }

// PrecisionOf is the precision of the values encoding e carries.
func PrecisionOf(e messages.Encoding) pipeline.Precision { return encodings.toLocal(e) }

// ShapeOf returns the shape of stage c of a run over rows rows: what
// bounds the messages about it (see messages.Limits).
func ShapeOf(c pipeline.StageConfig, rows int) messages.Shape {
	return assignment(Run{}, c, 0, rows, 0, 0, nil, nil).Shape()
}

// ReassemblyLimits bounds the reassembly of the messages of the given
// kinds that cfg's master receives on one subject: from each sender, what a
// slave of the run's largest RBM may send (messages.Limits); on a shared
// subject, one all the slaves report on, room for every seat's at once.
func ReassemblyLimits(cfg MasterConfig, kinds []messages.Kind, shared bool) messages.ReassemblerConfig {
	shapes := make([]messages.Shape, len(cfg.Stages))
	for i, c := range cfg.Stages {
		shapes[i] = ShapeOf(c, cfg.N)
	}
	lim := messages.Limits(kinds, shapes...)
	if shared {
		seats := max(len(cfg.Stages), 1)
		if cfg.Replicas != nil {
			seats = 0
			for _, r := range cfg.Replicas {
				seats += max(r, 1)
			}
		}
		lim.MaxBytes = lim.MaxSenderBytes * int64(seats)
		lim.MaxMessages = max(16, 2*seats)
	}
	return lim
}

// CheckpointOf turns a stage's snapshot into the message that carries it.
func CheckpointOf(run Run, cfg pipeline.StageConfig, s pipeline.StageState) *messages.Checkpoint {
	visible, hidden := cfg.ParamShape()
	return &messages.Checkpoint{
		RunID: run.ID, Incarnation: run.Incarnation, RBM: cfg.Index, Visible: visible, Hidden: hidden,
		Windows: s.Windows, Epoch: s.Epoch, EpochSSE: s.EpochSSE, EpochElems: s.EpochElems, EpochEnded: s.EpochEnded,
		Batches: s.Stats.Batches, Rows: s.Stats.Rows, ReconErrors: s.Stats.Recon, ReconError: s.Stats.LastRecon,
		BusySeconds: s.Stats.Busy.Seconds(), WaitInputSeconds: s.Stats.WaitInput.Seconds(),
		WaitCreditSeconds: s.Stats.WaitCredit.Seconds(),
		W:                 s.W, A: s.A, B: s.B, VelW: s.Trainer.VelW, VelA: s.Trainer.VelA, VelB: s.Trainer.VelB,
		VelWCarry: float64(s.Trainer.VelWCarry), RNG: s.Trainer.RNG[:], BlockStep: s.BlockStep,
	}
}

// StageStateOf is the inverse of CheckpointOf, for a checkpoint that passed
// Check.
func StageStateOf(c *messages.Checkpoint) pipeline.StageState {
	s := pipeline.StageState{
		Windows: c.Windows, Epoch: c.Epoch, EpochSSE: c.EpochSSE, EpochElems: c.EpochElems, EpochEnded: c.EpochEnded,
		Stats: pipeline.Stats{
			Index: c.RBM, Epoch: c.Epoch, Batches: c.Batches, Rows: c.Rows, Recon: c.ReconErrors, LastRecon: c.ReconError,
			Busy: Seconds(c.BusySeconds), WaitInput: Seconds(c.WaitInputSeconds), WaitCredit: Seconds(c.WaitCreditSeconds),
		},
		W: c.W, A: c.A, B: c.B,
		Trainer:   rbm.TrainerState{VelW: c.VelW, VelA: c.VelA, VelB: c.VelB, VelWCarry: float32(c.VelWCarry)},
		BlockStep: c.BlockStep,
	}
	copy(s.Trainer.RNG[:], c.RNG)
	return s
}

// Seconds converts seconds on the wire to a duration.
func Seconds(s float64) time.Duration { return time.Duration(s * float64(time.Second)) }

// states pairs each stage state with its wire form; Idle is the fallback
// both ways.
var states = pairs[pipeline.State, messages.State]{
	of: []pair[pipeline.State, messages.State]{
		{pipeline.Training, messages.StateTraining},
		{pipeline.WaitingInput, messages.StateWaitingInput},
		{pipeline.WaitingCredit, messages.StateWaitingCredit},
		{pipeline.Done, messages.StateDone},
		{pipeline.Failed, messages.StateFailed},
		{pipeline.WaitingAverage, messages.StateWaitingAverage},
	},
	local: pipeline.Idle, wire: messages.StateIdle,
}

// WireState is the wire form of a stage state.
func WireState(s pipeline.State) messages.State { return states.toWire(s) }

// LocalState is the stage state of a wire state; Idle for any other.
func LocalState(s messages.State) pipeline.State { return states.toLocal(s) }
