// Package drivertest is the driver's contract for transports: one script
// per field of protocol.Output, each run over nodes of a transport under
// test, so that every transport shows that its nodes carry out every field
// (natsnet's tests run it over an embedded NATS server, with and without
// driver.Peers in front; memnet's over its event queue, simulated and
// live). A field added to Output fails Run until it has a script here.
package drivertest

import (
	"context"
	"errors"
	"reflect"
	"slices"
	"testing"
	"time"

	"github.com/pipedbn/pipedbn/messages"
	"github.com/pipedbn/pipedbn/pipeline"
	"github.com/pipedbn/pipedbn/pipeline/driver"
	"github.com/pipedbn/pipedbn/pipeline/protocol"
	"github.com/pipedbn/pipedbn/rbm"
)

// RunID is the run the scripts' machines take part in.
const RunID = "r"

// Slave is the name of the scripts' slave.
const Slave = "s1"

// Node is a node of a transport under test, of run RunID.
type Node struct {
	// Transport is the node's, ready to receive what the other node sends
	// it.
	Transport driver.Transport
	// Executor runs the node's jobs, store operations and respawns; nil:
	// driver.Inline. (A transport whose nodes run in Node.Run has the
	// driver's own executor, on goroutines, which the driver's tests
	// check field by field.)
	Executor driver.Executor
	// Inbox delivers what reaches the node, unless Drive takes it.
	Inbox <-chan driver.Delivery
	// Peers, if set, are the nodes of the node's process (a stage group,
	// in the master's process or a slave's); the network has added the
	// node's Inbox to them.
	Peers *driver.Peers
	// Drive, if set, is handed the driver node a script makes of this
	// node before the script flushes it: a transport that calls its nodes'
	// inputs from a loop of its own (memnet's event queue) delivers to it
	// and carries out what it asks for after its work.
	Drive func(*driver.Node)
}

// Net is what one script runs over: the nodes of a fresh network.
type Net struct {
	// Node returns the node named name (protocol.MasterName or Slave).
	Node func(name string) Node
	// Settle, if set, lets the network's time pass until what was sent
	// arrived and the work handed to the nodes' executors ended; nil: the
	// network delivers on its own (a script waits 10s for a message) and
	// its executors end work before Go returns.
	Settle func()
}

// Network is a transport under test: it returns the network of the
// script t runs, and ends it when t does.
type Network func(t *testing.T) Net

func (x Net) settle() {
	if x.Settle != nil {
		x.Settle()
	}
}

// config is the driver configuration of nd.
func (nd Node) config() driver.Config {
	x := nd.Executor
	if x == nil {
		x = driver.Inline{}
	}
	return driver.Config{Transport: nd.Transport, Executor: x, Peers: nd.Peers}
}

// recording runs work with an executor, noting every kind handed to it,
// and stands a stub in for the training of a scripted job (it has no
// stage).
type recording struct {
	inner driver.Executor
	works []driver.Work
}

func (r *recording) Go(w driver.Work, fn, done func()) {
	r.works = append(r.works, w)
	if w == driver.TrainWork {
		fn = func() {}
	}
	r.inner.Go(w, fn, done)
}

func master(t *testing.T, nd Node, c driver.Config) *driver.Node {
	t.Helper()
	st := pipeline.StageConfig{Index: 1, Visible: 2, Hidden: 2, Units: rbm.Bernoulli, Epochs: 1, BatchSize: 1, K: 1, CDK: 1}
	n, err := driver.NewMaster(protocol.MasterConfig{
		Run: protocol.Run{ID: RunID, Incarnation: 1}, Stages: []pipeline.StageConfig{st}, Data: make([]float32, 2), N: 1, Credits: 1,
		Timing: protocol.DefaultTiming(time.Minute, time.Second),
	}, c)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(n.Stop)
	if nd.Drive != nil {
		nd.Drive(n)
	}
	return n
}

func slave(t *testing.T, nd Node, c driver.Config) *driver.Node {
	t.Helper()
	n, err := driver.NewSlave(protocol.SlaveConfig{Name: Slave, Timing: protocol.DefaultTiming(time.Minute, time.Second)}, c)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(n.Stop)
	if nd.Drive != nil {
		nd.Drive(n)
	}
	return n
}

// once returns a Ready that returns o, and then nothing.
func once(o protocol.Output) func() protocol.Output {
	done := false
	return func() protocol.Output {
		if done {
			return protocol.Output{}
		}
		done = true
		return o
	}
}

