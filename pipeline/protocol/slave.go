package protocol

import (
	"fmt"
	"hash/fnv"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/pipedbn/pipedbn/messages"
	"github.com/pipedbn/pipedbn/pipeline"
)

// SlaveConfig configures a slave.
type SlaveConfig struct {
	// Name identifies the slave (see CheckName); Host, CPUs and PID go into
	// its registration.
	Name, Host string
	CPUs, PID  int
	// Process tells this process apart from others of its name (see
	// messages.Register): the driver draws it at random; 0 derives it from
	// Name, Host and PID.
	Process uint64
	// Timing of the protocol.
	Timing Timing
	// Logger receives the slave's log lines; nil discards them.
	Logger hclog.Logger
	// Fits, if set, checks that the slave can hold the RBM it is assigned,
	// in the flow of its assignment (what the master's memory check counts
	// for a slave: pipeline.StageConfig.SlaveMemory): an error fails the
	// assignment, and with it the master's run.
	Fits func(pipeline.StageConfig, pipeline.Flow) error
}

type slavePhase int

const (
	joining  slavePhase = iota // registering until a master answers
	admitted                   // waiting for an assignment
	resuming                   // assigned; waiting for the checkpoint to resume from
	training                   // training the assigned RBM
	draining                   // asked to stop: leaving a checkpoint first
	finished                   // weights sent; waiting for the end of the run
	exited
)

// Slave is the state machine of a slave: it registers with the master,
// trains the RBM_i it is assigned on the windows from below while streaming
// its middle results and B_i above, reports its status, checkpoints every
// C windows, and finally sends its weights. It is not safe for concurrent
// use.
type Slave struct {
	cfg SlaveConfig
	log hclog.Logger
	out Output

	phase    slavePhase
	deadline time.Duration // of the phase's wait; 0: none
	lastSent time.Duration // the last registration, status or weights
	// registerWait is how long a joining slave waits before registering
	// again: from RegisterEvery/firstRegisterRepeats, doubling up to
	// RegisterEvery, so that a slave started before its master listens
	// (its first registration heard by nobody) joins within moments.
	registerWait time.Duration
	err          error

	run    Run
	assign *messages.Assign
	stage  pipeline.Model
	stats  pipeline.Stats // the stage's, as of the end of its last job
	in     *Gatherer
	down   *Dealer
	job    *Job
	held   *pipeline.Window // a middle result waiting for credit
	state  pipeline.State
	since  time.Duration // when state began

	checkpointed int // the windows of the last checkpoint sent; -1: none
	acked        uint64
	// Replicas' averages: synced counts the averages taken; syncing is
	// the parameters sent for the next, while the slave waits for it (nil
	// when it does not), sent last at syncSent.
	synced      int
	syncing     *messages.Params
	syncSent    time.Duration
	stopReason  error
	weights     *messages.Weights
	weightsSent time.Duration
	// reportFirst says the slave trains the top RBM and has not trained
	// a window since it began: it reports its first at once, so that the
	// master sees the pipeline filled when it is, not up to StatusEvery
	// later.
	reportFirst bool
}

// NewSlave returns a slave that has not registered yet.
func NewSlave(cfg SlaveConfig) (*Slave, error) {
	if err := CheckName(cfg.Name); err != nil {
		return nil, fmt.Errorf("slave %w", err)
	}
	if err := cfg.Timing.check(); err != nil {
		return nil, err
	}
	if cfg.Logger == nil {
		cfg.Logger = hclog.NewNullLogger()
	}
	if cfg.Process == 0 {
		h := fnv.New64a()
		fmt.Fprintf(h, "%s\x00%s\x00%d", cfg.Name, cfg.Host, cfg.PID)
		cfg.Process = h.Sum64() | 1
	}
	return &Slave{cfg: cfg, log: cfg.Logger, checkpointed: -1}, nil
}

// Ready returns what the slave asks its driver to do, and forgets it.
func (s *Slave) Ready() Output {
	o := s.out
	s.out = Output{}
	return o
}

