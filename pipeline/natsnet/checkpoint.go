package natsnet

import (
	"time"

	"github.com/pipedbn/pipedbn/messages"
	"github.com/pipedbn/pipedbn/pipeline"
	"github.com/pipedbn/pipedbn/rbm"
)

// checkpointOf turns a stage's snapshot into the message that carries it.
func checkpointOf(runID string, cfg pipeline.StageConfig, s pipeline.StageState) *messages.Checkpoint {
	return &messages.Checkpoint{
		RunID: runID, RBM: cfg.Index, Visible: cfg.Visible, Hidden: cfg.Hidden,
		Windows: s.Windows, Epoch: s.Epoch, EpochSSE: s.EpochSSE, EpochElems: s.EpochElems, EpochEnded: s.EpochEnded,
		Batches: s.Stats.Batches, Rows: s.Stats.Rows, ReconErrors: s.Stats.Recon, ReconError: s.Stats.LastRecon,
		BusySeconds: s.Stats.Busy.Seconds(), WaitInputSeconds: s.Stats.WaitInput.Seconds(),
		WaitCreditSeconds: s.Stats.WaitCredit.Seconds(),
		W:                 s.W, A: s.A, B: s.B, VelW: s.Trainer.VelW, VelA: s.Trainer.VelA, VelB: s.Trainer.VelB,
		RNG: s.Trainer.RNG[:],
	}
}

// stageStateOf is the inverse of checkpointOf, for a checkpoint that passed
// Check.
func stageStateOf(c *messages.Checkpoint) pipeline.StageState {
	s := pipeline.StageState{
		Windows: c.Windows, Epoch: c.Epoch, EpochSSE: c.EpochSSE, EpochElems: c.EpochElems, EpochEnded: c.EpochEnded,
		Stats: pipeline.Stats{
			Index: c.RBM, Epoch: c.Epoch, Batches: c.Batches, Rows: c.Rows, Recon: c.ReconErrors, LastRecon: c.ReconError,
			Busy: seconds(c.BusySeconds), WaitInput: seconds(c.WaitInputSeconds), WaitCredit: seconds(c.WaitCreditSeconds),
		},
		W: c.W, A: c.A, B: c.B,
		Trainer: rbm.TrainerState{VelW: c.VelW, VelA: c.VelA, VelB: c.VelB},
	}
	copy(s.Trainer.RNG[:], c.RNG)
	return s
}

func seconds(s float64) time.Duration { return time.Duration(s * float64(time.Second)) }
