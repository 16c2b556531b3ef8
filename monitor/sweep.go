package monitor

import (
	"fmt"
	"net/http"
	"os"
	"strconv"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// RunState is what a run of a sweep is doing, or what became of it.
type RunState int

// The states of a sweep's run.
const (
	RunPending     RunState = iota // not started yet
	RunRunning                     // its `master run` is running
	RunDone                        // finished (now or in an earlier sweep)
	RunFailed                      // exited with an error
	RunInterrupted                 // stopped with the sweep
	runStateEnd
)

var runStateNames = [...]string{"pending", "running", "done", "failed", "interrupted"}

func (s RunState) String() string {
	if s < 0 || s >= runStateEnd {
		return fmt.Sprintf("RunState(%d)", int(s))
	}
	return runStateNames[s]
}

// MarshalText writes the state's name.
func (s RunState) MarshalText() ([]byte, error) { return []byte(s.String()), nil }

// UnmarshalText reads a state's name.
func (s *RunState) UnmarshalText(b []byte) error {
	for q := RunPending; q < runStateEnd; q++ {
		if q.String() == string(b) {
			*s = q
			return nil
		}
	}
	return fmt.Errorf("monitor: unknown run state %q", b)
}

// SweepRun is one run of a sweep as /api/status shows it.
type SweepRun struct {
	// Index is the run's place in the sweep, 1-based; Name its folder's
	// name; Sets the --set overrides that make it from the sweep's config.
	Index int      `json:"index"`
	Name  string   `json:"name"`
	Sets  []string `json:"sets"`
	// Dir is the run's output folder.
	Dir string `json:"dir"`
	// ResultFile is the path of its result.json, which the sweep serves
	// at /api/runs/{index}/result once it exists; "": none.
	ResultFile string   `json:"-"`
	State      RunState `json:"state"`
	// Reused says its result is an earlier sweep's.
	Reused bool `json:"reused,omitempty"`
	// Error says why it failed.
	Error string `json:"error,omitempty"`
	// URL is where the running run's own master serves its status (from
	// its folder's monitor.url); "" when it is not running or serves
	// nothing.
	URL string `json:"url,omitempty"`
	// WallSeconds is how long its process took (so far, while running).
	WallSeconds float64 `json:"wall_seconds"`
	// PretrainSeconds and TestAccuracy come from its result.json (0 when
	// it has none, or no fine-tuning).
	PretrainSeconds float64 `json:"pretrain_seconds"`
	TestAccuracy    float64 `json:"test_accuracy"`

	started time.Time
}

// SweepStatus is a sweep as /api/status shows it.
type SweepStatus struct {
	Name string `json:"name"`
	// Dir holds the runs' folders, sweep.csv and the report.
	Dir string `json:"dir"`
	// State is running, done (every run ran, some may have failed) or
	// interrupted.
	State          string    `json:"state"`
	Started        time.Time `json:"started"`
	ElapsedSeconds float64   `json:"elapsed_seconds"`
	// ETASeconds estimates the seconds left from the mean time of the runs
	// this sweep ran; null while unknown.
	ETASeconds *float64   `json:"eta_seconds"`
	Runs       []SweepRun `json:"runs"`
}

// Sweep is the live state of a sweep. Its methods are safe for concurrent
// use and do nothing on a nil *Sweep.
type Sweep struct {
	name, dir string
	now       func() time.Time

	mu      sync.Mutex
	started time.Time
	ended   time.Time
	state   string
	runs    []SweepRun
}

// NewSweep returns the state of the sweep name writing under dir, starting
// now.
func NewSweep(name, dir string) *Sweep {
	s := &Sweep{name: name, dir: dir, now: time.Now, state: "running"}
	s.started = s.now()
	return s
}

// Set records run r (by its Index): as planned, starting (RunRunning) or
// ended.
func (s *Sweep) Set(r SweepRun) {
	if s == nil {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	for len(s.runs) < r.Index {
		s.runs = append(s.runs, SweepRun{Index: len(s.runs) + 1})
	}
	old := &s.runs[r.Index-1]
	r.Sets = append([]string(nil), r.Sets...)
	r.started = old.started
	if r.State == RunRunning && old.State != RunRunning {
		r.started = s.now()
	}
	*old = r
}

// End says the sweep ended: done, or interrupted.
func (s *Sweep) End(interrupted bool) {
	if s == nil {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.state, s.ended = "done", s.now()
	if interrupted {
		s.state = "interrupted"
	}
}

// Status returns the sweep's state now.
func (s *Sweep) Status() SweepStatus {
	if s == nil {
		return SweepStatus{}
	}
	s.mu.Lock()
	now := s.now()
	end := now
	if !s.ended.IsZero() {
		end = s.ended
	}
	st := SweepStatus{Name: s.name, Dir: s.dir, State: s.state, Started: s.started.UTC().Round(time.Millisecond),
		ElapsedSeconds: end.Sub(s.started).Seconds(), Runs: append([]SweepRun{}, s.runs...)}
	ended := !s.ended.IsZero()
	s.mu.Unlock()
	ran, spent, left := 0, 0.0, 0
	for i := range st.Runs {
		r := &st.Runs[i]
		r.Sets = append([]string{}, r.Sets...)
		switch r.State {
		case RunRunning:
			r.WallSeconds = now.Sub(r.started).Seconds()
			r.URL = ReadURL(r.Dir) // the run writes it once it started
			left++
		case RunPending:
			left++
		case RunDone, RunFailed:
			if !r.Reused {
				ran++
				spent += r.WallSeconds
			}
		}
	}
	if ran > 0 && !ended {
		eta := spent / float64(ran) * float64(left)
		st.ETASeconds = &eta
	}
	return st
}

// Handler returns the HTTP handler of the sweep: /api/status (the grid of
// runs), /metrics, /api/runs/{index}/result (a run's result.json, once
// written), and at / the live status page.
func (s *Sweep) Handler() http.Handler {
	mux := newHandler(func() any { return s.Status() }, sweepCollector{s})
	mux.HandleFunc("GET /api/runs/{index}/result", s.serveResult)
	return mux
}

// serveResult serves the result.json of the run whose index the path
// names, from the run's folder.
func (s *Sweep) serveResult(w http.ResponseWriter, req *http.Request) {
	i, err := strconv.Atoi(req.PathValue("index"))
	path := ""
	s.mu.Lock()
	if err == nil && i >= 1 && i <= len(s.runs) {
		path = s.runs[i-1].ResultFile
	}
	s.mu.Unlock()
	if path == "" {
		http.Error(w, fmt.Sprintf("the sweep has no run %q with a result", req.PathValue("index")), http.StatusNotFound)
		return
	}
	b, err := os.ReadFile(path)
	if err != nil {
		http.Error(w, fmt.Sprintf("run %d has no result yet", i), http.StatusNotFound)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.Write(b)
}

var descSweepRuns = prometheus.NewDesc("pipedbn_sweep_runs",
	"Runs of the sweep in each state (pending, running, done, failed, interrupted).", []string{"state"}, nil)

// sweepCollector is a Sweep as a prometheus.Collector.
type sweepCollector struct{ s *Sweep }

func (c sweepCollector) Describe(ch chan<- *prometheus.Desc) { ch <- descSweepRuns }

func (c sweepCollector) Collect(ch chan<- prometheus.Metric) {
	c.s.mu.Lock()
	var n [runStateEnd]int
	for _, r := range c.s.runs {
		if r.State >= 0 && r.State < runStateEnd {
			n[r.State]++
		}
	}
	c.s.mu.Unlock()
	for st := RunPending; st < runStateEnd; st++ {
		ch <- prometheus.MustNewConstMetric(descSweepRuns, prometheus.GaugeValue, float64(n[st]), st.String())
	}
}
