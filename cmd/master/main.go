// Command master runs pipedbn experiments: `master run` pre-trains (greedy or
// pipelined) and fine-tunes one DBN; `master sweep` runs a grid of them.
//
//	master run   --config FILE [--set key=value]... [--out DIR] [--http ADDR]
//	master sweep --config FILE [--out DIR] [--http ADDR]
//	master plan  --config FILE [--set key=value]...
//	master predict   --run DIR --in X --out P.npy [--labels]
//	master transform --run DIR --in X --out H.npy [--layer N] [--finetuned]
//
// While it works, the master serves its state on monitor.http (--http):
// a live status page at /, /api/status as JSON and /metrics for Prometheus.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/signal"
	"runtime"
	"strings"
	"syscall"

	"github.com/hashicorp/go-hclog"
	"golang.org/x/term"

	"github.com/pipedbn/pipedbn/blas"
	"github.com/pipedbn/pipedbn/cmd/internal/slavecmd"
	"github.com/pipedbn/pipedbn/config"
	"github.com/pipedbn/pipedbn/dbn"
	"github.com/pipedbn/pipedbn/experiments"
	"github.com/pipedbn/pipedbn/internal/memlimit"
	"github.com/pipedbn/pipedbn/monitor"
)

const usage = `usage:
  master run   --config FILE [--set key=value]... [--out DIR] [--http ADDR]   one experiment (greedy or pipelined)
  master sweep --config FILE [--out DIR] [--http ADDR]                         a grid of experiments + a report
  master plan  --config FILE [--set key=value]...                              the local slaves' plan, predicted, without training
  master predict   --run DIR --in X --out P.npy [--labels]                     class probabilities (master predict -h)
  master transform --run DIR --in X --out H.npy [--layer N] [--finetuned]      hidden activations (master transform -h)

--http ADDR overrides monitor.http (default 127.0.0.1:0, a free loopback port; "" serves nothing):
the address where the master serves its status page (/), /api/status (JSON) and /metrics
(Prometheus) while it works.

A pipelined run interrupted by Ctrl-C (or a crash) resumes from its checkpoints when
` + "`master run`" + ` is given the same config and output folder again.

Config keys and defaults: ../shared/CONTRACT.md and configs/ in the repository.
`

// errUsage marks errors whose fix is in the command line.
var errUsage = errors.New("usage")

func main() {
	memlimit.SetSoft()
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

// flagGiven reports whether the command line set the flag name.
func flagGiven(fs *flag.FlagSet, name string) bool {
	given := false
	fs.Visit(func(f *flag.Flag) { given = given || f.Name == name })
	return given
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
	if cmd == "predict" || cmd == "transform" {
		return runModel(cmd, args, stdin, stderr) // predict.go
	}
	fs := flag.NewFlagSet("master "+cmd, flag.ContinueOnError)
	fs.SetOutput(stderr)
	cfgPath := fs.String("config", "", "config `FILE` (YAML)")
	out := fs.String("out", "", "output `DIR` (default: output.dir, else runs/<name>)")
	level := fs.String("log-level", "info", "log level: trace, debug, info, warn, error")
	httpAddr := fs.String("http", "", "serve the status page, /api/status and /metrics on `ADDR` (host:port; port 0: a free one; \"\": nothing); overrides monitor.http")
	var overrides sets
	switch cmd {
	case "run", "plan":
		fs.Var(&overrides, "set", "override one config value, `key=value` (repeatable)")
	case "sweep":
	case "-h", "--help", "help":
		fmt.Fprint(stderr, usage)
		return flag.ErrHelp
	default:
		return fmt.Errorf("%w: unknown command %q", errUsage, cmd)
	}
	if err := parseArgs(fs, args); err != nil {
		return err
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
	if cmd == "plan" {
		p, err := dbn.PlanLocal(cfg)
		if err != nil {
			return err
		}
		fmt.Fprint(stderr, p.Text)
		return nil
	}
	httpSource := ""
	if flagGiven(fs, "http") {
		if err := cfg.SetMonitorHTTP(*httpAddr); err != nil {
			return err
		}
		httpSource = "--http"
	}
	// Listen before any work, so that a port in use is bad input.
	var ln net.Listener
	if addr := cfg.Monitor.HTTP; addr != "" {
		if ln, err = monitor.Listen(addr); err != nil {
			return fmt.Errorf("config %s: %w", cfg.File, config.Problems{{Key: "monitor.http", Value: addr, Source: httpSource, Reason: err.Error()}})
		}
		defer ln.Close()
	}
	// serve serves h on ln, if the master serves at all, until stop. The
	// URL is logged once the input is read (dbn.Run logs a run's): bad
	// input stays one line on stderr.
	serve := func(h http.Handler) (stop func()) {
		if ln == nil {
			return func() {}
		}
		srv := monitor.Serve(ln, h, monitor.ServeOptions{Logger: logger.Named("monitor")})
		return func() { srv.Close() }
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
		var mon *monitor.Run
		if ln != nil {
			mon = monitor.NewRun(cfg.Name, cfg.Pretrain.Mode.String(), monitor.URL(ln))
			stop := serve(mon.Handler())
			// An open status page gets to show how the run ended.
			defer func() { mon.Linger(); stop() }()
		}
		res, err := dbn.Run(ctx, cfg, dbn.Options{
			Logger: logger, Progress: stderr, Terminal: tty, OutDir: *out, Monitor: mon,
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
		// Every run is a `master run` of its own: it serves on a free port
		// of the sweep's host (its URL in its folder's monitor.url, which
		// the sweep's /api/status shows), or nothing when the sweep serves
		// nothing.
		childHTTP := ""
		var sweep *monitor.Sweep
		if ln != nil {
			host, _, _ := net.SplitHostPort(cfg.Monitor.HTTP)
			childHTTP = net.JoinHostPort(host, "0")
			sweep = monitor.NewSweep(plan.Name, plan.Dir)
			defer serve(sweep.Handler())()
			url := monitor.URL(ln)
			logger.Info("watch this sweep at "+url, "status", url+"/api/status", "metrics", url+"/metrics")
			err := os.MkdirAll(plan.Dir, 0o755)
			if err == nil {
				err = monitor.WriteURL(plan.Dir, url)
			}
			if err != nil {
				logger.Warn("cannot write the monitor's URL", "dir", plan.Dir, "error", err)
			}
		}
		_, err = experiments.RunSweep(ctx, plan, experiments.SweepOptions{
			Logger: logger.Named("sweep"), Regenerate: experiments.ShellJoin(regenerate),
			RunArgs: []string{"--http", childHTTP}, Monitor: sweep,
		})
		return err
	}
	return fmt.Errorf("%w: unknown command %q", errUsage, cmd)
}

// parseArgs parses a command's flags, which take no arguments besides:
// -h is flag.ErrHelp, anything else wrong is a usage error.
func parseArgs(fs *flag.FlagSet, args []string) error {
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return err
		}
		return fmt.Errorf("%w: %v", errUsage, err)
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("%w: unexpected argument %q", errUsage, fs.Arg(0))
	}
	return nil
}
