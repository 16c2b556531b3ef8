package driver

import (
	"errors"
	"math/rand/v2"
	"os"
	"runtime"
	"sync"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/pipedbn/pipedbn/blas"
	"github.com/pipedbn/pipedbn/internal/memlimit"
	"github.com/pipedbn/pipedbn/pipeline"
	"github.com/pipedbn/pipedbn/pipeline/protocol"
)

// SlaveOptions configure a slave process, whatever its transport: a
// transport's options embed them beside how it reaches its network.
type SlaveOptions struct {
	// Name identifies the slave (see protocol.CheckName).
	Name string
	// Threads is the number of BLAS threads; 0 means one per CPU.
	Threads int
	// JoinTimeout bounds the wait for a master to answer the registration
	// and then to assign an RBM. Default protocol.DefaultJoinTimeout.
	JoinTimeout time.Duration
	// StatusEvery is the period of status reports to the master; 0:
	// protocol.DefaultTiming's.
	StatusEvery time.Duration
	// FinishTimeout bounds the wait, after the weights are sent, for the
	// master to confirm the end of the run; 0: protocol.DefaultTiming's.
	FinishTimeout time.Duration
	// MasterGoneAfter bounds how long the slave goes on without its
	// master: with no connection to its network (the NATS server), or
	// connected while nothing listens to its status reports (the master
	// was killed, or its run is over). Then it stops as on a signal and
	// ends with an error wrapping protocol.ErrMasterGone (see
	// MasterWatch). Default DefaultMasterGoneAfter; negative: never.
	MasterGoneAfter time.Duration
	// Logger receives the slave's log lines; nil discards them.
	Logger hclog.Logger

	// WindowDelay, if set, makes the slave sleep after every window: it
	// emulates a slower machine (tests, demos of failures and recovery).
	WindowDelay time.Duration

	// Peers, if set, are the nodes of this process the slave hands its
	// link messages to in memory (RunGroup makes them for its group).
	Peers *Peers

	// MemoryLimit returns what the slave may use, to check the RBM it is
	// assigned against (pipeline.StageConfig.SlaveMemory); nil:
	// memlimit.Here, this machine's.
	MemoryLimit func() (memlimit.Limit, bool)

	// AfterWindow, if set, runs after every window with its training time
	// and the input bytes the transport received and the loop has not yet
	// taken: tests slow a slave down with it and watch its backlog.
	AfterWindow func(busy time.Duration, pending int)

	// turn, shared by the slaves of one stage group (RunGroup), lets one
	// of them train at a time.
	turn *sync.Mutex
}

// Defaults fills in the zero fields that have a default.
func (o *SlaveOptions) Defaults() {
	if o.JoinTimeout <= 0 {
		o.JoinTimeout = protocol.DefaultJoinTimeout
	}
	if o.MasterGoneAfter == 0 {
		o.MasterGoneAfter = DefaultMasterGoneAfter
	}
	if o.Threads <= 0 {
		o.Threads = runtime.NumCPU()
	}
	if o.Logger == nil {
		o.Logger = hclog.NewNullLogger()
	}
	if o.MemoryLimit == nil {
		o.MemoryLimit = memlimit.Here
	}
}

// NewSlave returns the node of the slave o describes, whose messages go
// out on t, and gives the process's BLAS o.Threads threads for its
// training.
func (o *SlaveOptions) NewSlave(t Transport) (*Node, error) {
	blas.SetThreads(o.Threads)
	host, _ := os.Hostname()
	cfg := protocol.SlaveConfig{
		Name: o.Name, Host: host, CPUs: o.Threads, PID: os.Getpid(), Process: rand.Uint64() | 1,
		Timing: SlaveTiming(o.JoinTimeout, o.StatusEvery, o.FinishTimeout), Logger: o.Logger,
		Fits: func(s pipeline.StageConfig, f pipeline.Flow) error { return Fits(o.MemoryLimit, s, f) },
	}
	return NewSlave(cfg, Config{Transport: t, Peers: o.Peers, Logger: o.Logger})
}

// Loop returns the loop of the slave o describes, which takes its
// deliveries from inbox (telling taken) while pending returns the bytes
// received and not yet taken: it trains in its group's turn, and after
// every window sleeps WindowDelay and runs AfterWindow.
func (o *SlaveOptions) Loop(inbox chan Delivery, taken func(Delivery), pending func() int) Loop {
	return Loop{Inbox: inbox, Taken: taken, Turn: o.turn, AfterJob: func(began time.Time) {
		if o.WindowDelay > 0 {
			time.Sleep(o.WindowDelay)
		}
		if o.AfterWindow != nil {
			o.AfterWindow(time.Since(began), pending())
		}
	}}
}

// Spare takes the end of a slave's run that the master did not need
// (protocol.ErrClusterFull) for a success, and says so in log; other
// errors it returns as they are.
func Spare(err error, log hclog.Logger) error {
	if errors.Is(err, protocol.ErrClusterFull) {
		log.Info("not needed: the master has all the slaves it needs")
		return nil
	}
	return err
}
