package protocol

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/pipedbn/pipedbn/messages"
	"github.com/pipedbn/pipedbn/pipeline"
)

// masterRig drives one master by hand, with fake slaves s1, s2, ...; it
// records what the master shows its observer.
type masterRig struct {
	t   *testing.T
	m   *Master
	cfg MasterConfig
	now time.Duration

	joined       []string
	lost         []string // "rbm slave silent"
	recovered    []Recovery
	windows      []pipeline.Stats
	epochs       []pipeline.Stats
	reported     []pipeline.Stats
	checkpointed []string // "rbm windows"
}

// newMasterRig returns the master of a run of l RBMs of epochs epochs,
// checkpoints every c windows, 2 credits; edit, if set, changes its config.
func newMasterRig(t *testing.T, l, epochs, c int, edit func(*MasterConfig)) *masterRig {
	t.Helper()
	r := &masterRig{t: t}
	stages := testStages(l, epochs)
	r.cfg = MasterConfig{
		Run: testRun, Stages: stages, Data: testData(testRows, stages[0].Visible), N: testRows, ShuffleSeed: 3,
		Credits: 2, CheckpointEvery: c, Timing: testTiming(),
		Observer: Observer{
			Hooks: pipeline.Hooks{
				Window: func(s pipeline.Stats) { r.windows = append(r.windows, s) },
				Epoch:  func(s pipeline.Stats) { r.epochs = append(r.epochs, s) },
			},
			Reported: func(s pipeline.Stats) { r.reported = append(r.reported, s) },
			Joined: func(name, host string, cpus int) {
				r.joined = append(r.joined, fmt.Sprintf("%s@%s/%d", name, host, cpus))
			},
			Lost: func(i int, slave string, silent time.Duration) {
				r.lost = append(r.lost, fmt.Sprintf("%d %s %s", i, slave, silent))
			},
			Recovered: func(rec Recovery) { r.recovered = append(r.recovered, rec) },
			Checkpointed: func(i int, st pipeline.StageState) {
				r.checkpointed = append(r.checkpointed, fmt.Sprintf("%d %d", i, st.Windows))
			},
		},
	}
	if edit != nil {
		edit(&r.cfg)
	}
	m, err := NewMaster(r.cfg)
	if err != nil {
		t.Fatalf("NewMaster = %v; want nil", err)
	}
	r.m = m
	return r
}

func (r *masterRig) at(s float64) *masterRig { r.now = sec(s); return r }

func (r *masterRig) recv(from string, m messages.Message) Output {
	r.m.Receive(r.now, Envelope{From: from, To: MasterName, Msg: m})
	return r.m.Ready()
}

func (r *masterRig) tick() Output {
	r.m.Tick(r.now)
	return r.m.Ready()
}

func (r *masterRig) register(name string, pid int) Output {
	return r.recv(name, &messages.Register{Name: name, Host: "h", CPUs: 1, PID: pid, Protocol: messages.Version, Process: uint64(pid)})
}

// start starts the master at 0 and registers s1..sL (process id 1), and
// returns the output of the last registration: the assignments.
func (r *masterRig) start() Output {
	r.m.Start(r.now)
	r.m.Ready()
	var out Output
	for i := 1; i <= len(r.cfg.Stages); i++ {
		out = r.register(fmt.Sprintf("s%d", i), 1)
	}
	return out
}

func (r *masterRig) stage(i int) pipeline.StageConfig { return r.cfg.Stages[i-1] }

// status is slave's report on RBM i, with the neighbours the plan gives
// it when up and down are "".
func (r *masterRig) status(i int, slave string, batches int) *messages.Status {
	up, down := MasterName, ""
	if i > 1 {
		up = fmt.Sprintf("s%d", i-1)
	}
	if i < len(r.cfg.Stages) {
		down = fmt.Sprintf("s%d", i+1)
	}
	return &messages.Status{
		RunID: testRun.ID, Incarnation: testRun.Incarnation, RBM: i, Slave: slave, State: messages.StateTraining,
		Batches: batches, Upstream: names(up), Downstream: names(down), Process: 1,
	}
}

// checkpoint has slave send RBM i's checkpoint at windows, and the driver
// store it; it returns what the master asks once it is stored.
func (r *masterRig) checkpoint(i int, slave string, windows int) Output {
	r.t.Helper()
	out := r.recv(slave, fakeCheckpoint(r.stage(i), windows, windows))
	if len(out.Store) != 1 || out.Store[0].Kind != Put {
		r.t.Fatalf("checkpoint of rbm %d at %d from %s: store ops %+v; want one Put", i, windows, slave, out.Store)
	}
	r.m.Stored(r.now, out.Store[0])
	return r.m.Ready()
}

func (r *masterRig) wantDone(want error) {
	r.t.Helper()
	done, err := r.m.Done()
	if !done || !errors.Is(err, want) || (want == nil && err != nil) {
		r.t.Fatalf("Done() = %t, %v; want true, %v", done, err, want)
	}
}

func (r *masterRig) wantRunning() {
	r.t.Helper()
	if done, err := r.m.Done(); done {
		r.t.Fatalf("Done() = true, %v; want false", err)
	}
}

// wantAssign checks that e assigns RBM i to to, between up and down.
func (r *masterRig) wantAssign(e Envelope, i int, to, up, down string, resume bool) {
	r.t.Helper()
	want := assignment(testRun, r.stage(i), len(r.cfg.Stages), testRows, 2, r.cfg.CheckpointEvery, names(up), names(down))
	want.Replicas = 1
	want.Resume, want.Process = resume, r.m.seats[i][0].process.process
	if e.From != MasterName || e.To != to || !reflect.DeepEqual(e.Msg, want) {
		r.t.Fatalf("%s %+v; want master -> %s %+v", e, e.Msg, to, want)
	}
}

func wantStops(t *testing.T, envs []Envelope, reason string, to ...string) {
	t.Helper()
	var want []string
	for _, n := range to {
		want = append(want, n+" stop")
	}
	wantShape(t, "stop", envs, strings.Join(want, ", "))
	for i := range envs {
		if s := msg[*messages.Stop](t, envs, i); *s != (messages.Stop{RunID: "r1", Incarnation: 2, Reason: reason}) {
			t.Fatalf("stop to %s = %+v; want run r1#2, reason %q", envs[i].To, *s, reason)
		}
	}
}

func TestMasterGathersAndAssigns(t *testing.T) {
	t.Parallel()
	r := newMasterRig(t, 3, 1, 2, nil)
	r.m.Start(0)
	wantShape(t, "Start", r.m.Ready().Messages, "")
	admitted := messages.Admission{Slave: "s1", Outcome: messages.Admitted, Process: 1}
	out := r.register("s1", 1)
	wantShape(t, "Register(s1)", out.Messages, "s1 admission")
	if got := msg[*messages.Admission](t, out.Messages, 0); *got != admitted {
		t.Fatalf("Register(s1) = %+v; want %+v", *got, admitted)
	}
	wantShape(t, "Register(s2)", r.register("s2", 1).Messages, "s2 admission")
	// A repeated registration takes no second place; another process of a
	// name in use is refused (two slaves started with one name), until the
	// first falls silent: then it takes its place.
	wantShape(t, "Register(s1) again", r.at(1).register("s1", 1).Messages, "s1 admission")
	out = r.at(3.9).register("s1", 7)
	if got := msg[*messages.Admission](t, out.Messages, 0); got.Outcome != messages.InUse || got.Process != 7 ||
		got.Reason != "slave s1 is in the run already, on host h (pid 1), and was heard 2.9s ago: give every slave a name of its own" {
		t.Fatalf("Register(s1, another process) = %+v; want in use, to process 7, naming the holder", *got)
	}
	wantShape(t, "Register(s2) again", r.register("s2", 1).Messages, "s2 admission")
	wantShape(t, "Register(s1) new process after 3s of silence", r.at(4).register("s1", 7).Messages, "s1 admission")
	r.wantRunning()

	out = r.register("s3", 1)
	wantShape(t, "Register(s3)", out.Messages, "s3 admission, s1 assign, s2 assign, s3 assign")
	r.wantAssign(out.Messages[1], 1, "s1", MasterName, "s2", false)
	r.wantAssign(out.Messages[2], 2, "s2", "s1", "s3", false)
	r.wantAssign(out.Messages[3], 3, "s3", "s2", "", false)
	if want := []string{"s1@h/1", "s2@h/1", "s3@h/1"}; !slices.Equal(r.joined, want) {
		t.Fatalf("Observer.Joined saw %v; want %v", r.joined, want)
	}

	// Beyond L, up to L spares wait to take over; then the cluster is full.
	for _, name := range []string{"s4", "s5", "s6"} {
		out = r.register(name, 1)
		if got := msg[*messages.Admission](t, out.Messages, 0).Outcome; got != messages.Admitted {
			t.Fatalf("Register(%s) with 3 of 3 joined: %v; want admitted, as a spare", name, got)
		}
	}
	out = r.register("s7", 1)
	if got := msg[*messages.Admission](t, out.Messages, 0).Outcome; got != messages.Full {
		t.Fatalf("Register(s7) with 3 joined and 3 spares: %v; want full", got)
	}
	// The process that took s1's place before the run trains RBM_1: a
	// registration of it is a repeat, not a restart.
	wantShape(t, "Register(s1) pid 7", r.register("s1", 7).Messages, "s1 admission, s1 assign")
}

