package pipeline

import "fmt"

// State is what a stage is doing, as shown to users (Lens's client states).
type State int

// The states of a stage.
const (
	Idle           State = iota // not started
	Training                    // running CD-k on a window
	WaitingInput                // waiting for the next window from below
	WaitingCredit               // waiting for the stage above to free a buffer
	Done                        // finished all epochs
	Failed                      // stopped by an error
	Lost                        // its slave was lost; a replacement is coming
	WaitingAverage              // a stage replica waiting for the replicas' average
)

var stateNames = [...]string{"idle", "training", "waiting for input", "waiting for credit", "done", "failed", "lost: waiting for a replacement", "waiting for the replicas' average"}

func (s State) String() string {
	if s < 0 || int(s) >= len(stateNames) {
		return fmt.Sprintf("State(%d)", int(s))
	}
	return stateNames[s]
}

// Pipelined computes what the pipelined schedule trains, in this
// goroutine: the data, shuffled every epoch by a source seeded with seed,
// passes window by window through RBM_1..RBM_L, each stage training on the
// middle results and B_i of the one below, then the settle phase
// (StageConfig.Settle). Every stage sees the same
// windows in the same order as when the stages train at once on their own
// slaves, whatever the timing, so the weights are the same to the bit: the
// reference the transports (pipeline/memnet, pipeline/natsnet) are tested
// against.
func Pipelined(x []float32, n int, cfgs []StageConfig, seed uint64) ([]*Stage, error) {
	stages := make([]*Stage, len(cfgs))
	for i, c := range cfgs {
		stages[i] = NewStage(c)
	}
	c := cfgs[0]
	src := NewSource(x, n, c.Visible, c.BatchSize, c.K, seed)
	for w, ok := src.NextOf(c); ok; w, ok = src.NextOf(c) {
		in := w
		for i, st := range stages {
			var out *Window
			if i+1 < len(stages) {
				out = &Window{X: make([]float32, in.TotalRows()*st.cfg.Hidden)}
			}
			if err := st.Train(in, out); err != nil {
				return stages, err
			}
			in = out
		}
	}
	for _, st := range stages {
		st.EndEpoch()
		st.stats.State = Done
	}
	return stages, nil
}
