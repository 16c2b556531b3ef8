package monitor

import "time"

// PretrainPhase is a phase of a pipelined run's pre-training (result.json's
// pretrain_phases: calibration, start, fill, steady, drain, collect).
type PretrainPhase struct {
	Name    string  `json:"name"`
	Seconds float64 `json:"seconds"`
	// Current says the run is in this phase: its seconds still grow.
	Current bool `json:"current,omitempty"`
}

// enteredPhase is a phase of pre-training the run entered, and when.
type enteredPhase struct {
	name string
	at   time.Time
}

// EnterPretrainPhase says pre-training enters the phase name now: the one
// before it ends.
func (r *Run) EnterPretrainPhase(name string) {
	if r == nil {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.entered = append(r.entered, enteredPhase{name: name, at: r.now()})
}

// PretrainPhases records the phases of pre-training as it ended, those of
// result.json: they replace the ones the run entered, which the master's
// clock measured a moment apart.
func (r *Run) PretrainPhases(ps []PretrainPhase) {
	if r == nil {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.phases = append([]PretrainPhase{}, ps...)
}

// pretrainPhases returns the phases of pre-training so far, at now: each
// entered phase lasts until the next was entered, the last until
// pre-training ended or now. nil when the run has none (greedy).
func (r *Run) pretrainPhases(now time.Time) []PretrainPhase {
	if r.phases != nil {
		return append([]PretrainPhase{}, r.phases...)
	}
	var ps []PretrainPhase
	for k, e := range r.entered {
		end, current := now, r.pretrainEnd.IsZero()
		if !current {
			end = r.pretrainEnd
		}
		if k+1 < len(r.entered) {
			end, current = r.entered[k+1].at, false
		}
		ps = append(ps, PretrainPhase{Name: e.name, Seconds: max(0, end.Sub(e.at).Seconds()), Current: current})
	}
	return ps
}
