// Package natsnet carries the pipelined schedule over NATS: links between
// stages with credit-based flow control, the slave that trains one RBM, the
// master's side of the cluster (registration, assignment, collection), and an
// embedded nats-server for the no-setup default. It is the only package that
// imports nats.go.
//
// Subjects are keyed by the identity of their publisher, so that a server
// can allow each participant to publish on its own subjects only:
//
//	pipedbn.register                     slave -> master   Register (request/reply)
//	pipedbn.ctl.<slave>                  master -> slave   Assign, Stop
//	pipedbn.data.<run>.<producer>        producer -> consumer   Chunk..., EndOfStream
//	pipedbn.credit.<run>.<consumer>      consumer -> producer   Credit
//	pipedbn.report.<run>.<slave>         slave -> master   Status, Weights, Error
//
// The master is the producer of RBM_1's input, under the name "master".
package natsnet

import (
	"fmt"
	"regexp"
)

// MasterName is the producer name of the data windows the master feeds to RBM_1.
const MasterName = "master"

// RegisterSubject is where slaves announce themselves.
const RegisterSubject = "pipedbn.register"

func ctlSubject(slave string) string            { return "pipedbn.ctl." + slave }
func dataSubject(run, producer string) string   { return "pipedbn.data." + run + "." + producer }
func creditSubject(run, consumer string) string { return "pipedbn.credit." + run + "." + consumer }
func reportSubject(run, slave string) string    { return "pipedbn.report." + run + "." + slave }
func reportWildcard(run string) string          { return "pipedbn.report." + run + ".*" }

var tokenRE = regexp.MustCompile(`^[A-Za-z0-9_-]{1,64}$`)

// CheckName reports whether name can name a slave (or a run): 1 to 64
// letters, digits, '_' or '-', since it becomes a NATS subject token.
func CheckName(name string) error {
	if !tokenRE.MatchString(name) || name == MasterName {
		return fmt.Errorf("name %q: want 1-64 letters, digits, '_' or '-' (and not %q)", name, MasterName)
	}
	return nil
}
