package experiments

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/pipedbn/pipedbn/config"
	"github.com/pipedbn/pipedbn/dbn"
	"github.com/pipedbn/pipedbn/internal/atomicfile"
	"github.com/pipedbn/pipedbn/monitor"
	"github.com/pipedbn/pipedbn/pipeline"
)

// RunStatus is what became of one run of a sweep.
type RunStatus int

const (
	// RunPending has not run: the sweep stopped before it.
	RunPending RunStatus = iota
	// RunDone finished and wrote a complete result.json (now or in an
	// earlier sweep).
	RunDone
	// RunFailed exited with an error.
	RunFailed
	// RunStopped was interrupted (Ctrl-C, SIGTERM).
	RunStopped
)

func (s RunStatus) String() string {
	switch s {
	case RunPending:
		return "pending"
	case RunDone:
		return "ok"
	case RunFailed:
		return "failed"
	case RunStopped:
		return "interrupted"
	}
	return fmt.Sprintf("RunStatus(%d)", int(s))
}

// SweepRow is one run of a sweep and what became of it.
type SweepRow struct {
	SweepRun
	Status RunStatus
	// Reused says the result is an earlier sweep's: its result.json was
	// there, complete, for the same configuration.
	Reused bool
	// Err is why the run failed.
	Err string
	// WallSeconds is how long the run's process took (0 when reused).
	WallSeconds float64
	// Result is the run's result.json, when Status is RunDone.
	Result *dbn.Result
}

// SweepOptions are the parts of a sweep that are not in its config.
type SweepOptions struct {
	// Logger receives the sweep's progress lines; nil discards them.
	Logger hclog.Logger
	// Command runs one experiment; --config FILE, --set key=value... and
	// --out DIR are appended. Default: this executable with the argument
	// "run" (`master run`), so every run is its own process, with its own
	// CPU groups, BLAS threads and local slaves.
	Command []string
	// Regenerate is the command line quoted in report.md as the one that
	// regenerates it.
	Regenerate string
	// StopGrace is how long an interrupted run may take to stop cleanly
	// after its SIGINT before it is killed. Default 30s.
	StopGrace time.Duration
	// RunArgs are put on every run's command line before --config, such as
	// --http ADDR (`master sweep` gives each run a free port, or none).
	RunArgs []string
	// Monitor, if set, sees every run of the sweep as it is planned,
	// starts and ends. nil: nobody watches.
	Monitor *monitor.Sweep
}

// ErrRunsFailed marks a sweep that ran to its end with some runs failed.
var ErrRunsFailed = errors.New("experiments: runs failed")

// runStamp is what a sweep writes into a run's folder before starting it,
// so that a later sweep reuses its result only for the same configuration.
const runStamp = "sweep-run.json"

type stamp struct {
	Sets   []string       `json:"sets"`
	Config *config.Config `json:"config"`
}

// stampOf is the part of a run's configuration its results depend on.
func stampOf(r *SweepRun) stamp {
	c := *r.Config
	c.File, c.Sweep, c.Output = "", config.Sweep{}, config.Output{}
	return stamp{Sets: r.Sets, Config: &c}.mended()
}

// mended returns the stamp with the keys its run ignores cleared: greedy
// has no settle phase, so a greedy run stays good whatever they say.
func (s stamp) mended() stamp {
	if s.Config != nil && s.Config.Pretrain.Mode == config.Greedy {
		c := *s.Config
		c.Pretrain.Settle = config.Settle{}
		s.Config = &c
	}
	return s
}

// settleScheduleBefore is what pretrain.settle.schedule, added with a
// default that changed the schedule, was before it: a stamp without the
// key ran as this.
const settleScheduleBefore = pipeline.SettleAfter

