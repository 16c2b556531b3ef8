package protocol

import (
	"fmt"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/pipedbn/pipedbn/messages"
	"github.com/pipedbn/pipedbn/pipeline"
	"github.com/pipedbn/pipedbn/rbm"
)

// MasterConfig is one pipelined pre-training run for the master to carry
// out.
type MasterConfig struct {
	// Run names the run on the wire.
	Run Run
	// Stages describe RBM_1..RBM_L; slave i trains Stages[i-1].
	Stages []pipeline.StageConfig
	// Replicas, if set, is each RBM's number of stage replicas (RBM_i's at
	// Replicas[i-1], at least 1): slaves that train it data-parallel, each
	// the windows g with g mod r = its replica (see Replica), and that
	// average their parameters every SyncEvery of their windows through the
	// master (see messages.Params). Each takes r steps a mini-batch, one
	// per sub-batch (pipeline.StageConfig.Replicas), so that the mean of
	// the replicas' updates moves the RBM as far as one slave training
	// their windows in a row. Nil: one slave per RBM.
	Replicas []int
	// SyncEvery is how many windows a replica trains between two averages:
	// at least 1 where an RBM has replicas, and a divisor of
	// CheckpointEvery, so that the replicas' checkpoints fall after an
	// average.
	SyncEvery int
	// Seating, if set, names the seat a slave of that name takes when it is
	// among the first to join (a plan's stage groups: the slaves a process
	// hosts take consecutive RBMs); the others take the remaining seats in
	// the order they joined.
	Seating map[string]Seat
	// Data holds N rows of Stages[0].Visible values: RBM_1's input, which
	// the master streams to slave 1, shuffled every epoch by a source
	// seeded with ShuffleSeed.
	Data        []float32
	N           int
	ShuffleSeed uint64
	// DataPrecision is a precision every value of Data is exact in
	// (pipeline.ExactPrecision): the data windows travel at it. The zero
	// value, float32, is right for any data.
	DataPrecision pipeline.Precision
	// Labels, for a supervised stage (the network of data-parallel
	// fine-tuning), holds the class of each of the N rows: the data
	// windows carry them. Nil otherwise.
	Labels []uint8
	// Credits bounds the windows in flight on each link.
	Credits int
	// CheckpointEvery is C: every slave checkpoints after every C windows.
	// 0 turns checkpoints off: a lost slave then fails the run.
	CheckpointEvery int
	// Timing of the protocol.
	Timing Timing
	// Stored, for a run that resumes, is what the store holds of it; nil
	// for a new run.
	Stored *Stored
	// Observer sees the run's progress; any of its functions may be nil.
	Observer Observer
	// Logger receives the master's log lines; nil discards them.
	Logger hclog.Logger
}

// Observer sees a run's progress. Its functions run inside the master's
// state machine: keep them quick, and do not call the master from them.
type Observer struct {
	// Hooks see every RBM's progress, from its slaves' status reports:
	// the replicas of an RBM together, as one.
	Hooks pipeline.Hooks
	// Reported sees every status report of every slave as that slave's
	// own statistics (Worker: its name): a replica apart from the others.
	Reported func(pipeline.Stats)
	// Joined sees every slave that registers.
	Joined func(name, host string, cpus int)
	// Lost sees each slave declared lost.
	Lost func(rbm int, slave string, silent time.Duration)
	// Recovered sees each replacement resuming a lost slave's RBM.
	Recovered func(Recovery)
	// Checkpointed sees every checkpoint once it is stored.
	Checkpointed func(rbm int, state pipeline.StageState)
	// Passed sees each Milestone of the run once, when the master passes
	// it.
	Passed func(Milestone)
}

