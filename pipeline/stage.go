// Package pipeline trains the RBMs of a DBN: the per-RBM Stage is a pure
// core, apart from any transport, and greedy layer-wise pre-training (the
// paper's Algorithm 1) and pipelined pre-training (Algorithm 2) are two
// schedules of it.
//
// In the paper's language: Stage i trains RBM_i, formed by L_{i-1} (for i > 1
// the L_{i-1}-copy) and L_i. It takes windows of K mini-batches, and for each
// window emits its middle result (the hidden activations CD-1 computed for
// those mini-batches) together with its hidden biases B_i, which the next
// stage uses as the visible biases of its L_i-copy.
package pipeline

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"time"

	"github.com/pipedbn/pipedbn/rbm"
)

// StageConfig is everything Stage i needs to train RBM_i.
type StageConfig struct {
	// Index is i, 1-based: RBM_i joins L_{i-1} and L_i.
	Index int
	// Visible and Hidden are the sizes of L_{i-1} and L_i.
	Visible, Hidden int
	// Units of the visible layer: gaussian only makes sense for RBM_1.
	Units rbm.Units
	// Epochs, BatchSize and K (mini-batches per window).
	Epochs, BatchSize, K int
	// CDK is the number of Gibbs steps.
	CDK int
	// Middle is what the stage emits as its middle result.
	Middle rbm.Middle
	// MiddlePrecision is what the stage rounds a middle result of
	// probabilities to before it hands it on (Float32, the zero value:
	// nothing); samples go unrounded, as Binary, whatever it says.
	MiddlePrecision Precision
	// LearningRate and Momentum go from [0] in the first epoch to [1] in
	// the last.
	LearningRate, Momentum [2]float64
	// WeightDecay is the L2 penalty on weights.
	WeightDecay float64
	// Seed derives the RBM's initial weights and its sampling RNG.
	Seed uint64
	// LCopyOnce makes the L_{i-1}-copy (RBM_i's visible biases, i > 1)
	// take the B_{i-1} of the first window only, and learn on from there;
	// otherwise (the paper's rule) every window's B_{i-1} overwrites them.
	LCopyOnce bool
	// Settle is the stage's part in the settle phase; zero: none.
	Settle Settle
	// Replicas is the number of stage replicas that train the RBM, this
	// stage one of them (0 or 1: none). Each trains every mini-batch of its
	// windows as Replicas sub-batches, a step each, at the stage's rates,
	// so that r replicas together take as many steps a window as one
	// slave, and their average moves the RBM as far (replicaSteps).
	Replicas int
	// Net, if set, makes the stage the network of data-parallel
	// fine-tuning rather than an RBM (see NetStage): Visible is then its
	// inputs and Hidden its classes.
	Net *NetConfig
}

// ParamShape is the shape of the stage's parameters as messages carry
// them (messages.Params, Weights, Checkpoint): RBM_i's Visible x Hidden;
// for a network, its number of parameters and 0, a flat vector.
func (c StageConfig) ParamShape() (visible, hidden int) {
	if c.Net != nil {
		return c.Net.NumParams(), 0
	}
	return c.Visible, c.Hidden
}

// Model is what a stage trains on its windows: RBM_i (Stage) or the
// network of data-parallel fine-tuning (NetStage). A slave drives either
// the same way.
type Model interface {
	Config() StageConfig
	// Train trains on the window in; out, for an RBM below the top,
	// receives its middle result.
	Train(in, out *Window) error
	EndEpoch()
	Waited(input, credit time.Duration, now State)
	Windows() int
	Stats() Stats
	Snapshot() StageState
	// Params returns the parameters in ParamShape, for reading only:
	// RBM_i's W, A and B; a network's flat vector as W, with A and B nil.
	// SetParams loads parameters of that shape (a replicas' average).
	Params() (w, a, b []float32)
	SetParams(w, a, b []float32)
}

// NewModel returns the model cfg describes, freshly initialised.
func NewModel(cfg StageConfig) Model {
	if cfg.Net != nil {
		return NewNetStage(cfg)
	}
	return NewStage(cfg)
}

// RestoreModel returns the model cfg describes in the state st, which a
// Snapshot of it took.
func RestoreModel(cfg StageConfig, st StageState) (Model, error) {
	if cfg.Net != nil {
		return RestoreNetStage(cfg, st)
	}
	return RestoreStage(cfg, st)
}

