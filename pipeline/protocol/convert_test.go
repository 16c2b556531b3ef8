package protocol

import (
	"reflect"
	"testing"
	"time"

	"github.com/pipedbn/pipedbn/messages"
	"github.com/pipedbn/pipedbn/pipeline"
	"github.com/pipedbn/pipedbn/rbm"
)

func TestStageConfigOfAssignment(t *testing.T) {
	t.Parallel()
	for i, c := range testStages(3, 2) {
		c.Units, c.Middle = rbm.Gaussian, rbm.Samples
		c.MiddlePrecision = []pipeline.Precision{pipeline.Float32, pipeline.Float16, pipeline.Uint8}[i]
		got, err := StageConfig(assignment(testRun, c, 3, testRows, 2, 2, []string{"up"}, []string{"down"}))
		if err != nil || !reflect.DeepEqual(got, c) {
			t.Errorf("StageConfig(assignment(%+v)) = %+v, %v; want the same config", c, got, err)
		}
	}
	for _, edit := range []func(*messages.Assign){
		func(a *messages.Assign) { a.Units = "ternary" },
		func(a *messages.Assign) { a.Middle = "means" },
	} {
		a := assignment(testRun, testStages(1, 1)[0], 1, testRows, 2, 2, []string{MasterName}, nil)
		edit(a)
		if _, err := StageConfig(a); err == nil {
			t.Errorf("StageConfig(units %q, middle %q) = nil error; want one", a.Units, a.Middle)
		}
	}
}

func TestCheckpointRoundTrip(t *testing.T) {
	t.Parallel()
	stages := testStages(1, 2)
	st := trainStage(t, stages[0], dataWindows(stages, 3))
	st.Waited(2*time.Second, 3*time.Second, pipeline.WaitingInput)
	snap := st.Snapshot()
	if snap.Stats.WaitInput != 2*time.Second || snap.Stats.WaitCredit != 3*time.Second {
		t.Fatalf("Snapshot() waits %s, %s; want 2s, 3s", snap.Stats.WaitInput, snap.Stats.WaitCredit)
	}
	cp := CheckpointOf(testRun, stages[0], snap)
	if err := cp.Check("r1", 1, 0, 6, 4); err != nil || cp.Incarnation != 2 || cp.Windows != 3 || cp.Batches != 3 {
		t.Fatalf("CheckpointOf(...) = window %d, %d batches, incarnation %d, Check %v; want 3, 3, 2, nil", cp.Windows, cp.Batches, cp.Incarnation, err)
	}
	// Through the wire and back.
	b, err := messages.Encode(cp)
	if err != nil {
		t.Fatal(err)
	}
	m, err := messages.Decode(b)
	if err != nil {
		t.Fatal(err)
	}
	got := StageStateOf(m.(*messages.Checkpoint))
	// The time counters go through float seconds; the rest is exact.
	for _, d := range [][2]time.Duration{{got.Stats.Busy, snap.Stats.Busy}, {got.Stats.WaitInput, snap.Stats.WaitInput}, {got.Stats.WaitCredit, snap.Stats.WaitCredit}} {
		if diff := d[0] - d[1]; diff < -time.Microsecond || diff > time.Microsecond {
			t.Errorf("a time counter came back as %s; want %s", d[0], d[1])
		}
	}
	got.Stats.Busy, got.Stats.WaitInput, got.Stats.WaitCredit = snap.Stats.Busy, snap.Stats.WaitInput, snap.Stats.WaitCredit
	got.Stats.State = snap.Stats.State // not part of a checkpoint
	if !reflect.DeepEqual(got, snap) {
		t.Fatalf("StageStateOf(CheckpointOf(s)) = %+v; want %+v", got, snap)
	}
	if _, err := pipeline.RestoreStage(stages[0], got); err != nil {
		t.Fatalf("RestoreStage(StageStateOf(...)) = %v; want nil", err)
	}
}