// A plan's Seating puts the slaves it names at their RBMs, whatever order
// they join in; the others fill the rest in the order they joined.
func TestMasterSeating(t *testing.T) {
	t.Parallel()
	r := newMasterRig(t, 3, 1, 2, func(c *MasterConfig) { c.Seating = map[string]Seat{"g2": {RBM: 3}, "g1": {RBM: 1}, "far": {RBM: 9}} })
	r.m.Start(0)
	r.m.Ready()
	var out Output
	for _, name := range []string{"far", "g2", "g1"} {
		out = r.register(name, 1)
	}
	wantShape(t, "the 3rd registration", out.Messages, "g1 admission, g1 assign, far assign, g2 assign")
	want := map[string]int{"g1": 1, "far": 2, "g2": 3}
	for _, e := range out.Messages[1:] {
		if got := msg[*messages.Assign](t, []Envelope{e}, 0).RBM; got != want[e.To] {
			t.Errorf("%s trains RBM_%d; want RBM_%d", e.To, got, want[e.To])
		}
	}
}

func TestMasterRefuses(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		reg  messages.Register
		want string
	}{
		{messages.Register{Name: "s1", Protocol: messages.Version + 1}, fmt.Sprintf("protocol version %d, the master speaks %d", messages.Version+1, messages.Version)},
		{messages.Register{Name: "s 1", Protocol: messages.Version}, `name "s 1": want 1-64 letters, digits, '_' or '-' (and not "master")`},
		{messages.Register{Name: MasterName, Protocol: messages.Version}, `name "master": want 1-64 letters, digits, '_' or '-' (and not "master")`},
		{messages.Register{Name: strings.Repeat("x", 65), Protocol: messages.Version}, fmt.Sprintf("name %q: want 1-64 letters, digits, '_' or '-' (and not \"master\")", strings.Repeat("x", 65))},
	} {
		r := newMasterRig(t, 1, 1, 2, nil)
		r.m.Start(0)
		out := r.recv(tc.reg.Name, &tc.reg)
		want := messages.Admission{Slave: tc.reg.Name, Outcome: messages.Refused, Reason: tc.want}
		if len(out.Messages) != 1 || out.Messages[0].To != tc.reg.Name || *msg[*messages.Admission](t, out.Messages, 0) != want {
			t.Errorf("Register(%+v) = [%s]; want %+v to %s", tc.reg, describe(out.Messages), want, tc.reg.Name)
		}
		if len(r.joined) != 0 {
			t.Errorf("Register(%+v): Observer.Joined saw %v; want nobody", tc.reg, r.joined)
		}
	}
}

// TestMasterRefusesAnotherSendersName: a registration under a name that is
// not its sender's (a slave's identity registering as another slave, or
// as a made-up name, before the run or during it) is refused unanswered,
// joins nothing and is counted as foreign; the real slaves then join.
func TestMasterRefusesAnotherSendersName(t *testing.T) {
	t.Parallel()
	r := newMasterRig(t, 2, 1, 2, nil)
	r.m.Start(0)
	r.m.Ready()
	forge := func(from, name string) {
		t.Helper()
		reg := &messages.Register{Name: name, Host: "attacker", CPUs: 64, PID: 666, Protocol: messages.Version, Process: 666}
		if out := r.recv(from, reg); len(out.Messages) != 0 {
			t.Errorf("Register(%s) from %q = [%s]; want no answer", name, from, describe(out.Messages))
		}
	}
	forge("s1", "s2")
	forge("s1", "ghost")
	forge("", "s1")
	r.register("s1", 1)
	forge("s1", "s2") // a live name's identity: one name at a time
	out := r.register("s2", 1)
	wantShape(t, "the 2nd registration", out.Messages, "s2 admission, s1 assign, s2 assign")
	forge("s2", "spare") // no spare either
	if want := []string{"s1@h/1", "s2@h/1"}; !slices.Equal(r.joined, want) {
		t.Errorf("joined %v; want %v", r.joined, want)
	}
	if got := r.m.Rejections(); got[messages.RejectForeign] != 5 || got.Total() != 5 {
		t.Errorf("Rejections() = %v; want foreign=5", got)
	}
}

func TestMasterJoinTimeout(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		came []string
		want string
	}{
		{nil, "cluster.join_timeout = 10s: 0 of 3 slaves joined ()"},
		{[]string{"s1"}, "cluster.join_timeout = 10s: 1 of 3 slaves joined (s1)"},
		{[]string{"s1", "a-2"}, "cluster.join_timeout = 10s: 2 of 3 slaves joined (s1, a-2)"},
	} {
		r := newMasterRig(t, 3, 1, 2, nil)
		r.m.Start(0)
		for _, n := range tc.came {
			r.at(1).register(n, 1)
		}
		r.now = 10*time.Second - 1
		r.tick()
		r.wantRunning()
		r.at(10).tick()
		_, err := r.m.Done()
		r.wantDone(err)
		if errText(err) != tc.want {
			t.Errorf("join timeout with %v = %s; want %s", tc.came, errText(err), tc.want)
		}
	}
}

func dataCredit(upTo, next, durable uint64, resend bool) *messages.Credit {
	return &messages.Credit{RunID: "r1", Incarnation: 2, RBM: 0, UpTo: upTo, Next: next, Durable: durable, Resend: resend}
}

// wantData checks that envs are the data windows seqs, to to, as the
// source deals them.
func (r *masterRig) wantData(envs []Envelope, to string, seqs ...uint64) {
	r.t.Helper()
	ws := dataWindows(r.cfg.Stages, int(slices.Max(append(seqs, 0)))+1)
	var want []string
	for range seqs {
		want = append(want, to+" chunk")
	}
	wantShape(r.t, "feed", envs, strings.Join(want, ", "))
	for k, seq := range seqs {
		c := msg[*messages.Chunk](r.t, envs, k)
		w := ws[seq]
		if c.Seq != seq || c.RBM != 0 || c.Epoch != w.Epoch || c.Cols != r.stage(1).Visible || !slices.Equal(c.Data, w.X) || len(c.Bias) != 0 {
			r.t.Fatalf("feed chunk %d = seq %d, rbm %d, epoch %d, %d cols; want data window %d of epoch %d, %d cols, no bias",
				k, c.Seq, c.RBM, c.Epoch, c.Cols, seq, w.Epoch, r.stage(1).Visible)
		}
	}
}

func TestMasterFeed(t *testing.T) {
	t.Parallel()
	r := newMasterRig(t, 2, 2, 2, nil) // 4 data windows
	r.start()
	r.wantData(r.recv("s1", dataCredit(2, 0, 0, false)).Messages, "s1", 0, 1)
	wantShape(t, "credit from s2", r.recv("s2", dataCredit(10, 0, 0, false)).Messages, "")
	other := dataCredit(10, 0, 0, false)
	other.Incarnation = 1
	wantShape(t, "credit of an earlier incarnation", r.recv("s1", other).Messages, "")
	wantShape(t, "the same credit again", r.recv("s1", dataCredit(2, 0, 0, false)).Messages, "")
	// Asked for at once, window 1 is on its way: nothing again; asked for
	// ResendAfter later, it is sent again.
	wantShape(t, "a request crossing window 1", r.recv("s1", dataCredit(2, 1, 0, true)).Messages, "")
	r.wantData(r.at(1).recv("s1", dataCredit(2, 1, 0, true)).Messages, "s1", 1)
	r.wantData(r.recv("s1", dataCredit(4, 2, 0, false)).Messages, "s1", 2, 3)
	out := r.recv("s1", dataCredit(5, 4, 4, false))
	wantShape(t, "credit beyond the data", out.Messages, "s1 end-of-stream")
	if got, want := *msg[*messages.EndOfStream](t, out.Messages, 0), (messages.EndOfStream{RunID: "r1", Incarnation: 2, RBM: 0, Epoch: 1, Windows: 4}); got != want {
		t.Fatalf("end of the data = %+v; want %+v", got, want)
	}
	wantShape(t, "more credit", r.recv("s1", dataCredit(9, 4, 4, false)).Messages, "")
	// Windows 0..3 are forgotten: asking for them fails the run.
	out = r.recv("s1", dataCredit(9, 0, 0, true))
	wantStops(t, out.Messages, "the run failed", "s1", "s2")
	_, err := r.m.Done()
	r.wantDone(err)
	if want := "rbm 0: s1 asks for window 0 again, but rbm 0 keeps only the windows from 4 on"; errText(err) != want {
		t.Fatalf("Done() error = %s; want %s", errText(err), want)
	}
	wantShape(t, "after the end", r.recv("s1", dataCredit(20, 4, 4, false)).Messages, "")
}

func TestMasterStatus(t *testing.T) {
	t.Parallel()
	r := newMasterRig(t, 2, 2, 2, nil)
	r.start()
	st := r.status(1, "s1", 3)
	st.ReconError, st.BusySeconds, st.WaitSeconds = 0.5, 1.5, 0.25
	wantShape(t, "Status", r.at(1).recv("s1", st).Messages, "")
	want := pipeline.Stats{
		Index: 1, Batches: 3, Rows: 12, LastRecon: 0.5, Busy: 1500 * time.Millisecond, WaitInput: 250 * time.Millisecond,
		State: pipeline.Training, Worker: "s1",
	}
	if len(r.windows) != 1 || !reflect.DeepEqual(r.windows[0], want) {
		t.Fatalf("Hooks.Window saw %+v; want [%+v]", r.windows, want)
	}
	if len(r.epochs) != 0 {
		t.Fatalf("Hooks.Epoch saw %+v; want nothing before an epoch ends", r.epochs)
	}
	st = r.status(1, "s1", 4)
	st.ReconErrors, st.Epoch = []float64{0.4}, 1
	r.recv("s1", st)
	r.recv("s1", st)
	if len(r.epochs) != 1 || r.epochs[0].Epoch != 1 || !slices.Equal(r.epochs[0].Recon, []float64{0.4}) || len(r.windows) != 3 {
		t.Fatalf("Hooks.Epoch saw %+v (windows %d); want one epoch, recon [0.4] (3 windows)", r.epochs, len(r.windows))
	}

	// A slave that lost a relink is told again.
	st = r.status(2, "s2", 1)
	st.Upstream = []string{"s9"}
	out := r.recv("s2", st)
	wantShape(t, "Status with a stale upstream", out.Messages, "s2 assign")
	r.wantAssign(out.Messages[0], 2, "s2", "s1", "", false)

	// A stranger's report is answered with a stop; foreign ones are dropped.
	wantStops(t, r.recv("s9", r.status(1, "s9", 9)).Messages, "declared lost", "s9")
	for _, edit := range []func(*messages.Status){
		func(s *messages.Status) { s.RunID = "r2" },
		func(s *messages.Status) { s.Incarnation = 1 },
		func(s *messages.Status) { s.RBM = 3 },
		func(s *messages.Status) { s.RBM = 0 },
	} {
		st := r.status(1, "s1", 9)
		edit(st)
		if out := r.recv("s1", st); len(out.Messages) != 0 {
			t.Errorf("Status %+v = [%s]; want nothing", *st, describe(out.Messages))
		}
	}
	if len(r.windows) != 4 {
		t.Fatalf("Hooks.Window called %d times; want 4 (the 4 reports of current slaves)", len(r.windows))
	}
}