// Settle is a stage's part in the settle phase of the pipelined schedule:
// its Train windows from window Seq Start on restart the learning rate at
// LearningRate on their first mini-batch, falling linearly to the final
// rate, which the last one trains at, with the final momentum: each RBM
// ends its settle windows annealed, as greedy's RBMs end their training.
// Windows > 0: the phase is that many more windows after the epochs
// (window Seq From on, epoch Epochs on), and the stage only forwards
// those outside its part, frozen. Windows 0: its part lies in the epochs,
// and it trains on at the final rate after it. Train 0: no part.
type Settle struct {
	From, Windows, Start, Train int
	LearningRate                float64
}

// SettleSchedule is where the settle windows lie (PlanSettle).
type SettleSchedule int

const (
	// SettleAfter: (L-1)·F windows more, after the epochs. RBM_1 forwards
	// them, frozen; RBM_i (i > 1) trains the first (i-1)·F of them, the
	// last F on the middle results of a frozen RBM_i-1: its final ones,
	// all that greedy's RBM_i ever sees. The top RBM, often the slowest,
	// trains (L-1)·F windows more than its epochs.
	SettleAfter SettleSchedule = iota
	// SettleInEpochs: the last (L-1)·F windows of the epochs, no more.
	// RBM_i (i > 1) restarts on the first of them and anneals over
	// (i-1)·F, ending F windows after the RBM below it, as in SettleAfter,
	// then trains on at the final rate; RBM_1 trains its epochs as
	// without a settle phase, at its final rate in the last epoch.
	SettleInEpochs
)

var settleScheduleNames = []string{SettleAfter: "after", SettleInEpochs: "in_epochs"}

// String returns the config spelling (pretrain.settle.schedule): after or
// in_epochs.
func (s SettleSchedule) String() string {
	if s >= 0 && int(s) < len(settleScheduleNames) {
		return settleScheduleNames[s]
	}
	return fmt.Sprintf("SettleSchedule(%d)", int(s))
}

// MarshalText returns the config spelling, so that JSON (result.json, the
// config as sweeps and resumed runs record it) spells a schedule as YAML
// does.
func (s SettleSchedule) MarshalText() ([]byte, error) { return []byte(s.String()), nil }

// UnmarshalText reads the config spelling.
func (s *SettleSchedule) UnmarshalText(b []byte) error {
	i := slices.Index(settleScheduleNames, string(b))
	if i < 0 {
		return fmt.Errorf("pipeline: unknown settle schedule %q (want after or in_epochs)", b)
	}
	*s = SettleSchedule(i)
	return nil
}

// MinSettleBatches is the fewest mini-batches in a stage's settle part:
// F, the settle windows of a stage above the first, is at least the
// windows that hold this many, however brief the run and at any K (10
// windows at K = 4, 5 at K = 8, 1 at K >= 40). An RBM needs that many
// steps to settle from its restarted rate: with fewer, upper RBMs of brief
// runs ended above greedy's error (experiments/results/settle_brief/,
// settle_schedule_brief/), and with a floor of 4 windows whatever K, RBM_3
// of DBNs of 4 RBMs and more at K = 8 and RBM_3 and RBM_4 of those at K = 4
// did too (experiments/results/depth_rule/, depth_check/). Counted in
// windows, the floor would make the settle phase of long windows too long
// for the epochs, so it would go after them and cost its time: 4 windows
// of K = 200 would make the quickstart job's settle phase 8 windows, too
// many for the 10 of its epochs (experiments/results/kstudy_emulated/).
const MinSettleBatches = 40

// minSettleWindows is the fewest settle windows F of a stage at K
// mini-batches a window.
func minSettleWindows(k int) int {
	return max(1, (MinSettleBatches+k-1)/max(k, 1))
}

// MaxInEpochs is the largest share of the epochs' windows the settle
// windows may take in SettleInEpochs; a run too brief for them has them
// after its epochs (SettleAfter). Restarting RBM_2 on the first window,
// before RBM_1 learnt anything, ruins it (measured in
// experiments/results/settle_schedule_brief/).
const MaxInEpochs = 0.75

// rate is the learning rate of a stage's settle mini-batch t (0-based,
// counting K a window) of the batches it trains, its final rate final.
func (st Settle) rate(t, batches int, final float64) float64 {
	if t >= batches-1 {
		return final // the last settle mini-batch and, in the epochs, those past it
	}
	return st.LearningRate + (final-st.LearningRate)*float64(t)/float64(batches-1)
}

