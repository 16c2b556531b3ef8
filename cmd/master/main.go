// Command master runs pipedbn experiments: `master run` pre-trains (greedy or
// pipelined) and fine-tunes one DBN; `master sweep` runs a grid of them.
//
//	master run   --config FILE [--set key=value]... [--out DIR]
//	master sweep --config FILE [--out DIR]
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"runtime"
	"runtime/debug"
	"strings"
	"syscall"

	"github.com/hashicorp/go-hclog"
	"golang.org/x/term"

	"github.com/pipedbn/pipedbn/blas"
	"github.com/pipedbn/pipedbn/cmd/internal/slavecmd"
	"github.com/pipedbn/pipedbn/config"
	"github.com/pipedbn/pipedbn/dbn"
	"github.com/pipedbn/pipedbn/experiments"
)

const usage = `usage:
  master run   --config FILE [--set key=value]... [--out DIR]   one experiment (greedy or pipelined)
  master sweep --config FILE [--out DIR]                         a grid of experiments + a report

A pipelined run interrupted by Ctrl-C (or a crash) resumes from its checkpoints when
` + "`master run`" + ` is given the same config and output folder again.

Config keys and defaults: ../shared/CONTRACT.md and configs/ in the repository.
`

// errUsage marks errors whose fix is in the command line.
var errUsage = errors.New("usage")

func main() {
	if lim, ok := dbn.MemoryLimit(); ok && os.Getenv("GOMEMLIMIT") == "" {
		// The memory check admits runs whose live heap fits; without a
		// soft limit the heap may grow to twice that between collections.
		debug.SetMemoryLimit(lim)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := run(ctx, os.Args[1:], os.Stderr)
	stop()
	switch {
	case err == nil:
	case errors.Is(err, flag.ErrHelp):
	case errors.Is(err, errUsage):
		fmt.Fprintf(os.Stderr, "master: %v\n%s", err, usage)
		os.Exit(2)
	case errors.Is(err, context.Canceled):
		fmt.Fprintln(os.Stderr, "master: interrupted")
		os.Exit(130)
	default:
		fmt.Fprintf(os.Stderr, "master: %v\n", err)
		os.Exit(1)
	}
}

// sets collects repeated --set key=value flags.
type sets []string

func (s *sets) String() string     { return strings.Join(*s, ",") }
func (s *sets) Set(v string) error { *s = append(*s, v); return nil }

func run(ctx context.Context, args []string, stderr io.Writer) error {
	if len(args) == 0 {
		return fmt.Errorf("%w: no command given", errUsage)
	}
	cmd, args := args[0], args[1:]
	if cmd == "slave" {
		// The master starts its local slaves as `master slave ...`: the
		// same program as cmd/slave, so `go run ./cmd/master` needs no
		// second binary.
		err := slavecmd.Main(ctx, args, stderr)
		if errors.Is(err, slavecmd.ErrUsage) {
			return fmt.Errorf("%w: %v", errUsage, err)
		}
		return err
	}
	fs := flag.NewFlagSet("master "+cmd, flag.ContinueOnError)
	fs.SetOutput(stderr)
	cfgPath := fs.String("config", "", "config `FILE` (YAML)")
	out := fs.String("out", "", "output `DIR` (default: output.dir, else runs/<name>)")
	level := fs.String("log-level", "info", "log level: trace, debug, info, warn, error")
	var overrides sets
	switch cmd {
	case "run":
		fs.Var(&overrides, "set", "override one config value, `key=value` (repeatable)")
	case "sweep":
	case "-h", "--help", "help":
		fmt.Fprint(stderr, usage)
		return flag.ErrHelp
	default:
		return fmt.Errorf("%w: unknown command %q", errUsage, cmd)
	}
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return err
		}
		return fmt.Errorf("%w: %v", errUsage, err)
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("%w: unexpected argument %q", errUsage, fs.Arg(0))
	}
	if *cfgPath == "" {
		return fmt.Errorf("%w: --config FILE is required", errUsage)
	}
	lvl := hclog.LevelFromString(*level)
	if lvl == hclog.NoLevel {
		return fmt.Errorf("%w: --log-level %q: want trace, debug, info, warn or error", errUsage, *level)
	}
	tty := false
	if f, ok := stderr.(*os.File); ok {
		tty = term.IsTerminal(int(f.Fd()))
	}
	logger := hclog.New(&hclog.LoggerOptions{Name: "master", Level: lvl, Output: stderr, Color: hclog.AutoColor})

	cfg, err := config.Load(*cfgPath, overrides)
	if err != nil {
		return err
	}
	switch cmd {
	case "run":
		// BLAS threads and GOMAXPROCS belong to the process: its command
		// sets them for the worker it is, and dbn uses them.
		threads := dbn.WorkerThreads(cfg)
		blas.SetThreads(threads)
		if cfg.Cluster.CPUsPerWorker > 0 {
			runtime.GOMAXPROCS(threads)
		}
		res, err := dbn.Run(ctx, cfg, dbn.Options{
			Logger: logger, Progress: stderr, Terminal: tty, OutDir: *out,
		})
		if err != nil {
			return err
		}
		dbn.PrintSummary(stderr, res)
		return nil
	case "sweep":
		dir := *out
		if dir == "" {
			dir = cfg.OutDir()
		}
		plan, err := experiments.PlanSweep(cfg, dir)
		if err != nil {
			return err
		}
		regenerate := []string{"go", "run", "./cmd/master", "sweep", "--config", *cfgPath}
		if *out != "" {
			regenerate = append(regenerate, "--out", *out)
		}
		_, err = experiments.RunSweep(ctx, plan, experiments.SweepOptions{
			Logger: logger.Named("sweep"), Regenerate: experiments.ShellJoin(regenerate),
		})
		return err
	}
	return fmt.Errorf("%w: unknown command %q", errUsage, cmd)
}