// Done reports whether the slave has ended, and why: nil when its run is
// complete or it was not needed, ErrStopped when the master stopped it,
// ErrClusterFull when the master needed no more slaves.
func (s *Slave) Done() (bool, error) { return s.phase == exited, s.err }

// Assigned returns the assignment, nil before there is one.
func (s *Slave) Assigned() *messages.Assign { return s.assign }

// Stats returns the statistics of the slave's RBM as of its last window.
func (s *Slave) Stats() pipeline.Stats { return s.stats }

// InputStats returns the counts of the slave's input link.
func (s *Slave) InputStats() LinkStats {
	if s.in == nil {
		return LinkStats{}
	}
	return s.in.Stats()
}

// OutputStats returns the counts of the slave's output link.
func (s *Slave) OutputStats() LinkStats {
	if s.down == nil {
		return LinkStats{}
	}
	return s.down.Stats()
}

// Links returns the run the slave trains in and its current neighbours:
// the producers of its input and the consumers of its middle results
// (none for the top RBM), the replicas of a group in order. A transport
// subscribes to what they send.
func (s *Slave) Links() (run Run, upstream, downstream []string) {
	if s.in != nil {
		upstream = s.in.Producers()
	}
	if s.down != nil {
		downstream = s.down.Consumers()
	}
	return s.run, upstream, downstream
}

// Rejected counts something the transport dropped on the slave's input
// link before it became a message (see Consumer.Reject).
func (s *Slave) Rejected(reason messages.RejectReason) {
	if s.in != nil {
		s.in.Reject(reason)
	}
}

// Arriving notes that a part of a window arrived on the slave's input link
// (see Consumer.Arriving).
func (s *Slave) Arriving(now time.Duration) {
	if s.in != nil {
		s.in.Arriving(now)
	}
}

func (s *Slave) send(to string, m messages.Message) {
	s.out.Messages = append(s.out.Messages, Envelope{From: s.cfg.Name, To: to, Msg: m})
}

func (s *Slave) exit(err error) {
	s.phase, s.err = exited, err
}

// Start registers the slave with the master.
func (s *Slave) Start(now time.Duration) {
	s.deadline = now + s.cfg.Timing.JoinTimeout
	s.registerWait = s.cfg.Timing.RegisterEvery / firstRegisterRepeats
	s.register(now)
}

// firstRegisterRepeats: a joining slave's first repeat of its registration
// comes after RegisterEvery over this.
const firstRegisterRepeats = 16

func (s *Slave) register(now time.Duration) {
	s.lastSent = now
	s.send(MasterName, &messages.Register{Name: s.cfg.Name, Host: s.cfg.Host, CPUs: s.cfg.CPUs, PID: s.cfg.PID, Protocol: messages.Version, Process: s.cfg.Process})
}

// Tick runs the slave's timers.
func (s *Slave) Tick(now time.Duration) {
	t := s.cfg.Timing
	switch s.phase {
	case joining:
		if now >= s.deadline {
			s.exit(fmt.Errorf("%w within %s", ErrNoMaster, t.JoinTimeout))
			return
		}
		if now-s.lastSent >= s.registerWait {
			s.register(now)
			s.registerWait = min(2*s.registerWait, t.RegisterEvery)
		}
	case admitted, resuming:
		switch {
		case now >= s.deadline && s.phase == admitted:
			s.exit(fmt.Errorf("registered with the master, but no RBM was assigned within %s", t.JoinTimeout))
		case now >= s.deadline:
			s.fail(fmt.Errorf("assigned rbm %d to resume, but no checkpoint came within %s", s.assign.RBM, t.JoinTimeout))
		case now-s.lastSent >= t.RegisterEvery:
			// Registering again asks the master to repeat an assignment
			// (or its checkpoint) lost on the way.
			s.register(now)
		}
	case training, draining:
		if s.syncing != nil && now-s.syncSent >= t.ResendAfter {
			s.syncSent = now
			s.send(MasterName, s.syncing) // it, or the average, was lost
		}
		if s.job == nil {
			if s.state == pipeline.WaitingInput || s.state == pipeline.WaitingAverage {
				// Waiting for an average too: a producer that restarted
				// learns its credit from the repeated grants.
				s.out.Messages = append(s.out.Messages, s.in.Tick(now)...)
			}
			if s.phase == draining && s.deadline != 0 && now >= s.deadline {
				s.leave()
				return
			}
		}
		if now-s.lastSent >= t.StatusEvery {
			s.report(now)
		}
	case finished:
		if now >= s.deadline {
			s.log.Warn("the master did not confirm the end of the run; leaving", "waited", t.FinishTimeout)
			s.exit(nil)
			return
		}
		if now-s.lastSent >= t.StatusEvery {
			s.report(now)
		}
		if now-s.weightsSent >= t.WeightsEvery {
			s.weightsSent = now
			s.send(MasterName, s.weights)
		}
	}
}

