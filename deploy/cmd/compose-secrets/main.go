// Command compose-secrets writes the secrets of pipedbn's docker-compose
// setup: the NATS server's users and permissions (password hashes only), the
// master's identity, the pool of slave identities and one file per slave
// identity for slaves on other hosts; and the TLS of the Swarm stack's NATS
// cluster: a private CA and the servers' certificate.
//
//	compose-secrets [--dir deploy/secrets] [--slaves 8] [--tls-hosts a.example,10.0.0.5] [--force]
package main

import (
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/pipedbn/pipedbn/deploy"
)

func main() {
	fs := flag.NewFlagSet("compose-secrets", flag.ContinueOnError)
	dir := fs.String("dir", filepath.Join("deploy", "secrets"), "secrets `DIR`")
	slaves := fs.Int("slaves", 8, "slave identities: the most slaves connected at once")
	force := fs.Bool("force", false, "replace existing secrets (then restart the NATS server)")
	tlsHosts := fs.String("tls-hosts", "", "more DNS names or IP addresses, separated by commas, for the NATS servers' TLS certificate (besides "+strings.Join(deploy.TLSHosts, ", ")+")")
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
	if _, err := deploy.Generate(*dir, deploy.Options{Slaves: *slaves, Force: *force}); errors.Is(err, deploy.ErrExist) {
		fmt.Fprintf(os.Stderr, "compose-secrets: %v; keeping them\n", err)
	} else if err != nil {
		fmt.Fprintf(os.Stderr, "compose-secrets: %v\n", err)
		os.Exit(1)
	} else {
		fmt.Printf("compose-secrets: %d slave identities and the master's in %s\n", *slaves, *dir)
	}
	// The NATS cluster's TLS (deploy/stack.yml): a CA and the servers'
	// certificate, kept like the identities.
	var hosts []string
	if *tlsHosts != "" {
		hosts = strings.Split(*tlsHosts, ",")
	}
	names, err := deploy.GenerateTLS(*dir, deploy.TLSOptions{Hosts: hosts, Force: *force})
	switch {
	case errors.Is(err, deploy.ErrExist):
		fmt.Fprintf(os.Stderr, "compose-secrets: TLS: %v; keeping them\n", err)
	case err != nil:
		fmt.Fprintf(os.Stderr, "compose-secrets: --tls-hosts %q: %v\n", *tlsHosts, err)
		os.Exit(1)
	default:
		fmt.Printf("compose-secrets: the NATS servers' TLS certificate (for %s) and its CA in %s\n", strings.Join(names, ", "), *dir)
	}
}