func TestMasterIgnoresReportsWhileGathering(t *testing.T) {
	t.Parallel()
	r := newMasterRig(t, 2, 1, 2, nil)
	r.m.Start(0)
	r.register("s1", 1)
	r.m.Ready()
	for _, m := range []messages.Message{r.status(1, "s1", 1), fakeCheckpoint(r.stage(1), 2, 2), dataCredit(2, 0, 0, false)} {
		if out := r.recv("s1", m); len(out.Messages) != 0 || len(out.Store) != 0 {
			t.Errorf("%v while gathering = [%s], %+v; want nothing", m.Kind(), describe(out.Messages), out.Store)
		}
	}
}

func TestMasterStoresCheckpoints(t *testing.T) {
	t.Parallel()
	r := newMasterRig(t, 2, 2, 2, nil)
	r.start()
	cp := fakeCheckpoint(r.stage(1), 2, 2)
	out := r.at(1).recv("s1", cp)
	wantShape(t, "Checkpoint", out.Messages, "")
	want := []StoreOp{{Kind: Put, Name: "rbm-1/000000000002", Seat: Seat{RBM: 1}, Windows: 2, Msg: cp}}
	if !reflect.DeepEqual(out.Store, want) {
		t.Fatalf("Checkpoint(rbm 1, 2) store ops = %+v; want %+v", out.Store, want)
	}
	ack := func(windows, durable uint64, i int) messages.CheckpointAck {
		return messages.CheckpointAck{RunID: "r1", Incarnation: 2, RBM: i, Windows: windows, Durable: durable}
	}
	r.m.Stored(r.now, out.Store[0])
	out = r.m.Ready()
	wantShape(t, "Stored(rbm 1, 2)", out.Messages, "s1 checkpoint-ack")
	// RBM_2 has no checkpoint: RBM_1 must keep restarting from 0.
	if got := *msg[*messages.CheckpointAck](t, out.Messages, 0); got != ack(2, 0, 1) {
		t.Fatalf("Stored(rbm 1, 2) acks %+v; want %+v", got, ack(2, 0, 1))
	}

	out = r.checkpoint(2, "s2", 2)
	wantShape(t, "Stored(rbm 2, 2)", out.Messages, "s2 checkpoint-ack, s1 checkpoint-ack")
	if got := *msg[*messages.CheckpointAck](t, out.Messages, 0); got != ack(2, 2, 2) {
		t.Fatalf("Stored(rbm 2, 2) acks %+v to s2; want %+v", got, ack(2, 2, 2))
	}
	if got := *msg[*messages.CheckpointAck](t, out.Messages, 1); got != ack(2, 2, 1) {
		t.Fatalf("Stored(rbm 2, 2) acks %+v to s1; want %+v", got, ack(2, 2, 1))
	}

	out = r.checkpoint(1, "s1", 4)
	if got := *msg[*messages.CheckpointAck](t, out.Messages, 0); got != ack(4, 2, 1) || len(out.Store) != 0 {
		t.Fatalf("Stored(rbm 1, 4) acks %+v, store ops %+v; want %+v and none", got, out.Store, ack(4, 2, 1))
	}
	out = r.checkpoint(2, "s2", 4)
	wantShape(t, "Stored(rbm 2, 4)", out.Messages, "s2 checkpoint-ack, s1 checkpoint-ack")
	if a1, a2 := *msg[*messages.CheckpointAck](t, out.Messages, 0), *msg[*messages.CheckpointAck](t, out.Messages, 1); a1 != ack(4, 4, 2) || a2 != ack(4, 4, 1) {
		t.Fatalf("Stored(rbm 2, 4) acks %+v, %+v; want %+v, %+v", a1, a2, ack(4, 4, 2), ack(4, 4, 1))
	}
	wantDel := []StoreOp{{Kind: Delete, Name: "rbm-2/000000000002", Seat: Seat{RBM: 2}, Windows: 2}, {Kind: Delete, Name: "rbm-1/000000000002", Seat: Seat{RBM: 1}, Windows: 2}}
	if !reflect.DeepEqual(out.Store, wantDel) {
		t.Fatalf("Stored(rbm 2, 4) store ops = %+v; want %+v", out.Store, wantDel)
	}
	if want := []string{"1 2", "2 2", "1 4", "2 4"}; !slices.Equal(r.checkpointed, want) {
		t.Fatalf("Observer.Checkpointed saw %v; want %v", r.checkpointed, want)
	}

	// A checkpoint of the wrong shape is not stored; a stored weights Put
	// acknowledges nothing.
	bad := fakeCheckpoint(r.stage(1), 6, 6)
	bad.Visible, bad.W, bad.VelW, bad.A, bad.VelA = 5, bad.W[4:], bad.VelW[4:], bad.A[1:], bad.VelA[1:]
	if out := r.recv("s1", bad); len(out.Store) != 0 {
		t.Fatalf("a checkpoint of the wrong shape: store ops %+v; want none", out.Store)
	}
	r.m.Stored(r.now, StoreOp{Kind: Put, Name: WeightsName(1), Seat: Seat{RBM: 1}, Windows: -1, Msg: fakeWeights(r.stage(1), 1)})
	if out := r.m.Ready(); len(out.Messages) != 0 {
		t.Fatalf("Stored(weights) = [%s]; want nothing", describe(out.Messages))
	}
}

// TestMasterKeeps checks the rule at the top of recovery.go: keep_L is the
// newest stored checkpoint of the top RBM, keep_i the newest of RBM_i not
// after keep_{i+1} nor after floor_{i+1}; checkpoints before a keep point
// are deleted.
func TestMasterKeeps(t *testing.T) {
	t.Parallel()
	const far = 99
	for _, tc := range []struct {
		name   string
		stored [][2]int // rbm, windows, in the order they are stored
		floors [4]int   // floor_i of RBM_i; [0] unused
		want   [4]int   // keep_i
		left   map[int][]int
	}{
		{"nothing stored", nil, [4]int{0, far, far, far}, [4]int{}, map[int][]int{}},
		{"the top alone", [][2]int{{3, 2}, {3, 4}}, [4]int{0, far, far, far}, [4]int{0, 0, 0, 4}, map[int][]int{3: {4}}},
		{
			"each at its consumer's", [][2]int{{1, 2}, {1, 4}, {1, 6}, {2, 2}, {2, 4}, {3, 4}}, [4]int{0, far, far, far},
			[4]int{0, 4, 4, 4}, map[int][]int{1: {4, 6}, 2: {4}, 3: {4}},
		},
		{
			"the top lags", [][2]int{{1, 2}, {1, 4}, {1, 6}, {2, 2}, {2, 4}, {2, 6}, {3, 2}}, [4]int{0, far, far, far},
			[4]int{0, 2, 2, 2}, map[int][]int{1: {2, 4, 6}, 2: {2, 4, 6}, 3: {2}},
		},
		{
			"the consumer's floor bounds the producer", [][2]int{{1, 2}, {1, 4}, {1, 6}, {2, 2}, {2, 4}, {2, 6}, {3, 6}}, [4]int{0, far, 2, 6},
			[4]int{0, 2, 6, 6}, map[int][]int{1: {2, 4, 6}, 2: {6}, 3: {6}},
		},
		{
			"the top's floor bounds RBM 2", [][2]int{{2, 2}, {2, 4}, {2, 6}, {3, 6}}, [4]int{0, far, far, 4},
			[4]int{0, 0, 4, 6}, map[int][]int{2: {4, 6}, 3: {6}},
		},
		{
			"nothing at or before the limit", [][2]int{{1, 4}, {2, 2}, {3, 2}}, [4]int{0, far, far, far},
			[4]int{0, 0, 2, 2}, map[int][]int{1: {4}, 2: {2}, 3: {2}},
		},
		{
			"a floor of 0 pins the RBM below", [][2]int{{1, 2}, {2, 2}, {3, 2}}, [4]int{0, far, 0, far},
			[4]int{0, 0, 2, 2}, map[int][]int{1: {2}, 2: {2}, 3: {2}},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			r := newMasterRig(t, 3, 1, 2, nil)
			for i := 1; i <= 3; i++ {
				r.m.seats[i][0].floor = tc.floors[i]
			}
			for _, s := range tc.stored {
				cp := fakeCheckpoint(r.stage(s[0]), s[1], s[1])
				r.m.Stored(0, StoreOp{Kind: Put, Name: CheckpointName(Seat{RBM: s[0]}, s[1]), Seat: Seat{RBM: s[0]}, Windows: s[1], Msg: cp})
			}
			var got [4]int
			left := map[int][]int{}
			for i := 1; i <= 3; i++ {
				got[i] = r.m.seats[i][0].keep
				if ws := slices.Sorted(maps.Keys(r.m.seats[i][0].stored)); len(ws) > 0 {
					left[i] = ws
				}
			}
			if got != tc.want || !reflect.DeepEqual(left, tc.left) {
				t.Errorf("stored %v with floors %v: keeps %v, left %v; want %v, %v", tc.stored, tc.floors[1:], got[1:], left, tc.want[1:], tc.left)
			}
		})
	}
}