// Receive takes a message.
func (s *Slave) Receive(now time.Duration, e Envelope) {
	if s.phase == exited {
		return
	}
	switch m := e.Msg.(type) {
	case *messages.Chunk:
		if s.in != nil {
			s.out.Messages = append(s.out.Messages, s.in.OnChunk(now, e.From, m)...)
			s.pump(now)
		}
		return
	case *messages.EndOfStream:
		if s.in != nil {
			out, err := s.in.OnEnd(now, e.From, m)
			if err != nil {
				s.fail(err)
				return
			}
			s.out.Messages = append(s.out.Messages, out...)
			s.pump(now)
		}
		return
	case *messages.Credit:
		if s.down != nil {
			again, err := s.down.OnCredit(now, e.From, m)
			if err != nil {
				s.fail(err)
				return
			}
			s.out.Messages = append(s.out.Messages, again...)
			s.pump(now)
		}
		return
	}
	if e.From != MasterName {
		return
	}
	switch m := e.Msg.(type) {
	case *messages.Admission:
		s.admission(now, m)
	case *messages.Assign:
		s.assigned(now, m)
	case *messages.Checkpoint:
		s.resume(now, m)
	case *messages.Params:
		s.averaged(now, m)
	case *messages.CheckpointAck:
		if s.assign != nil && m.RBM == s.assign.RBM && m.Replica == s.assign.Replica {
			if ok, _ := s.run.matches(m.RunID, m.Incarnation); ok && s.in != nil {
				s.acked = max(s.acked, m.Windows)
				s.in.SetDurable(m.Durable)
				if s.phase == draining && s.deadline != 0 && s.acked >= uint64(s.checkpointed) {
					s.leave()
				}
			}
		}
	case *messages.Stop:
		s.stopped(now, m)
	}
}

func (s *Slave) admission(now time.Duration, m *messages.Admission) {
	if m.Slave != s.cfg.Name || m.Process != s.cfg.Process {
		return // for another process of the name
	}
	if s.phase == admitted && m.Outcome == messages.Admitted {
		// Still wanted (a spare): the wait for an assignment starts again.
		s.deadline = now + s.cfg.Timing.JoinTimeout
		return
	}
	if s.phase != joining {
		return
	}
	switch m.Outcome {
	case messages.Admitted:
		s.log.Info("registered; waiting for an assignment")
		s.phase, s.deadline = admitted, now+s.cfg.Timing.JoinTimeout
	case messages.Full:
		s.exit(ErrClusterFull)
	case messages.InUse:
		s.exit(fmt.Errorf("%w: %s", ErrNameInUse, m.Reason))
	default:
		s.exit(fmt.Errorf("%w %s: %s", ErrRefused, s.cfg.Name, m.Reason))
	}
}

