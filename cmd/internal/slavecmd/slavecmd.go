// Package slavecmd is the slave command: its flags, environment and logger,
// wired to natsnet's slave. Both commands run it: cmd/slave is the
// standalone binary, and `master slave ...` is how the master starts its
// local slaves, so that `go run ./cmd/master` needs no second binary.
package slavecmd

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"runtime/pprof"
	"strconv"
	"strings"

	"github.com/hashicorp/go-hclog"

	"github.com/pipedbn/pipedbn/blas"
	"github.com/pipedbn/pipedbn/cmd/internal/version"
	"github.com/pipedbn/pipedbn/config"
	"github.com/pipedbn/pipedbn/pipeline/driver"
	"github.com/pipedbn/pipedbn/pipeline/natsnet"
	"github.com/pipedbn/pipedbn/pipeline/protocol"
)

// Usage is the slave command's synopsis. Its defaults are the flags'
// (TestUsageDefaults).
const Usage = `usage: slave [--nats URL] [--name NAME[,NAME...]] [--credentials FILE] [--serve] [--threads N] [--join-timeout 60s] [--master-gone-after 5m] [--window-delay 0s] [--status-every 1s] [--log-level info] [--cpuprofile FILE]
       slave version
`

// description and example are the rest of the slave's help (slave -h).
const (
	description = `Joins a pipedbn cluster and trains the RBM its master assigns it: it receives RBM_{i-1}'s
middle results over NATS, trains RBM_i with CD-k and streams its own middle results and hidden
biases to the next slave. A master with cluster.slaves > 0 waits for its slaves to join; with
cluster.slaves 0 it starts its own. A slave whose master has been unreachable for
--master-gone-after (no connection to NATS, or no master listening to its reports) leaves a
checkpoint and exits with status 3; with --serve it waits for the next master instead.
` + "`slave version`" + ` prints what the binary was built from.
`
	example = `Example:
  slave --nats nats://10.0.0.1:4222 --name slave-1    # join a master of configs/cluster.yaml on 10.0.0.1
`
)

// ErrUsage marks a bad slave command line.
var ErrUsage = errors.New("usage")

// ErrMasterGone is the error of a slave whose master stayed unreachable for
// --master-gone-after; the slave exits with ExitMasterGone.
var ErrMasterGone = protocol.ErrMasterGone

// ExitMasterGone is the exit status of a slave whose master is gone: not
// 1, so that a supervisor can tell it from a failure of the slave's own.
const ExitMasterGone = 3