// Trained is one RBM as its slave reported it at the end.
type Trained struct {
	Slave string
	RBM   *rbm.RBM
	// Params, for the network of data-parallel fine-tuning (RBM nil), is
	// its flat parameter vector (finetune.Network.Params's layout).
	Params []float32
	Stats  pipeline.Stats
	// BytesIn and BytesOut are messages.Weights's, summed over a stage
	// group's replicas.
	BytesIn, BytesOut int64
	// Rejected counts what the slave's input link dropped, per reason, as
	// of its last report.
	Rejected messages.Rejections
}

type masterPhase int

const (
	gathering masterPhase = iota // waiting for L slaves to register
	running
	stopping // interrupted: waiting for the slaves' last checkpoints
	over
)

// Master is the master's state machine: it waits for slaves, assigns RBM_i
// to the i-th, streams the data to slave 1, stores the slaves' checkpoints,
// replaces lost slaves and collects the weights. It is not safe for
// concurrent use.
type Master struct {
	cfg MasterConfig
	log hclog.Logger
	out Output
	L   int

	phase    masterPhase
	deadline time.Duration
	err      error
	offline  bool
	rejected messages.Rejections // inputs dropped, per reason
	joined   []joined            // every slave process admitted to train, in order
	spares   []joined            // processes waiting to replace a lost slave
	seats    [][]*seat           // seats[i][k] is replica k of RBM_i's; seats[0] is unused
	slaves   int                 // the seats of all RBMs
	weights  []*messages.Weights // weights[i] is RBM_i's, once every replica finished
	averages []*averaging        // averages[i]: RBM_i's replicas' averages; nil without replicas
	// impostors counts the registrations under a name not their sender's,
	// of which the log tells ever fewer.
	impostors uint64
	// announced[i] is the epochs of RBM_i the Observer's Epoch hook was
	// told of: of replicas, those every replica finished.
	announced []int
	loading   int // checkpoints being loaded before the run starts
	starts    map[Seat]*messages.Checkpoint

	src   *pipeline.Source
	feed  *Dealer
	dealt bool // every data window was dealt

	passed [milestoneEnd]bool // the milestones the Observer was told of
}

// NewMaster returns the master of the run cfg describes.
func NewMaster(cfg MasterConfig) (*Master, error) {
	if err := CheckName(cfg.Run.ID); err != nil {
		return nil, fmt.Errorf("run %w", err)
	}
	if err := cfg.Timing.check(); err != nil {
		return nil, err
	}
	if len(cfg.Stages) == 0 || cfg.Credits < 1 || cfg.N < 1 {
		return nil, fmt.Errorf("protocol: a run of %d RBMs, %d credits, %d rows: want at least one of each", len(cfg.Stages), cfg.Credits, cfg.N)
	}
	if cfg.Labels != nil && len(cfg.Labels) != cfg.N {
		return nil, fmt.Errorf("protocol: %d labels for %d rows: want one per row", len(cfg.Labels), cfg.N)
	}
	if cfg.Logger == nil {
		cfg.Logger = hclog.NewNullLogger()
	}
	L := len(cfg.Stages)
	if cfg.Replicas == nil {
		cfg.Replicas = slices.Repeat([]int{1}, L)
	}
	if len(cfg.Replicas) != L || slices.Min(cfg.Replicas) < 1 {
		return nil, fmt.Errorf("protocol: replicas %v for %d RBMs: want one count, at least 1, per RBM", cfg.Replicas, L)
	}
	if slices.Max(cfg.Replicas) > 1 && (cfg.SyncEvery < 1 || cfg.CheckpointEvery%cfg.SyncEvery != 0) {
		return nil, fmt.Errorf("protocol: replicas %v averaging every %d windows, checkpoints every %d: want averages every >= 1 window, a divisor of the checkpoints' period", cfg.Replicas, cfg.SyncEvery, cfg.CheckpointEvery)
	}
	m := &Master{
		cfg: cfg, log: cfg.Logger, L: L, seats: make([][]*seat, L+1), weights: make([]*messages.Weights, L+1),
		averages: make([]*averaging, L+1), announced: make([]int, L+1), starts: map[Seat]*messages.Checkpoint{},
	}
	for i := 1; i <= L; i++ {
		r := cfg.Replicas[i-1]
		for k := range r {
			// No slave stands anywhere before the run: the keep points of a
			// resumed run follow from the stored checkpoints alone.
			m.seats[i] = append(m.seats[i], &seat{at: Seat{i, k}, stored: map[int]int{}, floor: math.MaxInt})
		}
		m.slaves += r
		if r > 1 {
			m.averages[i] = newAveraging(r)
		}
	}
	if st := cfg.Stored; st != nil {
		for at, ws := range st.Checkpoints {
			if s := m.seat(at); s != nil {
				for _, w := range ws {
					s.stored[w] = 0
				}
			}
		}
		for i, w := range st.Weights {
			if i >= 1 && i <= L {
				m.weights[i] = w
			}
		}
	}
	m.updateKeeps()
	return m, nil
}