// PlanSettle sets the Settle of every stage of a pipelined run over n
// examples whose settle phase takes fraction of its windows: F windows
// for each stage above the first (at least MinSettleBatches' worth, where
// fraction > 0), where schedule places them (after the epochs where
// SettleInEpochs would take more than MaxInEpochs of them), the learning
// rate restarting at rate.
func PlanSettle(cfgs []StageConfig, n int, fraction, rate float64, schedule SettleSchedule) {
	L := len(cfgs)
	if L < 2 || fraction <= 0 || n < 1 {
		return
	}
	c := cfgs[0]
	from := c.Epochs * WindowsPerEpoch(n, c.BatchSize, c.K)
	f := max(minSettleWindows(c.K), int(math.Round(fraction*float64(from)/float64(L-1))))
	windows, start := (L-1)*f, from
	if schedule == SettleInEpochs && float64(windows) <= MaxInEpochs*float64(from) {
		windows, start = 0, from-windows
	}
	for i := range cfgs {
		cfgs[i].Settle = Settle{From: from, Windows: windows, Start: start, Train: i * f, LearningRate: rate}
	}
}

// Batches is the number of mini-batches stage c trains over n examples:
// those of its epochs and of its part of the settle phase.
func (c StageConfig) Batches(n int) int {
	perEpoch := BatchesPerEpoch(n, c.BatchSize)
	batches := c.Epochs * perEpoch
	st := c.Settle
	for seq := max(st.Start, st.From); seq < min(st.Start+st.Train, st.From+st.Windows); seq++ {
		w := (seq - st.From) % WindowsPerEpoch(n, c.BatchSize, c.K) // the window's place in its epoch
		batches += min(c.K, perEpoch-w*c.K)
	}
	return batches
}

// settles reports whether window in belongs to the settle phase.
func (c StageConfig) settles(in *Window) bool {
	return c.Settle.Windows > 0 && in.Epoch >= c.Epochs
}

// LastEpoch is the last epoch stage c sees a window of, over n examples:
// Epochs-1, or the settle phase's last.
func (c StageConfig) LastEpoch(n int) int {
	if c.Settle.Windows == 0 {
		return c.Epochs - 1
	}
	return c.Epochs + (c.Settle.Windows-1)/WindowsPerEpoch(n, c.BatchSize, c.K)
}

// Window is a run of at most K mini-batches: the unit a stage trains on and
// the unit of middle results a stage emits.
type Window struct {
	// Epoch (0-based) the mini-batches belong to, and Seq, the window's
	// number within the whole run (0, 1, 2, ...).
	Epoch, Seq int
	// Rows holds the row count of each mini-batch; the last mini-batch of an
	// epoch may be short.
	Rows []int
	// X holds sum(Rows) rows, row-major, of the layer's width.
	X []float32
	// Bias is the producer's hidden bias vector B_i at the end of the window:
	// the visible biases the consumer's L_i-copy takes. Nil for the data
	// windows RBM_1 trains on (RBM_1 owns its visible biases).
	Bias []float32
	// Labels holds each row's class in the data windows of a supervised
	// stage (the network of data-parallel fine-tuning); nil otherwise.
	Labels []uint8
	// Precision is what the values of X are exact in, and so how narrow
	// they may travel: the producer's rounding of its middle result
	// (StageConfig.MiddlePrecision), Binary for samples, Float32 (the
	// zero value) for the data. Bias is float32 always.
	Precision Precision
}

// TotalRows is the number of rows in the window.
func (w *Window) TotalRows() int {
	n := 0
	for _, r := range w.Rows {
		n += r
	}
	return n
}

// Stats is what a stage reports of its training so far.
type Stats struct {
	Index int
	// Epoch being trained (0-based) and mini-batches trained in total.
	Epoch, Batches int
	// Recon is the mean squared reconstruction error of each finished epoch.
	Recon []float64
	// LastRecon is the mean squared error of the latest window.
	LastRecon float64
	// Rows trained in total, and Busy, the time spent training them.
	Rows int
	Busy time.Duration
	// WaitInput is the time spent waiting for input windows, WaitCredit the
	// time spent waiting for the next stage to take a window.
	WaitInput, WaitCredit time.Duration
	// State is what the stage is doing now.
	State State
	// Worker names the process training the stage ("" in the master).
	Worker string
	// Rejected counts the messages the worker dropped on the stage's input
	// (unreadable, of another run, duplicates, gaps), as it last reported.
	Rejected uint64
}

