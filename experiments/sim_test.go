package experiments

import (
	"math"
	"os"
	"path/filepath"
	"testing"

	"github.com/pipedbn/pipedbn/config"
	"github.com/pipedbn/pipedbn/dbn"
)

// loadConfig writes a config file and loads it with overrides.
func loadConfig(t *testing.T, body string, sets ...string) *config.Config {
	t.Helper()
	p := filepath.Join(t.TempDir(), "test.yaml")
	if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	cfg, err := config.Load(p, sets)
	if err != nil {
		t.Fatal(err)
	}
	return cfg
}

func equalJob(l, windows int, compute float64, credits int) SimJob {
	j := SimJob{Windows: windows, Credits: credits}
	for range l {
		j.Stages = append(j.Stages, SimStage{Visible: 10, Hidden: 10, Compute: compute, OutBytes: 1000})
	}
	j.InBytes = 1000
	j.Stages[l-1].OutBytes = 0
	return j
}

func near(a, b float64) bool { return math.Abs(a-b) <= 1e-9*math.Max(1, math.Abs(b)) }

func TestSimPipelined(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name string
		job  SimJob
		net  SimNetwork
		want float64
	}{
		// Fig. 5: L equal stages fill over L-1 windows.
		{"fill", equalJob(4, 10, 1, 4), SimNetwork{}, 10 + 3},
		{"one stage", equalJob(1, 10, 1, 4), SimNetwork{}, 10},
		// Each hop adds its latency once to the fill.
		{"latency", equalJob(3, 10, 1, 4), SimNetwork{Latency: 0.5}, 10 + 2 + 3*0.5},
		// The links are the bottleneck: 2 s per window per hop.
		{"bandwidth", equalJob(2, 10, 0.001, 4), SimNetwork{Bandwidth: 500}, 2*10 + 2 + 0.002},
	}
	for _, c := range cases {
		if got := c.job.Pipelined(c.net).Seconds; !near(got, c.want) {
			t.Errorf("%s: Pipelined = %v; want %v", c.name, got, c.want)
		}
	}
	// A slow consumer holds its producer back through the credits.
	j := equalJob(2, 10, 1, 1)
	j.Stages[1].Compute = 2
	r := j.Pipelined(SimNetwork{})
	if want := 1 + 2*10.0; !near(r.Seconds, want) {
		t.Errorf("slow consumer: Pipelined = %v; want %v", r.Seconds, want)
	}
	if !near(r.Busy[0], 10) || !near(r.Wait[0], 11) || !near(r.Busy[1], 20) || !near(r.Wait[1], 1) {
		t.Errorf("slow consumer: busy %v, wait %v; want [10 20], [11 1]", r.Busy, r.Wait)
	}
}

func TestSimGreedyOneMachine(t *testing.T) {
	t.Parallel()
	j := equalJob(3, 10, 1, 4)
	j.Stages[0].Transform, j.Stages[1].Transform, j.Stages[2].Transform = 2, 3, 100 // the top RBM has none
	if got := j.Greedy(); !near(got, 30+5) {
		t.Errorf("Greedy = %v; want 35", got)
	}
	j.Overhead, j.ByteCost = 1, 0.001
	// Each of 10 windows: 3 s training and 5000 bytes handled (1000 in
	// and out of RBM_1 and RBM_2, 1000 into RBM_3).
	if got := j.OneMachine(); !near(got, 1+30+10*0.001*5000) {
		t.Errorf("OneMachine = %v; want 81", got)
	}
	if got := j.Scale(2).OneMachine(); !near(got, 1+15+10*0.0005*5000) {
		t.Errorf("twice as fast: OneMachine = %v; want 41", got)
	}
}

