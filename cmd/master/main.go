// Command master runs pipedbn experiments: `master run` pre-trains (greedy or
// pipelined) and fine-tunes one DBN; `master sweep` runs a grid of them.
//
//	master run       --config FILE [--set key=value]... [--out DIR] [--http ADDR]
//	master sweep     --config FILE [--out DIR] [--http ADDR]
//	master plan      --config FILE [--set key=value]...
//	master config    --config FILE [--set key=value]... | --doc
//	master predict   --run DIR --in X --out P.npy [--labels]
//	master transform --run DIR --in X --out H.npy [--layer N] [--finetuned]
//	master version
//
// `master -h` lists the commands and `master COMMAND -h` prints a command's
// flags and an example, on stdout. While it works, the master serves its
// state on monitor.http (--http): a live status page at /, /api/status as
// JSON and /metrics for Prometheus.
package main

import (
	"bytes"
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
	"github.com/pipedbn/pipedbn/cmd/internal/version"
	"github.com/pipedbn/pipedbn/config"
	"github.com/pipedbn/pipedbn/dbn"
	"github.com/pipedbn/pipedbn/experiments"
	"github.com/pipedbn/pipedbn/internal/memlimit"
	"github.com/pipedbn/pipedbn/monitor"
)

// command is one of master's commands, as its help shows it.
type command struct {
	name string
	// args is the synopsis after "master NAME".
	args string
	// summary is one line: what the command does.
	summary string
	// about says more, in master NAME -h; "" for nothing more.
	about string
	// example is one or more example command lines.
	example string
	// flags defines the flags the command reads, and only those, into o.
	flags func(fs *flag.FlagSet, o *options)
}

// options are the values of the flags of run, sweep, plan and config.
type options struct {
	config string
	sets   sets
	out    string
	level  string
	http   string
	doc    bool
}

func configFlag(fs *flag.FlagSet, o *options) {
	fs.StringVar(&o.config, "config", "", "config `FILE` (YAML); its keys: docs/configuration.md, or master config --doc")
}

func setFlag(fs *flag.FlagSet, o *options) {
	fs.Var(&o.sets, "set", "override one config value, `key=value`, the value in YAML (repeatable)")
}

func outFlag(fs *flag.FlagSet, o *options) {
	fs.StringVar(&o.out, "out", "", "output `DIR` (default: output.dir, else runs/<name>)")
}

func logFlag(fs *flag.FlagSet, o *options) {
	fs.StringVar(&o.level, "log-level", "info", "log `LEVEL` on stderr: trace, debug, info, warn, error")
}

func httpFlag(fs *flag.FlagSet, o *options) {
	fs.StringVar(&o.http, "http", "", "serve the status page, /api/status and /metrics on `ADDR` (host:port; port 0: a free one; \"\": nothing); overrides monitor.http")
}