// Ready returns what the master asks its driver to do, and forgets it.
func (m *Master) Ready() Output {
	o := m.out
	m.out = Output{}
	return o
}

// Done reports whether the run is over, and its error: nil when every
// RBM's weights are in, ErrInterrupted after Interrupt.
func (m *Master) Done() (bool, error) { return m.phase == over, m.err }

func (m *Master) send(to string, msg messages.Message) {
	m.out.Messages = append(m.out.Messages, Envelope{From: MasterName, To: to, Msg: msg})
}

func (m *Master) store(op StoreOp) { m.out.Store = append(m.out.Store, op) }

// suspicious counts the rejections that no resend explains: corrupt,
// foreign, misshapen or stale input.
func suspicious(r messages.Rejections) uint64 {
	return r.Total() - r[messages.RejectDuplicate] - r[messages.RejectGap]
}

// Rejected counts an input the driver dropped before the master saw it
// (unreadable, or of a kind its subject does not carry).
func (m *Master) Rejected(reason messages.RejectReason) { m.rejected.Add(reason) }

// Rejections returns the inputs the master dropped, per reason: those the
// driver counted, reports of another run or an earlier incarnation, and
// registrations under a name not their sender's (foreign).
func (m *Master) Rejections() messages.Rejections { return m.rejected }

// Abort ends the run with err: the driver could not do what it was asked
// (store a checkpoint, start a replacement).
func (m *Master) Abort(now time.Duration, err error) {
	if m.phase == over {
		return
	}
	m.log.Error("run failed", "error", err)
	m.stopSlaves("the run failed")
	m.phase, m.err = over, err
}

// Start begins the run: the master waits for its slaves, and, when it
// resumes a run, loads the checkpoints its RBMs restart from.
func (m *Master) Start(now time.Duration) {
	if m.complete() {
		m.log.Info("every RBM's weights are stored: pre-training is complete")
		m.phase = over
		return
	}
	m.deadline = now + m.cfg.Timing.JoinTimeout
	if m.cfg.Stored == nil {
		return
	}
	m.each(func(s *seat) {
		if k := s.keep; k > 0 {
			m.loading++
			m.store(StoreOp{Kind: Get, Name: CheckpointName(s.at, k), Seat: s.at, Windows: k})
		}
	})
}

func (m *Master) complete() bool { return !slices.Contains(m.weights[1:], nil) }

// Tick runs the master's timers: the join timeout, the detection of lost
// slaves, the wait for replacements and, when interrupted, for the slaves'
// last checkpoints.
func (m *Master) Tick(now time.Duration) {
	t := m.cfg.Timing
	switch m.phase {
	case gathering:
		if now >= m.deadline {
			names := make([]string, len(m.joined))
			for i, j := range m.joined {
				names[i] = j.name
			}
			m.Abort(now, fmt.Errorf("cluster.join_timeout = %s: %d of %d slaves joined (%s)", t.JoinTimeout, len(m.joined), m.slaves, strings.Join(names, ", ")))
		}
	case running:
		if !m.offline {
			m.watch(now)
		}
	case stopping:
		if now >= m.deadline || m.allLeft() {
			m.phase = over
		}
	}
}