// lostRig is a run of 2 RBMs, checkpoints every 2, where s1 sent windows 0
// and 1 and both RBMs stored a checkpoint at 2 (keep points 2), s1
// reported 3 batches at 1s, and s1 was declared lost at 6s+1ns.
func lostRig(t *testing.T) *masterRig {
	t.Helper()
	r := newMasterRig(t, 2, 2, 2, nil)
	r.start()
	r.at(0.5).recv("s1", dataCredit(2, 0, 0, false))
	r.at(1).checkpoint(1, "s1", 2)
	r.checkpoint(2, "s2", 2)
	r.recv("s1", r.status(1, "s1", 3))
	r.at(4).recv("s2", r.status(2, "s2", 2))
	wantShape(t, "Tick(6s)", r.at(6).tick().Messages, "")
	r.now++
	out := r.tick()
	wantShape(t, "loss of s1", out.Messages, "")
	if want := []Respawn{{RBM: 1, Slave: "s1"}}; !reflect.DeepEqual(out.Respawn, want) {
		t.Fatalf("loss of s1: Respawn %+v; want %+v", out.Respawn, want)
	}
	if want := []string{"1 s1 5.000000001s"}; !slices.Equal(r.lost, want) {
		t.Fatalf("Observer.Lost saw %v; want %v", r.lost, want)
	}
	return r
}

func TestMasterReplacesLostSlave(t *testing.T) {
	t.Parallel()
	r := lostRig(t)
	r.at(6.5).recv("s2", r.status(2, "s2", 2))

	out := r.at(7).register("s3", 1)
	wantShape(t, "Register(s3)", out.Messages, "s3 admission")
	get := StoreOp{Kind: Get, Name: "rbm-1/000000000002", Seat: Seat{RBM: 1}, Windows: 2}
	if !reflect.DeepEqual(out.Store, []StoreOp{get}) {
		t.Fatalf("Register(s3) store ops = %+v; want [%+v]", out.Store, get)
	}
	wantShape(t, "Register(s3) again while loading", r.register("s3", 1).Messages, "s3 admission")
	out = r.register("s4", 1)
	if got := msg[*messages.Admission](t, out.Messages, 0).Outcome; got != messages.Admitted || len(out.Store) != 0 {
		t.Fatalf("Register(s4) with no vacancy left: %v, store ops %+v; want admitted as a spare, none", got, out.Store)
	}

	cp := fakeCheckpoint(r.stage(1), 2, 2)
	cp.Incarnation = 0 // stored by an earlier incarnation
	r.m.Loaded(r.at(7.5).now, get, cp, nil)
	out = r.m.Ready()
	wantShape(t, "Loaded", out.Messages, "s3 assign, s3 checkpoint, s2 assign")
	r.wantAssign(out.Messages[0], 1, "s3", MasterName, "s2", true)
	if got := msg[*messages.Checkpoint](t, out.Messages, 1); got.Windows != 2 || got.Incarnation != 2 {
		t.Fatalf("checkpoint to resume from: window %d, incarnation %d; want 2, 2", got.Windows, got.Incarnation)
	}
	r.wantAssign(out.Messages[2], 2, "s2", "s3", "", false)
	want := Recovery{RBM: 1, Lost: "s1", Replacement: "s3", Silent: 5*time.Second + 1, LostAtBatch: 3, ResumedAtBatch: 2, ResumedAtWindow: 2, Redone: 1}
	if len(r.recovered) != 1 || r.recovered[0] != want {
		t.Fatalf("Observer.Recovered saw %+v; want [%+v]", r.recovered, want)
	}

	// The feed follows: s1's credits are ignored, s3's resend from 2.
	wantShape(t, "credit from s1", r.recv("s1", dataCredit(4, 2, 0, true)).Messages, "")
	r.wantData(r.recv("s3", dataCredit(4, 2, 2, true)).Messages, "s3", 2, 3)

	// Until it reports, a repeated registration repeats the assignment
	// and its checkpoint.
	out = r.at(8).register("s3", 1)
	wantShape(t, "Register(s3) before its status", out.Messages, "s3 admission, s3 assign, s3 checkpoint")
	r.wantAssign(out.Messages[1], 1, "s3", MasterName, "s2", true)
	st := r.status(1, "s3", 2)
	wantShape(t, "Status(s3)", r.recv("s3", st).Messages, "")
	wantShape(t, "Register(s3) after its status", r.register("s3", 1).Messages, "s3 admission")
	// The old slave is told it is lost, now that another holds its RBM.
	wantStops(t, r.recv("s1", r.status(1, "s1", 4)).Messages, "declared lost", "s1")
	// The replacement is watched like any slave; the spare that kept
	// registering takes over from it once it is lost.
	r.at(8+5).recv("s2", r.status(2, "s2", 3))
	wantShape(t, "Register(s4) again", r.register("s4", 1).Messages, "s4 admission")
	out = r.at(13.1).tick()
	wantShape(t, "loss of s3", out.Messages, "")
	if want := []StoreOp{get}; !reflect.DeepEqual(out.Store, want) {
		t.Fatalf("loss of s3 with a spare: store ops %+v; want %+v", out.Store, want)
	}
	r.m.Loaded(r.now, get, fakeCheckpoint(r.stage(1), 2, 2), nil)
	out = r.m.Ready()
	wantShape(t, "Loaded for the spare", out.Messages, "s4 assign, s4 checkpoint, s2 assign")
	r.wantAssign(out.Messages[0], 1, "s4", MasterName, "s2", true)
	// At the end, nobody waits in vain: the slaves and the spares stop.
}

// A lost slave that speaks again before any replacement came goes on with
// its RBM; one that speaks after is stopped.
func TestMasterTakesBackLostSlave(t *testing.T) {
	t.Parallel()
	r := lostRig(t)
	out := r.at(6.2).recv("s1", r.status(1, "s1", 4))
	wantShape(t, "Status(s1) while lost", out.Messages, "")
	// Its restart, asked for at the loss, is called off.
	if want := []Respawn{{RBM: 1, Slave: "s1"}}; !reflect.DeepEqual(out.Back, want) {
		t.Fatalf("Status(s1) while lost: Back %+v; want %+v", out.Back, want)
	}
	want := Recovery{RBM: 1, Lost: "s1", Replacement: "s1", Silent: 5*time.Second + 1, LostAtBatch: 3, ResumedAtBatch: 3, ResumedAtWindow: 2}
	if len(r.recovered) != 1 || r.recovered[0] != want {
		t.Fatalf("Observer.Recovered saw %+v; want [%+v]", r.recovered, want)
	}
	// It is RBM_1's slave again: its reports count, and a newcomer finds
	// no vacancy but a spare's place.
	if out := r.at(7).recv("s1", r.status(1, "s1", 5)); len(out.Messages) != 0 || r.windows[len(r.windows)-1].Batches != 5 {
		t.Fatalf("Status(s1) after its return = [%s], last window %+v; want nothing, 5 batches", describe(out.Messages), r.windows[len(r.windows)-1])
	}
	out = r.register("s3", 1)
	if got := msg[*messages.Admission](t, out.Messages, 0).Outcome; got != messages.Admitted || len(out.Store) != 0 {
		t.Fatalf("Register(s3) after s1 came back: %v, store ops %+v; want a spare, no load", got, out.Store)
	}
	// Lost again, and replaced by the spare: now its words get a stop.
	r.at(7.5).recv("s2", r.status(2, "s2", 3))
	r.at(11).register("s3", 1)
	r.at(12).recv("s2", r.status(2, "s2", 3))
	out = r.at(12.1).tick()
	if len(out.Store) != 1 || out.Store[0].Kind != Get || r.m.seats[1][0].replacement != "s3" {
		t.Fatalf("second loss of s1: store ops %+v, replacement %q; want the spare s3 loading a checkpoint", out.Store, r.m.seats[1][0].replacement)
	}
	wantShape(t, "Status(s1) while s3 loads", r.recv("s1", r.status(1, "s1", 6)).Messages, "")
	r.m.Loaded(r.now, out.Store[0], fakeCheckpoint(r.stage(1), 2, 2), nil)
	wantShape(t, "Loaded", r.m.Ready().Messages, "s3 assign, s3 checkpoint, s2 assign")
	wantStops(t, r.recv("s1", r.status(1, "s1", 6)).Messages, "declared lost", "s1")
}

// The status of an earlier process of a slave's name, replaced by a new
// one, gets a stop of its own process; the current one's counts.
func TestMasterStopsReplacedProcess(t *testing.T) {
	t.Parallel()
	r := lostRig(t)
	out := r.at(7).register("s1", 2)
	r.m.Loaded(r.now, out.Store[0], fakeCheckpoint(r.stage(1), 2, 2), nil)
	r.m.Ready()
	old := r.status(1, "s1", 4)
	old.Process = 1
	out = r.recv("s1", old)
	wantShape(t, "Status(s1, earlier process)", out.Messages, "s1 stop")
	if got := msg[*messages.Stop](t, out.Messages, 0); got.Process != 1 {
		t.Fatalf("stop for the earlier process: %+v; want process 1", *got)
	}
	cur := r.status(1, "s1", 2)
	cur.Process = 2
	wantShape(t, "Status(s1, current process)", r.recv("s1", cur).Messages, "")
}

