package monitor

import (
	"fmt"
	"testing"

	"github.com/pipedbn/pipedbn/pipeline"
)

// A trace keeps every report until it is full, then every other point:
// it covers the whole run in at most maxTrace points, evenly spaced.
func TestTraceThins(t *testing.T) {
	var tr trace
	tr.add(0, 1) // nothing trained yet
	if len(tr.points) != 0 {
		t.Fatalf("a report at mini-batch 0 made %v; want no point", tr.points)
	}
	for b := 1; b <= maxTrace; b++ {
		tr.add(b, float64(b))
	}
	if len(tr.points) != maxTrace || tr.stride != 1 {
		t.Fatalf("%d points, stride %d after %d reports; want %d, 1", len(tr.points), tr.stride, maxTrace, maxTrace)
	}
	for b := maxTrace + 1; b <= 10*maxTrace; b++ {
		tr.add(b, float64(b))
	}
	n := len(tr.points)
	if n > maxTrace || n < maxTrace/2 {
		t.Fatalf("%d points after %d reports; want %d to %d", n, 10*maxTrace, maxTrace/2, maxTrace)
	}
	if first := tr.points[0][0]; first != 1 {
		t.Errorf("first point at mini-batch %v; want 1", first)
	}
	if last := tr.points[n-1][0]; last < 10*maxTrace-float64(tr.stride) {
		t.Errorf("last point at mini-batch %v, stride %d; want within a stride of %d", last, tr.stride, 10*maxTrace)
	}
	for i := 1; i < n; i++ {
		if d := tr.points[i][0] - tr.points[i-1][0]; d < float64(tr.stride)/2 || d > float64(tr.stride) {
			t.Fatalf("points %d and %d are %v mini-batches apart at stride %d: %v", i-1, i, d, tr.stride, tr.points)
		}
		if tr.points[i][1] != tr.points[i][0] {
			t.Fatalf("point %d = %v; want its error to be its report's", i, tr.points[i])
		}
	}
}

// A report at a mini-batch count the trace has passed (a replacement
// resuming from a checkpoint) replaces the points it redoes.
func TestTraceResumes(t *testing.T) {
	var tr trace
	for _, p := range [][2]float64{{10, 0.5}, {20, 0.4}, {30, 0.3}, {30, 0.25}, {15, 0.45}, {25, 0.35}} {
		tr.add(int(p[0]), p[1])
	}
	if got, want := fmt.Sprint(tr.points), "[[10 0.5] [15 0.45] [25 0.35]]"; got != want {
		t.Errorf("trace = %s; want %s", got, want)
	}
	if c := tr.copy(); len(c) != 3 || &c[0] == &tr.points[0] {
		t.Errorf("copy shares the trace's points")
	}
	var empty trace
	if c := empty.copy(); c == nil {
		t.Error("an empty trace's copy is nil; want [] in JSON")
	}
}

// The status has each RBM's trace, from its reports.
func TestStatusTrace(t *testing.T) {
	r, _ := newTestRun("pipelined")
	for b := 1; b <= 4; b++ {
		r.Observe(pipeline.Stats{Index: 2, Batches: 2 * b, LastRecon: 1 / float64(b)})
	}
	s := r.Status()
	if got := fmt.Sprint(s.RBMs[1].ReconTrace); got != "[[2 1] [4 0.5] [6 0.3333333333333333] [8 0.25]]" {
		t.Errorf("RBM 2's trace = %s; want its 4 reports", got)
	}
	if s.RBMs[0].ReconTrace == nil || len(s.RBMs[0].ReconTrace) != 0 {
		t.Errorf("RBM 1's trace = %#v; want empty", s.RBMs[0].ReconTrace)
	}
}