// Connection tells the master whether its own connection to the others is
// up: while it is down it declares nobody lost, and once it is back every
// slave's silence counts from then.
func (m *Master) Connection(now time.Duration, up bool) {
	m.offline = !up
	if up {
		m.each(func(s *seat) { s.seen = now })
	}
}

// Receive takes a message. A registration whose name is not its sender's
// (e.From) is refused, unanswered, and counted as foreign in Rejections.
func (m *Master) Receive(now time.Duration, e Envelope) {
	if m.phase == over {
		return
	}
	switch msg := e.Msg.(type) {
	case *messages.Register:
		m.register(now, e.From, msg)
		return
	case *messages.Credit:
		if m.feed != nil {
			again, err := m.feed.OnCredit(now, e.From, msg)
			if err != nil {
				m.Abort(now, err)
				return
			}
			m.out.Messages = append(m.out.Messages, again...)
			m.pumpFeed(now)
		}
		return
	}
	s, ok := m.reporter(now, e)
	if !ok {
		return
	}
	s.seen = now
	i := s.at.RBM
	visible, hidden := m.cfg.Stages[i-1].ParamShape()
	switch msg := e.Msg.(type) {
	case *messages.Status:
		m.status(s, msg)
	case *messages.Checkpoint:
		if err := msg.Check(m.cfg.Run.ID, i, s.at.Replica, visible, hidden); err != nil {
			m.log.Warn("bad checkpoint", "slave", e.From, "rbm", i, "error", err)
			return
		}
		s.floor = max(s.floor, msg.Windows)
		m.store(StoreOp{Kind: Put, Name: CheckpointName(s.at, msg.Windows), Seat: s.at, Windows: msg.Windows, Msg: msg})
	case *messages.Params:
		if err := msg.Check(m.cfg.Run.ID, i, visible, hidden); err != nil || m.averages[i] == nil {
			m.log.Warn("bad parameters to average", "slave", e.From, "rbm", i, "error", err)
			return
		}
		m.average(s, msg)
	case *messages.Weights:
		if err := msg.Check(m.cfg.Run.ID, i, visible, hidden); err != nil {
			m.Abort(now, fmt.Errorf("rbm %d: slave %s sent bad weights: %w", i, e.From, err))
			return
		}
		if s.weights != nil {
			return
		}
		s.weights = msg
		m.finished(i)
		m.sawTrained()
	case *messages.Error:
		if msg.Stopped {
			m.left(now, s, e.From, msg.Text)
			return
		}
		m.Abort(now, fmt.Errorf("%s on slave %s: %s", m.where(s.at), e.From, msg.Text))
	}
}

// finished takes the weights of RBM i once every replica of it sent its
// own: the RBM's weights are its slave's, or, for replicas, their last
// average with their statistics summed. The run is over when every RBM's
// are in.
func (m *Master) finished(i int) {
	if m.weights[i] != nil {
		return
	}
	var w *messages.Weights
	if a := m.averages[i]; a == nil {
		w = m.seats[i][0].weights
	} else {
		if slices.ContainsFunc(m.seats[i], func(s *seat) bool { return s.weights == nil }) || !a.over() {
			return
		}
		w = a.weights(m.seats[i])
	}
	m.weights[i] = w
	m.store(StoreOp{Kind: Put, Name: WeightsName(i), Seat: Seat{RBM: i}, Windows: -1, Msg: w})
	if m.complete() && m.phase == running {
		m.log.Info("every RBM is trained")
		m.stopSlaves("the run is complete")
		m.phase = over
	}
}

