package natsnet

import (
	"testing"

	"github.com/hashicorp/go-hclog"

	"github.com/pipedbn/pipedbn/pipeline/driver"
	"github.com/pipedbn/pipedbn/pipeline/driver/drivertest"
	"github.com/pipedbn/pipedbn/pipeline/protocol"
)

// The driver's contract (drivertest) holds over NATS: nodes whose transport
// is an endpoint on an embedded server carry out every field of
// protocol.Output, and a master's message reaches its slave through the
// server. With the nodes as peers of one process (the stage group in the
// master's process), a window to the slave is handed over in memory and
// the rest still goes through the server. The nodes run in Node.Run in
// production, with the driver's executor on goroutines; the scripts drive
// them with driver.Inline (the executor does not depend on the transport,
// and the driver's tests run every field with both).
func TestOutputContract(t *testing.T) {
	srv, err := StartEmbedded()
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Shutdown()
	t.Run("nats", func(t *testing.T) { drivertest.Run(t, contractNetwork(srv, false)) })
	t.Run("peers", func(t *testing.T) { drivertest.Run(t, contractNetwork(srv, true)) })
}

// contractNetwork is a network of endpoints on srv per script; with
// peers, its nodes are the peers of one process too.
func contractNetwork(srv *Embedded, peers bool) drivertest.Network {
	return func(t *testing.T) drivertest.Net {
		var p *driver.Peers
		if peers {
			p = driver.NewPeers()
		}
		return drivertest.Net{Node: func(name string) drivertest.Node {
			ep := contractEndpoint(t, srv, name)
			if p != nil {
				p.Add(name, ep.in.C)
			}
			return drivertest.Node{Transport: ep, Inbox: ep.in.C, Peers: p}
		}}
	}
}

// contractEndpoint is the endpoint of the node name of the contract's run,
// subscribed to what the node's machine receives: a master's reports,
// credits and registrations, a slave's control messages.
func contractEndpoint(t *testing.T, srv *Embedded, name string) *endpoint {
	nc, err := Connect(srv.URL(), "contract-"+name)
	if err != nil {
		t.Fatal(err)
	}
	ep := newEndpoint(nc, name, hclog.NewNullLogger())
	t.Cleanup(func() {
		ep.close()
		nc.Close()
	})
	subs := map[string]family{ctlSubject(name): controls}
	if name == protocol.MasterName {
		run := drivertest.RunID
		subs = map[string]family{reportSubject(run, "*"): reports, creditSubject(run, "*", name): credits, registerSubject("*"): registers}
	}
	for subject, f := range subs {
		if err := ep.subscribe(subject, f, f.limits()); err != nil {
			t.Fatal(err)
		}
	}
	if err := nc.Flush(); err != nil {
		t.Fatal(err)
	}
	return ep
}