// assigned takes an assignment: the first starts (or resumes) training,
// later ones of the same RBM relink the slave to new neighbours.
func (s *Slave) assigned(now time.Duration, a *messages.Assign) {
	if s.assign != nil {
		if ok, _ := s.run.matches(a.RunID, a.Incarnation); !ok || a.RBM != s.assign.RBM || a.Replica != s.assign.Replica ||
			len(a.Upstream) != len(s.assign.Upstream) || len(a.Downstream) != len(s.assign.Downstream) {
			return
		}
		if s.in != nil {
			for k, p := range s.in.Producers() {
				if p != "" && a.Upstream[k] != p {
					s.log.Info("new upstream", "slave", a.Upstream[k])
					s.out.Messages = append(s.out.Messages, s.in.Relink(now, k, a.Upstream[k])...)
				}
			}
		}
		if s.down != nil {
			for k, c := range s.down.Consumers() {
				if c != "" && a.Downstream[k] != c {
					s.log.Info("new downstream", "slave", a.Downstream[k])
					s.down.Relink(k, a.Downstream[k])
				}
			}
		}
		s.assign.Upstream, s.assign.Downstream = a.Upstream, a.Downstream
		return
	}
	if s.phase != admitted && s.phase != joining {
		return
	}
	if a.Process != 0 && a.Process != s.cfg.Process {
		return // for an earlier process of the name
	}
	if s.phase == joining {
		s.log.Info("registered")
	}
	cfg, err := StageConfig(a)
	if err != nil {
		s.exit(fmt.Errorf("assignment: %w", err))
		return
	}
	s.assign, s.run = a, Run{ID: a.RunID, Incarnation: a.Incarnation}
	s.log = s.cfg.Logger.With("rbm", a.RBM, "run", a.RunID)
	if a.Replicas > 1 {
		s.log = s.log.With("replica", a.Replica)
	}
	s.log.Info("assigned", "visible", a.Visible, "hidden", a.Hidden, "upstream", a.Upstream, "downstream", a.Downstream, "replicas", a.Replicas, "resume", a.Resume)
	if s.cfg.Fits != nil {
		f := pipeline.Flow{RBMs: a.RBMs, Rows: a.RowsPerEpoch, Credits: a.Credits, CheckpointEvery: a.CheckpointEvery,
			InLinks: len(a.Upstream), OutLinks: len(a.Downstream), Replicas: a.Replicas}
		if err := s.cfg.Fits(cfg, f); err != nil {
			s.fail(fmt.Errorf("assignment: %w", err))
			return
		}
	}
	s.stage = pipeline.NewModel(cfg)
	s.stats = s.stage.Stats()
	if a.Resume {
		s.phase, s.deadline, s.lastSent = resuming, now+s.cfg.Timing.JoinTimeout, now
		return
	}
	s.begin(now, 0)
}

// resume takes the checkpoint an assignment with Resume starts from.
func (s *Slave) resume(now time.Duration, c *messages.Checkpoint) {
	if s.phase != resuming {
		return
	}
	a := s.assign
	if ok, _ := s.run.matches(c.RunID, c.Incarnation); !ok {
		return
	}
	visible, hidden := s.stage.Config().ParamShape()
	if err := c.Check(a.RunID, a.RBM, a.Replica, visible, hidden); err != nil {
		s.fail(fmt.Errorf("checkpoint to resume from: %w", err))
		return
	}
	// A checkpoint at window 0 with parameters is where a network starts:
	// the master hands it its initial weights so.
	if c.Windows > 0 || len(c.W) > 0 {
		st, err := pipeline.RestoreModel(s.stage.Config(), StageStateOf(c))
		if err != nil {
			s.fail(err)
			return
		}
		s.stage = st
		s.stats = st.Stats()
	}
	s.log.Info("resuming", "window", c.Windows, "batches", s.stats.Batches)
	s.checkpointed, s.acked = c.Windows, uint64(c.Windows)
	if a.SyncEvery > 0 {
		s.synced = c.Windows / a.SyncEvery // a replica checkpoints after an average
	}
	s.begin(now, uint64(c.Windows))
}

// begin opens the links and starts training at window start.
func (s *Slave) begin(now time.Duration, start uint64) {
	a := s.assign
	at := Replica{a.Replica, a.Replicas}
	s.in = NewGatherer(s.run, s.cfg.Name, at, a.Upstream, a.RBM-1, a.Visible, a.Credits, start, a.CheckpointEvery > 0, s.cfg.Timing)
	if len(a.Downstream) > 0 {
		s.down = NewDealer(s.run, s.cfg.Name, at, a.RBM, a.Downstream, start)
		s.down.SetInFlight(s.cfg.Timing.ResendAfter)
	}
	s.phase, s.deadline = training, 0
	s.state, s.since = pipeline.WaitingInput, now
	s.reportFirst = len(a.Downstream) == 0
	s.out.Messages = append(s.out.Messages, s.in.Start(now)...)
	s.report(now)
}