// reporter returns the seat a slave's report is about, if it counts: it
// must come from the current slave of its seat, in this run. A lost
// slave's late words are answered with a stop.
func (m *Master) reporter(now time.Duration, e Envelope) (*seat, bool) {
	var id string
	var inc uint32
	var at Seat
	switch msg := e.Msg.(type) {
	case *messages.Status:
		id, inc, at = msg.RunID, msg.Incarnation, Seat{msg.RBM, msg.Replica}
	case *messages.Checkpoint:
		id, inc, at = msg.RunID, msg.Incarnation, Seat{msg.RBM, msg.Replica}
	case *messages.Params:
		id, inc, at = msg.RunID, msg.Incarnation, Seat{msg.RBM, msg.Replica}
	case *messages.Weights:
		id, inc, at = msg.RunID, msg.Incarnation, Seat{msg.RBM, msg.Replica}
	case *messages.Error:
		id, inc, at = msg.RunID, msg.Incarnation, Seat{msg.RBM, msg.Replica}
	default:
		return nil, false
	}
	if ok, reason := m.cfg.Run.matches(id, inc); !ok {
		m.rejected.Add(reason)
		if reason == messages.RejectStale && inc < m.cfg.Run.Incarnation && !m.known(e.From) {
			// A slave of an earlier incarnation of this master: it stops,
			// and its supervisor may bring it back to register. Not once
			// its name has registered again: the stop would reach the new
			// process, after its admission.
			m.send(e.From, &messages.Stop{RunID: id, Incarnation: inc, Reason: "the master restarted"})
		}
		return nil, false
	}
	s := m.seat(at)
	if s == nil || m.phase == gathering {
		return nil, false
	}
	if st, ok := e.Msg.(*messages.Status); ok && s.slave == e.From {
		if st.Process != s.process.process {
			// An earlier process of the name, replaced by a new one.
			m.send(e.From, &messages.Stop{RunID: id, Incarnation: inc, Reason: "replaced by a new process of its name", Process: st.Process})
			return nil, false
		}
		if s.lost != nil && s.replacement == "" && m.phase == running {
			m.takeBack(now, s)
		}
	}
	if s.slave != e.From || s.lost != nil || !s.assigned {
		if s.slave != e.From && m.phase == running {
			m.send(e.From, &messages.Stop{RunID: m.cfg.Run.ID, Incarnation: m.cfg.Run.Incarnation, Reason: "declared lost"})
		}
		return nil, false
	}
	return s, true
}

func (m *Master) status(s *seat, msg *messages.Status) {
	i := s.at.RBM
	if before := s.rejections(); msg.Rejected.Total() > before.Total() {
		// Duplicates and gaps come with resends, after a loss; the rest is
		// input nobody should have sent.
		log := m.log.Warn
		if suspicious(msg.Rejected) == suspicious(before) {
			log = m.log.Info
		}
		log("a slave dropped messages on its input", "slave", s.slave, "rbm", i, "rejected", msg.Rejected.String())
	}
	s.batches, s.status = msg.Batches, msg
	s.confirmed, s.from = true, nil
	if up, down := m.neighbours(s.at); !slices.Equal(msg.Upstream, up) || !slices.Equal(msg.Downstream, down) {
		m.send(s.slave, m.assignment(s)) // a relink lost on the way
	}
	m.sawStatus(s, msg)
	if f := m.cfg.Observer.Reported; f != nil {
		f(m.slaveStats(i, s.slave, msg))
	}
	stats, epochs := m.progress(i)
	h := m.cfg.Observer.Hooks
	if h.Window != nil {
		h.Window(stats)
	}
	if epochs > m.announced[i] {
		m.announced[i] = epochs
		if h.Epoch != nil {
			h.Epoch(stats)
		}
	}
}

