// Command compose-secrets writes the secrets of pipedbn's docker-compose
// setup: the NATS server's users and permissions (password hashes only), the
// master's identity, the pool of slave identities and one file per slave
// identity for slaves on other hosts.
//
//	compose-secrets [--dir deploy/secrets] [--slaves 8] [--force]
package main

import (
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"

	"github.com/pipedbn/pipedbn/deploy"
)

func main() {
	fs := flag.NewFlagSet("compose-secrets", flag.ContinueOnError)
	dir := fs.String("dir", filepath.Join("deploy", "secrets"), "secrets `DIR`")
	slaves := fs.Int("slaves", 8, "slave identities: the most slaves connected at once")
	force := fs.Bool("force", false, "replace existing secrets (then restart the NATS server)")
	if err := fs.Parse(os.Args[1:]); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return
		}
		os.Exit(2)
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(os.Stderr, "compose-secrets: unexpected argument %q\n", fs.Arg(0))
		os.Exit(2)
	}
	if _, err := deploy.Generate(*dir, deploy.Options{Slaves: *slaves, Force: *force}); err != nil {
		if errors.Is(err, deploy.ErrExist) {
			fmt.Fprintf(os.Stderr, "compose-secrets: %v; keeping them\n", err)
			return
		}
		fmt.Fprintf(os.Stderr, "compose-secrets: %v\n", err)
		os.Exit(1)
	}
	fmt.Printf("compose-secrets: %d slave identities and the master's in %s\n", *slaves, *dir)
}
