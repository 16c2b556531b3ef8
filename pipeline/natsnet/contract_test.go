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
// server.
func TestOutputContract(t *testing.T) {
	srv, err := StartEmbedded()
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Shutdown()
	drivertest.Run(t, func(t *testing.T, name string) (driver.Transport, <-chan driver.Delivery) {
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
		return ep, ep.in.C
	})
}