// maybeRun starts the run once every seat's slave has joined and the
// checkpoints of a resumed run are loaded.
func (m *Master) maybeRun(now time.Duration) {
	if m.phase != gathering || len(m.joined) < m.slaves || m.loading > 0 {
		return
	}
	m.phase = running
	seats := m.all()
	for n, j := range m.seating(seats) {
		s := seats[n]
		s.process = j
		s.slave, s.seen, s.floor = s.process.name, now, m.starts[s.at].GetWindows()
	}
	resume := m.cfg.Stored != nil
	for _, s := range seats {
		m.assign(s, resume, m.starts[s.at])
	}
	for i, a := range m.averages {
		if a != nil {
			// The replicas resume together (see updateKeeps), after the
			// averages their checkpoint follows.
			a.round = m.seats[i][0].keep/m.cfg.SyncEvery + 1
		}
	}
	c := m.cfg.Stages[0]
	m.src = pipeline.NewSource(m.cfg.Data, m.cfg.N, c.Visible, c.BatchSize, c.K, m.cfg.ShuffleSeed).WithPrecision(m.cfg.DataPrecision)
	if m.cfg.Labels != nil {
		m.src.WithLabels(m.cfg.Labels)
	}
	first := uint64(math.MaxUint64)
	var names []string
	for _, s := range m.seats[1] {
		first = min(first, m.replica(s.at).Global(uint64(m.starts[s.at].GetWindows())))
		names = append(names, s.slave)
	}
	m.feed = NewDealer(m.cfg.Run, MasterName, Alone, 0, names, first)
	m.feed.SetInFlight(m.cfg.Timing.ResendAfter)
	m.feed.Regenerate(func(g uint64) *pipeline.Window { return m.src.Again(int(g)) })
	for range first {
		m.src.NextOf(c) // dealt before the resume point
	}
	m.starts = nil
}

// seating returns the slaves gathered in the order of seats: those
// cfg.Seating names at their seat, the others in the order they joined.
func (m *Master) seating(seats []*seat) []joined {
	order := make([]joined, len(seats))
	taken := make([]bool, len(m.joined))
	for k, j := range m.joined {
		at, ok := m.cfg.Seating[j.name]
		if !ok {
			continue
		}
		if n := slices.IndexFunc(seats, func(s *seat) bool { return s.at == at }); n >= 0 && order[n].name == "" {
			order[n], taken[k] = j, true
		}
	}
	next := 0
	for i := range order {
		for order[i].name == "" && next < len(m.joined) {
			if !taken[next] {
				order[i], taken[next] = m.joined[next], true
			}
			next++
		}
	}
	return order
}

// pumpFeed deals data windows to RBM_1 as far as its credit goes.
func (m *Master) pumpFeed(now time.Duration) {
	c := m.cfg.Stages[0]
	for !m.dealt && m.feed.CanSend() {
		w, ok := m.src.NextOf(c)
		if !ok {
			m.dealt = true
			m.out.Messages = append(m.out.Messages, m.feed.Close(c.LastEpoch(m.cfg.N))...)
			return
		}
		m.out.Messages = append(m.out.Messages, m.feed.Send(now, w))
		m.pass(FirstDealt)
	}
}

func (m *Master) assignment(s *seat) *messages.Assign {
	up, down := m.neighbours(s.at)
	c := m.cfg
	st := c.Stages[s.at.RBM-1]
	a := assignment(c.Run, st, m.L, c.N, LinkCredits(c.Credits, st, c.N), c.CheckpointEvery, up, down)
	a.Replica, a.Replicas = s.at.Replica, len(m.seats[s.at.RBM])
	if a.Replicas > 1 {
		a.SyncEvery = c.SyncEvery
	}
	a.Process = s.process.process
	return a
}