// Scripts are, per field of protocol.Output, a script that makes a node of
// net emit it and checks its effect where a transport sees it.
var Scripts = map[string]func(t *testing.T, net Network){
	"Messages": func(t *testing.T, net Network) {
		x := net(t)
		m, s := x.Node(protocol.MasterName), x.Node(Slave)
		n := master(t, m, m.config())
		send := []messages.Message{&messages.Stop{RunID: RunID}}
		if m.Peers != nil {
			// A window to RBM_1's slave in the master's process (the
			// in-master stage group) is handed over in memory.
			send = append(send, &messages.Chunk{RunID: RunID, RBM: 1, Rows: 1, Cols: 2, Data: make([]float32, 2), BatchRows: []int{1}, Bias: make([]float32, 2)})
		}
		var out []protocol.Envelope
		for _, msg := range send {
			out = append(out, protocol.Envelope{From: protocol.MasterName, To: Slave, Msg: msg})
		}
		n.Script(once(protocol.Output{Messages: out}))
		n.Flush()
		x.settle()
		timeout := time.After(10 * time.Second)
		var missing []messages.Kind
		for _, msg := range send {
			missing = append(missing, msg.Kind())
		}
		for len(missing) > 0 {
			select {
			case d := <-s.Inbox:
				if d.Rejected || d.Env.Msg == nil || d.Env.From != protocol.MasterName {
					continue
				}
				if i := slices.Index(missing, d.Env.Msg.Kind()); i >= 0 {
					missing = slices.Delete(missing, i, i+1)
				}
			case <-timeout:
				t.Fatalf("the master's %v did not reach %s in 10s", missing, Slave)
			}
		}
	},
	"Job": func(t *testing.T, net Network) {
		x := net(t)
		nd := x.Node(Slave)
		c := nd.config()
		rec := &recording{inner: c.Executor}
		c.Executor = rec
		n := slave(t, nd, c)
		n.Script(once(protocol.Output{Job: &protocol.Job{}}))
		if err := n.Flush(); err != nil {
			t.Fatalf("Flush of a job: %v", err)
		}
		x.settle()
		if !slices.Equal(rec.works, []driver.Work{driver.TrainWork}) || n.Busy() {
			t.Errorf("work %v, busy %v after it ended; want one job, ended", rec.works, n.Busy())
		}
	},
	"Store": func(t *testing.T, net Network) {
		x := net(t)
		nd := x.Node(protocol.MasterName)
		store := protocol.NewMemStore()
		store.Put(context.Background(), "old", []byte{1})
		c := nd.config()
		c.Store = store
		n := master(t, nd, c)
		n.Script(once(protocol.Output{Store: []protocol.StoreOp{{Kind: protocol.Delete, Name: "old"}}}))
		n.Flush()
		x.settle()
		n.Script(nil)
		n.Flush()
		if _, err := store.Get(context.Background(), "old"); !errors.Is(err, protocol.ErrNotStored) || n.Busy() {
			t.Errorf("store after a delete: %v, busy %v; want ErrNotStored, idle", err, n.Busy())
		}
	},
	"Respawn": func(t *testing.T, net Network) {
		x := net(t)
		nd := x.Node(protocol.MasterName)
		var got []protocol.Respawn
		c := nd.config()
		c.Respawn = func(_ context.Context, rbm int, lost string) error {
			got = append(got, protocol.Respawn{RBM: rbm, Slave: lost})
			return nil
		}
		n := master(t, nd, c)
		n.Script(once(protocol.Output{Respawn: []protocol.Respawn{{RBM: 1, Slave: Slave}}}))
		n.Flush()
		x.settle()
		if len(got) != 1 || got[0] != (protocol.Respawn{RBM: 1, Slave: Slave}) {
			t.Errorf("respawned %v; want the slave of RBM 1, %s", got, Slave)
		}
	},
	"Back": func(t *testing.T, net Network) {
		x := net(t)
		nd := x.Node(protocol.MasterName)
		var wanted context.Context
		c := nd.config()
		c.Respawn = func(ctx context.Context, _ int, _ string) error { wanted = ctx; return nil }
		n := master(t, nd, c)
		r := protocol.Respawn{RBM: 1, Slave: Slave}
		n.Script(once(protocol.Output{Respawn: []protocol.Respawn{r}}))
		n.Flush()
		x.settle()
		n.Script(once(protocol.Output{Back: []protocol.Respawn{r}}))
		n.Flush()
		x.settle()
		if wanted == nil || wanted.Err() == nil {
			t.Error("the restart of a slave that came back was not called off")
		}
	},
}

// Run checks that every field of protocol.Output has a script, and runs
// each over net.
func Run(t *testing.T, net Network) {
	typ := reflect.TypeFor[protocol.Output]()
	for i := range typ.NumField() {
		if _, ok := Scripts[typ.Field(i).Name]; !ok {
			t.Errorf("protocol.Output.%s: no contract script: the driver does not handle it", typ.Field(i).Name)
		}
	}
	if len(Scripts) != typ.NumField() {
		t.Errorf("%d contract scripts for %d fields of protocol.Output", len(Scripts), typ.NumField())
	}
	for field, script := range Scripts {
		t.Run(field, func(t *testing.T) { script(t, net) })
	}
}
