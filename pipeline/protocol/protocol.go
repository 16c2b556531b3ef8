// Package protocol is pipedbn's distributed pre-training protocol as pure
// state machines: the link between a producer and a consumer of windows,
// the slave that trains RBM_i, and the master that coordinates a run. Like
// etcd's raft, it only implements the algorithm: a machine takes inputs (a
// decoded message, the passing of time, a local event such as a trained
// window or a stored checkpoint) and returns outputs (messages to send,
// work to do, checkpoints to store, progress). It starts no goroutine,
// reads no clock and does no I/O: pipeline/driver drives it over a
// transport (pipeline/natsnet over NATS, pipeline/memnet in memory, with
// faults). The stores a driver keeps checkpoints in (MemStore, FileStore)
// live here, beside the Store interface.
//
// The protocol, in the paper's language: the master assigns RBM_i to slave
// i and streams the data, in windows of K mini-batches, to slave 1. Slave i
// trains RBM_i on each window and streams its middle result with B_i to
// slave i+1, whose L_i-copy takes B_i as its visible biases. Every window
// carries its Seq; a consumer grants its producer credit for a bounded
// number of windows, accepts them strictly in order, and asks for them
// again after a gap or a silence. Every C windows a slave checkpoints RBM_i
// to the master, which stores it; a slave that stays silent for LostAfter is
// lost, and a replacement resumes its RBM from a stored checkpoint while
// its neighbours relink. At the end the master collects every RBM_i.
//
// An RBM may have stage replicas (MasterConfig.Replicas): r
// slaves that train it data-parallel, replica k the windows g with g mod r
// = k, dealt by their producer (Dealer) and gathered in order by their
// consumer (Gatherer). Every SyncEvery of their windows they send their
// parameters to the master and train on with the mean it sends back
// (messages.Params); the RBM's weights are the last mean. Each replica is
// a seat of its own, with its own checkpoints, loss and replacement; the
// replicas of an RBM share their keep point, and the master keeps the
// means a replacement may ask for again.
package protocol

import (
	"errors"
	"fmt"
	"regexp"
	"time"

	"github.com/pipedbn/pipedbn/messages"
	"github.com/pipedbn/pipedbn/pipeline"
)

// MasterName is the master's name on the wire: the sender of control
// messages and the producer of RBM_1's data windows.
const MasterName = "master"

// Envelope is a message from one node to another. From is the sender as
// the transport knows it: the master takes a registration only from the
// slave it names (see Master.Receive).
type Envelope struct {
	From, To string
	Msg      messages.Message
}

func (e Envelope) String() string { return fmt.Sprintf("%s -> %s %v", e.From, e.To, e.Msg.Kind()) }

// Timing holds the protocol's periods and timeouts. The user-facing ones
// (JoinTimeout, LostAfter) come from the config; DefaultTiming gives the
// others.
type Timing struct {
	// RegisterEvery is how often a slave repeats its registration until
	// the master answers.
	RegisterEvery time.Duration
	// JoinTimeout bounds the wait for slaves to register (master), for a
	// master to answer and assign an RBM (slave), and for a replacement of
	// a lost slave.
	JoinTimeout time.Duration
	// StatusEvery is the period of a slave's status reports: its heartbeat.
	StatusEvery time.Duration
	// LostAfter declares a slave lost when the master heard nothing from
	// it for this long.
	LostAfter time.Duration
	// RegrantEvery is how often a waiting consumer repeats its credit;
	// ResendAfter how long it hears nothing, or lets pass after asking,
	// before it asks its producer to send the kept windows again.
	RegrantEvery, ResendAfter time.Duration
	// DrainGrace bounds how long a slave asked to stop waits for its last
	// checkpoint to be stored, and how long an interrupted master waits for
	// its slaves' last checkpoints.
	DrainGrace time.Duration
	// WeightsEvery is how often a finished slave sends its weights again
	// until the master confirms the end of the run; FinishTimeout bounds
	// that wait.
	WeightsEvery, FinishTimeout time.Duration
}

// The user-facing timeouts' defaults: cluster.join_timeout and the slave's
// --join-timeout, and reliability.lost_after (three missed status reports
// and a second of slack).
const (
	DefaultJoinTimeout = 60 * time.Second
	DefaultLostAfter   = 4 * time.Second
)

// DefaultTiming returns the protocol's periods, with the user-facing
// timeouts joinTimeout and lostAfter.
func DefaultTiming(joinTimeout, lostAfter time.Duration) Timing {
	return Timing{
		RegisterEvery: time.Second, JoinTimeout: joinTimeout, StatusEvery: time.Second, LostAfter: lostAfter,
		RegrantEvery: 500 * time.Millisecond, ResendAfter: time.Second, DrainGrace: 3 * time.Second,
		WeightsEvery: 5 * time.Second, FinishTimeout: 10 * time.Minute,
	}
}