// commands lists master's commands in the order its help shows them.
var commands = []command{
	{
		name: "run", args: "--config FILE [--set key=value]... [--out DIR] [--http ADDR] [--log-level LEVEL]",
		summary: "pre-train (greedy or pipelined) and fine-tune one DBN, writing result.json and weights.npz",
		about: "--http ADDR overrides monitor.http (default " + config.DefaultMonitorHTTP + `, a free loopback port; "" serves nothing):
the address where the master serves its status page (/), /api/status (JSON) and /metrics
(Prometheus) while it works. Logs and progress go to stderr.

A pipelined run interrupted by Ctrl-C (or a crash) resumes from its checkpoints when
` + "`master run`" + ` is given the same config and output folder again.`,
		example: "master run --config configs/quickstart.yaml --set pretrain.mode=greedy",
		flags: func(fs *flag.FlagSet, o *options) {
			configFlag(fs, o)
			setFlag(fs, o)
			outFlag(fs, o)
			httpFlag(fs, o)
			logFlag(fs, o)
		},
	},
	{
		name: "sweep", args: "--config FILE [--out DIR] [--http ADDR] [--log-level LEVEL]",
		summary: "run a grid of experiments (the config's sweep section) and write sweep.csv and report.md",
		about: `Every combination of sweep.vary's values runs sweep.repeats times, each as a ` + "`master run`" + ` of
its own. A sweep run again with the same config and output folder skips the runs it has.`,
		example: "master sweep --config experiments/kstudy.yaml",
		flags: func(fs *flag.FlagSet, o *options) {
			configFlag(fs, o)
			outFlag(fs, o)
			httpFlag(fs, o)
			logFlag(fs, o)
		},
	},
	{
		name: "plan", args: "--config FILE [--set key=value]...",
		summary: "print how a pipelined run would lay its RBMs out on local slaves, and its speed, without training",
		about:   "The plan goes to stdout; a config it cannot plan is an error on stderr.",
		example: "master plan --config configs/quickstart.yaml --set cluster.cpus_per_worker=0.5 --set cluster.local_slaves=4",
		flags: func(fs *flag.FlagSet, o *options) {
			configFlag(fs, o)
			setFlag(fs, o)
		},
	},
	{
		name: "config", args: "--config FILE [--set key=value]... | --doc",
		summary: "print the effective config of a run as YAML, or with --doc the reference of every key",
		about: `The effective config is every key at the value a run would use: its default, then the file,
then PIPEDBN_* environment variables, then --set. ` + "`--config`" + ` reads the output again.`,
		example: "master config --config configs/quickstart.yaml --set pretrain.epochs=1 > my.yaml\n  master config --doc",
		flags: func(fs *flag.FlagSet, o *options) {
			configFlag(fs, o)
			setFlag(fs, o)
			fs.BoolVar(&o.doc, "doc", false, "print the configuration reference (Markdown): every key, its default, allowed values and meaning")
		},
	},
	{
		name: "predict", args: "--run DIR --in X --out P.npy [--labels] [--array NAME] [--label-column COL] [--header]",
		summary: "write the class probabilities (or labels) a run's fine-tuned network gives new examples",
		example: "master predict --run runs/digits --in runs/digits-data/digits.npz --out labels.npy --labels",
	},
	{
		name: "transform", args: "--run DIR --in X --out H.npy [--layer N] [--finetuned] [--array NAME] [--label-column COL] [--header]",
		summary: "write a run's hidden activations of new examples (features for another model)",
		example: "master transform --run runs/digits --in runs/digits-data/digits.npz --out h.npy --layer 1",
	},
	{
		name: "version", summary: "print what this binary was built from: version, commit, Go, BLAS and wire format",
		example: "master version",
		flags:   func(*flag.FlagSet, *options) {},
	},
	{
		name: "slave", args: "[--nats URL] [--name NAME] [flags]",
		summary: "run a slave, as the slave command does (the master starts its local slaves so)",
		example: "master slave --nats nats://10.0.0.1:4222 --name slave-1",
	},
}

// lookup returns the command name, or nil.
func lookup(name string) *command {
	for i := range commands {
		if commands[i].name == name {
			return &commands[i]
		}
	}
	return nil
}

// usage is master's help: its commands.
func usage() string {
	var b strings.Builder
	b.WriteString("usage: master COMMAND [flags]\n\nCommands:\n")
	for _, c := range commands {
		fmt.Fprintf(&b, "  %-10s %s\n", c.name, c.summary)
	}
	b.WriteString(`
Run 'master COMMAND -h' for a command's flags and an example.

Config keys, their defaults and allowed values: docs/configuration.md in the repository,
or ` + "`master config --doc`" + `.
`)
	return b.String()
}

// synopsis is the usage line of c.
func (c *command) synopsis() string {
	return strings.TrimSpace("usage: master " + c.name + " " + c.args)
}