func TestMasterReplacementOfTheSameName(t *testing.T) {
	t.Parallel()
	r := lostRig(t)
	out := r.at(7).register("s1", 2)
	wantShape(t, "Register(s1, new process)", out.Messages, "s1 admission")
	r.m.Loaded(r.now, out.Store[0], fakeCheckpoint(r.stage(1), 2, 2), nil)
	out = r.m.Ready()
	// The neighbours need no relink.
	wantShape(t, "Loaded", out.Messages, "s1 assign, s1 checkpoint")
	r.wantAssign(out.Messages[0], 1, "s1", MasterName, "s2", true)
	if len(r.recovered) != 1 || r.recovered[0].Replacement != "s1" || r.recovered[0].Lost != "s1" {
		t.Fatalf("Observer.Recovered saw %+v; want s1 replaced by s1", r.recovered)
	}
	// The feed still goes to s1.
	r.wantData(r.recv("s1", dataCredit(3, 2, 2, true)).Messages, "s1", 2)
}

func TestMasterReplacesTopWithNewName(t *testing.T) {
	t.Parallel()
	r := newMasterRig(t, 3, 1, 2, nil)
	r.start()
	r.at(4).recv("s1", r.status(1, "s1", 1))
	r.recv("s3", r.status(3, "s3", 1))
	out := r.at(5.5).tick() // s2 lost; keep 0: no checkpoint to load
	wantShape(t, "loss of s2", out.Messages, "")
	out = r.at(6).register("s9", 1)
	wantShape(t, "Register(s9)", out.Messages, "s9 admission, s9 assign, s9 checkpoint, s1 assign, s3 assign")
	if len(out.Store) != 0 {
		t.Fatalf("Register(s9) with keep point 0: store ops %+v; want none", out.Store)
	}
	r.wantAssign(out.Messages[1], 2, "s9", "s1", "s3", true)
	if got := msg[*messages.Checkpoint](t, out.Messages, 2); got.Windows != 0 || got.RBM != 2 {
		t.Fatalf("checkpoint to resume from: rbm %d, window %d; want rbm 2, window 0", got.RBM, got.Windows)
	}
	r.wantAssign(out.Messages[3], 1, "s1", MasterName, "s9", false)
	r.wantAssign(out.Messages[4], 3, "s3", "s9", "", false)
	if len(r.recovered) != 1 || r.recovered[0].ResumedAtWindow != 0 || r.recovered[0].Redone != 0 {
		t.Fatalf("Observer.Recovered saw %+v; want a resume at window 0", r.recovered)
	}
}

func TestMasterRestartedProcess(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name      string
		keep      bool // checkpoints at 2 stored first
		reg       messages.Register
		wantShape string
		wantGet   bool
	}{
		{"new process, keep 0", false, messages.Register{Name: "s1", Host: "h", PID: 2, Process: 2}, "s1 admission, s1 assign, s1 checkpoint", false},
		{"new host, keep 0", false, messages.Register{Name: "s1", Host: "h2", PID: 1, Process: 3}, "s1 admission, s1 assign, s1 checkpoint", false},
		{"new process, keep 2", true, messages.Register{Name: "s1", Host: "h", PID: 2, Process: 2}, "s1 admission", true},
		{"the same process", false, messages.Register{Name: "s1", Host: "h", PID: 1, Process: 1}, "s1 admission, s1 assign", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			r := newMasterRig(t, 2, 1, 2, nil)
			r.start()
			if tc.keep {
				r.at(1).checkpoint(1, "s1", 2)
				r.checkpoint(2, "s2", 2)
			}
			tc.reg.Protocol = messages.Version
			restarted := tc.reg.Process != 1
			if restarted {
				// Not while s1 is heard from: the newcomer is a namesake.
				out := r.at(2).recv("s1", &tc.reg)
				if got := msg[*messages.Admission](t, out.Messages, 0); len(out.Messages) != 1 || got.Outcome != messages.InUse || len(r.lost) != 0 {
					t.Fatalf("Register 1s after s1's last word = [%s] %+v, lost %v; want in use, nobody lost", describe(out.Messages), *got, r.lost)
				}
			}
			out := r.at(4.5).recv("s1", &tc.reg)
			wantShape(t, "Register", out.Messages, tc.wantShape)
			if len(out.Respawn) != 0 {
				t.Fatalf("Register: Respawn %+v; want none", out.Respawn)
			}
			if restarted != (len(r.lost) == 1) {
				t.Fatalf("Observer.Lost saw %v; want s1 lost: %t", r.lost, restarted)
			}
			if tc.wantGet != (len(out.Store) == 1 && out.Store[0].Kind == Get) {
				t.Fatalf("store ops %+v; want a Get: %t", out.Store, tc.wantGet)
			}
			if len(out.Messages) > 1 {
				r.wantAssign(out.Messages[1], 1, "s1", MasterName, "s2", restarted)
			}
		})
	}
}

func TestMasterCheckpointsOffFailsOnLoss(t *testing.T) {
	t.Parallel()
	r := newMasterRig(t, 2, 1, 0, nil)
	r.start()
	r.at(4).recv("s2", r.status(2, "s2", 1))
	r.at(5).tick()
	r.wantRunning()
	r.now++
	out := r.tick()
	wantStops(t, out.Messages, "the run failed", "s1", "s2")
	_, err := r.m.Done()
	r.wantDone(ErrSlaveLost)
	want := "slave lost: slave s1 (rbm 1) sent nothing for 5s, and without checkpoints (reliability.checkpoint_every = 0) no replacement can take over"
	if errText(err) != want {
		t.Fatalf("Done() error = %s; want %s", errText(err), want)
	}

	// A restarted process cannot resume either.
	r = newMasterRig(t, 2, 1, 0, nil)
	r.start()
	r.at(3.5).register("s2", 9) // after 3s of silence: a restart, not a namesake
	_, err = r.m.Done()
	r.wantDone(ErrSlaveLost)
	if want := "slave lost: slave s2 (rbm 2) restarted, and without checkpoints (reliability.checkpoint_every = 0) it cannot resume"; errText(err) != want {
		t.Fatalf("Done() error = %s; want %s", errText(err), want)
	}
}

func TestMasterNoReplacementJoins(t *testing.T) {
	t.Parallel()
	r := newMasterRig(t, 1, 1, 2, nil)
	r.start()
	r.at(5).now++
	if out := r.tick(); len(out.Messages) != 0 || len(out.Respawn) != 1 {
		t.Fatalf("loss of s1 = [%s], respawn %+v; want nothing sent, s1 respawned", describe(out.Messages), out.Respawn)
	}
	r.now += 10 * time.Second
	r.tick()
	r.wantRunning()
	r.now++
	r.tick()
	_, err := r.m.Done()
	r.wantDone(ErrSlaveLost)
	if want := "slave lost: slave s1 (rbm 1) was lost 10s ago and no replacement joined (cluster.join_timeout = 10s)"; errText(err) != want {
		t.Fatalf("Done() error = %s; want %s", errText(err), want)
	}
}

func TestMasterConnectionSuspendsLossDetection(t *testing.T) {
	t.Parallel()
	r := newMasterRig(t, 2, 1, 2, nil)
	r.start()
	r.m.Connection(sec(1), false)
	wantShape(t, "Tick(100s) offline", r.at(100).tick().Messages, "")
	r.m.Connection(r.now, true)
	wantShape(t, "Tick(105s)", r.at(105).tick().Messages, "")
	r.now++
	if out := r.tick(); len(out.Messages) != 0 || len(r.lost) != 2 {
		t.Fatalf("Tick(106s) = [%s], lost %v; want s1 and s2 lost, nothing sent", describe(out.Messages), r.lost)
	}
}

func TestMasterCompletes(t *testing.T) {
	t.Parallel()
	r := newMasterRig(t, 2, 2, 2, nil)
	r.start()
	st := r.status(1, "s1", 4)
	st.Rejected[messages.RejectGap] = 2
	r.recv("s1", st)
	w1, w2 := fakeWeights(r.stage(1), 1), fakeWeights(r.stage(2), 2)
	w1.ReconErrors, w1.BytesIn, w1.BusySeconds = []float64{0.3, 0.2}, 100, 2
	out := r.at(1).recv("s1", w1)
	wantShape(t, "Weights(1)", out.Messages, "")
	if want := []StoreOp{{Kind: Put, Name: "weights/rbm-1", Seat: Seat{RBM: 1}, Windows: -1, Msg: w1}}; !reflect.DeepEqual(out.Store, want) {
		t.Fatalf("Weights(1) store ops = %+v; want %+v", out.Store, want)
	}
	if out := r.recv("s1", fakeWeights(r.stage(1), 9)); len(out.Store) != 0 {
		t.Fatalf("Weights(1) again: store ops %+v; want none", out.Store)
	}
	r.wantRunning()
	out = r.recv("s2", w2)
	wantStops(t, out.Messages, "the run is complete", "s1", "s2")
	if len(out.Store) != 1 || out.Store[0].Name != "weights/rbm-2" {
		t.Fatalf("Weights(2) store ops = %+v; want the put of weights/rbm-2", out.Store)
	}
	r.wantDone(nil)
	tr := r.m.Trained()
	if len(tr) != 2 || tr[0].Slave != "s1" || tr[1].Slave != "s2" || !slices.Equal(tr[0].RBM.W, w1.W) || !slices.Equal(tr[1].RBM.W, w2.W) {
		t.Fatalf("Trained() = %+v; want s1's and s2's weights", tr)
	}
	wantStats := pipeline.Stats{Index: 1, Epoch: 1, Batches: 4, Recon: []float64{0.3, 0.2}, Busy: 2 * time.Second, State: pipeline.Done, Worker: "s1"}
	if !reflect.DeepEqual(tr[0].Stats, wantStats) || tr[0].BytesIn != 100 || tr[0].Rejected[messages.RejectGap] != 2 {
		t.Fatalf("Trained()[0] = stats %+v, bytes in %d, rejected %v; want %+v, 100, gap=2", tr[0].Stats, tr[0].BytesIn, tr[0].Rejected, wantStats)
	}
	// Over: nothing more happens.
	if out := r.register("s5", 1); len(out.Messages) != 0 {
		t.Fatalf("Register after the end = [%s]; want nothing", describe(out.Messages))
	}
}