// Stage trains one RBM on windows of input. It is not safe for concurrent use.
type Stage struct {
	cfg     StageConfig
	rbm     *rbm.RBM
	trainer *rbm.Trainer

	epoch      int
	windows    int
	epochSSE   float64
	epochElems float64
	stats      Stats
	epochEnded bool
}

// NewStage returns a stage with a freshly initialised RBM_i.
func NewStage(cfg StageConfig) *Stage {
	r := rbm.New(cfg.Visible, cfg.Hidden, cfg.Units, cfg.Seed)
	return &Stage{
		cfg:     cfg,
		rbm:     r,
		trainer: newTrainer(r, cfg),
		stats:   Stats{Index: cfg.Index},
	}
}

// newTrainer returns the trainer of RBM r for stage cfg: its generator is
// seeded apart from r's initial weights.
func newTrainer(r *rbm.RBM, cfg StageConfig) *rbm.Trainer {
	return rbm.NewTrainer(r, cfg.BatchSize, cfg.CDK, cfg.Seed^0x9e3779b97f4a7c15)
}

// RBM returns the RBM the stage trains.
func (s *Stage) RBM() *rbm.RBM { return s.rbm }

// Config returns the stage's configuration.
func (s *Stage) Config() StageConfig { return s.cfg }

// Params returns RBM_i's W, A and B.
func (s *Stage) Params() (w, a, b []float32) { return s.rbm.W, s.rbm.A, s.rbm.B }

// SetParams copies w, a and b into RBM_i's W, A and B.
func (s *Stage) SetParams(w, a, b []float32) {
	copy(s.rbm.W, w)
	copy(s.rbm.A, a)
	copy(s.rbm.B, b)
}

// Stats returns a copy of the stage's statistics.
func (s *Stage) Stats() Stats {
	st := s.stats
	st.Recon = append([]float64(nil), s.stats.Recon...)
	return st
}

// params returns the hyper-parameters of epoch e.
func (s *Stage) params(e int) rbm.Params {
	return rbm.Params{
		LearningRate: float32(rbm.Schedule(s.cfg.LearningRate[0], s.cfg.LearningRate[1], e, s.cfg.Epochs)),
		Momentum:     float32(rbm.Schedule(s.cfg.Momentum[0], s.cfg.Momentum[1], e, s.cfg.Epochs)),
		WeightDecay:  float32(s.cfg.WeightDecay),
	}
}

// Train trains RBM_i on the window in. For i > 1 it first sets the visible
// biases of its L_{i-1}-copy to in.Bias: its own updates to them last only
// until the next window, and never flow back. If out is non-nil, Train fills
// it with the middle result of the window (out.X must hold in.TotalRows() x
// Hidden values) and B_i after the window.
func (s *Stage) Train(in *Window, out *Window) error {
	settle := s.cfg.settles(in)
	if in.Epoch < s.epoch || (in.Epoch >= s.cfg.Epochs && !settle) {
		return fmt.Errorf("rbm %d: window %d is for epoch %d, stage is at epoch %d of %d", s.cfg.Index, in.Seq, in.Epoch, s.epoch, s.cfg.Epochs)
	}
	p := s.params(in.Epoch)
	st := s.cfg.Settle
	frozen := false
	if settle {
		if in.Seq < st.From || in.Seq >= st.From+st.Windows {
			return fmt.Errorf("rbm %d: window %d is outside the settle phase, windows %d to %d", s.cfg.Index, in.Seq, st.From, st.From+st.Windows-1)
		}
		frozen = in.Seq < st.Start || in.Seq >= st.Start+st.Train
	}
	settled := st.Train > 0 && in.Seq >= st.Start // in its settle windows, or past them in its epochs
	if settled {
		p.Momentum = float32(s.cfg.Momentum[1])
	}
	if in.Epoch > s.epoch {
		s.EndEpoch()
		s.epoch = in.Epoch
	}
	s.epochEnded = false
	if in.Bias != nil {
		if len(in.Bias) != s.cfg.Visible {
			return fmt.Errorf("rbm %d: window %d carries %d biases for a visible layer of %d", s.cfg.Index, in.Seq, len(in.Bias), s.cfg.Visible)
		}
		if !s.cfg.LCopyOnce || s.windows == 0 {
			copy(s.rbm.A, in.Bias)
		}
	}
	if n := in.TotalRows(); len(in.X) != n*s.cfg.Visible {
		return fmt.Errorf("rbm %d: window %d holds %d values, want %d rows x %d", s.cfg.Index, in.Seq, len(in.X), n, s.cfg.Visible)
	}
	if frozen {
		return s.forward(in, out)
	}
	start := time.Now()
	var sse float64
	off, outOff := 0, 0
	for b, rows := range in.Rows {
		if settled {
			p.LearningRate = float32(st.rate((in.Seq-st.Start)*s.cfg.K+b, st.Train*s.cfg.K, s.cfg.LearningRate[1]))
		}
		v := in.X[off : off+rows*s.cfg.Visible]
		var mid []float32
		if out != nil {
			mid = out.X[outOff : outOff+rows*s.cfg.Hidden]
		}
		e, err := s.step(v, rows, p, mid)
		if err != nil {
			if errors.Is(err, rbm.ErrDiverged) {
				return fmt.Errorf("rbm %d: epoch %d, batch %d: %w (weights kept from the end of the last good epoch)", s.cfg.Index, in.Epoch+1, s.stats.Batches+1, err)
			}
			return fmt.Errorf("rbm %d: epoch %d, window %d, batch %d: %w", s.cfg.Index, in.Epoch+1, in.Seq, b, err)
		}
		sse += e
		s.stats.Batches++
		s.stats.Rows += rows
		off += rows * s.cfg.Visible
		outOff += rows * s.cfg.Hidden
	}
	elems := float64(in.TotalRows() * s.cfg.Visible)
	s.epochSSE += sse
	s.epochElems += elems
	s.stats.LastRecon = sse / elems
	s.stats.Epoch = in.Epoch
	s.windows++
	if out != nil {
		s.handOn(in, out)
	}
	s.stats.Busy += time.Since(start)
	return nil
}