// writeHelp writes c's help: synopsis, what it does, its flags (fs's) and
// an example.
func (c *command) writeHelp(w io.Writer, fs *flag.FlagSet) {
	fmt.Fprintf(w, "%s\n\n%s.\n", c.synopsis(), strings.ToUpper(c.summary[:1])+c.summary[1:])
	if c.about != "" {
		fmt.Fprintf(w, "\n%s\n", c.about)
	}
	if fs != nil && hasFlags(fs) {
		fmt.Fprint(w, "\nFlags:\n")
		fs.SetOutput(w)
		fs.PrintDefaults()
		fs.SetOutput(io.Discard)
	}
	fmt.Fprintf(w, "\nExample:\n  %s\n", c.example)
}

func hasFlags(fs *flag.FlagSet) bool {
	n := 0
	fs.VisitAll(func(*flag.Flag) { n++ })
	return n > 0
}

// errUsage marks errors whose fix is in the command line.
var errUsage = errors.New("usage")

func main() {
	memlimit.SetSoft()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	switch {
	case err == nil:
	case errors.Is(err, flag.ErrHelp):
	case errors.Is(err, errUsage):
		fmt.Fprintf(os.Stderr, "master: %v\n", err)
		if len(os.Args) > 1 && lookup(os.Args[1]) != nil {
			c := lookup(os.Args[1])
			fmt.Fprintf(os.Stderr, "%s\nRun 'master %s -h' for its flags and an example.\n", c.synopsis(), c.name)
		} else {
			fmt.Fprint(os.Stderr, usage())
		}
		os.Exit(2)
	case errors.Is(err, context.Canceled):
		fmt.Fprintln(os.Stderr, "master: interrupted")
		os.Exit(130)
	case errors.Is(err, slavecmd.ErrMasterGone): // `master slave`, as cmd/slave
		fmt.Fprintf(os.Stderr, "master: %v\n", err)
		os.Exit(slavecmd.ExitMasterGone)
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

// run runs the command line args (without the program name): what a
// command prints for the user (help, a plan, a config) goes to stdout,
// logs and progress to stderr. -h gives flag.ErrHelp once the help is
// printed.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	if len(args) == 0 {
		return fmt.Errorf("%w: no command given", errUsage)
	}
	name, args := args[0], args[1:]
	switch name {
	case "-h", "-help", "--help":
		fmt.Fprint(stdout, usage())
		return flag.ErrHelp
	case "help":
		if len(args) == 0 {
			fmt.Fprint(stdout, usage())
			return flag.ErrHelp
		}
		if lookup(args[0]) == nil || len(args) > 1 {
			return fmt.Errorf("%w: help %s: want master help COMMAND", errUsage, strings.Join(args, " "))
		}
		return run(ctx, []string{args[0], "-h"}, stdout, stderr)
	case "slave":
		// The master starts its local slaves as `master slave ...`: the
		// same program as cmd/slave, so `go run ./cmd/master` needs no
		// second binary.
		err := slavecmd.Main(ctx, args, stdout, stderr)
		if errors.Is(err, slavecmd.ErrUsage) {
			return fmt.Errorf("%w: %v", errUsage, err)
		}
		return err
	case "predict", "transform":
		// predict.go prints its own usage where it is told to: the help
		// goes to stdout, a parse error is returned.
		var help bytes.Buffer
		err := runModel(name, args, stdin, &help, stderr)
		if errors.Is(err, flag.ErrHelp) {
			c := lookup(name)
			fmt.Fprintf(stdout, "%s.\n\n%s\nExample:\n  %s\n", strings.ToUpper(c.summary[:1])+c.summary[1:], help.String(), c.example)
		}
		return err
	}
	c := lookup(name)
	if c == nil || c.flags == nil {
		return fmt.Errorf("%w: unknown command %q", errUsage, name)
	}
	fs := flag.NewFlagSet("master "+name, flag.ContinueOnError)
	fs.SetOutput(io.Discard) // parse errors are returned; the help goes to stdout
	var o options
	c.flags(fs, &o)
	if err := parseArgs(fs, args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			c.writeHelp(stdout, fs)
		}
		return err
	}
	switch name {
	case "version":
		return version.Write(stdout, "master")
	case "config":
		return printConfig(stdout, o)
	}
	if o.config == "" {
		return fmt.Errorf("%w: --config FILE is required", errUsage)
	}
	if name == "plan" {
		return printPlan(stdout, o)
	}
	return train(ctx, name, fs, o, stderr)
}