// In the settle phase RBM_i+1 trains i·F windows and forwards the rest,
// frozen, at its transform's cost per window.
func TestSimSettle(t *testing.T) {
	t.Parallel()
	j := equalJob(3, 10, 1, 4)
	j.Settle, j.EpochWindows = 4, 5 // F = 2
	j.Stages[0].Transform, j.Stages[1].Transform = 2, 3
	// RBM_1 forwards 4 windows at 2/5 s, RBM_2 trains 2 and forwards 2 at
	// 3/5 s, RBM_3 trains all 4.
	wantBusy := []float64{10 + 4*0.4, 12 + 2*0.6, 14}
	if got, want := j.OneMachine(), wantBusy[0]+wantBusy[1]+wantBusy[2]; !near(got, want) {
		t.Errorf("OneMachine = %v; want %v", got, want)
	}
	r := j.Pipelined(SimNetwork{})
	for i, want := range wantBusy {
		if !near(r.Busy[i], want) {
			t.Errorf("RBM_%d: busy %v; want %v", i+1, r.Busy[i], want)
		}
	}
	// RBM_3, the bottleneck, starts after RBM_1 and RBM_2 trained window 0
	// and trains 14 windows in a row.
	if want := 2 + 14.0; !near(r.Seconds, want) {
		t.Errorf("Pipelined = %v; want %v", r.Seconds, want)
	}
}

// Calibrate recovers the overhead and the byte cost the runs were made with.
func TestSimCalibrate(t *testing.T) {
	t.Parallel()
	truth := equalJob(4, 50, 0.1, 4)
	truth.Overhead, truth.ByteCost = 0.7, 2e-6
	tL, t1 := truth.Pipelined(SimNetwork{}).Seconds, truth.OneMachine()
	fit := equalJob(4, 50, 0.1, 4).Calibrate(tL, t1)
	if math.Abs(fit.Overhead-0.7) > 1e-6 || math.Abs(fit.ByteCost-2e-6) > 1e-12 {
		t.Errorf("Calibrate = overhead %v, byte cost %v; want 0.7, 2e-6", fit.Overhead, fit.ByteCost)
	}
}

func TestSimJobFromGreedy(t *testing.T) {
	t.Parallel()
	cfg := loadConfig(t, "data: {source: synthetic}\ndbn: {layers: [100, 50, 50]}\npretrain: {epochs: 2, batch_size: 10, k_batches: 2}\n")
	res := &dbn.Result{Layers: []int{100, 50, 50}, PretrainSeconds: 30, Data: dbn.DataInfo{Train: 95},
		RBMs: []dbn.RBMResult{{Visible: 100, Hidden: 50, BusySeconds: 20}, {Visible: 50, Hidden: 50, BusySeconds: 8}}}
	j := SimJobFromGreedy(cfg, res)
	// 95 examples: 10 mini-batches, 5 windows per epoch, 10 in all.
	if j.Windows != 10 || j.EpochWindows != 5 || !near(j.Stages[0].Compute, 2) || !near(j.Stages[1].Compute, 0.8) || !near(j.Stages[0].Transform, 2) ||
		j.Stages[1].Transform != 0 || !near(j.InBytes, 4*20*100) || !near(j.Stages[0].OutBytes, 4*(20*50+50)) || j.Stages[1].OutBytes != 0 {
		t.Errorf("SimJobFromGreedy = %+v", j)
	}
	if got := j.Greedy(); !near(got, res.PretrainSeconds) {
		t.Errorf("Greedy of the calibrated job = %v; want the measured %v", got, res.PretrainSeconds)
	}
	big := j.Resize([]int{100, 100, 100, 100})
	// RBM_1 scales from the measured RBM_1 (x2), the upper ones from the
	// measured upper RBM (x4).
	if len(big.Stages) != 3 || !near(big.Stages[0].Compute, 4) || !near(big.Stages[1].Compute, 3.2) || !near(big.Stages[2].Compute, 3.2) ||
		!near(big.Stages[0].OutBytes, 4*(20*100+100)) || big.Stages[2].OutBytes != 0 {
		t.Errorf("Resize = %+v", big.Stages)
	}
}
