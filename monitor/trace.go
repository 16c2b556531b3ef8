package monitor

// maxTrace bounds the points of an RBM's recon_trace.
const maxTrace = 256

// trace is an RBM's reconstruction error along its mini-batches, as its
// reports brought it: the curve the status page draws while the RBM is in
// its first epoch, when no epoch's error exists yet. It keeps at most one
// point per stride mini-batches; once full it drops every other point and
// doubles stride, so that it covers the whole run in at most maxTrace
// points, at O(1) per report amortized.
type trace struct {
	points [][2]float64 // [mini-batches trained, error], by mini-batch
	stride int
}

// add records the error err of the report at batch mini-batches.
func (t *trace) add(batch int, err float64) {
	if batch <= 0 {
		return // nothing trained yet: no error to show
	}
	if t.stride == 0 {
		t.stride = 1
	}
	x := float64(batch)
	// A replacement resumes from a checkpoint: the mini-batches it trains
	// again replace what its lost predecessor reported of them; a report
	// at the same count (an epoch's end after a window's) replaces it.
	n := len(t.points)
	for n > 0 && t.points[n-1][0] >= x {
		n--
	}
	t.points = t.points[:n]
	if n > 0 && x-t.points[n-1][0] < float64(t.stride) {
		return
	}
	if n == maxTrace {
		for i := 0; i < maxTrace/2; i++ {
			t.points[i] = t.points[2*i]
		}
		t.points = t.points[:maxTrace/2]
		t.stride *= 2
		if x-t.points[len(t.points)-1][0] < float64(t.stride) {
			return
		}
	}
	t.points = append(t.points, [2]float64{x, err})
}

// copy returns the points, in a slice of their own (never nil).
func (t *trace) copy() [][2]float64 {
	return append([][2]float64{}, t.points...)
}
