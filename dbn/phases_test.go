package dbn

import (
	"context"
	"math"
	"slices"
	"testing"
	"time"

	"github.com/pipedbn/pipedbn/monitor"
	"github.com/pipedbn/pipedbn/pipeline/protocol"
)

// fakePhaseClock is a phaseClock started at t0 on a clock the test sets.
func fakePhaseClock(t0 time.Time, mon *monitor.Run) (*phaseClock, *time.Time) {
	now := t0
	c := newPhaseClock(t0, mon)
	c.now = func() time.Time { return now }
	return c, &now
}

func phaseSeconds(ps []Phase) []float64 {
	var s []float64
	for _, p := range ps {
		s = append(s, math.Round(p.Seconds*1000)/1000)
	}
	return s
}

// Each phase ends at its milestone: the plan, the master's milestones, the
// end of pre-training.
func TestPhaseBoundaries(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	c, now := fakePhaseClock(t0, nil)
	at := func(s float64) { *now = t0.Add(time.Duration(s * float64(time.Second))) }
	at(0.3)
	c.end(phaseCalibration)
	at(1.5)
	c.passed(protocol.FirstDealt)
	at(1.75)
	c.passed(protocol.Filled)
	at(5)
	c.passed(protocol.BottomTrained)
	at(5.5)
	c.passed(protocol.AllTrained)
	c.passed(protocol.FirstDealt) // once
	ps := c.phases(t0.Add(6500 * time.Millisecond))
	var names []string
	for _, p := range ps {
		names = append(names, p.Name)
	}
	if want := []string{"calibration", "start", "fill", "steady", "drain", "collect"}; !slices.Equal(names, want) {
		t.Fatalf("phases %v; want %v", names, want)
	}
	if got, want := phaseSeconds(ps), []float64{0.3, 1.2, 0.25, 3.25, 0.5, 1}; !slices.Equal(got, want) {
		t.Fatalf("phase seconds %v; want %v", got, want)
	}
}

// A run of fewer windows than RBMs trains RBM_1 before its top RBM trained
// a window: it has no steady phase, and drains from the fill on. A
// milestone never seen ends its phase with the one before; and no phase
// ends after pre-training.
func TestPhasesOutOfOrderOrMissing(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	c, now := fakePhaseClock(t0, nil)
	at := func(s float64) { *now = t0.Add(time.Duration(s * float64(time.Second))) }
	at(1)
	c.end(phaseCalibration)
	at(2)
	c.passed(protocol.FirstDealt)
	at(3)
	c.passed(protocol.BottomTrained)
	at(4)
	c.passed(protocol.Filled)
	at(6)
	c.passed(protocol.AllTrained)
	if got, want := phaseSeconds(c.phases(t0.Add(7*time.Second))), []float64{1, 1, 2, 0, 2, 1}; !slices.Equal(got, want) {
		t.Fatalf("phase seconds %v; want %v", got, want)
	}

	c, now = fakePhaseClock(t0, nil)
	at(1)
	c.end(phaseCalibration)
	at(9) // after the end: clipped
	c.passed(protocol.FirstDealt)
	if got, want := phaseSeconds(c.phases(t0.Add(3*time.Second))), []float64{1, 2, 0, 0, 0, 0}; !slices.Equal(got, want) {
		t.Fatalf("phase seconds with milestones missing %v; want %v", got, want)
	}
}

// The monitor sees each phase as the run enters it, those a late
// milestone lets it pass at once too, and result.json's at the end.
func TestPhasesShownLive(t *testing.T) {
	t0 := time.Now()
	mon := monitor.NewRun("p", "pipelined", "")
	c, now := fakePhaseClock(t0, mon)
	if got := mon.Status().PretrainPhases; len(got) != 1 || got[0].Name != "calibration" || !got[0].Current {
		t.Fatalf("monitor phases at the start %+v; want calibration (current)", got)
	}
	c.end(phaseCalibration)
	c.passed(protocol.FirstDealt)
	c.passed(protocol.BottomTrained) // before the fill ended: the run stays in fill
	if got := mon.Status().PretrainPhases; len(got) != 3 || got[2].Name != "fill" || !got[2].Current {
		t.Fatalf("monitor phases %+v; want calibration, start, fill (current)", got)
	}
	c.passed(protocol.Filled)
	if got := mon.Status().PretrainPhases; len(got) != 5 || got[3].Name != "steady" || got[4].Name != "drain" || !got[4].Current {
		t.Fatalf("monitor phases %+v; want ..., steady, drain (current)", got)
	}
	*now = now.Add(time.Second)
	ps := c.phases(*now)
	got := mon.Status().PretrainPhases
	if len(got) != len(ps) {
		t.Fatalf("monitor phases %+v at the end; want result.json's %+v", got, ps)
	}
	for k := range ps {
		if got[k].Name != ps[k].Name || got[k].Seconds != ps[k].Seconds || got[k].Current {
			t.Fatalf("monitor phase %d = %+v at the end; want result.json's %+v", k, got[k], ps[k])
		}
	}
}