// printPlan prints the plan of a pipelined run of the config on stdout.
func printPlan(stdout io.Writer, o options) error {
	cfg, err := config.Load(o.config, o.sets)
	if err != nil {
		return err
	}
	p, err := dbn.PlanLocal(cfg)
	if err != nil {
		return err
	}
	_, err = fmt.Fprint(stdout, p.Text)
	return err
}

// printConfig prints the effective config of a run as YAML, or with --doc
// the configuration reference, on stdout.
func printConfig(stdout io.Writer, o options) error {
	if o.doc {
		if o.config != "" || len(o.sets) > 0 {
			return fmt.Errorf("%w: --doc documents every key; it takes no --config or --set", errUsage)
		}
		return config.WriteReference(stdout)
	}
	if o.config == "" {
		return fmt.Errorf("%w: --config FILE (or --doc) is required", errUsage)
	}
	cfg, err := config.Load(o.config, o.sets)
	if err != nil {
		return err
	}
	y, err := cfg.YAML()
	if err != nil {
		return fmt.Errorf("config %s: %w", o.config, err)
	}
	_, err = fmt.Fprintf(stdout, "# The effective config of %s: the defaults, the file, PIPEDBN_* variables\n# and --set overrides. Every key: docs/configuration.md, or master config --doc.\n%s", o.config, y)
	return err
}

// train runs `master run` or `master sweep`, logging on stderr.
func train(ctx context.Context, name string, fs *flag.FlagSet, o options, stderr io.Writer) error {
	lvl := hclog.LevelFromString(o.level)
	if lvl == hclog.NoLevel {
		return fmt.Errorf("%w: --log-level %q: want trace, debug, info, warn or error", errUsage, o.level)
	}
	tty := false
	if f, ok := stderr.(*os.File); ok {
		tty = term.IsTerminal(int(f.Fd()))
	}
	logger := hclog.New(&hclog.LoggerOptions{Name: "master", Level: lvl, Output: stderr, Color: hclog.AutoColor})

	cfg, err := config.Load(o.config, o.sets)
	if err != nil {
		return err
	}
	httpSource := ""
	if flagGiven(fs, "http") {
		if err := cfg.SetMonitorHTTP(o.http); err != nil {
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
	if name == "run" {
		return runOne(ctx, cfg, o, ln, serve, logger, tty, stderr)
	}
	return runSweep(ctx, cfg, o, ln, serve, logger)
}

// runOne runs one experiment: `master run`.
func runOne(ctx context.Context, cfg *config.Config, o options, ln net.Listener, serve func(http.Handler) func(), logger hclog.Logger, tty bool, stderr io.Writer) error {
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
		Logger: logger, Progress: stderr, Terminal: tty, OutDir: o.out, Monitor: mon,
	})
	if err != nil {
		return err
	}
	dbn.PrintSummary(stderr, res)
	return nil
}

// runSweep runs a grid of experiments: `master sweep`.
func runSweep(ctx context.Context, cfg *config.Config, o options, ln net.Listener, serve func(http.Handler) func(), logger hclog.Logger) error {
	dir := o.out
	if dir == "" {
		dir = cfg.OutDir()
	}
	plan, err := experiments.PlanSweep(cfg, dir)
	if err != nil {
		return err
	}
	regenerate := []string{"go", "run", "./cmd/master", "sweep", "--config", o.config}
	if o.out != "" {
		regenerate = append(regenerate, "--out", o.out)
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