func TestMasterFailures(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		fail func(r *masterRig) Output
		want string
	}{
		{"bad weights", func(r *masterRig) Output {
			w := fakeWeights(r.stage(1), 1)
			w.B = w.B[1:]
			return r.recv("s1", w)
		}, "rbm 1: slave s1 sent bad weights: weights of rbm 1: len(a), len(b) = 6, 3, want visible, hidden = 6, 4: messages: shape mismatch"},
		{"a slave fails", func(r *masterRig) Output {
			return r.recv("s2", &messages.Error{RunID: "r1", Incarnation: 2, RBM: 2, Text: "rbm 2: diverged"})
		}, "rbm 2 on slave s2: rbm 2: diverged"},
		{"the driver cannot store", func(r *masterRig) Output {
			r.m.Abort(r.now, errors.New("store rbm-1/000000000002: disk full"))
			return r.m.Ready()
		}, "store rbm-1/000000000002: disk full"},
		{"a checkpoint will not load", func(r *masterRig) Output {
			r.at(1).checkpoint(1, "s1", 2)
			r.checkpoint(2, "s2", 2)
			r.at(6.1).tick()
			out := r.register("s3", 1)
			r.m.Loaded(r.now, out.Store[0], nil, fmt.Errorf("rbm-1/000000000002: %w", ErrNotStored))
			return r.m.Ready()
		}, "rbm 1: read its checkpoint at window 2: rbm-1/000000000002: not stored"},
		{"a checkpoint of another window", func(r *masterRig) Output {
			r.at(1).checkpoint(1, "s1", 2)
			r.checkpoint(2, "s2", 2)
			r.at(6.1).tick()
			out := r.register("s3", 1)
			r.m.Loaded(r.now, out.Store[0], fakeCheckpoint(r.stage(1), 4, 4), nil)
			return r.m.Ready()
		}, "rbm 1: read its checkpoint at window 2: it holds window 4"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			r := newMasterRig(t, 2, 1, 2, nil)
			r.start()
			out := tc.fail(r)
			stops := only(out.Messages, messages.KindStop)
			wantStops(t, stops, "the run failed", "s1", "s2")
			_, err := r.m.Done()
			r.wantDone(err)
			if errText(err) != tc.want {
				t.Fatalf("Done() error = %s; want %s", errText(err), tc.want)
			}
			r.m.Abort(r.now, errors.New("again"))
			if _, err2 := r.m.Done(); err2 != err {
				t.Fatalf("a second Abort changed the error to %v; want %v", err2, err)
			}
		})
	}
}

func TestMasterSlaveStoppedByItsSignalIsLost(t *testing.T) {
	t.Parallel()
	r := newMasterRig(t, 2, 1, 2, nil)
	r.start()
	r.at(1).recv("s2", r.status(2, "s2", 1))
	// It is lost at once, not after LostAfter of silence.
	out := r.recv("s1", &messages.Error{RunID: "r1", Incarnation: 2, RBM: 1, Stopped: true, Text: "interrupt (at window 0)"})
	r.wantRunning()
	wantShape(t, "Error(s1, stopped)", out.Messages, "")
	if len(out.Respawn) != 1 || out.Respawn[0].Slave != "s1" {
		t.Fatalf("Respawn = %+v; want s1", out.Respawn)
	}
}

// Without checkpoints a stopped slave cannot be replaced: the run fails at
// once, naming it.
func TestMasterSlaveStoppedWithoutCheckpoints(t *testing.T) {
	t.Parallel()
	r := newMasterRig(t, 2, 1, 0, nil)
	r.start()
	r.recv("s1", &messages.Error{RunID: "r1", Incarnation: 2, RBM: 1, Stopped: true, Text: "interrupt (at window 0)"})
	done, err := r.m.Done()
	if !done || !errors.Is(err, ErrSlaveLost) || !strings.Contains(err.Error(), "slave s1 (rbm 1) stopped") {
		t.Fatalf("Done() = %v, %v; want the run failed with ErrSlaveLost naming s1", done, err)
	}
}

// A slave of an earlier incarnation of the master (it outlived a crash of
// the master) is stopped when it speaks, unless its name has registered
// with this incarnation: the stop would then reach the new process too.
func TestMasterStopsSlavesOfEarlierIncarnations(t *testing.T) {
	t.Parallel()
	r := newMasterRig(t, 2, 1, 2, nil)
	old := r.status(1, "old", 3)
	old.Incarnation = 1
	out := r.recv("old", old)
	wantShape(t, "a stale status", out.Messages, "old stop")
	if st := out.Messages[0].Msg.(*messages.Stop); st.RunID != "r1" || st.Incarnation != 1 || st.Reason != "the master restarted" {
		t.Fatalf("stop %+v; want one for r1#1, the slave's own incarnation, saying the master restarted", *st)
	}
	r.start()
	stale := r.status(1, "s1", 3)
	stale.Incarnation = 1
	wantShape(t, "a stale status of a registered name", r.recv("s1", stale).Messages, "")
	later := r.status(1, "x", 3)
	later.Incarnation = 3
	wantShape(t, "a status of a later incarnation", r.recv("x", later).Messages, "")
}

func TestMasterInterrupt(t *testing.T) {
	t.Parallel()
	left := func(i int) *messages.Error {
		return &messages.Error{RunID: "r1", Incarnation: 2, RBM: i, Stopped: true, Text: "stopped by the master (at window 1)"}
	}
	for _, tc := range []struct {
		name string
		end  func(r *masterRig) // must end the run
	}{
		{"every slave leaves", func(r *masterRig) {
			r.recv("s1", left(1))
			r.wantRunning()
			r.recv("s2", left(2))
		}},
		{"every slave finished", func(r *masterRig) {
			// The weights complete the run, but the slaves were told
			// already: no second stop.
			for i, s := range []string{"s1", "s2"} {
				if out := r.recv(s, fakeWeights(r.stage(i+1), 1)); len(out.Messages) != 0 {
					t.Errorf("weights while stopping = [%s]; want nothing", describe(out.Messages))
				}
			}
			r.tick()
		}},
		{"one leaves, one finished", func(r *masterRig) {
			r.recv("s1", fakeWeights(r.stage(1), 1))
			r.recv("s2", left(2))
			r.tick()
		}},
		{"drain grace", func(r *masterRig) {
			r.recv("s1", left(1))
			r.now = sec(1) + 5*time.Second - 1
			r.tick()
			r.wantRunning()
			r.now++
			r.tick()
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			r := newMasterRig(t, 2, 1, 2, nil)
			r.start()
			r.m.Interrupt(r.at(1).now)
			wantStops(t, r.m.Ready().Messages, "the master was interrupted", "s1", "s2")
			r.wantRunning()
			// The last checkpoints are stored and acknowledged meanwhile.
			wantShape(t, "a last checkpoint", r.checkpoint(1, "s1", 1).Messages, "s1 checkpoint-ack")
			// Nobody is declared lost while the master stops.
			wantShape(t, "Tick(4s)", r.at(4).tick().Messages, "")
			r.at(1)
			tc.end(r)
			r.wantDone(ErrInterrupted)
		})
	}
	t.Run("while gathering", func(t *testing.T) {
		t.Parallel()
		r := newMasterRig(t, 2, 1, 2, nil)
		r.m.Start(0)
		r.register("s1", 1)
		r.m.Interrupt(r.now)
		r.wantDone(ErrInterrupted)
		r.m.Interrupt(r.now) // over: nothing changes
		r.wantDone(ErrInterrupted)
	})
}

func TestNewMasterErrors(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		edit func(*MasterConfig)
		want string
	}{
		{func(c *MasterConfig) { c.Run.ID = "a/b" }, `run name "a/b": want 1-64 letters, digits, '_' or '-' (and not "master")`},
		{func(c *MasterConfig) { c.Timing.LostAfter = 0 }, "protocol: timing: lost after = 0s: want > 0"},
		{func(c *MasterConfig) { c.Stages = nil }, "protocol: a run of 0 RBMs, 2 credits, 8 rows: want at least one of each"},
		{func(c *MasterConfig) { c.Credits = 0 }, "protocol: a run of 1 RBMs, 0 credits, 8 rows: want at least one of each"},
		{func(c *MasterConfig) { c.N = 0 }, "protocol: a run of 1 RBMs, 2 credits, 0 rows: want at least one of each"},
	} {
		cfg := newMasterRig(t, 1, 1, 2, nil).cfg
		tc.edit(&cfg)
		if _, err := NewMaster(cfg); errText(err) != tc.want {
			t.Errorf("NewMaster = %s; want %s", errText(err), tc.want)
		}
	}
}

// storeOf returns a MemStore holding the named checkpoints (rbm, windows)
// of the tiny run, and the given weights.
func storeOf(t *testing.T, cps [][2]int, weights ...*messages.Weights) *MemStore {
	t.Helper()
	s := NewMemStore()
	ctx := context.Background()
	for _, c := range cps {
		s.Put(ctx, CheckpointName(Seat{RBM: c[0]}, c[1]), []byte("a checkpoint"))
	}
	for _, w := range weights {
		b, err := messages.Encode(w)
		if err != nil {
			t.Fatal(err)
		}
		s.Put(ctx, WeightsName(w.RBM), b)
	}
	s.Put(ctx, StateName, []byte("the master's state"))
	return s
}