// A small pipelined run, over an embedded NATS server with a local slave
// process per RBM and in memory, writes its phases to result.json: every
// one, in order, none negative, summing to pretrain_seconds. The phases
// are contiguous on one clock, so their sum differs from pretrain_seconds
// by float rounding alone (nanoseconds): 1 µs of tolerance. The run's
// overhead beside its bottleneck's windows is there too, and the monitor
// shows the same phases.
func TestRunWritesPhases(t *testing.T) {
	t.Parallel()
	for _, run := range []struct {
		name string
		sets []string
		opt  Options
	}{
		{"nats", []string{"cluster.plan=one-per-rbm"}, Options{SlaveCommand: []string{slaveBin}}},
		{"memory", []string{"cluster.transport=memory"}, Options{}},
	} {
		t.Run(run.name, func(t *testing.T) {
			t.Parallel()
			cfg := loadConfig(t, `
name: phases
data: {source: synthetic, train_limit: 240, test_limit: 20}
dbn: {layers: [16, 8, 6, 4]}
pretrain: {epochs: 2, batch_size: 20, k_batches: 2}
finetune: {epochs: 0}
`, run.sets...)
			opt := run.opt
			opt.OutDir = t.TempDir()
			opt.Monitor = monitor.NewRun(cfg.Name, "pipelined", "")
			if _, err := Run(context.Background(), cfg, opt); err != nil {
				t.Fatal(err)
			}
			res, err := ReadResult(opt.OutDir + "/" + ResultFile)
			if err != nil {
				t.Fatal(err)
			}
			var names []string
			sum := 0.0
			for _, p := range res.PretrainPhases {
				names = append(names, p.Name)
				sum += p.Seconds
				if p.Seconds < 0 {
					t.Errorf("phase %s: %g s; want none negative", p.Name, p.Seconds)
				}
			}
			if want := phaseNames[:]; !slices.Equal(names, want) {
				t.Fatalf("result.json pretrain_phases %v; want %v", names, want)
			}
			if math.Abs(sum-res.PretrainSeconds) > 1e-6 {
				t.Errorf("the phases sum to %g s; want pretrain_seconds, %g s", sum, res.PretrainSeconds)
			}
			ps := res.PretrainPhases
			if ps[phaseStart].Seconds <= 0 || ps[phaseFill].Seconds <= 0 || ps[phaseCollect].Seconds <= 0 {
				t.Errorf("phases %+v; want a start, a fill and a collect that take time", ps)
			}
			if run.name == "nats" && ps[phaseCalibration].Seconds < calibration.Seconds() {
				t.Errorf("calibration %g s; want at least the %s the master measures its speed", ps[phaseCalibration].Seconds, calibration)
			}
			w := pipelineWindows(Stages(cfg, 240)[0], 240)
			var b float64
			if res.Plan != nil {
				for _, g := range res.Plan.Groups {
					b = max(b, g.MeasuredBusySeconds)
				}
			} else {
				for _, r := range res.RBMs {
					b = max(b, r.BusySeconds/float64(w))
				}
			}
			if res.Windows != w || w < 12 || b <= 0 || res.BottleneckWindowSeconds != b ||
				math.Abs(res.OverheadSeconds-(res.PretrainSeconds-float64(w)*b)) > 1e-9 {
				t.Errorf("windows %d, bottleneck %g s, overhead %g s; want %d, %g, pretrain_seconds %g less W of them",
					res.Windows, res.BottleneckWindowSeconds, res.OverheadSeconds, w, b, res.PretrainSeconds)
			}
			t.Logf("phases %+v, pretrain %.3f s, W %d, bottleneck %.4f s, overhead %.3f s", ps, res.PretrainSeconds, res.Windows, res.BottleneckWindowSeconds, res.OverheadSeconds)
			shown := opt.Monitor.Status().PretrainPhases
			if len(shown) != len(ps) {
				t.Fatalf("the monitor shows phases %+v; want result.json's %+v", shown, ps)
			}
			for k := range ps {
				if shown[k].Name != ps[k].Name || shown[k].Seconds != ps[k].Seconds {
					t.Errorf("the monitor shows phase %+v; want result.json's %+v", shown[k], ps[k])
				}
			}
		})
	}
}