// handOn finishes out, the middle result of window in: its values rounded
// to the stage's precision, and the window's place and B_i.
func (s *Stage) handOn(in, out *Window) {
	out.Precision = s.cfg.OutPrecision()
	out.Precision.Round(out.X[:in.TotalRows()*s.cfg.Hidden])
	out.Epoch, out.Seq = in.Epoch, in.Seq
	out.Rows = append(out.Rows[:0], in.Rows...)
	out.Bias = append(out.Bias[:0], s.rbm.B...)
}

// step trains one mini-batch of rows rows, v, at p, writing its middle
// result to mid (nil: none), and returns its squared reconstruction error:
// one CD step, or, on a stage replica, a step for each of its sub-batches.
func (s *Stage) step(v []float32, rows int, p rbm.Params, mid []float32) (float64, error) {
	subs := replicaSteps(s.cfg.Replicas, rows)
	if subs == 1 {
		return s.trainer.Step(v, rows, p, mid, s.cfg.Middle)
	}
	var sse float64
	for k := range subs {
		r := rows/subs + min(1, max(0, rows%subs-k)) // the first rows%subs take one more
		var m []float32
		if mid != nil {
			m, mid = mid[:r*s.cfg.Hidden], mid[r*s.cfg.Hidden:]
		}
		e, err := s.trainer.Step(v[:r*s.cfg.Visible], r, p, m, s.cfg.Middle)
		if err != nil {
			return sse, err
		}
		sse += e
		v = v[r*s.cfg.Visible:]
	}
	return sse, nil
}

// replicaSteps is the steps a stage replica, one of replicas, takes on a
// mini-batch of rows: one per replica, at most one per row.
//
// Data-parallel replicas that average whole mini-batch steps take 1/r of
// one slave's steps, and learning rates r times the configured (the linear
// scaling rule) make up for it in part only: a replicated RBM ends above
// one slave's error. With a step per sub-batch at the configured rates it
// ends where one slave's does (measured in
// experiments/results/replicas_split/ and machines/).
func replicaSteps(replicas, rows int) int {
	return max(1, min(replicas, rows))
}

// forward hands the middle result of the frozen RBM_i for window in on (a
// window Train checked and took the L_{i-1}-copy's biases of): a stage
// outside its part of the settle phase does not train.
func (s *Stage) forward(in *Window, out *Window) error {
	rows := in.TotalRows()
	start := time.Now()
	if out != nil {
		if s.cfg.Middle == rbm.Samples {
			// Sampled states, from the trainer's generator, a mini-batch
			// at a time as training draws them.
			off, outOff := 0, 0
			for _, r := range in.Rows {
				s.trainer.SampleHidden(out.X[outOff:outOff+r*s.cfg.Hidden], in.X[off:off+r*s.cfg.Visible], r)
				off += r * s.cfg.Visible
				outOff += r * s.cfg.Hidden
			}
		} else {
			s.rbm.HiddenProbs(out.X[:rows*s.cfg.Hidden], in.X, rows)
		}
		s.handOn(in, out)
	}
	s.stats.Epoch = in.Epoch
	s.windows++
	s.stats.Busy += time.Since(start)
	return nil
}