// setState accounts the time spent in the state left; the stage is idle.
func (s *Slave) setState(now time.Duration, st pipeline.State) {
	var input, credit time.Duration
	switch s.state {
	case pipeline.WaitingInput, pipeline.WaitingAverage:
		input = now - s.since
	case pipeline.WaitingCredit:
		credit = now - s.since
	}
	s.stage.Waited(input, credit, st)
	s.state, s.since = st, now
	s.stats = s.stage.Stats()
}

// pump moves training on as far as it can: it hands a held middle result
// on once there is credit, starts the next window, or finishes.
func (s *Slave) pump(now time.Duration) {
	if (s.phase != training && s.phase != draining) || s.job != nil {
		return
	}
	if s.held != nil {
		if !s.down.CanSend() {
			if s.phase == draining {
				s.drain(now) // no resume needs the held result (see updateKeeps)
				return
			}
			if s.state != pipeline.WaitingCredit {
				s.setState(now, pipeline.WaitingCredit)
			}
			return
		}
		s.out.Messages = append(s.out.Messages, s.down.Send(now, s.held))
		s.held = nil
	}
	if s.phase == draining {
		s.drain(now)
		return
	}
	if s.syncing != nil {
		return // the replicas' average comes first
	}
	switch {
	case s.in.Ready():
		s.setState(now, pipeline.Training)
		in := s.in.Take()
		s.job = &Job{Stage: s.stage, In: in}
		if s.down != nil {
			s.job.Out = &pipeline.Window{X: make([]float32, in.TotalRows()*s.assign.Hidden)}
		}
		s.out.Job = s.job
	case s.in.Ended() && s.assign.Replicas > 1:
		s.sync(now, true)
	case s.in.Ended():
		s.finish(now)
	case s.state != pipeline.WaitingInput:
		s.setState(now, pipeline.WaitingInput)
	}
}

// Trained takes the outcome of the job the slave handed out.
func (s *Slave) Trained(now time.Duration, err error) {
	job := s.job
	s.job = nil
	if job == nil || s.phase == exited {
		return
	}
	if err != nil {
		s.fail(err)
		return
	}
	s.stats = s.stage.Stats()
	s.out.Messages = append(s.out.Messages, s.in.Trained(now))
	if job.Out != nil {
		s.held = job.Out
	}
	if e := s.assign.SyncEvery; e > 0 && s.stage.Windows()%e == 0 {
		s.sync(now, false) // the checkpoint follows the average
	} else {
		s.maybeCheckpoint()
	}
	if s.reportFirst {
		s.reportFirst = false
		s.report(now)
	}
	s.pump(now)
}

// maybeCheckpoint checkpoints after every C windows.
func (s *Slave) maybeCheckpoint() {
	if c := s.assign.CheckpointEvery; c > 0 && s.stage.Windows()%c == 0 {
		s.checkpoint()
	}
}

// checkpoint sends the stage's state to the master, once per window count.
func (s *Slave) checkpoint() {
	if w := s.stage.Windows(); w != s.checkpointed {
		s.checkpointed = w
		cp := CheckpointOf(s.run, s.stage.Config(), s.stage.Snapshot())
		cp.Replica = s.assign.Replica
		s.send(MasterName, cp)
	}
}