func TestStates(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		local pipeline.State
		wire  messages.State
	}{
		{pipeline.Idle, messages.StateIdle},
		{pipeline.Training, messages.StateTraining},
		{pipeline.WaitingInput, messages.StateWaitingInput},
		{pipeline.WaitingCredit, messages.StateWaitingCredit},
		{pipeline.Done, messages.StateDone},
		{pipeline.Failed, messages.StateFailed},
	} {
		if got := WireState(tc.local); got != tc.wire {
			t.Errorf("WireState(%v) = %v; want %v", tc.local, got, tc.wire)
		}
		if got := LocalState(tc.wire); got != tc.local {
			t.Errorf("LocalState(%v) = %v; want %v", tc.wire, got, tc.local)
		}
	}
	if got := WireState(pipeline.State(99)); got != messages.StateIdle {
		t.Errorf("WireState(99) = %v; want idle", got)
	}
	if got := LocalState(messages.State(99)); got != pipeline.Idle {
		t.Errorf("LocalState(99) = %v; want idle", got)
	}
}

func TestSecondsAndNames(t *testing.T) {
	t.Parallel()
	if got := Seconds(1.5); got != 1500*time.Millisecond {
		t.Errorf("Seconds(1.5) = %s; want 1.5s", got)
	}
	if got := testRun.String(); got != "r1#2" {
		t.Errorf("Run.String() = %q; want r1#2", got)
	}
	for _, tc := range []struct {
		name string
		ok   bool
	}{
		{"s1", true}, {"memory-1", true}, {"A_b-9", true}, {string(make([]byte, 64)), false},
		{"", false}, {"master", false}, {"a.b", false}, {"a b", false}, {"a*", false},
	} {
		if err := CheckName(tc.name); (err == nil) != tc.ok {
			t.Errorf("CheckName(%q) = %v; want ok %t", tc.name, err, tc.ok)
		}
	}
	if err := CheckName("x123456789x123456789x123456789x123456789x123456789x123456789abcd"); err != nil {
		t.Errorf("CheckName(64 characters) = %v; want nil", err)
	}
}

// The master's limits on a subject all its slaves share hold every seat's
// messages at once: one per replica of every RBM.
func TestReassemblyLimits(t *testing.T) {
	t.Parallel()
	cfg := MasterConfig{Stages: testStages(3, 2), N: testRows}
	kinds := []messages.Kind{messages.KindStatus, messages.KindWeights}
	one := ReassemblyLimits(cfg, kinds, false)
	if want := messages.Limits(kinds, ShapeOf(cfg.Stages[0], testRows), ShapeOf(cfg.Stages[1], testRows), ShapeOf(cfg.Stages[2], testRows)); one != want {
		t.Errorf("one sender's limits %+v; want messages.Limits' %+v", one, want)
	}
	shared := ReassemblyLimits(cfg, kinds, true)
	if shared.MaxBytes != 3*one.MaxSenderBytes || shared.MaxMessages != 16 {
		t.Errorf("3 seats: %+v; want MaxBytes %d, MaxMessages 16", shared, 3*one.MaxSenderBytes)
	}
	cfg.Replicas = []int{1, 4, 5}
	shared = ReassemblyLimits(cfg, kinds, true)
	if shared.MaxBytes != 10*one.MaxSenderBytes || shared.MaxMessages != 20 {
		t.Errorf("10 seats: %+v; want MaxBytes %d, MaxMessages 20", shared, 10*one.MaxSenderBytes)
	}
}

// A precision's size on the wire, which the planner prices links by, is
// the bytes its encoding takes.
func TestPrecisionBytesAreTheEncodings(t *testing.T) {
	for _, p := range []pipeline.Precision{pipeline.Float32, pipeline.Float16, pipeline.Uint8, pipeline.Binary} {
		for _, n := range []int{0, 1, 7, 8, 9, 784 * 2048} {
			if got, want := p.Bytes(int64(n)), EncodingOf(p).Bytes(n); got != want {
				t.Errorf("%s: %d values take %d bytes; its encoding %v takes %d", p, n, got, EncodingOf(p), want)
			}
		}
	}
}