// EndEpoch closes the current epoch: it records its mean reconstruction
// error and commits the RBM as the last good state. Calling it again before
// more training is a no-op.
func (s *Stage) EndEpoch() {
	if s.epochEnded || s.epochElems == 0 {
		return
	}
	s.stats.Recon = append(s.stats.Recon, s.epochSSE/s.epochElems)
	s.epochSSE, s.epochElems = 0, 0
	s.trainer.Commit()
	s.epochEnded = true
}

// Waited adds time the stage spent waiting for input and for credit to its
// statistics, and sets the state it is in now: a driver of the stage (the
// pipelined schedule, a slave) accounts its waits here.
func (s *Stage) Waited(input, credit time.Duration, now State) {
	s.stats.WaitInput += input
	s.stats.WaitCredit += credit
	s.stats.State = now
}

// Windows returns the number of windows trained so far: the Seq of the next
// input window.
func (s *Stage) Windows() int { return s.windows }

// StageState is a stage's checkpoint: everything that, with its
// StageConfig, resumes training exactly where it stood after a window, as if
// it had never stopped.
type StageState struct {
	// Windows is the number of input windows trained: training resumes at
	// the window with this Seq.
	Windows int
	// Epoch is the epoch being trained; EpochSSE and EpochElems the
	// reconstruction error summed over it so far; EpochEnded whether it was
	// closed already.
	Epoch                int
	EpochSSE, EpochElems float64
	EpochEnded           bool
	// Stats are the statistics so far (Busy and the waits included).
	Stats Stats
	// W, A and B are RBM_i's parameters.
	W, A, B []float32
	// Trainer holds the momentum buffers and the sampling generator.
	Trainer rbm.TrainerState
	// BlockStep is a network stage's last block step (NetStage); empty
	// without block momentum, and for an RBM.
	BlockStep []float32
}

// Snapshot returns a copy of the stage's state. Take it between windows.
func (s *Stage) Snapshot() StageState {
	st := StageState{
		Windows: s.windows, Epoch: s.epoch, EpochSSE: s.epochSSE, EpochElems: s.epochElems,
		EpochEnded: s.epochEnded, Stats: s.Stats(),
		W: append([]float32(nil), s.rbm.W...), A: append([]float32(nil), s.rbm.A...),
		B: append([]float32(nil), s.rbm.B...), Trainer: s.trainer.State(),
	}
	return st
}

// RestoreStage returns the stage cfg describes, in the state st a Snapshot
// of it took. It fails when st does not fit cfg.
func RestoreStage(cfg StageConfig, st StageState) (*Stage, error) {
	V, H := cfg.Visible, cfg.Hidden
	if len(st.W) != V*H || len(st.A) != V || len(st.B) != H {
		return nil, fmt.Errorf("rbm %d: checkpoint holds %d, %d, %d parameters for a %dx%d RBM", cfg.Index, len(st.W), len(st.A), len(st.B), V, H)
	}
	last := cfg.Epochs - 1
	if cfg.Settle.Windows > 0 {
		last = cfg.Epochs + cfg.Settle.Windows - 1 // at most; the examples decide
	}
	if st.Windows < 0 || st.Epoch < 0 || st.Epoch > max(last, 0) || st.Stats.Batches < 0 {
		return nil, fmt.Errorf("rbm %d: checkpoint at window %d, epoch %d of %d, %d batches: out of range", cfg.Index, st.Windows, st.Epoch, cfg.Epochs, st.Stats.Batches)
	}
	s := NewStage(cfg)
	copy(s.rbm.W, st.W)
	copy(s.rbm.A, st.A)
	copy(s.rbm.B, st.B)
	if err := s.trainer.Restore(st.Trainer); err != nil {
		return nil, fmt.Errorf("rbm %d: %w", cfg.Index, err)
	}
	s.windows, s.epoch = st.Windows, st.Epoch
	s.epochSSE, s.epochElems, s.epochEnded = st.EpochSSE, st.EpochElems, st.EpochEnded
	s.stats = st.Stats
	s.stats.Index = cfg.Index
	s.stats.Recon = append([]float64(nil), st.Stats.Recon...)
	return s, nil
}
