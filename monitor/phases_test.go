package monitor

import (
	"reflect"
	"testing"
)

// The phases of pre-training show as the run passes them: each lasts until
// the next is entered, the current one until now; once pre-training ended,
// result.json's phases replace them.
func TestPretrainPhases(t *testing.T) {
	r, c := newTestRun("pipelined")
	if got := r.Status().PretrainPhases; got != nil {
		t.Fatalf("phases before any = %+v; want none", got)
	}
	r.EnterPretrainPhase("calibration")
	c.advance(secs(0.25))
	r.EnterPretrainPhase("start")
	c.advance(secs(1.5))
	want := []PretrainPhase{{Name: "calibration", Seconds: 0.25}, {Name: "start", Seconds: 1.5, Current: true}}
	if got := r.Status().PretrainPhases; !reflect.DeepEqual(got, want) {
		t.Fatalf("phases = %+v; want %+v", got, want)
	}
	compare(t, r, `
# HELP pipedbn_pretrain_phase_seconds Seconds a pipelined run's pre-training spent in the phase (calibration, start, fill, steady, drain, collect), the current one's so far; absent before the run enters it.
# TYPE pipedbn_pretrain_phase_seconds gauge
pipedbn_pretrain_phase_seconds{phase="calibration"} 0.25
pipedbn_pretrain_phase_seconds{phase="start"} 1.5
`, "pipedbn_pretrain_phase_seconds")

	r.EnterPretrainPhase("fill")
	r.EnterPretrainPhase("steady") // a phase of no length
	c.advance(secs(2))
	r.FineTuning(3) // pre-training ended: the last phase stops growing
	c.advance(secs(5))
	want = []PretrainPhase{{Name: "calibration", Seconds: 0.25}, {Name: "start", Seconds: 1.5}, {Name: "fill", Seconds: 0}, {Name: "steady", Seconds: 2}}
	if got := r.Status().PretrainPhases; !reflect.DeepEqual(got, want) {
		t.Fatalf("phases after pre-training = %+v; want %+v", got, want)
	}
	final := []PretrainPhase{{Name: "calibration", Seconds: 0.3}, {Name: "collect", Seconds: 3.5}}
	r.PretrainPhases(final)
	final[0].Seconds = 9 // the run keeps its own copy
	if got, want := r.Status().PretrainPhases, []PretrainPhase{{Name: "calibration", Seconds: 0.3}, {Name: "collect", Seconds: 3.5}}; !reflect.DeepEqual(got, want) {
		t.Fatalf("phases as result.json has them = %+v; want %+v", got, want)
	}
}