// RunSweep runs every run of plan that has no complete result.json yet (or
// one from a different configuration), each as its own `master run` process
// writing to its folder, logging progress as it goes. It rewrites sweep.csv
// in plan.Dir after every run, and writes the report there at the end. A failed run is recorded
// and the sweep goes on (the error, wrapping ErrRunsFailed, comes at the
// end); when ctx ends, the current run is stopped cleanly, the finished ones
// are kept, and the error is ctx's.
func RunSweep(ctx context.Context, plan *SweepPlan, opt SweepOptions) ([]SweepRow, error) {
	opt, err := opt.withDefaults()
	if err != nil {
		return nil, err
	}
	log := opt.Logger
	if err := os.MkdirAll(plan.Dir, 0o755); err != nil {
		return nil, fmt.Errorf("sweep: output folder: %w", err)
	}
	rows, todo := startRows(plan, opt)
	defer func() { opt.Monitor.End(ctx.Err() != nil) }()
	log.Info("sweep", "name", plan.Name, "runs", len(rows), "done_before", len(rows)-todo, "to_run", todo,
		"merged", plan.Merged, "dir", plan.Dir)

	start := time.Now()
	ran, failed := 0, 0
	var spent time.Duration
	for i := range rows {
		row := &rows[i]
		if row.Status == RunDone {
			continue
		}
		if ctx.Err() != nil {
			break
		}
		eta := "unknown"
		if ran > 0 {
			eta = (spent / time.Duration(ran) * time.Duration(todo-ran)).Round(time.Second).String()
		}
		log.Info(fmt.Sprintf("run %d of %d", row.Index, len(rows)), "run", row.Name,
			"elapsed", time.Since(start).Round(time.Second).String(), "eta", eta)
		took := runRow(ctx, plan, row, opt, len(rows))
		if row.Status == RunFailed {
			failed++
		}
		if row.Status != RunStopped {
			ran++
			spent += took
		}
		opt.Monitor.Set(monitorRun(plan, row, false))
		// sweep.csv follows every run; the report, with its plots, comes
		// at the end (or when the sweep is stopped).
		writeSweepCSV(plan, rows, log)
	}
	writeErr := WriteSweepOutputs(plan, rows, opt.Regenerate)
	if err := ctx.Err(); err != nil {
		log.Warn("sweep stopped; finished runs are kept: run the same command again to go on", "dir", plan.Dir)
		return rows, err
	}
	if writeErr != nil {
		return rows, fmt.Errorf("sweep %s: %w", plan.Name, writeErr)
	}
	log.Info("sweep done", "runs", len(rows), "ran", ran, "failed", failed,
		"elapsed", time.Since(start).Round(time.Second).String(),
		"csv", filepath.Join(plan.Dir, "sweep.csv"), "report", filepath.Join(plan.Dir, "report.md"))
	if failed > 0 {
		return rows, fmt.Errorf("sweep %s: %d of %d runs failed (errors in %s): %w", plan.Name, failed, len(rows),
			filepath.Join(plan.Dir, "sweep.csv"), ErrRunsFailed)
	}
	return rows, nil
}

// withDefaults is opt with its defaults where unset: a null logger, this
// executable's `run` as the command, a StopGrace of 30s.
func (opt SweepOptions) withDefaults() (SweepOptions, error) {
	if opt.Logger == nil {
		opt.Logger = hclog.NewNullLogger()
	}
	if len(opt.Command) == 0 {
		exe, err := os.Executable()
		if err != nil {
			return opt, fmt.Errorf("sweep: %w", err)
		}
		opt.Command = []string{exe, "run"}
	}
	if opt.StopGrace <= 0 {
		opt.StopGrace = 30 * time.Second
	}
	return opt, nil
}

// startRows returns a row per run of plan, those with a result from the
// same configuration done already (reused), and how many are left to run;
// the monitor sees every row.
func startRows(plan *SweepPlan, opt SweepOptions) ([]SweepRow, int) {
	rows := make([]SweepRow, len(plan.Runs))
	todo := 0
	for i := range plan.Runs {
		rows[i].SweepRun = plan.Runs[i]
		if res, why := finished(plan, &plan.Runs[i]); res != nil {
			rows[i].Status, rows[i].Reused, rows[i].Result = RunDone, true, res
		} else {
			todo++
			if why != "" {
				opt.Logger.Info("running again", "run", plan.Runs[i].Name, "why", why)
			}
		}
		opt.Monitor.Set(monitorRun(plan, &rows[i], false))
	}
	return rows, todo
}