// assign sends seat s to its slave, with the checkpoint to resume from
// when resume is set (nil: from the beginning).
func (m *Master) assign(s *seat, resume bool, from *messages.Checkpoint) {
	a := m.assignment(s)
	st := m.cfg.Stages[s.at.RBM-1]
	resume = resume || st.Net != nil // a network starts from the weights it is handed
	a.Resume = resume
	m.send(s.slave, a)
	s.from = nil
	if resume {
		if from == nil && st.Net != nil {
			from = CheckpointOf(m.cfg.Run, st, pipeline.NewNetStage(st).Snapshot())
			from.Replica = s.at.Replica
		}
		if from == nil {
			from = &messages.Checkpoint{RunID: m.cfg.Run.ID, Incarnation: m.cfg.Run.Incarnation, RBM: s.at.RBM, Replica: s.at.Replica}
		}
		m.send(s.slave, from)
		s.from = from
	}
	s.assigned, s.confirmed = true, false
	s.base, s.done = batchesOf(from), false
	m.log.Info("assigned", "slave", s.slave, "rbm", s.at.RBM, "replica", s.at.Replica, "size", fmt.Sprintf("%dx%d", a.Visible, a.Hidden), "from_window", from.GetWindows())
}

// stopSlaves tells every current slave to stop.
func (m *Master) stopSlaves(reason string) {
	m.each(func(s *seat) {
		if s.slave != "" {
			m.send(s.slave, &messages.Stop{RunID: m.cfg.Run.ID, Incarnation: m.cfg.Run.Incarnation, Reason: reason})
		}
	})
	m.stopSpares(reason)
}

// Interrupt stops a run the master itself was told to stop (SIGINT):
// every slave leaves a checkpoint and stops, and the master waits a little
// for those checkpoints, so that the run can resume.
func (m *Master) Interrupt(now time.Duration) {
	switch m.phase {
	case over:
		return
	case running:
		m.stopSlaves("the master was interrupted")
		m.phase, m.deadline = stopping, now+m.cfg.Timing.DrainGrace+2*time.Second
	default:
		m.stopSlaves("the master was interrupted")
		m.phase = over
	}
	m.err = ErrInterrupted
}

func (m *Master) allLeft() bool {
	return !slices.ContainsFunc(m.all(), func(s *seat) bool { return m.weights[s.at.RBM] == nil && s.weights == nil && !s.gone })
}

// left notes that the slave of seat s stopped on request: when the master
// is stopping the run it is one fewer to wait for; otherwise (a signal of
// its own stopped it) it is lost, at once.
func (m *Master) left(now time.Duration, s *seat, slave, text string) {
	i := s.at.RBM
	s.gone = true
	if m.phase == stopping {
		if m.allLeft() {
			m.phase = over
		}
		return
	}
	m.log.Warn("slave stopped", "slave", slave, "rbm", i, "said", text)
	if m.cfg.CheckpointEvery <= 0 {
		m.Abort(now, fmt.Errorf("%w: slave %s (rbm %d) stopped (%s), and without checkpoints (reliability.checkpoint_every = 0) no replacement can take over",
			ErrSlaveLost, slave, i, text))
		return
	}
	m.lose(now, s, true)
}

// Trained returns the trained RBMs in order, once the run is over without
// error. An RBM with replicas names all their slaves, joined by "+".
func (m *Master) Trained() []Trained {
	var out []Trained
	for i := 1; i <= m.L; i++ {
		w := m.weights[i]
		slave := strings.Join(m.names(i), "+")
		var rejected messages.Rejections
		for _, s := range m.seats[i] {
			for reason, n := range s.rejections() {
				rejected[reason] += n
			}
		}
		cfg := m.cfg.Stages[i-1]
		t := Trained{Params: w.W}
		if cfg.Net == nil {
			t = Trained{RBM: &rbm.RBM{Visible: w.Visible, Hidden: w.Hidden, Units: cfg.Units, W: w.W, A: w.A, B: w.B}}
		}
		out = append(out, Trained{
			Slave: slave, RBM: t.RBM, Params: t.Params, BytesIn: int64(w.BytesIn), BytesOut: int64(w.BytesOut), Rejected: rejected,
			Stats: pipeline.Stats{
				Index: i, Epoch: cfg.Epochs - 1, Batches: w.Batches, Recon: w.ReconErrors,
				Busy: Seconds(w.BusySeconds), WaitInput: Seconds(w.WaitSeconds), State: pipeline.Done, Worker: slave,
			},
		})
	}
	return out
}
