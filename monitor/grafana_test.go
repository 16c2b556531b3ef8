package monitor_test

import (
	"encoding/json"
	"net/http/httptest"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/pipedbn/pipedbn/monitor"
	"github.com/pipedbn/pipedbn/pipeline"
)

// dashboardFile is the example Grafana dashboard (README, "Watching a run").
const dashboardFile = "../deploy/grafana/pipedbn.json"

// dashboard is the part of a Grafana dashboard the tests read.
type dashboard struct {
	Title  string `json:"title"`
	Panels []struct {
		ID      int    `json:"id"`
		Title   string `json:"title"`
		GridPos struct {
			X, Y, W, H int
		} `json:"gridPos"`
		Targets []struct {
			Expr string `json:"expr"`
		} `json:"targets"`
	} `json:"panels"`
	Templating struct {
		List []struct {
			Name       string `json:"name"`
			Definition string `json:"definition"`
		} `json:"list"`
	} `json:"templating"`
}

// dashboardExprs returns the PromQL of every panel of the example
// dashboard, by panel title, and of its variables.
func dashboardExprs(t *testing.T) map[string][]string {
	t.Helper()
	b, err := os.ReadFile(dashboardFile)
	if err != nil {
		t.Fatal(err)
	}
	var d dashboard
	if err := json.Unmarshal(b, &d); err != nil {
		t.Fatalf("%s: %v", dashboardFile, err)
	}
	exprs := map[string][]string{}
	ids := map[int]bool{}
	for _, p := range d.Panels {
		if ids[p.ID] || p.GridPos.W <= 0 || p.GridPos.H <= 0 || p.GridPos.X+p.GridPos.W > 24 {
			t.Errorf("%s: panel %d %q: a duplicate id or a gridPos %+v outside 24 columns", dashboardFile, p.ID, p.Title, p.GridPos)
		}
		ids[p.ID] = true
		for _, tg := range p.Targets {
			if tg.Expr == "" {
				t.Errorf("%s: panel %q has a target without expr", dashboardFile, p.Title)
			}
			exprs[p.Title] = append(exprs[p.Title], tg.Expr)
		}
	}
	for _, v := range d.Templating.List {
		if v.Definition != "" {
			exprs["variable "+v.Name] = append(exprs["variable "+v.Name], v.Definition)
		}
	}
	if len(exprs) < 10 {
		t.Fatalf("%s: %d panels with queries; want the dashboard", dashboardFile, len(exprs))
	}
	return exprs
}

// servedMetrics returns the names of the pipedbn_ metrics a run and a
// sweep serve at /metrics, with every optional one present.
func servedMetrics(t *testing.T) []string {
	t.Helper()
	r := monitor.NewRun("d", "pipelined", "")
	r.Pretraining([]pipeline.StageConfig{{Index: 1, Visible: 4, Hidden: 3, Epochs: 2, BatchSize: 1}}, 10)
	r.EnterPretrainPhase("calibration")
	time.Sleep(time.Millisecond) // an ETA needs time to have passed
	r.Observe(pipeline.Stats{Index: 1, Batches: 3, Rows: 3, Busy: time.Second, Recon: []float64{0.1}, LastRecon: 0.1, Worker: "s1"})
	r.Checkpointed(1, pipeline.StageState{})
	r.FinetuneWorker(pipeline.Stats{Index: 1, Batches: 2, Rows: 2, Busy: time.Second, Worker: "local-1-r0"})
	r.Finetuned(monitor.Finetune{TestAccuracy: 0.5})
	s := monitor.NewSweep("d", t.TempDir())
	s.Set(monitor.SweepRun{Index: 1})
	var names []string
	for _, h := range []*httptest.Server{httptest.NewServer(r.Handler()), httptest.NewServer(s.Handler())} {
		for _, line := range strings.Split(get(t, h.URL+"/metrics"), "\n") {
			if name, ok := strings.CutPrefix(line, "# TYPE pipedbn_"); ok {
				names = append(names, "pipedbn_"+strings.Fields(name)[0])
			}
		}
		h.Close()
	}
	if !slices.Contains(names, "pipedbn_pretrain_eta_seconds") || !slices.Contains(names, "pipedbn_sweep_runs") ||
		!slices.Contains(names, "pipedbn_finetune_worker_state") {
		t.Fatalf("served metrics %v; want the ETA, the fine-tuning workers' and the sweep's too", names)
	}
	return names
}

var metricName = regexp.MustCompile(`\bpipedbn_[a-z_]+`)

// Every metric the example Grafana dashboard queries is one the master
// serves, and it charts every one the master serves.
func TestGrafanaDashboardMetrics(t *testing.T) {
	served := servedMetrics(t)
	used := map[string]bool{}
	for title, exprs := range dashboardExprs(t) {
		for _, e := range exprs {
			names := metricName.FindAllString(e, -1)
			if len(names) == 0 {
				t.Errorf("%s: %q queries %q: no pipedbn_ metric", dashboardFile, title, e)
			}
			for _, n := range names {
				used[n] = true
				if !slices.Contains(served, n) {
					t.Errorf("%s: %q queries %s, which the master does not serve (it serves %v)", dashboardFile, title, n, served)
				}
			}
		}
	}
	for _, n := range served {
		if !used[n] {
			t.Errorf("%s charts no %s", dashboardFile, n)
		}
	}
}

// promExpr is a dashboard query as Prometheus itself can run it: Grafana's
// variables replaced.
func promExpr(e string) string {
	return strings.NewReplacer("$__rate_interval", "5s", "$job", ".*").Replace(e)
}

// checkDashboardQueries runs every query of the example dashboard through
// the Prometheus at base (TestPrometheusScrapesRun's): each must parse and
// run, and those of pre-training must have data.
func checkDashboardQueries(t *testing.T, base string) {
	t.Helper()
	for title, exprs := range dashboardExprs(t) {
		if strings.HasPrefix(title, "variable ") {
			continue // label_values() is Grafana's, not PromQL
		}
		for _, e := range exprs {
			vals, err := promQuery(t, base, promExpr(e))
			if err != nil {
				t.Errorf("%s: %q: %v", dashboardFile, title, err)
				continue
			}
			if len(vals) == 0 {
				t.Logf("dashboard %q: %s: no data yet", title, e)
			}
		}
	}
	for _, title := range []string{"Mini-batches per second, by RBM", "RBM state", "Reconstruction error, latest window"} {
		vals, err := promQuery(t, base, promExpr(dashboardExprs(t)[title][0]))
		if err != nil || len(vals) == 0 {
			t.Errorf("dashboard %q during pre-training: %v, %v; want data", title, vals, err)
		}
	}
}