// Main parses a slave command line (args without the program name), builds
// the slave's logger on stderr and runs the slave until its run ends (with
// --serve, until ctx ends). A bad command line gives an error wrapping
// ErrUsage; -h prints the help on stdout and gives flag.ErrHelp; `version`
// prints what the binary was built from on stdout.
func Main(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	if len(args) > 0 && args[0] == "version" {
		if len(args) > 1 {
			return fmt.Errorf("%w: version takes no arguments", ErrUsage)
		}
		return version.Write(stdout, "slave")
	}
	fs := flag.NewFlagSet("slave", flag.ContinueOnError)
	// Parse errors are returned, and the help goes to stdout.
	fs.SetOutput(io.Discard)
	host, _ := os.Hostname()
	urlEnv := config.EnvVar("cluster.nats_url") // the master's key, for one environment for both
	url := fs.String("nats", envOr(urlEnv, "nats://127.0.0.1:4222"), "NATS server `URL`, or several separated by commas (a cluster) (env "+urlEnv+")")
	name := fs.String("name", os.Getenv("PIPEDBN_SLAVE_NAME"), "slave `NAME`: letters, digits, '_' and '-' (env PIPEDBN_SLAVE_NAME; default: the user of the claimed identity with --credentials, else hostname-pid); several, comma-separated, run a stage group: one slave per name in this process, training one window at a time with all its threads")
	credsFile := fs.String("credentials", os.Getenv(natsnet.CredentialsEnv), "`FILE` of NATS identities, one user:password a line: the slave claims a free one and takes its user as name (env "+natsnet.CredentialsEnv+")")
	serve := fs.Bool("serve", false, "after a run, wait for the next master instead of exiting")
	threads := fs.Int("threads", 0, "BLAS threads; 0: one per CPU")
	join := fs.Duration("join-timeout", protocol.DefaultJoinTimeout, "how long to wait for a master to answer and assign an RBM")
	gone := fs.Duration("master-gone-after", driver.DefaultMasterGoneAfter, "exit with status 3 once the master has been unreachable this long: no connection to NATS, or no master listening to the slave's reports (with --serve: wait for the next master instead); 0: never")
	level := fs.String("log-level", "info", "log level: trace, debug, info, warn, error")
	delay := fs.Duration("window-delay", 0, "sleep this long after every window, to emulate a slower machine")
	statusEvery := fs.Duration("status-every", protocol.Timing{}.WithDefaults().StatusEvery, "how often to report status (the master's heartbeat)")
	cpuProfile := fs.String("cpuprofile", os.Getenv(CPUProfileEnv), "write a CPU profile of the slave process to `FILE` until it exits, {pid} in it replaced by the process id, so that the local slaves a master starts (which inherit the variable) write one each (env "+CPUProfileEnv+")")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			printHelp(stdout, fs)
			return err
		}
		return fmt.Errorf("%w: %v", ErrUsage, err)
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("%w: unexpected argument %q", ErrUsage, fs.Arg(0))
	}
	if *gone < 0 {
		return fmt.Errorf("%w: --master-gone-after %s: want >= 0 (0: never)", ErrUsage, *gone)
	}
	if *gone == 0 {
		*gone = -1 // never, where SlaveOptions' zero is the default
	}
	if _, err := config.NATSURLs(*url); err != nil {
		from := "--nats"
		if os.Getenv(urlEnv) == *url {
			from += " (from env " + urlEnv + ")"
		}
		return fmt.Errorf("%w: %s = %q: %v", ErrUsage, from, *url, err)
	}
	lvl := hclog.LevelFromString(*level)
	if lvl == hclog.NoLevel {
		return fmt.Errorf("%w: --log-level %q: want trace, debug, info, warn or error", ErrUsage, *level)
	}
	var creds []natsnet.Credential
	if *credsFile != "" {
		var err error
		if creds, err = natsnet.ReadCredentials(*credsFile); err != nil {
			return err
		}
	} else if *name == "" {
		*name = fmt.Sprintf("%s-%d", sanitize(host), os.Getpid())
	}
	logName := "slave"
	if *name != "" {
		logName += "." + *name
	}
	log := hclog.New(&hclog.LoggerOptions{Name: logName, Level: lvl, Output: stderr})
	if note := blas.CoreNote(); note != "" {
		log.Info(note)
	}
	opt := natsnet.SlaveOptions{URL: *url, Credentials: creds, SlaveOptions: driver.SlaveOptions{Name: *name, Threads: *threads, JoinTimeout: *join, MasterGoneAfter: *gone, Logger: log, WindowDelay: *delay, StatusEvery: *statusEvery}}
	if *cpuProfile != "" {
		stop, err := startCPUProfile(*cpuProfile)
		if err != nil {
			return err
		}
		defer stop(log)
	}
	return runSlaves(ctx, opt, *serve)
}

// CPUProfileEnv is the environment variable of --cpuprofile: set for a
// master, it profiles every local slave the master starts.
const CPUProfileEnv = "PIPEDBN_SLAVE_CPUPROFILE"

// startCPUProfile starts a CPU profile into path, {pid} replaced by the
// process id, and returns what writes it out.
func startCPUProfile(path string) (func(hclog.Logger), error) {
	path = strings.ReplaceAll(path, "{pid}", strconv.Itoa(os.Getpid()))
	f, err := os.Create(path)
	if err != nil {
		return nil, fmt.Errorf("--cpuprofile: %w", err)
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		f.Close()
		return nil, fmt.Errorf("--cpuprofile: %w", err)
	}
	return func(log hclog.Logger) {
		pprof.StopCPUProfile()
		if err := f.Close(); err != nil {
			log.Warn("cannot write the CPU profile", "file", path, "error", err)
		}
	}, nil
}

// printHelp prints the help of the slave command, with fs's flags, on w.
func printHelp(w io.Writer, fs *flag.FlagSet) {
	fmt.Fprintf(w, "%s\n%s\nFlags:\n", Usage, description)
	fs.SetOutput(w)
	fs.PrintDefaults()
	fmt.Fprintf(w, "\n%s", example)
}

// runSlaves runs the slave of opt until its run ends; with serve, one run
// after another until ctx ends. Several names in opt.Name, comma-separated,
// run a stage group instead: once, so not with serve.
func runSlaves(ctx context.Context, opt natsnet.SlaveOptions, serve bool) error {
	if names := strings.Split(opt.Name, ","); len(names) > 1 {
		if serve {
			return fmt.Errorf("%w: --serve with a group of names (--name %s): a group runs once", ErrUsage, opt.Name)
		}
		opt.Name = ""
		return natsnet.RunGroup(ctx, opt, names)
	}
	if serve {
		return natsnet.ServeSlave(ctx, opt)
	}
	return natsnet.RunSlave(ctx, opt)
}

func envOr(key, def string) string {
	if v := os.Getenv(key); v != "" {
		return v
	}
	return def
}

// sanitize keeps the characters a slave name may hold.
func sanitize(s string) string {
	b := []byte(s)
	for i, c := range b {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_') {
			b[i] = '-'
		}
	}
	if len(b) > 40 {
		b = b[:40]
	}
	return string(b)
}