// runRow runs row, one of n, as its own process and sets its status
// (done, with its result; failed; or stopped when ctx ended) and wall
// time, which it returns.
func runRow(ctx context.Context, plan *SweepPlan, row *SweepRow, opt SweepOptions, n int) time.Duration {
	log := opt.Logger
	t0 := time.Now()
	opt.Monitor.Set(monitorRun(plan, row, true))
	err := runChild(ctx, slices.Concat(opt.Command, opt.RunArgs), plan, row, opt.StopGrace)
	took := time.Since(t0)
	row.WallSeconds = took.Seconds()
	switch {
	case err != nil && ctx.Err() != nil:
		row.Status, row.Err = RunStopped, "interrupted"
		log.Warn("run interrupted", "run", row.Name)
		return took
	case err != nil:
		row.Status, row.Err = RunFailed, err.Error()
		log.Warn(fmt.Sprintf("run %d of %d failed", row.Index, n), "run", row.Name, "error", err)
		return took
	}
	res, err := dbn.ReadResult(filepath.Join(plan.runDir(&row.SweepRun), dbn.ResultFile))
	if err != nil {
		row.Status, row.Err = RunFailed, err.Error()
		log.Warn(fmt.Sprintf("run %d of %d failed", row.Index, n), "run", row.Name, "error", err)
		return took
	}
	row.Status, row.Result = RunDone, res
	log.Info(fmt.Sprintf("run %d of %d done", row.Index, n), "run", row.Name,
		"pretrain_seconds", fmt.Sprintf("%.1f", res.PretrainSeconds), "wall_seconds", fmt.Sprintf("%.1f", took.Seconds()))
	return took
}

// writeSweepCSV writes sweep.csv of rows to plan.Dir, logging a failure.
func writeSweepCSV(plan *SweepPlan, rows []SweepRow, log hclog.Logger) {
	b, err := SweepCSV(plan, rows)
	if err == nil {
		err = atomicfile.WriteFile(filepath.Join(plan.Dir, "sweep.csv"), b)
	}
	if err != nil {
		log.Error("cannot write sweep.csv", "error", err)
	}
}

// monitorRun is what the sweep's monitor shows of row: running, or its
// status.
func monitorRun(plan *SweepPlan, row *SweepRow, running bool) monitor.SweepRun {
	dir := plan.runDir(&row.SweepRun)
	r := monitor.SweepRun{Index: row.Index, Name: row.Name, Sets: row.Sets, Dir: dir, ResultFile: filepath.Join(dir, dbn.ResultFile),
		Reused: row.Reused, Error: row.Err, WallSeconds: row.WallSeconds}
	switch {
	case running:
		r.State = monitor.RunRunning
	case row.Status == RunDone:
		r.State = monitor.RunDone
	case row.Status == RunFailed:
		r.State = monitor.RunFailed
	case row.Status == RunStopped:
		r.State = monitor.RunInterrupted
	default:
		r.State = monitor.RunPending
	}
	if res := row.Result; res != nil {
		r.PretrainSeconds = res.PretrainSeconds
		if res.Finetune != nil {
			r.TestAccuracy = res.Finetune.TestAccuracy
		}
	}
	return r
}

