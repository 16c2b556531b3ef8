// Command slave joins a pipedbn cluster and trains the RBM the master gives
// it: it receives RBM_{i-1}'s middle results over NATS, trains RBM_i with
// CD-k, and streams its own middle results and hidden biases to slave i+1.
//
//	slave [--nats URL] [--name NAME] [--credentials FILE] [--serve] [--threads N] [--join-timeout 60s] [--master-gone-after 5m] [--cpuprofile FILE]
//	slave version
//
// `slave -h` prints its flags and an example on stdout. A slave whose
// master has been unreachable for --master-gone-after (no connection to
// NATS, or no master listening to its reports) exits with status 3; with
// --serve it waits for the next master instead.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/pipedbn/pipedbn/cmd/internal/slavecmd"
	"github.com/pipedbn/pipedbn/internal/memlimit"
)

func main() {
	// A slave checks the RBM it is assigned against what it may use; a
	// soft limit keeps the heap it admits from growing to twice that.
	memlimit.SetSoft()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := slavecmd.Main(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	switch {
	case err == nil, errors.Is(err, flag.ErrHelp):
	case errors.Is(err, slavecmd.ErrUsage):
		fmt.Fprintf(os.Stderr, "slave: %v\n%sRun 'slave -h' for the flags.\n", err, slavecmd.Usage)
		os.Exit(2)
	case errors.Is(err, context.Canceled):
		fmt.Fprintln(os.Stderr, "slave: interrupted")
		os.Exit(130)
	case errors.Is(err, slavecmd.ErrMasterGone):
		fmt.Fprintf(os.Stderr, "slave: %v\n", err)
		os.Exit(slavecmd.ExitMasterGone)
	default:
		fmt.Fprintf(os.Stderr, "slave: %v\n", err)
		os.Exit(1)
	}
}
