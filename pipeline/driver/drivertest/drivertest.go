// Package drivertest is the driver's contract for transports: one script
// per field of protocol.Output, each run over nodes of a transport under
// test, so that every transport shows that its nodes carry out every field
// (natsnet's tests run it over an embedded NATS server). A field added to
// Output fails Run until it has a script here.
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

// Network is a transport under test: it returns the transport of a node
// named name (protocol.MasterName or Slave) of run RunID, ready to receive
// what the other sends it, and the deliveries that reach that node. It
// ends them when t does.
type Network func(t *testing.T, name string) (driver.Transport, <-chan driver.Delivery)

// recording runs work at once, noting every kind handed to it, and stands a
// stub in for the training of a scripted job (it has no stage).
type recording struct{ works []driver.Work }

func (r *recording) Go(w driver.Work, fn, done func()) {
	r.works = append(r.works, w)
	if w == driver.TrainWork {
		fn = func() {}
	}
	driver.Inline{}.Go(w, fn, done)
}

func master(t *testing.T, c driver.Config) *driver.Node {
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
	return n
}

func slave(t *testing.T, c driver.Config) *driver.Node {
	t.Helper()
	n, err := driver.NewSlave(protocol.SlaveConfig{Name: Slave, Timing: protocol.DefaultTiming(time.Minute, time.Second)}, c)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(n.Stop)
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
		tr, _ := net(t, protocol.MasterName)
		_, in := net(t, Slave)
		n := master(t, driver.Config{Transport: tr, Executor: driver.Inline{}})
		n.Script(once(protocol.Output{Messages: []protocol.Envelope{{From: protocol.MasterName, To: Slave, Msg: &messages.Stop{RunID: RunID}}}}))
		n.Flush()
		timeout := time.After(10 * time.Second)
		for {
			select {
			case d := <-in:
				if _, ok := d.Env.Msg.(*messages.Stop); ok && !d.Rejected && d.Env.From == protocol.MasterName {
					return
				}
			case <-timeout:
				t.Fatalf("the master's message did not reach %s in 10s", Slave)
			}
		}
	},
	"Job": func(t *testing.T, net Network) {
		tr, _ := net(t, Slave)
		rec := &recording{}
		n := slave(t, driver.Config{Transport: tr, Executor: rec})
		n.Script(once(protocol.Output{Job: &protocol.Job{}}))
		if err := n.Flush(); err != nil {
			t.Fatalf("Flush of a job: %v", err)
		}
		if !slices.Equal(rec.works, []driver.Work{driver.TrainWork}) || n.Busy() {
			t.Errorf("work %v, busy %v after it ended; want one job, ended", rec.works, n.Busy())
		}
	},
	"Store": func(t *testing.T, net Network) {
		tr, _ := net(t, protocol.MasterName)
		store := protocol.NewMemStore()
		store.Put(context.Background(), "old", []byte{1})
		n := master(t, driver.Config{Transport: tr, Executor: driver.Inline{}, Store: store})
		n.Script(once(protocol.Output{Store: []protocol.StoreOp{{Kind: protocol.Delete, Name: "old"}}}))
		n.Flush()
		n.Script(nil)
		n.Flush()
		if _, err := store.Get(context.Background(), "old"); !errors.Is(err, protocol.ErrNotStored) || n.Busy() {
			t.Errorf("store after a delete: %v, busy %v; want ErrNotStored, idle", err, n.Busy())
		}
	},
	"Respawn": func(t *testing.T, net Network) {
		tr, _ := net(t, protocol.MasterName)
		var got []protocol.Respawn
		respawn := func(_ context.Context, rbm int, lost string) error {
			got = append(got, protocol.Respawn{RBM: rbm, Slave: lost})
			return nil
		}
		n := master(t, driver.Config{Transport: tr, Executor: driver.Inline{}, Respawn: respawn})
		n.Script(once(protocol.Output{Respawn: []protocol.Respawn{{RBM: 1, Slave: Slave}}}))
		n.Flush()
		if len(got) != 1 || got[0] != (protocol.Respawn{RBM: 1, Slave: Slave}) {
			t.Errorf("respawned %v; want the slave of RBM 1, %s", got, Slave)
		}
	},
	"Back": func(t *testing.T, net Network) {
		tr, _ := net(t, protocol.MasterName)
		var wanted context.Context
		respawn := func(ctx context.Context, _ int, _ string) error { wanted = ctx; return nil }
		n := master(t, driver.Config{Transport: tr, Executor: driver.Inline{}, Respawn: respawn})
		r := protocol.Respawn{RBM: 1, Slave: Slave}
		n.Script(once(protocol.Output{Respawn: []protocol.Respawn{r}}))
		n.Flush()
		n.Script(once(protocol.Output{Back: []protocol.Respawn{r}}))
		n.Flush()
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