func readStored(t *testing.T, s Store, l int) *Stored {
	t.Helper()
	st, err := ReadStored(context.Background(), s, testRun.ID, testStages(l, 1))
	if err != nil {
		t.Fatalf("ReadStored = %v; want nil", err)
	}
	return st
}

func TestMasterResumesAtTheKeepPoint(t *testing.T) {
	t.Parallel()
	// One RBM: its newest checkpoint is its keep point; the feed restarts
	// there, dealing windows 4 and 5 (of 6) as the first run did.
	stored := readStored(t, storeOf(t, [][2]int{{1, 2}, {1, 4}}), 1)
	r := newMasterRig(t, 1, 3, 2, func(c *MasterConfig) { c.Stored, c.Run.Incarnation = stored, 2 })
	r.m.Start(0)
	out := r.m.Ready()
	get := StoreOp{Kind: Get, Name: "rbm-1/000000000004", Seat: Seat{RBM: 1}, Windows: 4}
	if !reflect.DeepEqual(out.Store, []StoreOp{get}) {
		t.Fatalf("Start store ops = %+v; want [%+v]", out.Store, get)
	}
	// The run waits for the checkpoint as well as for its slave.
	wantShape(t, "Register(s1)", r.register("s1", 1).Messages, "s1 admission")
	cp := fakeCheckpoint(r.stage(1), 4, 4)
	cp.Incarnation = 1
	r.m.Loaded(r.now, get, cp, nil)
	out = r.m.Ready()
	wantShape(t, "Loaded", out.Messages, "s1 assign, s1 checkpoint")
	r.wantAssign(out.Messages[0], 1, "s1", MasterName, "", true)
	if got := msg[*messages.Checkpoint](t, out.Messages, 1); got.Windows != 4 || got.Incarnation != 2 {
		t.Fatalf("checkpoint to resume from: window %d, incarnation %d; want 4, 2", got.Windows, got.Incarnation)
	}
	r.wantData(r.recv("s1", dataCredit(6, 4, 4, true)).Messages, "s1", 4, 5)
}

func TestMasterResumesEveryRBMAtItsKeepPoint(t *testing.T) {
	t.Parallel()
	stored := readStored(t, storeOf(t, [][2]int{{1, 2}, {1, 4}, {1, 6}, {2, 2}, {2, 4}, {3, 2}, {3, 4}}), 3)
	r := newMasterRig(t, 3, 1, 2, func(c *MasterConfig) { c.Stored = stored })
	r.m.Start(0)
	var got []string
	for _, op := range r.m.Ready().Store {
		got = append(got, op.Name)
	}
	if want := []string{"rbm-1/000000000004", "rbm-2/000000000004", "rbm-3/000000000004"}; !slices.Equal(got, want) {
		t.Fatalf("a resumed run loads %v; want %v", got, want)
	}
}

func TestMasterResumeOfACompleteRun(t *testing.T) {
	t.Parallel()
	stages := testStages(2, 1)
	stored := readStored(t, storeOf(t, [][2]int{{1, 2}}, fakeWeights(stages[0], 1), fakeWeights(stages[1], 2)), 2)
	if len(stored.Weights) != 2 || !reflect.DeepEqual(stored.Checkpoints, map[Seat][]int{{RBM: 1}: {2}}) {
		t.Fatalf("ReadStored = %+v; want 2 weights, rbm 1's checkpoint at 2", stored)
	}
	r := newMasterRig(t, 2, 1, 2, func(c *MasterConfig) { c.Stored = stored })
	r.m.Start(0)
	r.wantDone(nil)
	if tr := r.m.Trained(); len(tr) != 2 || tr[1].RBM.W[0] != 2 {
		t.Fatalf("Trained() = %+v; want the stored weights", tr)
	}
}

func TestMasterResumeWithSomeWeights(t *testing.T) {
	t.Parallel()
	// RBM_2 finished before the interruption: its weights count, and the
	// run completes with RBM_1's.
	stages := testStages(2, 1)
	stored := &Stored{Weights: map[int]*messages.Weights{2: fakeWeights(stages[1], 2)}}
	r := newMasterRig(t, 2, 1, 2, func(c *MasterConfig) { c.Stored = stored })
	r.start()
	wantStops(t, r.recv("s1", fakeWeights(stages[0], 1)).Messages, "the run is complete", "s1", "s2")
	r.wantDone(nil)
}

func TestMasterFullWhileLoadingAndStopping(t *testing.T) {
	t.Parallel()
	// A resumed run waits for its checkpoint with its one slave joined:
	// another waits as a spare, and one more is not needed.
	stored := &Stored{Checkpoints: map[Seat][]int{{RBM: 1}: {2}}}
	r := newMasterRig(t, 1, 1, 2, func(c *MasterConfig) { c.Stored = stored })
	r.m.Start(0)
	r.m.Ready()
	r.register("s1", 1)
	out := r.register("s2", 1)
	if len(out.Messages) != 1 || msg[*messages.Admission](t, out.Messages, 0).Outcome != messages.Admitted {
		t.Fatalf("Register(s2) while loading with 1 of 1 joined = [%s]; want admitted, a spare", describe(out.Messages))
	}
	out = r.register("s3", 1)
	if len(out.Messages) != 1 || msg[*messages.Admission](t, out.Messages, 0).Outcome != messages.Full {
		t.Fatalf("Register(s3) with 1 joined and 1 spare = [%s]; want full", describe(out.Messages))
	}

	// A stopping master needs nobody, and ignores what is not a report.
	r = newMasterRig(t, 1, 1, 2, nil)
	r.start()
	if out := r.recv("s1", r.m.assignment(r.m.seats[1][0])); len(out.Messages) != 0 {
		t.Fatalf("an Assign from s1 = [%s]; want nothing", describe(out.Messages))
	}
	r.m.Interrupt(0)
	r.m.Ready()
	out = r.register("s9", 1)
	if len(out.Messages) != 1 || msg[*messages.Admission](t, out.Messages, 0).Outcome != messages.Full {
		t.Fatalf("Register(s9) while stopping = [%s]; want full", describe(out.Messages))
	}
	// A checkpoint stored once the run is over is seen, not acknowledged.
	put := r.recv("s1", fakeCheckpoint(r.stage(1), 1, 1)).Store[0]
	r.recv("s1", &messages.Error{RunID: "r1", Incarnation: 2, RBM: 1, Stopped: true})
	r.wantDone(ErrInterrupted)
	r.m.Stored(r.now, put)
	if out := r.m.Ready(); len(out.Messages) != 0 || !slices.Equal(r.checkpointed, []string{"1 1"}) {
		t.Fatalf("Stored after the end = [%s], observer saw %v; want nothing sent, [1 1]", describe(out.Messages), r.checkpointed)
	}
	r.m.Loaded(r.now, StoreOp{Kind: Get, Seat: Seat{RBM: 1}, Windows: 1}, nil, errors.New("late"))
	if _, err := r.m.Done(); err != ErrInterrupted {
		t.Fatalf("a Loaded after the end changed the error to %v; want %v", err, ErrInterrupted)
	}
}

func TestMasterLateCheckpointOfALostSlave(t *testing.T) {
	t.Parallel()
	r := newMasterRig(t, 2, 2, 2, nil)
	r.start()
	r.at(1).checkpoint(1, "s1", 2)
	r.checkpoint(2, "s2", 2)
	r.checkpoint(1, "s1", 4)
	late := r.recv("s2", fakeCheckpoint(r.stage(2), 4, 4)).Store[0]
	r.at(4).recv("s1", r.status(1, "s1", 4))
	r.at(6).now++
	wantShape(t, "loss of s2", r.tick().Messages, "")
	// Stored after the loss: nobody to acknowledge it to, and the older
	// checkpoint stays, since a replacement may be loading it. The top's
	// keep point moves; RBM_1's stays bound by floor_2, back at keep_2 = 2
	// since the loss (s2 had reported its checkpoint at 4).
	r.m.Stored(r.now, late)
	out := r.m.Ready()
	if len(out.Messages) != 0 || len(out.Store) != 0 {
		t.Fatalf("Stored(rbm 2, 4) after s2 was lost = [%s], store ops %+v; want nothing", describe(out.Messages), out.Store)
	}
	if k1, k2 := r.m.seats[1][0].keep, r.m.seats[2][0].keep; k1 != 2 || k2 != 4 {
		t.Fatalf("keep points after the late checkpoint = %d, %d; want 2, 4", k1, k2)
	}
	out = r.register("s3", 1)
	if want := []StoreOp{{Kind: Get, Name: "rbm-2/000000000004", Seat: Seat{RBM: 2}, Windows: 4}}; !reflect.DeepEqual(out.Store, want) {
		t.Fatalf("Register(s3) store ops = %+v; want %+v", out.Store, want)
	}
}