// finished returns the result of a run that finished earlier with the same
// configuration, or nil and, where there is one, why it runs again.
func finished(plan *SweepPlan, r *SweepRun) (*dbn.Result, string) {
	dir := plan.runDir(r)
	res, err := dbn.ReadResult(filepath.Join(dir, dbn.ResultFile))
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return nil, ""
		}
		return nil, err.Error()
	}
	if r.Config.Finetune.Epochs > 0 && res.Finetune == nil {
		return nil, "its fine-tuning did not finish"
	}
	if b, err := os.ReadFile(filepath.Join(dir, runStamp)); err == nil {
		want, _ := json.Marshal(stampOf(r))
		// A key added since the run ran is absent from its stamp: it ran
		// as the key's default has it (a new key's default keeps what was),
		// but for pretrain.settle.schedule, which ran as before it.
		got := stamp{Config: config.Default()}
		var keys struct {
			Config struct {
				Pretrain struct{ Settle map[string]json.RawMessage }
			}
		}
		if json.Unmarshal(b, &got) != nil || json.Unmarshal(b, &keys) != nil {
			return nil, "its " + runStamp + " is unreadable"
		}
		if _, ok := keys.Config.Pretrain.Settle["Schedule"]; !ok {
			got.Config.Pretrain.Settle.Schedule = settleScheduleBefore
		}
		if g, _ := json.Marshal(got.mended()); !bytes.Equal(g, want) {
			return nil, "the configuration changed since it ran"
		}
	}
	return res, ""
}

// runChild runs one experiment as a child process, its output in the run's
// folder (run.log). When ctx ends it sends the child SIGINT, so that it
// stops its slaves and exits, and kills it after grace.
func runChild(ctx context.Context, command []string, plan *SweepPlan, row *SweepRow, grace time.Duration) error {
	dir := plan.runDir(&row.SweepRun)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	if err := atomicfile.WriteJSON(filepath.Join(dir, runStamp), stampOf(&row.SweepRun)); err != nil {
		return err
	}
	// Stale ones must not pass for this run's.
	os.Remove(filepath.Join(dir, dbn.ResultFile))
	os.Remove(filepath.Join(dir, monitor.URLFile))
	logPath := filepath.Join(dir, "run.log")
	logf, err := os.Create(logPath)
	if err != nil {
		return err
	}
	defer logf.Close()
	args := append(append([]string{}, command[1:]...), "--config", plan.File)
	for _, s := range row.Sets {
		args = append(args, "--set", s)
	}
	args = append(args, "--out", dir)
	cmd := exec.CommandContext(ctx, command[0], args...)
	cmd.Cancel = func() error { return cmd.Process.Signal(os.Interrupt) }
	cmd.WaitDelay = grace
	fmt.Fprintf(logf, "# %s\n", ShellJoin(cmd.Args))
	tail := &tailBuffer{max: 8 << 10}
	cmd.Stdout = logf
	cmd.Stderr = io.MultiWriter(logf, tail)
	// A run must not outlive its sweep, even a killed one.
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGTERM}
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("%s (%v; log: %s)", lastError(tail.String()), err, logPath)
	}
	return nil
}

// lastError picks the line of a run's stderr that says why it failed: the
// last "master: ..." line, else the last line.
func lastError(out string) string {
	lines := strings.Split(strings.TrimRight(out, "\n"), "\n")
	for i := len(lines) - 1; i >= 0; i-- {
		if s, ok := strings.CutPrefix(lines[i], "master: "); ok {
			return strings.TrimSpace(s)
		}
	}
	for i := len(lines) - 1; i >= 0; i-- {
		if s := strings.TrimSpace(lines[i]); s != "" {
			return s
		}
	}
	return "no output"
}

// tailBuffer keeps the last max bytes written to it.
type tailBuffer struct {
	mu  sync.Mutex
	max int
	b   []byte
}

func (t *tailBuffer) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.b = append(t.b, p...)
	if len(t.b) > t.max {
		t.b = append(t.b[:0], t.b[len(t.b)-t.max:]...)
	}
	return len(p), nil
}

func (t *tailBuffer) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return string(t.b)
}

// ShellJoin joins args into a POSIX shell command line, quoting those that
// need it.
func ShellJoin(args []string) string {
	out := make([]string, len(args))
	for i, a := range args {
		if a != "" && strings.Trim(a, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-./=:,+@%") == "" {
			out[i] = a
		} else {
			out[i] = "'" + strings.ReplaceAll(a, "'", `'\''`) + "'"
		}
	}
	return strings.Join(out, " ")
}