// finish closes the stream above and sends the weights: every window is
// trained and handed on.
func (s *Slave) finish(now time.Duration) {
	s.stage.EndEpoch()
	s.setState(now, pipeline.Done)
	if s.down != nil {
		s.out.Messages = append(s.out.Messages, s.down.Close(s.stats.Epoch)...)
	}
	if ls := s.in.Stats(); ls.Rejected.Total() > 0 {
		s.log.Warn("input link anomalies", "rejected", ls.Rejected.String(), "resends", ls.Resends)
	}
	w, a, b := s.stage.Params()
	visible, hidden := s.stage.Config().ParamShape()
	st := s.stats
	in, out := s.bytes()
	s.weights = &messages.Weights{
		RunID: s.run.ID, Incarnation: s.run.Incarnation, RBM: s.assign.RBM, Replica: s.assign.Replica, Visible: visible, Hidden: hidden,
		W: w, A: a, B: b, ReconErrors: st.Recon, Batches: st.Batches, BusySeconds: st.Busy.Seconds(),
		WaitSeconds: (st.WaitInput + st.WaitCredit).Seconds(), BytesIn: in, BytesOut: out,
	}
	s.phase, s.deadline = finished, now+s.cfg.Timing.FinishTimeout
	s.report(now)
	s.weightsSent = now
	s.send(MasterName, s.weights)
	s.log.Info("trained; weights sent", "batches", st.Batches, "busy_seconds", st.Busy.Seconds())
}

// Interrupt asks the slave to stop (a signal): it leaves a checkpoint at
// the next window boundary, and ends with reason.
func (s *Slave) Interrupt(now time.Duration, reason error) {
	switch s.phase {
	case training:
		s.startDrain(now, reason)
	case draining, exited:
	case finished:
		s.exit(nil) // the weights are sent; nothing to checkpoint
	default:
		s.exit(reason)
	}
}

func (s *Slave) stopped(now time.Duration, m *messages.Stop) {
	if m.RunID == "" {
		return // a stop must name its run
	}
	if m.Process != 0 && m.Process != s.cfg.Process {
		return // for another process of the name
	}
	if s.assign != nil {
		if ok, _ := s.run.matches(m.RunID, m.Incarnation); !ok {
			return
		}
	}
	switch s.phase {
	case joining:
		// Sent to an earlier process of this name: control messages keep
		// their order, so any stop for this one follows its admission.
	case admitted:
		s.log.Info("the master needs no more slaves", "reason", m.Reason)
		s.exit(nil)
	case resuming:
		s.exit(ErrStopped)
	case training:
		s.startDrain(now, fmt.Errorf("%w: %s", ErrStopped, m.Reason))
	case finished:
		s.log.Info("done", "batches", s.stats.Batches, "busy_seconds", s.stats.Busy.Seconds(), "master", m.Reason)
		s.exit(nil)
	}
}

// startDrain stops training at the next window boundary, with a checkpoint.
func (s *Slave) startDrain(now time.Duration, reason error) {
	s.phase, s.stopReason = draining, reason
	if s.job == nil {
		s.pump(now)
	}
}

// drain leaves a checkpoint, once the stage stands between windows, and
// waits up to DrainGrace for the master to store it. A middle result still
// held for credit does not matter: no resume starts from a checkpoint whose
// last middle result its consumer has not trained on (see updateKeeps).
func (s *Slave) drain(now time.Duration) {
	if s.deadline != 0 {
		return
	}
	s.deadline = now + s.cfg.Timing.DrainGrace
	if s.assign.CheckpointEvery <= 0 || s.syncing != nil {
		// A replica waiting for an average has trained past it: its
		// checkpoint would not tell (see resume), so the last one stands.
		s.leave()
		return
	}
	s.checkpoint()
	if s.acked >= uint64(s.checkpointed) {
		s.leave()
	}
}

// leave tells the master that the slave stopped on request, and ends.
func (s *Slave) leave() {
	w := s.stage.Windows()
	s.send(MasterName, &messages.Error{
		RunID: s.run.ID, Incarnation: s.run.Incarnation, RBM: s.assign.RBM, Replica: s.assign.Replica, Stopped: true,
		Text: fmt.Sprintf("%v (at window %d)", s.stopReason, w),
	})
	s.log.Warn("stopped", "reason", s.stopReason, "window", w)
	s.exit(s.stopReason)
}

// fail reports an error to the master and ends.
func (s *Slave) fail(err error) {
	s.log.Error("training failed", "error", err)
	if s.assign != nil {
		s.send(MasterName, &messages.Error{RunID: s.run.ID, Incarnation: s.run.Incarnation, RBM: s.assign.RBM, Replica: s.assign.Replica, Text: err.Error()})
	}
	s.exit(err)
}