// WithDefaults returns t with each zero period or timeout replaced by
// DefaultTiming's, with DefaultJoinTimeout and DefaultLostAfter.
func (t Timing) WithDefaults() Timing {
	def := DefaultTiming(DefaultJoinTimeout, DefaultLostAfter)
	for _, f := range []struct{ got, def *time.Duration }{
		{&t.RegisterEvery, &def.RegisterEvery}, {&t.JoinTimeout, &def.JoinTimeout}, {&t.StatusEvery, &def.StatusEvery},
		{&t.LostAfter, &def.LostAfter}, {&t.RegrantEvery, &def.RegrantEvery}, {&t.ResendAfter, &def.ResendAfter},
		{&t.DrainGrace, &def.DrainGrace}, {&t.WeightsEvery, &def.WeightsEvery}, {&t.FinishTimeout, &def.FinishTimeout},
	} {
		if *f.got <= 0 {
			*f.got = *f.def
		}
	}
	return t
}

// Tick is how often a node runs its timers (Master.Tick, Slave.Tick): a
// fifth of the shortest of its periods, so that none fires more than a
// fifth of it late, between 20 and 100 ms. A node ticks while it trains,
// and every tick wakes a thread that takes a CPU from the training's BLAS
// threads for a moment: ticking every 100 ms rather than every 20 saves
// context switches and a little time (measured in
// experiments/results/README.md, "One box, step by step").
func (t Timing) Tick() time.Duration {
	shortest := min(t.RegisterEvery, t.StatusEvery, t.LostAfter, t.RegrantEvery, t.ResendAfter, t.DrainGrace, t.WeightsEvery)
	return min(max(shortest/5, 20*time.Millisecond), 100*time.Millisecond)
}

func (t Timing) check() error {
	for _, d := range []struct {
		name string
		d    time.Duration
	}{
		{"register every", t.RegisterEvery}, {"join timeout", t.JoinTimeout}, {"status every", t.StatusEvery},
		{"lost after", t.LostAfter}, {"regrant every", t.RegrantEvery}, {"resend after", t.ResendAfter},
		{"drain grace", t.DrainGrace}, {"weights every", t.WeightsEvery}, {"finish timeout", t.FinishTimeout},
	} {
		if d.d <= 0 {
			return fmt.Errorf("protocol: timing: %s = %s: want > 0", d.name, d.d)
		}
	}
	return nil
}

var nameRE = regexp.MustCompile(`^[A-Za-z0-9_-]{1,64}$`)

// CheckName reports whether name can name a slave (or a run): 1 to 64
// letters, digits, '_' or '-' (it becomes a NATS subject token), and not
// MasterName.
func CheckName(name string) error {
	if !nameRE.MatchString(name) || name == MasterName {
		return fmt.Errorf("name %q: want 1-64 letters, digits, '_' or '-' (and not %q)", name, MasterName)
	}
	return nil
}

// Errors a slave ends with.
var (
	// ErrStopped: the master stopped the slave before it finished.
	ErrStopped = errors.New("stopped by the master")
	// ErrClusterFull: the master needs no more slaves now.
	ErrClusterFull = errors.New("the master needs no more slaves")
	// ErrNoMaster: no master answered the registration.
	ErrNoMaster = errors.New("no master answered")
	// ErrMasterGone: the slave's driver lost its master for good (the
	// NATS transport's bound on a master that no longer listens).
	ErrMasterGone = errors.New("the master is gone")
	// ErrRefused: the master refused the slave.
	ErrRefused = errors.New("the master refused the slave")
	// ErrNameInUse: another live process has the slave's name.
	ErrNameInUse = errors.New("the slave's name is in use")
)

// ErrSlaveLost is the error of a run whose slave stopped reporting and was
// not replaced.
var ErrSlaveLost = errors.New("slave lost")

// ErrInterrupted is the error of a run the master was told to stop: every
// slave was asked to leave a checkpoint, so that the run can resume.
var ErrInterrupted = errors.New("interrupted")

// Job is a window for the driver to train, outside the slave's state
// machine: it may take long, and the slave goes on answering messages and
// reporting meanwhile. The driver calls Run, then Slave.Trained.
type Job struct {
	Stage pipeline.Model
	// In is the window to train on; Out, nil for the top RBM, receives its
	// middle result.
	In, Out *pipeline.Window
}

// Run trains the window.
func (j *Job) Run() error { return j.Stage.Train(j.In, j.Out) }

// Output is what a machine asks its driver to do after an input.
type Output struct {
	// Messages to send, in order.
	Messages []Envelope
	// Job, from a slave: a window to train (at most one at a time).
	Job *Job
	// Store, from a master: checkpoints and weights to store, load or
	// delete.
	Store []StoreOp
	// Respawn, from a master: lost slaves to restart, where the driver
	// runs them (local slave processes); elsewhere a replacement must
	// register.
	Respawn []Respawn
	// Back, from a master: lost slaves that spoke again before any
	// replacement came and go on; their restart, if still under way, is
	// no longer wanted.
	Back []Respawn
}

// Respawn asks the driver to restart the lost slave of an RBM.
type Respawn struct {
	RBM   int
	Slave string
}
