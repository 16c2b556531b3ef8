package driver

import (
	"context"
	"errors"
	"reflect"
	"slices"
	"testing"
	"time"

	"github.com/pipedbn/pipedbn/messages"
	"github.com/pipedbn/pipedbn/pipeline"
	"github.com/pipedbn/pipedbn/pipeline/protocol"
	"github.com/pipedbn/pipedbn/rbm"
)

// fakeTransport records what a node sends and the links it follows.
type fakeTransport struct {
	sent    []protocol.Envelope
	follows int
}

func (f *fakeTransport) Send(_ string, e protocol.Envelope) { f.sent = append(f.sent, e) }
func (f *fakeTransport) Now() time.Duration                 { return 0 }
func (f *fakeTransport) Follow(string, []string, []string) error {
	f.follows++
	return nil
}

// recording wraps an executor: it notes every kind of work handed to it,
// and stands a stub in for the training of a scripted job (no stage).
type recording struct {
	inner Executor
	works []Work
}

func (r *recording) Go(w Work, fn, done func()) {
	r.works = append(r.works, w)
	if w == TrainWork {
		fn = func() {}
	}
	r.inner.Go(w, fn, done)
}

// executors are the ways a node's work is run: at once, and on goroutines
// with its end posted to the loop (settle runs what was posted).
func executors() map[string]func() (Executor, func()) {
	return map[string]func() (Executor, func()){
		"inline": func() (Executor, func()) { return Inline{}, func() {} },
		"async": func() (Executor, func()) {
			post := make(chan func(), 16)
			a := &async{post: post, life: context.Background()}
			return a, func() {
				select {
				case f := <-post:
					f()
				case <-time.After(5 * time.Second):
					panic("async: nothing posted in 5s")
				}
			}
		},
	}
}

func contractMaster(t *testing.T, c Config) *Node {
	t.Helper()
	st := pipeline.StageConfig{Index: 1, Visible: 2, Hidden: 2, Units: rbm.Bernoulli, Epochs: 1, BatchSize: 1, K: 1, CDK: 1}
	n, err := NewMaster(protocol.MasterConfig{
		Run: protocol.Run{ID: "r", Incarnation: 1}, Stages: []pipeline.StageConfig{st}, Data: make([]float32, 2), N: 1, Credits: 1,
		Timing: protocol.DefaultTiming(time.Minute, time.Second),
	}, c)
	if err != nil {
		t.Fatal(err)
	}
	return n
}

func contractSlave(t *testing.T, c Config) *Node {
	t.Helper()
	n, err := NewSlave(protocol.SlaveConfig{Name: "s1", Timing: protocol.DefaultTiming(time.Minute, time.Second)}, c)
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// contract is, per field of protocol.Output, a script that emits it and
// checks its effect where a transport sees it.
var contract = map[string]func(t *testing.T, x Executor, settle func()){
	"Messages": func(t *testing.T, x Executor, _ func()) {
		tr := &fakeTransport{}
		n := contractMaster(t, Config{Transport: tr, Executor: x})
		e := protocol.Envelope{From: protocol.MasterName, To: "s1", Msg: &messages.Stop{RunID: "r"}}
		n.ready = func() protocol.Output { return protocol.Output{Messages: []protocol.Envelope{e}} }
		n.Flush()
		if len(tr.sent) != 1 || tr.sent[0].To != "s1" {
			t.Errorf("sent %v; want the message to s1", tr.sent)
		}
	},
	"Job": func(t *testing.T, x Executor, settle func()) {
		tr, rec := &fakeTransport{}, &recording{inner: x}
		n := contractSlave(t, Config{Transport: tr, Executor: rec})
		n.ready = func() protocol.Output { return protocol.Output{Job: &protocol.Job{}} }
		n.Flush()
		n.ready = n.slave.Ready
		settle()
		if !slices.Equal(rec.works, []Work{TrainWork}) || n.training {
			t.Errorf("work %v, training %v after it ended; want one job, ended", rec.works, n.training)
		}
		if tr.follows == 0 {
			t.Error("the slave's links were not followed")
		}
	},
	"Store": func(t *testing.T, x Executor, settle func()) {
		store := protocol.NewMemStore()
		store.Put(context.Background(), "old", []byte{1})
		n := contractMaster(t, Config{Transport: &fakeTransport{}, Executor: x, Store: store})
		n.ready = func() protocol.Output {
			return protocol.Output{Store: []protocol.StoreOp{{Kind: protocol.Delete, Name: "old"}}}
		}
		n.Flush()
		n.ready = n.master.Ready
		settle()
		if _, err := store.Get(context.Background(), "old"); !errors.Is(err, protocol.ErrNotStored) || !n.store.idle() {
			t.Errorf("store after a delete: %v, idle %v; want ErrNotStored, idle", err, n.store.idle())
		}
	},
	"Respawn": func(t *testing.T, x Executor, settle func()) {
		var got []protocol.Respawn
		respawn := func(_ context.Context, rbm int, lost string) error {
			got = append(got, protocol.Respawn{RBM: rbm, Slave: lost})
			return nil
		}
		n := contractMaster(t, Config{Transport: &fakeTransport{}, Executor: x, Respawn: respawn})
		n.ready = func() protocol.Output { return protocol.Output{Respawn: []protocol.Respawn{{RBM: 1, Slave: "s1"}}} }
		n.Flush()
		settle()
		if len(got) != 1 || got[0] != (protocol.Respawn{RBM: 1, Slave: "s1"}) {
			t.Errorf("respawned %v; want the slave of RBM 1, s1", got)
		}
	},
	"Back": func(t *testing.T, x Executor, settle func()) {
		var wanted context.Context
		respawn := func(ctx context.Context, _ int, _ string) error { wanted = ctx; return nil }
		n := contractMaster(t, Config{Transport: &fakeTransport{}, Executor: x, Respawn: respawn})
		r := protocol.Respawn{RBM: 1, Slave: "s1"}
		n.ready = func() protocol.Output { return protocol.Output{Respawn: []protocol.Respawn{r}} }
		n.Flush()
		settle()
		n.ready = func() protocol.Output { return protocol.Output{Back: []protocol.Respawn{r}} }
		n.Flush()
		if wanted == nil || wanted.Err() == nil {
			t.Error("the restart of a slave that came back was not called off")
		}
	},
}

// Every field of protocol.Output has a script in contract, and a node
// carries each out, with every executor: a field added to Output fails
// this test until the driver handles it.
func TestOutputContract(t *testing.T) {
	typ := reflect.TypeFor[protocol.Output]()
	for i := range typ.NumField() {
		if _, ok := contract[typ.Field(i).Name]; !ok {
			t.Errorf("protocol.Output.%s: no contract: the driver does not handle it", typ.Field(i).Name)
		}
	}
	if len(contract) != typ.NumField() {
		t.Errorf("%d contracts for %d fields of protocol.Output", len(contract), typ.NumField())
	}
	for name, mk := range executors() {
		for field, check := range contract {
			t.Run(name+"/"+field, func(t *testing.T) {
				x, settle := mk()
				check(t, x, settle)
			})
		}
	}
}