// Every slave the master admitted must hear that the run ends: a slave
// waits for its assignment (or the checkpoint it resumes from) until its
// own join timeout, and then ends with an error. The slave's machine has a
// path for it (a Stop while admitted: "the master needs no more slaves").
func TestMasterStopsAdmittedSlaves(t *testing.T) {
	t.Parallel()
	knownBug(t, "Master.stopSlaves stops only the slaves of seats: a slave that joined while the master gathers "+
		"(Interrupt, or the join timeout's Abort), or a replacement admitted while its checkpoint loads "+
		"(Interrupt or Abort then), gets no Stop; it waits for its join timeout and ends with an error "+
		"instead of leaving cleanly, and the lost slave's name gets the Stop instead")
	for _, tc := range []struct {
		name string
		end  func(t *testing.T) Output
		want string // a slave that must get a stop
	}{
		{"interrupt while gathering", func(t *testing.T) Output {
			r := newMasterRig(t, 2, 2, 2, nil)
			r.m.Start(0)
			r.register("s1", 1)
			r.m.Interrupt(r.now)
			return r.m.Ready()
		}, "s1"},
		{"join timeout", func(t *testing.T) Output {
			r := newMasterRig(t, 2, 2, 2, nil)
			r.m.Start(0)
			r.register("s1", 1)
			return r.at(10).tick()
		}, "s1"},
		{"interrupt while a replacement loads", func(t *testing.T) Output {
			r := lostRig(t)
			r.at(7).register("s3", 1)
			r.m.Interrupt(r.now)
			return r.m.Ready()
		}, "s3"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out := tc.end(t)
			var to []string
			for _, e := range only(out.Messages, messages.KindStop) {
				to = append(to, e.To)
			}
			if !slices.Contains(to, tc.want) {
				t.Errorf("the run ends with stops to %v; want one to %s", to, tc.want)
			}
		})
	}
}

// A replacement that has not reported since it was assigned to resume, and
// whose neighbour is replaced meanwhile, gets its whole assignment again
// with the relink: a bare relink would start it from scratch, and its
// producer no longer keeps the windows before its keep point (found by
// TestFaultSchedulesWithSpare, schedule 100140).
func TestMasterRelinksAResumingReplacementWhole(t *testing.T) {
	t.Parallel()
	r := newMasterRig(t, 3, 2, 2, nil)
	r.start()
	r.at(1).checkpoint(1, "s1", 2)
	r.checkpoint(2, "s2", 2)
	r.checkpoint(3, "s3", 2)
	r.at(4).recv("s3", r.status(3, "s3", 2))
	r.at(6.5).tick() // s1 and s2 lost, silent since 1s
	if len(r.lost) != 2 {
		t.Fatalf("Observer.Lost saw %v; want s1 and s2", r.lost)
	}
	r.recv("s3", r.status(3, "s3", 2))
	get1 := r.register("s9", 1).Store[0]
	get2 := r.register("s8", 1).Store[0]
	r.m.Loaded(r.now, get1, fakeCheckpoint(r.stage(1), 2, 2), nil)
	wantShape(t, "Loaded(rbm 1)", r.m.Ready().Messages, "s9 assign, s9 checkpoint")
	r.m.Loaded(r.now, get2, fakeCheckpoint(r.stage(2), 2, 2), nil)
	out := r.m.Ready()
	wantShape(t, "Loaded(rbm 2)", out.Messages, "s8 assign, s8 checkpoint, s9 assign, s9 checkpoint, s3 assign")
	r.wantAssign(out.Messages[2], 1, "s9", MasterName, "s8", true)
	if got := msg[*messages.Checkpoint](t, out.Messages, 3); got.RBM != 1 || got.Windows != 2 {
		t.Fatalf("checkpoint with s9's relink: rbm %d window %d; want rbm 1, window 2", got.RBM, got.Windows)
	}
	r.wantAssign(out.Messages[4], 3, "s3", "s8", "", false)
}

// TestLinkCredits: long windows get fewer credits, as many as fit in
// WindowBudget and at least one.
func TestLinkCredits(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		visible, k, n, want int
	}{
		{784, 10, 60000, 4},   // 7.7 MiB windows: the configured credits
		{784, 200, 60000, 1},  // 153 MiB: alone
		{500, 200, 60000, 2},  // 98 MiB: two
		{784, 1000, 60000, 1}, // all 60,000 rows, 179 MiB
		{784, 200, 100, 4},    // a small data set: its rows, not K's
	} {
		cfg := pipeline.StageConfig{Visible: tc.visible, K: tc.k, BatchSize: 256}
		if got := LinkCredits(4, cfg, tc.n); got != tc.want {
			t.Errorf("LinkCredits(4, %d visible, K %d, %d rows) = %d; want %d", tc.visible, tc.k, tc.n, got, tc.want)
		}
	}
}

// TestReplicasProgressAsOneRBM: the Observer sees an RBM trained by stage
// replicas as one RBM, as Trained reports it at the end: the replicas'
// mini-batches summed and the epoch they make, its slaves' names joined,
// training while any replica trains, and each epoch announced once, when
// every replica finished it.
func TestReplicasProgressAsOneRBM(t *testing.T) {
	t.Parallel()
	r := newReplicaRig(t)
	per := pipeline.BatchesPerEpoch(testRows, r.stage(2).BatchSize)
	report := func(slave string, batches int, state messages.State, recon ...float64) pipeline.Stats {
		t.Helper()
		st := r.status(2, slave, batches)
		st.State, st.ReconErrors, st.BusySeconds = state, recon, float64(batches)
		st.Replica = r.cfg.Seating[slave].Replica
		r.recv(slave, st)
		if len(r.windows) == 0 {
			t.Fatalf("%s's report reached no Window hook", slave)
		}
		return r.windows[len(r.windows)-1]
	}
	if per < 2 {
		t.Fatalf("%d mini-batches an epoch; the test wants 2 or more", per)
	}
	s := report("a", per-1, messages.StateTraining, 0.5)
	if s.Index != 2 || s.Worker != "a+b" || s.Batches != per-1 || s.Epoch != 0 || len(r.epochs) != 0 {
		t.Fatalf("after a's report: %+v and %d epochs announced; want RBM 2 on a+b, %d batches of epoch 0, none announced", s, len(r.epochs), per-1)
	}
	s = report("b", per, messages.StateWaitingAverage, 0.6)
	if s.Batches != 2*per-1 || s.Rows != (2*per-1)*r.stage(2).BatchSize || s.Epoch != 1 || s.State != pipeline.Training ||
		s.Busy != Seconds(float64(per)) || len(s.Recon) != 1 || s.Recon[0] != 0.5 {
		t.Errorf("after b's report: %+v; want %d batches in all, epoch 1, training (a trains), b's busy seconds (the longest), a's errors", s, 2*per-1)
	}
	if len(r.epochs) != 1 || r.epochs[0].Batches != 2*per-1 {
		t.Errorf("epochs announced %+v; want the first, once, when both replicas finished it", r.epochs)
	}
	report("a", per, messages.StateTraining, 0.5)
	if len(r.epochs) != 1 {
		t.Errorf("%d epochs announced after a's next report; want still 1", len(r.epochs))
	}
}

// TestReplicasReportApart: the Observer's Reported sees each replica's
// report as that slave's own statistics, where Hooks see the RBM.
func TestReplicasReportApart(t *testing.T) {
	t.Parallel()
	r := newReplicaRig(t)
	st := r.status(2, "b", 3)
	st.Replica, st.Epoch, st.State = 1, 1, messages.StateWaitingAverage
	st.ReconError, st.ReconErrors, st.BusySeconds, st.WaitSeconds = 0.25, []float64{0.5}, 1.5, 0.5
	r.recv("b", st)
	r.recv("a", r.status(2, "a", 2))
	if len(r.reported) != 2 {
		t.Fatalf("Reported saw %d reports; want 2: %+v", len(r.reported), r.reported)
	}
	batch := r.stage(2).BatchSize
	want := pipeline.Stats{Index: 2, Epoch: 1, Batches: 3, Rows: 3 * batch, Recon: []float64{0.5}, LastRecon: 0.25,
		Busy: sec(1.5), WaitInput: sec(0.5), State: pipeline.WaitingAverage, Worker: "b"}
	if got := r.reported[0]; !reflect.DeepEqual(got, want) {
		t.Errorf("Reported(b's report) = %+v; want %+v", got, want)
	}
	if got := r.reported[1]; got.Worker != "a" || got.Batches != 2 || got.Rows != 2*batch || got.State != pipeline.Training {
		t.Errorf("Reported(a's report) = %+v; want a's 2 mini-batches, training", got)
	}
	if w := r.windows[len(r.windows)-1]; w.Worker != "a+b" || w.Batches != 5 {
		t.Errorf("Window hook after both = %+v; want the RBM on a+b, 5 mini-batches", w)
	}
}

// newReplicaRig is a started master of two RBMs without checkpoints,
// RBM_2 on two stage replicas (a and b) that average every window, and its
// three slaves registered.
func newReplicaRig(t *testing.T) *masterRig {
	t.Helper()
	r := newMasterRig(t, 2, 2, 0, func(c *MasterConfig) {
		c.Replicas, c.SyncEvery = []int{1, 2}, 1
		c.Seating = map[string]Seat{"s1": {RBM: 1}, "a": {RBM: 2, Replica: 0}, "b": {RBM: 2, Replica: 1}}
	})
	r.m.Start(0)
	r.m.Ready()
	for _, name := range []string{"s1", "a", "b"} {
		r.register(name, 1)
	}
	return r
}

// TestTimingTick: a node ticks a fifth of its shortest period, between 20
// and 100 ms, so that the defaults wake it a tenth of a second and short
// test periods as often as before.
func TestTimingTick(t *testing.T) {
	def := DefaultTiming(time.Minute, 4*time.Second)
	short := def
	short.StatusEvery = 50 * time.Millisecond
	mid := def
	mid.LostAfter = 300 * time.Millisecond
	for _, c := range []struct {
		name   string
		timing Timing
		want   time.Duration
	}{
		{"defaults (regrant every 500 ms)", def, 100 * time.Millisecond},
		{"status every 50 ms", short, 20 * time.Millisecond},
		{"lost after 300 ms", mid, 60 * time.Millisecond},
	} {
		if got := c.timing.Tick(); got != c.want {
			t.Errorf("%s: Tick() = %s, want %s", c.name, got, c.want)
		}
	}
}
