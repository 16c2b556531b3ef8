package protocol

import (
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/pipedbn/pipedbn/messages"
	"github.com/pipedbn/pipedbn/pipeline"
)

// slaveRig drives one slave, "s1", by hand: now is its clock.
type slaveRig struct {
	t      *testing.T
	s      *Slave
	now    time.Duration
	stages []pipeline.StageConfig
}

// testProcess is the Process of the slave of a slaveRig.
const testProcess = 0x5eed

// newSlaveRig returns a slave that has not started, of a run on stages.
func newSlaveRig(t *testing.T, stages []pipeline.StageConfig) *slaveRig {
	t.Helper()
	s, err := NewSlave(SlaveConfig{
		Name: "s1", Host: "h1", CPUs: 2, PID: 42, Process: testProcess, Timing: testTiming(),
	})
	if err != nil {
		t.Fatalf("NewSlave = %v; want nil", err)
	}
	return &slaveRig{t: t, s: s, stages: stages}
}

func (r *slaveRig) at(s float64) *slaveRig { r.now = sec(s); return r }

func (r *slaveRig) recv(from string, m messages.Message) Output {
	r.s.Receive(r.now, Envelope{From: from, To: "s1", Msg: m})
	return r.s.Ready()
}

func (r *slaveRig) tick() Output {
	r.s.Tick(r.now)
	return r.s.Ready()
}

// trained runs job, tells the slave, and returns what it asks next.
func (r *slaveRig) trained(job *Job) Output {
	r.t.Helper()
	if job == nil {
		r.t.Fatalf("no job to run")
	}
	if err := job.Run(); err != nil {
		r.t.Fatalf("Job.Run() = %v; want nil", err)
	}
	r.s.Trained(r.now, nil)
	return r.s.Ready()
}

// drive runs every job out asks for, and those that follow, and returns
// every message sent on the way.
func (r *slaveRig) drive(out Output) []Envelope {
	r.t.Helper()
	msgs := out.Messages
	for out.Job != nil {
		out = r.trained(out.Job)
		msgs = append(msgs, out.Messages...)
	}
	return msgs
}

func (r *slaveRig) wantDone(err error) {
	r.t.Helper()
	done, got := r.s.Done()
	if !done || !errors.Is(got, err) || (err == nil && got != nil) {
		r.t.Fatalf("Done() = %t, %v; want true, %v", done, got, err)
	}
}

func (r *slaveRig) wantRunning() {
	r.t.Helper()
	if done, err := r.s.Done(); done {
		r.t.Fatalf("Done() = true, %v; want false", err)
	}
}

// assign is the assignment of RBM i of r's run, between up and down, with
// checkpoints every c windows and 2 credits.
func (r *slaveRig) assign(i, c int, up, down string, resume bool) *messages.Assign {
	a := assignment(testRun, r.stages[i-1], len(r.stages), testRows, 2, c, names(up), names(down))
	a.Replicas = 1
	a.Resume = resume
	return a
}

// join starts the slave, admits it and assigns it RBM 1 (of a run of 1 or
// 2 RBMs, s2 above), and returns what the assignment made it send.
func (r *slaveRig) join(c int, resume bool) Output {
	r.t.Helper()
	r.s.Start(r.now)
	r.s.Ready()
	r.recv(MasterName, &messages.Admission{Slave: "s1", Process: testProcess, Outcome: messages.Admitted})
	down := ""
	if len(r.stages) > 1 {
		down = "s2"
	}
	return r.recv(MasterName, r.assign(1, c, MasterName, down, resume))
}

func (r *slaveRig) credit(upTo uint64) *messages.Credit {
	return &messages.Credit{RunID: testRun.ID, Incarnation: testRun.Incarnation, RBM: 1, UpTo: upTo}
}

func (r *slaveRig) ack(windows, durable uint64) *messages.CheckpointAck {
	return &messages.CheckpointAck{RunID: testRun.ID, Incarnation: testRun.Incarnation, RBM: 1, Windows: windows, Durable: durable}
}

func stop(reason string) *messages.Stop {
	return &messages.Stop{RunID: testRun.ID, Incarnation: testRun.Incarnation, Reason: reason}
}

func endOfData(windows uint64, epoch int) *messages.EndOfStream {
	return &messages.EndOfStream{RunID: testRun.ID, Incarnation: testRun.Incarnation, RBM: 0, Epoch: epoch, Windows: windows}
}

func wantCredit(t *testing.T, what string, got *messages.Credit, upTo, next, durable uint64, resend bool) {
	t.Helper()
	want := messages.Credit{RunID: "r1", Incarnation: 2, RBM: 0, UpTo: upTo, Next: next, Durable: durable, Resend: resend}
	if *got != want {
		t.Fatalf("%s: credit %+v; want %+v", what, *got, want)
	}
}

// TestSlaveLifecycle drives slave 1 of 2 through a whole run of 4 windows
// with checkpoints every 2, and checks every message it sends, its middle
// results and its weights against the same stage trained in process.
func TestSlaveLifecycle(t *testing.T) {
	t.Parallel()
	stages := testStages(2, 2)
	ws := dataWindows(stages, 4)
	ref := pipeline.NewStage(stages[0])
	r := newSlaveRig(t, stages)

	r.s.Start(0)
	out := r.s.Ready()
	wantShape(t, "Start", out.Messages, "master register")
	want := messages.Register{Name: "s1", Host: "h1", CPUs: 2, PID: 42, Protocol: messages.Version, Process: testProcess}
	if got := msg[*messages.Register](t, out.Messages, 0); *got != want || out.Messages[0].From != "s1" {
		t.Fatalf("Start sends %+v from %q; want %+v from s1", *got, out.Messages[0].From, want)
	}
	// Unanswered, it registers again soon (a master may not listen yet),
	// then ever less often: after RegisterEvery/16, then 1/8, 1/4, ...
	wantShape(t, "Tick(0.05s)", r.at(0.05).tick().Messages, "")
	wantShape(t, "Tick(0.07s)", r.at(0.07).tick().Messages, "master register")
	wantShape(t, "Tick(0.15s)", r.at(0.15).tick().Messages, "")
	wantShape(t, "Tick(0.2s)", r.at(0.2).tick().Messages, "master register")
	wantShape(t, "Tick(0.4s)", r.at(0.4).tick().Messages, "")
	wantShape(t, "Tick(1s)", r.at(1).tick().Messages, "master register")
	wantShape(t, "Admission", r.at(1.1).recv(MasterName, &messages.Admission{Slave: "s1", Process: testProcess, Outcome: messages.Admitted}).Messages, "")
	if r.s.Assigned() != nil {
		t.Fatalf("Assigned() before an Assign = %+v; want nil", r.s.Assigned())
	}

	a := r.assign(1, 2, MasterName, "s2", false)
	out = r.at(1.2).recv(MasterName, a)
	wantShape(t, "Assign", out.Messages, "master credit, master status")
	wantCredit(t, "Assign", msg[*messages.Credit](t, out.Messages, 0), 2, 0, 0, false)
	st := msg[*messages.Status](t, out.Messages, 1)
	if st.RBM != 1 || st.Slave != "s1" || st.State != messages.StateWaitingInput || !slices.Equal(st.Upstream, names(MasterName)) ||
		!slices.Equal(st.Downstream, names("s2")) || st.BytesIn != 0 || st.BytesOut != 0 || st.RunID != "r1" || st.Incarnation != 2 {
		t.Fatalf("Assign: status %+v; want rbm 1 of s1 of r1#2, waiting-input, master -> s2, no bytes yet", *st)
	}
	if r.s.Assigned() != a {
		t.Fatalf("Assigned() = %p; want the assignment %p", r.s.Assigned(), a)
	}

	// Window 0 arrives: the job for it.
	out = r.at(1.3).recv(MasterName, dataChunk(ws[0], 0))
	if out.Job == nil || len(out.Messages) != 0 {
		t.Fatalf("chunk 0 = [%s], job %v; want a job and nothing sent", describe(out.Messages), out.Job)
	}
	job0 := out.Job
	if job0.In.Seq != 0 || !slices.Equal(job0.In.X, ws[0].X) || job0.In.Bias != nil || len(job0.Out.X) != 4*4 {
		t.Fatalf("job 0 = in %+v, out of %d values; want window 0 without bias, out of 16", *job0.In, len(job0.Out.X))
	}
	// Window 1 waits for the job.
	if out = r.at(1.3).recv(MasterName, dataChunk(ws[1], 1)); out.Job != nil || len(out.Messages) != 0 {
		t.Fatalf("chunk 1 while training = [%s], job %v; want nothing", describe(out.Messages), out.Job)
	}

	// Trained: credit for one more; the middle result waits for s2's credit.
	out = r.at(1.4).trained(job0)
	wantShape(t, "Trained(0)", out.Messages, "master credit")
	wantCredit(t, "Trained(0)", msg[*messages.Credit](t, out.Messages, 0), 3, 2, 0, false)
	if out.Job != nil {
		t.Fatalf("Trained(0) without credit above hands out job %v; want none", out.Job)
	}
	mid := &pipeline.Window{X: make([]float32, 16)}
	if err := ref.Train(ws[0], mid); err != nil {
		t.Fatal(err)
	}

	// s2 grants one window: the middle result of window 0, then the job
	// for window 1.
	out = r.at(1.5).recv("s2", r.credit(1))
	wantShape(t, "Credit(1)", out.Messages, "s2 chunk")
	c := msg[*messages.Chunk](t, out.Messages, 0)
	if c.RBM != 1 || c.Seq != 0 || c.Rows != 4 || c.Cols != 4 || !slices.Equal(c.Data, mid.X) || !slices.Equal(c.Bias, mid.Bias) {
		t.Fatalf("chunk to s2 = %+v; want rbm 1, seq 0, 4x4, the middle result and B_1 of window 0", *c)
	}
	if out.Job == nil || out.Job.In.Seq != 1 {
		t.Fatalf("Credit(1) hands out job %v; want window 1", out.Job)
	}
	job1 := out.Job

	// Window 1 trained: a checkpoint after 2 windows, no credit above.
	out = r.at(1.6).trained(job1)
	wantShape(t, "Trained(1)", out.Messages, "master credit, master checkpoint")
	wantCredit(t, "Trained(1)", msg[*messages.Credit](t, out.Messages, 0), 4, 2, 0, false)
	cp := msg[*messages.Checkpoint](t, out.Messages, 1)
	ref.Train(ws[1], mid)
	if cp.RBM != 1 || cp.Windows != 2 || cp.Batches != 2 || !slices.Equal(cp.W, ref.RBM().W) {
		t.Fatalf("Trained(1): checkpoint rbm %d at window %d, %d batches; want rbm 1 at window 2, 2 batches, the reference weights", cp.RBM, cp.Windows, cp.Batches)
	}
	wantShape(t, "CheckpointAck", r.at(1.7).recv(MasterName, r.ack(2, 2)).Messages, "")

	out = r.at(1.8).recv(MasterName, dataChunk(ws[2], 2))
	out2 := r.recv(MasterName, dataChunk(ws[3], 3))
	if out.Job != nil || out2.Job != nil {
		t.Fatalf("chunks 2, 3 while waiting for credit hand out jobs; want none")
	}
	out = r.recv("s2", r.credit(10))
	wantShape(t, "Credit(10)", out.Messages, "s2 chunk")
	if got := msg[*messages.Chunk](t, out.Messages, 0).Seq; got != 1 {
		t.Fatalf("Credit(10) sends chunk %d; want 1", got)
	}
	out = r.at(1.9).trained(out.Job)
	wantShape(t, "Trained(2)", out.Messages, "master credit, s2 chunk")
	// The ack of window 2 lets the producer forget windows 0 and 1.
	wantCredit(t, "Trained(2)", msg[*messages.Credit](t, out.Messages, 0), 5, 4, 2, false)
	out = r.at(2).trained(out.Job)
	wantShape(t, "Trained(3)", out.Messages, "master credit, master checkpoint, s2 chunk")
	if got := msg[*messages.Checkpoint](t, out.Messages, 1).Windows; got != 4 {
		t.Fatalf("Trained(3): checkpoint at window %d; want 4", got)
	}
	if out.Job != nil {
		t.Fatalf("Trained(3) hands out job %v; want none: no window left", out.Job)
	}

	// Waiting for input: a regrant, and a status every second.
	out = r.at(2.5).tick()
	wantShape(t, "Tick(2.5s)", out.Messages, "master credit, master status")
	st = msg[*messages.Status](t, out.Messages, 1)
	if st.Batches != 4 || st.State != messages.StateWaitingInput || !slices.Equal(st.Upstream, names(MasterName)) || !slices.Equal(st.Downstream, names("s2")) {
		t.Fatalf("Tick(2.5s): status %+v; want 4 batches, waiting-input, master -> s2", *st)
	}

	// The end of the data: the end of the stream above, a status and the
	// weights.
	out = r.at(2.6).recv(MasterName, endOfData(4, 1))
	wantShape(t, "EndOfStream", out.Messages, "s2 end-of-stream, master status, master weights")
	if got, want := *msg[*messages.EndOfStream](t, out.Messages, 0), (messages.EndOfStream{RunID: "r1", Incarnation: 2, RBM: 1, Epoch: 1, Windows: 4}); got != want {
		t.Fatalf("end of stream above = %+v; want %+v", got, want)
	}
	if got := msg[*messages.Status](t, out.Messages, 1).State; got != messages.StateDone {
		t.Fatalf("status after the end = %v; want done", got)
	}
	ref.Train(ws[2], mid)
	ref.Train(ws[3], mid)
	ref.EndEpoch()
	wt := msg[*messages.Weights](t, out.Messages, 2)
	if wt.RBM != 1 || wt.Batches != 4 || len(wt.ReconErrors) != 2 || !slices.Equal(wt.W, ref.RBM().W) || !slices.Equal(wt.B, ref.RBM().B) {
		t.Fatalf("weights = rbm %d, %d batches, %d epochs; want rbm 1, 4 batches, 2 epochs, the reference weights", wt.RBM, wt.Batches, len(wt.ReconErrors))
	}
	if in := wireBytes(t, dataChunk(ws[0], 0), dataChunk(ws[1], 1), dataChunk(ws[2], 2), dataChunk(ws[3], 3)); wt.BytesIn != in || wt.BytesOut == 0 {
		t.Fatalf("weights: bytes in %d, out %d; want the 4 data windows' %d in, and some out", wt.BytesIn, wt.BytesOut, in)
	}
	if s := r.s.Stats(); s.Batches != 4 || s.State != pipeline.Done {
		t.Fatalf("Stats() = %+v; want 4 batches, done", s)
	}
	if in, o := r.s.InputStats().Windows, r.s.OutputStats().Windows; in != 4 || o != 4 {
		t.Fatalf("InputStats().Windows, OutputStats().Windows = %d, %d; want 4, 4", in, o)
	}
	r.wantRunning()

	// Until the master confirms, the weights again every WeightsEvery.
	wantShape(t, "Tick(3.6s)", r.at(3.6).tick().Messages, "master status")
	wantShape(t, "Tick(7.6s)", r.at(7.6).tick().Messages, "master status, master weights")

	wantShape(t, "Stop", r.at(8).recv(MasterName, stop("the run is complete")).Messages, "")
	r.wantDone(nil)
	if out := r.recv(MasterName, dataChunk(ws[0], 4)); len(out.Messages) != 0 || out.Job != nil {
		t.Fatalf("a message after the end = [%s]; want nothing", describe(out.Messages))
	}
	if out := r.at(100).tick(); len(out.Messages) != 0 {
		t.Fatalf("Tick after the end = [%s]; want nothing", describe(out.Messages))
	}
}

func TestSlaveAdmission(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name    string
		adm     messages.Admission
		wantErr error  // nil: still running
		wantMsg string // the error's text
	}{
		{"admitted", messages.Admission{Slave: "s1", Process: testProcess, Outcome: messages.Admitted}, nil, ""},
		{"full", messages.Admission{Slave: "s1", Process: testProcess, Outcome: messages.Full}, ErrClusterFull, "the master needs no more slaves"},
		{"refused", messages.Admission{Slave: "s1", Process: testProcess, Outcome: messages.Refused, Reason: "protocol version 2"}, ErrRefused,
			"the master refused the slave s1: protocol version 2"},
		{"in use", messages.Admission{Slave: "s1", Process: testProcess, Outcome: messages.InUse, Reason: "slave s1 is in the run already"}, ErrNameInUse,
			"the slave's name is in use: slave s1 is in the run already"},
		{"another slave's", messages.Admission{Slave: "s2", Outcome: messages.Full}, nil, ""},
		{"another process's", messages.Admission{Slave: "s1", Process: testProcess + 1, Outcome: messages.InUse}, nil, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			r := newSlaveRig(t, testStages(1, 1))
			r.s.Start(0)
			r.s.Ready()
			r.at(0.5).recv(MasterName, &tc.adm)
			// Another node may not answer for the master.
			r.recv("s2", &messages.Admission{Slave: "s1", Process: testProcess, Outcome: messages.Full})
			if tc.wantErr == nil {
				r.wantRunning()
				return
			}
			r.wantDone(tc.wantErr)
			if _, err := r.s.Done(); err.Error() != tc.wantMsg {
				t.Errorf("Done() error = %q; want %q", err, tc.wantMsg)
			}
		})
	}
}

func TestSlaveTimeouts(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name      string
		setup     func(r *slaveRig) // at 1s
		deadline  float64           // seconds
		wantErr   string
		wantShape string // what it sends at the deadline
	}{
		{"no master", func(*slaveRig) {}, 10, "no master answered within 10s", ""},
		{"no assignment", func(r *slaveRig) {
			r.recv(MasterName, &messages.Admission{Slave: "s1", Process: testProcess, Outcome: messages.Admitted})
		}, 11, "registered with the master, but no RBM was assigned within 10s", ""},
		{"no checkpoint to resume from", func(r *slaveRig) {
			r.recv(MasterName, r.assign(1, 2, MasterName, "", true))
		}, 11, "assigned rbm 1 to resume, but no checkpoint came within 10s", "master error"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			r := newSlaveRig(t, testStages(1, 1))
			r.s.Start(0)
			r.s.Ready()
			// Its first repeats come sooner: after 1/16 of RegisterEvery,
			// 1/8, 1/4, 1/2, then every RegisterEvery.
			for _, at := range []float64{0.07, 0.2, 0.45, 0.95} {
				wantShape(t, fmt.Sprintf("Tick(%gs)", at), r.at(at).tick().Messages, "master register")
			}
			r.at(1)
			tc.setup(r)
			r.s.Ready()
			// It registers again every second until it is assigned or
			// times out: a lost assignment is repeated.
			wantShape(t, "Tick(2s)", r.at(2).tick().Messages, "master register")
			wantShape(t, "Tick(2.5s)", r.at(2.5).tick().Messages, "")
			r.at(tc.deadline).now -= time.Nanosecond
			r.tick()
			r.wantRunning()
			out := r.at(tc.deadline).tick()
			wantShape(t, "Tick(deadline)", out.Messages, tc.wantShape)
			_, err := r.s.Done()
			r.wantDone(err)
			if errText(err) != tc.wantErr {
				t.Fatalf("Done() error = %s; want %s", errText(err), tc.wantErr)
			}
		})
	}
	r := newSlaveRig(t, testStages(1, 1))
	r.s.Start(0)
	r.at(10).tick()
	r.wantDone(ErrNoMaster)
}

func TestSlaveResume(t *testing.T) {
	t.Parallel()
	stages := testStages(2, 2)
	ws := dataWindows(stages, 4)
	r := newSlaveRig(t, stages)
	out := r.at(1).join(2, true)
	wantShape(t, "Assign(resume)", out.Messages, "")
	wantShape(t, "Tick(2s)", r.at(2).tick().Messages, "master register")

	ref := trainStage(t, stages[0], ws[:2])
	cp := CheckpointOf(testRun, stages[0], ref.Snapshot())
	other := *cp
	other.RunID = "r2"
	wantShape(t, "checkpoint from s9", r.recv("s9", cp).Messages, "")
	wantShape(t, "checkpoint of r2", r.recv(MasterName, &other).Messages, "")
	r.wantRunning()

	out = r.at(2.1).recv(MasterName, cp)
	wantShape(t, "Checkpoint", out.Messages, "master credit, master status")
	// The first credit asks for the kept windows again, from window 2.
	wantCredit(t, "Checkpoint", msg[*messages.Credit](t, out.Messages, 0), 4, 2, 2, true)
	if got := msg[*messages.Status](t, out.Messages, 1).Batches; got != 2 {
		t.Fatalf("status after resuming: %d batches; want 2", got)
	}
	if got := r.s.Stats().Batches; got != 2 {
		t.Fatalf("Stats().Batches after resuming = %d; want 2", got)
	}
	wantShape(t, "checkpoint again", r.recv(MasterName, cp).Messages, "")

	// The producer above starts at window 2 too: nothing before to resend.
	wantShape(t, "resend credit from s2", r.recv("s2", &messages.Credit{RunID: "r1", Incarnation: 2, RBM: 1, UpTo: 3, Next: 2, Durable: 2, Resend: true}).Messages, "")
	if out = r.recv(MasterName, dataChunk(ws[0], 0)); out.Job != nil {
		t.Fatalf("window 0 after resuming at 2 hands out a job; want it dropped")
	}
	if got := r.s.InputStats().Rejected[messages.RejectDuplicate]; got != 1 {
		t.Fatalf("InputStats().Rejected[duplicate] = %d; want 1", got)
	}
	msgs := r.drive(r.recv(MasterName, dataChunk(ws[2], 2)))
	msgs = append(msgs, r.drive(r.recv(MasterName, dataChunk(ws[3], 3)))...)
	wantShape(t, "windows 2 and 3", msgs, "master credit, s2 chunk, master credit, master checkpoint")
	if got := msg[*messages.Chunk](t, msgs, 1).Seq; got != 2 {
		t.Fatalf("first chunk above after resuming has Seq %d; want 2", got)
	}
	msgs = r.drive(r.recv("s2", r.credit(10)))
	msgs = append(msgs, r.recv(MasterName, endOfData(4, 1)).Messages...)
	wantShape(t, "the end", msgs, "s2 chunk, s2 end-of-stream, master status, master weights")
	// Resumed training is the same as training straight through.
	full := trainStage(t, stages[0], ws)
	full.EndEpoch()
	if w := msg[*messages.Weights](t, msgs, 3); !slices.Equal(w.W, full.RBM().W) || w.Batches != 4 {
		t.Fatalf("weights after resuming differ from training straight through (%d batches)", w.Batches)
	}
}

func TestSlaveStopRightAfterResuming(t *testing.T) {
	t.Parallel()
	stages := testStages(1, 2)
	r := newSlaveRig(t, stages)
	r.join(2, true)
	r.recv(MasterName, CheckpointOf(testRun, stages[0], trainStage(t, stages[0], dataWindows(stages, 2)).Snapshot()))
	// The checkpoint it resumed from is stored: nothing to leave, nothing
	// to wait for.
	out := r.recv(MasterName, stop("the master was interrupted"))
	wantShape(t, "Stop right after resuming", out.Messages, "master error")
	if got := msg[*messages.Error](t, out.Messages, 0).Text; got != "stopped by the master: the master was interrupted (at window 2)" {
		t.Fatalf("error text %q; want the stop at window 2", got)
	}
	r.wantDone(ErrStopped)
}

func TestSlaveResumeFromTheBeginning(t *testing.T) {
	t.Parallel()
	r := newSlaveRig(t, testStages(1, 1))
	r.join(2, true)
	out := r.recv(MasterName, &messages.Checkpoint{RunID: "r1", Incarnation: 2, RBM: 1})
	wantShape(t, "Checkpoint(0)", out.Messages, "master credit, master status")
	wantCredit(t, "Checkpoint(0)", msg[*messages.Credit](t, out.Messages, 0), 2, 0, 0, false)
}

func TestSlaveResumeBadCheckpoint(t *testing.T) {
	t.Parallel()
	stages := testStages(1, 1)
	r := newSlaveRig(t, stages)
	r.join(2, true)
	cp := fakeCheckpoint(stages[0], 2, 2)
	cp.W = cp.W[1:]
	out := r.recv(MasterName, cp)
	wantShape(t, "bad checkpoint", out.Messages, "master error")
	if e := msg[*messages.Error](t, out.Messages, 0); e.Stopped || !strings.HasPrefix(e.Text, "checkpoint to resume from: ") {
		t.Fatalf("error %+v; want a failure about the checkpoint", *e)
	}
	_, err := r.s.Done()
	r.wantDone(err)
	if err == nil {
		t.Fatalf("Done() error = nil; want the checkpoint's error")
	}
}

// drainRig is slave 1 of 2 training window 0, with credit from s2.
func drainRig(t *testing.T, c int) (*slaveRig, *Job) {
	r := newSlaveRig(t, testStages(2, 2))
	r.at(1).join(c, false)
	r.recv("s2", r.credit(100))
	out := r.at(1.1).recv(MasterName, dataChunk(dataWindows(r.stages, 1)[0], 0))
	if out.Job == nil {
		t.Fatalf("window 0 hands out no job")
	}
	return r, out.Job
}

func TestSlaveStopDrains(t *testing.T) {
	t.Parallel()
	errSignal := errors.New("signal")
	for _, tc := range []struct {
		name      string
		stop      func(r *slaveRig) Output
		acked     bool // else DrainGrace passes
		wantErr   error
		wantText  string
		wantCheck bool // a checkpoint while draining (C = 2)
	}{
		{"stop, then ack", func(r *slaveRig) Output { return r.recv(MasterName, stop("declared lost")) }, true, ErrStopped, "stopped by the master: declared lost (at window 1)", true},
		{"stop, no ack", func(r *slaveRig) Output { return r.recv(MasterName, stop("declared lost")) }, false, ErrStopped, "stopped by the master: declared lost (at window 1)", true},
		{"interrupt, then ack", func(r *slaveRig) Output { r.s.Interrupt(r.now, errSignal); return r.s.Ready() }, true, errSignal, "signal (at window 1)", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			r, job := drainRig(t, 2)
			wantShape(t, "stop while training", tc.stop(r.at(1.2)).Messages, "")
			r.wantRunning()
			// The job finishes: its middle result goes on, and a checkpoint
			// of window 1 is left.
			out := r.at(1.3).trained(job)
			wantShape(t, "Trained while draining", out.Messages, "master credit, s2 chunk, master checkpoint")
			if got := msg[*messages.Checkpoint](t, out.Messages, 2).Windows; got != 1 {
				t.Fatalf("drain checkpoint at window %d; want 1", got)
			}
			// No more training while draining.
			if out := r.recv(MasterName, dataChunk(dataWindows(r.stages, 2)[1], 1)); out.Job != nil {
				t.Fatalf("a window while draining hands out a job")
			}
			r.at(4.3).now -= time.Nanosecond
			r.tick()
			r.wantRunning()
			if tc.acked {
				out = r.recv(MasterName, r.ack(1, 0))
			} else {
				out = r.at(4.3).tick()
			}
			errs := only(out.Messages, messages.KindError)
			wantShape(t, "the end of the drain", errs, "master error")
			want := messages.Error{RunID: "r1", Incarnation: 2, RBM: 1, Stopped: true, Text: tc.wantText}
			if got := msg[*messages.Error](t, errs, 0); *got != want {
				t.Fatalf("error = %+v; want %+v", *got, want)
			}
			r.wantDone(tc.wantErr)
		})
	}
}

func TestSlaveStopWithoutCheckpoints(t *testing.T) {
	t.Parallel()
	r, job := drainRig(t, 0)
	r.recv(MasterName, stop("the master was interrupted"))
	out := r.trained(job)
	wantShape(t, "Trained while draining, C = 0", out.Messages, "master credit, s2 chunk, master error")
	r.wantDone(ErrStopped)
}

func TestSlaveStopWhileWaitingForInput(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name  string
		acked bool
		want  string // what the stop sends
	}{
		{"checkpoint acked", true, "master error"},
		{"checkpoint not acked yet", false, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			r, job := drainRig(t, 1)
			out := r.trained(job)
			wantShape(t, "Trained(0), C = 1", out.Messages, "master credit, master checkpoint, s2 chunk")
			if tc.acked {
				r.recv(MasterName, r.ack(1, 0))
			}
			wantShape(t, "Stop", r.recv(MasterName, stop("x")).Messages, tc.want)
			if !tc.acked {
				r.wantRunning()
				wantShape(t, "CheckpointAck", r.recv(MasterName, r.ack(1, 0)).Messages, "master error")
			}
			r.wantDone(ErrStopped)
		})
	}
}

// A slave asked to stop while its middle result waits for credit from
// above must still leave: drain's own comment says a held middle result
// does not matter.
func TestSlaveStopWhileWaitingForCredit(t *testing.T) {
	t.Parallel()
	r := newSlaveRig(t, testStages(2, 2))
	r.at(1).join(2, false)
	out := r.recv(MasterName, dataChunk(dataWindows(r.stages, 1)[0], 0))
	wantShape(t, "Trained(0) without credit", r.trained(out.Job).Messages, "master credit")
	out = r.at(1.5).recv(MasterName, stop("the master was interrupted"))
	wantShape(t, "Stop while waiting for credit", out.Messages, "master checkpoint")
	out = r.at(4.5).tick()
	wantShape(t, "DrainGrace later", only(out.Messages, messages.KindError), "master error")
	r.wantDone(ErrStopped)
}

func TestSlaveStopIgnored(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		stop *messages.Stop
	}{
		{"no run id", &messages.Stop{Reason: "x"}},
		{"another run", &messages.Stop{RunID: "r2", Incarnation: 2}},
		{"an earlier incarnation", &messages.Stop{RunID: "r1", Incarnation: 1}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			r := newSlaveRig(t, testStages(1, 1))
			r.join(2, false)
			wantShape(t, "Stop", r.recv(MasterName, tc.stop).Messages, "")
			r.wantRunning()
			// Still training: a window hands out a job.
			if out := r.recv(MasterName, dataChunk(dataWindows(r.stages, 1)[0], 0)); out.Job == nil {
				t.Fatalf("a window after an ignored Stop hands out no job")
			}
		})
	}
	t.Run("while joining", func(t *testing.T) {
		t.Parallel()
		r := newSlaveRig(t, testStages(1, 1))
		r.s.Start(0)
		r.s.Ready()
		r.recv(MasterName, stop("meant for an earlier process"))
		r.wantRunning()
		wantShape(t, "Tick", r.at(1).tick().Messages, "master register")
	})
	t.Run("no run id while admitted", func(t *testing.T) {
		t.Parallel()
		r := newSlaveRig(t, testStages(1, 1))
		r.s.Start(0)
		r.recv(MasterName, &messages.Admission{Slave: "s1", Process: testProcess, Outcome: messages.Admitted})
		r.recv(MasterName, &messages.Stop{Reason: "x"})
		r.wantRunning()
		if out := r.recv(MasterName, r.assign(1, 2, MasterName, "", false)); len(out.Messages) != 2 {
			t.Fatalf("Assign after an ignored Stop = [%s]; want a credit and a status", describe(out.Messages))
		}
	})
	t.Run("from a slave", func(t *testing.T) {
		t.Parallel()
		r := newSlaveRig(t, testStages(1, 1))
		r.join(2, false)
		r.recv("s2", stop("x"))
		r.wantRunning()
	})
}

func TestSlaveStopBeforeTraining(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name    string
		resume  bool
		wantErr error
	}{
		{"admitted", false, nil},
		{"resuming", true, ErrStopped},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			r := newSlaveRig(t, testStages(1, 1))
			r.s.Start(0)
			r.recv(MasterName, &messages.Admission{Slave: "s1", Process: testProcess, Outcome: messages.Admitted})
			if tc.resume {
				r.recv(MasterName, r.assign(1, 2, MasterName, "", true))
			}
			wantShape(t, "Stop", r.recv(MasterName, stop("x")).Messages, "")
			r.wantDone(tc.wantErr)
		})
	}
}

// A spare waits as long as the master answers its registrations, and
// obeys only the stops for its own process.
func TestSlaveSpare(t *testing.T) {
	t.Parallel()
	r := newSlaveRig(t, testStages(1, 1))
	r.s.Start(0)
	admitted := &messages.Admission{Slave: "s1", Process: testProcess, Outcome: messages.Admitted}
	r.at(0.5).recv(MasterName, admitted)
	for at := 1.5; at < 30; at++ {
		wantShape(t, fmt.Sprintf("Tick(%gs)", at), r.at(at).tick().Messages, "master register")
		r.recv(MasterName, admitted)
	}
	r.wantRunning()
	other := stop("another process")
	other.Process = testProcess + 1
	r.recv(MasterName, other)
	r.wantRunning()
	mine := stop("the run is complete")
	mine.Process = testProcess
	r.recv(MasterName, mine)
	r.wantDone(nil)

	// Unanswered, it gives up join_timeout after the last answer.
	r = newSlaveRig(t, testStages(1, 1))
	r.s.Start(0)
	r.at(0.5).recv(MasterName, admitted)
	r.at(5).recv(MasterName, admitted)
	r.at(14.9).tick()
	r.wantRunning()
	r.at(15).tick()
	if done, err := r.s.Done(); !done || err == nil || !strings.Contains(err.Error(), "no RBM was assigned within 10s") {
		t.Fatalf("Done() = %t, %v; want the wait for an assignment over", done, err)
	}
}

func TestSlaveInterrupt(t *testing.T) {
	t.Parallel()
	errSignal := errors.New("signal")
	for _, tc := range []struct {
		name    string
		setup   func(r *slaveRig)
		wantErr error
	}{
		{"joining", func(r *slaveRig) { r.s.Start(0) }, errSignal},
		{"admitted", func(r *slaveRig) {
			r.s.Start(0)
			r.recv(MasterName, &messages.Admission{Slave: "s1", Process: testProcess, Outcome: messages.Admitted})
		}, errSignal},
		{"resuming", func(r *slaveRig) { r.join(2, true) }, errSignal},
		{"finished", func(r *slaveRig) {
			r.join(2, false)
			r.drive(r.recv(MasterName, dataChunk(dataWindows(r.stages, 1)[0], 0)))
			r.recv(MasterName, endOfData(1, 0))
		}, nil},
		{"already done", func(r *slaveRig) {
			r.s.Start(0)
			r.recv(MasterName, &messages.Admission{Slave: "s1", Process: testProcess, Outcome: messages.Full})
		}, ErrClusterFull},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			r := newSlaveRig(t, testStages(1, 1))
			tc.setup(r)
			r.s.Ready()
			r.s.Interrupt(r.now, errSignal)
			wantShape(t, "Interrupt", r.s.Ready().Messages, "")
			r.wantDone(tc.wantErr)
		})
	}
}

func TestSlaveFinishTimeout(t *testing.T) {
	t.Parallel()
	r := newSlaveRig(t, testStages(1, 1))
	r.join(2, false)
	r.drive(r.recv(MasterName, dataChunk(dataWindows(r.stages, 1)[0], 0)))
	r.at(1).recv(MasterName, endOfData(1, 0))
	r.now = sec(1) + 10*time.Minute - time.Nanosecond
	r.tick()
	r.wantRunning()
	r.now++
	r.tick()
	r.wantDone(nil)
}

func TestSlaveReportsEveryStatusEvery(t *testing.T) {
	t.Parallel()
	r := newSlaveRig(t, testStages(2, 2))
	r.at(1).join(2, false) // a status at 1s
	for _, step := range []struct {
		at   float64
		want int // statuses
	}{{1.5, 0}, {1.99, 0}, {2, 1}, {2.5, 0}, {3.2, 1}, {3.7, 0}} {
		if got := len(only(r.at(step.at).tick().Messages, messages.KindStatus)); got != step.want {
			t.Errorf("Tick(%gs) sends %d statuses; want %d", step.at, got, step.want)
		}
	}
	// A relink: new neighbours both ways.
	out := r.at(3.8).recv(MasterName, r.assign(1, 2, "s7", "s8", false))
	wantShape(t, "Assign(relink)", out.Messages, "s7 credit")
	if !msg[*messages.Credit](t, out.Messages, 0).Resend {
		t.Fatalf("the credit to a new producer does not ask for a resend")
	}
	// Another RBM's assignment changes nothing.
	wantShape(t, "Assign(rbm 2)", r.recv(MasterName, r.assign(2, 2, "s9", "", false)).Messages, "")
	sts := only(r.at(4.2).tick().Messages, messages.KindStatus)
	wantShape(t, "Tick(4.2s)", sts, "master status")
	if st := msg[*messages.Status](t, sts, 0); !slices.Equal(st.Upstream, names("s7")) || !slices.Equal(st.Downstream, names("s8")) || st.RBM != 1 {
		t.Fatalf("status after the relink: rbm %d, %s -> %s; want rbm 1, s7 -> s8", st.RBM, st.Upstream, st.Downstream)
	}
	if a := r.s.Assigned(); !slices.Equal(a.Upstream, names("s7")) || !slices.Equal(a.Downstream, names("s8")) {
		t.Fatalf("Assigned() after the relink: %s -> %s; want s7 -> s8", a.Upstream, a.Downstream)
	}
	// Windows from the old producer are foreign now.
	r.recv(MasterName, dataChunk(dataWindows(r.stages, 1)[0], 0))
	if got := r.s.InputStats().Rejected[messages.RejectForeign]; got != 1 {
		t.Fatalf("InputStats().Rejected[foreign] = %d; want 1", got)
	}
}

func TestSlaveFailures(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name    string
		fail    func(r *slaveRig, ws []*pipeline.Window) Output
		wantErr string
	}{
		{"job fails", func(r *slaveRig, ws []*pipeline.Window) Output {
			r.recv(MasterName, dataChunk(ws[0], 0))
			r.s.Trained(r.now, errors.New("rbm 1: diverged"))
			return r.s.Ready()
		}, "rbm 1: diverged"},
		{"short stream", func(r *slaveRig, ws []*pipeline.Window) Output {
			r.drive(r.recv(MasterName, dataChunk(ws[0], 0)))
			r.drive(r.recv(MasterName, dataChunk(ws[1], 1)))
			return r.recv(MasterName, endOfData(1, 0))
		}, "rbm 0 ended its stream after 1 windows, 2 arrived"},
		{"resend of a forgotten window", func(r *slaveRig, ws []*pipeline.Window) Output {
			r.recv("s2", r.credit(10))
			r.drive(r.recv(MasterName, dataChunk(ws[0], 0)))
			r.drive(r.recv(MasterName, dataChunk(ws[1], 1)))
			r.recv("s2", &messages.Credit{RunID: "r1", Incarnation: 2, RBM: 1, UpTo: 10, Next: 2, Durable: 2})
			return r.recv("s2", &messages.Credit{RunID: "r1", Incarnation: 2, RBM: 1, UpTo: 10, Next: 0, Resend: true})
		}, "rbm 1: s2 asks for window 0 again, but rbm 1 keeps only the windows from 2 on"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			r := newSlaveRig(t, testStages(2, 2))
			r.join(2, false)
			out := tc.fail(r, dataWindows(r.stages, 2))
			wantShape(t, "failure", out.Messages, "master error")
			want := messages.Error{RunID: "r1", Incarnation: 2, RBM: 1, Text: tc.wantErr}
			if got := msg[*messages.Error](t, out.Messages, 0); *got != want {
				t.Fatalf("error = %+v; want %+v", *got, want)
			}
			_, err := r.s.Done()
			r.wantDone(err)
			if errText(err) != tc.wantErr {
				t.Fatalf("Done() error = %s; want %s", errText(err), tc.wantErr)
			}
		})
	}
}

func TestSlaveAssignmentErrors(t *testing.T) {
	t.Parallel()
	r := newSlaveRig(t, testStages(1, 1))
	r.s.Start(0)
	r.s.Ready()
	a := r.assign(1, 2, MasterName, "", false)
	a.Units = "ternary"
	// An assignment may arrive before its admission, which was lost.
	wantShape(t, "bad Assign", r.recv(MasterName, a).Messages, "")
	_, err := r.s.Done()
	r.wantDone(err)
	if err == nil || !strings.HasPrefix(err.Error(), "assignment: ") {
		t.Fatalf("Done() error = %v; want an assignment error", err)
	}
	// An assignment from another node is ignored.
	r = newSlaveRig(t, testStages(1, 1))
	r.s.Start(0)
	r.recv("s9", r.assign(1, 2, MasterName, "", false))
	if r.s.Assigned() != nil {
		t.Fatalf("Assigned() after an Assign from s9 = %+v; want nil", r.s.Assigned())
	}
}

func TestNewSlaveErrors(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		cfg  SlaveConfig
		want string
	}{
		{SlaveConfig{Name: "master", Timing: testTiming()}, `slave name "master": want 1-64 letters, digits, '_' or '-' (and not "master")`},
		{SlaveConfig{Name: "a b", Timing: testTiming()}, `slave name "a b": want 1-64 letters, digits, '_' or '-' (and not "master")`},
		{SlaveConfig{Name: "s1"}, "protocol: timing: register every = 0s: want > 0"},
	} {
		if _, err := NewSlave(tc.cfg); errText(err) != tc.want {
			t.Errorf("NewSlave(%q) = %s; want %s", tc.cfg.Name, errText(err), tc.want)
		}
	}
}

func TestJobRun(t *testing.T) {
	t.Parallel()
	stages := testStages(1, 1)
	w := dataWindows(stages, 1)[0]
	j := &Job{Stage: pipeline.NewStage(stages[0]), In: w}
	if err := j.Run(); err != nil {
		t.Fatalf("Run() = %v; want nil", err)
	}
	if got := j.Stage.Windows(); got != 1 {
		t.Fatalf("Stage.Windows() after Run = %d; want 1", got)
	}
	bad := &Job{Stage: pipeline.NewStage(stages[0]), In: &pipeline.Window{Epoch: 5, Rows: w.Rows, X: w.X}}
	if err := bad.Run(); err == nil {
		t.Fatalf("Run(window of epoch 5 of 1) = nil; want an error")
	}
}

func TestSlaveEdges(t *testing.T) {
	t.Parallel()
	s, err := NewSlave(SlaveConfig{Name: "s1", Timing: testTiming()})
	if err != nil {
		t.Fatal(err)
	}
	if s.InputStats() != (LinkStats{}) || s.OutputStats() != (LinkStats{}) {
		t.Fatalf("InputStats(), OutputStats() before an assignment = %+v, %+v; want zero", s.InputStats(), s.OutputStats())
	}
	// Trained without a job: nothing happens.
	s.Trained(0, nil)
	if out := s.Ready(); len(out.Messages) != 0 {
		t.Fatalf("Trained without a job = [%s]; want nothing", describe(out.Messages))
	}
	// Before any window, reports count no bytes.
	stages := testStages(1, 1)
	s.Receive(0, Envelope{From: MasterName, Msg: oneAssignment(stages[0])})
	out := s.Ready()
	if st := msg[*messages.Status](t, out.Messages, 1); st.BytesIn != 0 || st.BytesOut != 0 {
		t.Fatalf("status before any window: bytes %d/%d; want 0/0", st.BytesIn, st.BytesOut)
	}
	// An assignment while training of the same RBM without a downstream
	// change relinks nothing.
	s.Receive(0, Envelope{From: MasterName, Msg: oneAssignment(stages[0])})
	if out := s.Ready(); len(out.Messages) != 0 {
		t.Fatalf("the same Assign again = [%s]; want nothing", describe(out.Messages))
	}
}

func TestSlaveResumeCheckpointOutOfRange(t *testing.T) {
	t.Parallel()
	stages := testStages(1, 1)
	r := newSlaveRig(t, stages)
	r.join(2, true)
	cp := fakeCheckpoint(stages[0], 2, 2)
	cp.Epoch = 3 // of a run of 1 epoch
	out := r.recv(MasterName, cp)
	wantShape(t, "checkpoint of epoch 3", out.Messages, "master error")
	if _, err := r.s.Done(); err == nil || !strings.Contains(err.Error(), "out of range") {
		t.Fatalf("Done() error = %v; want the restore's range error", err)
	}
}

// A slave that cannot hold the RBM it is assigned (SlaveConfig.Fits) says
// why to the master and ends, before it trains.
func TestSlaveRefusesWhatItCannotHold(t *testing.T) {
	t.Parallel()
	stages := testStages(2, 1)
	r := newSlaveRig(t, stages)
	var got pipeline.Flow
	r.s.cfg.Fits = func(c pipeline.StageConfig, f pipeline.Flow) error {
		got = f
		return fmt.Errorf("RBM_%d needs 9 GiB, this machine has 1 GiB", c.Index)
	}
	out := r.join(3, false)
	wantShape(t, "refused assignment", out.Messages, "master error")
	if e := msg[*messages.Error](t, out.Messages, 0); e.Stopped || e.RBM != 1 || e.Text != "assignment: RBM_1 needs 9 GiB, this machine has 1 GiB" {
		t.Errorf("error %+v; want RBM 1's assignment refused, with the reason", *e)
	}
	// One link each way (master in, s2 out), one replica.
	if want := (pipeline.Flow{RBMs: 2, Rows: testRows, Credits: 2, CheckpointEvery: 3, InLinks: 1, OutLinks: 1, Replicas: 1}); !reflect.DeepEqual(got, want) {
		t.Errorf("Fits saw flow %+v; want %+v", got, want)
	}
	if out.Job != nil {
		t.Error("the slave trains a window of the RBM it refused")
	}
	_, err := r.s.Done()
	r.wantDone(err)
	if err == nil || !strings.Contains(err.Error(), "needs 9 GiB") {
		t.Fatalf("Done() error = %v; want the refusal", err)
	}
}

// oneAssignment is the assignment of the one RBM of a run, stage c.
func oneAssignment(c pipeline.StageConfig) *messages.Assign {
	a := assignment(testRun, c, 1, testRows, 2, 2, names(MasterName), nil)
	a.Replicas = 1
	return a
}

// wireBytes is the bytes of chunks in the wire format, as Encode writes
// them.
func wireBytes(t *testing.T, chunks ...*messages.Chunk) uint64 {
	t.Helper()
	var n uint64
	for _, c := range chunks {
		b, err := messages.Encode(c)
		if err != nil {
			t.Fatal(err)
		}
		n += uint64(len(b))
	}
	return n
}

// TestSlaveCountsWindowBytes checks a slave's BytesIn and BytesOut: every
// window it took and sent, once each, at its length in the wire format. A
// duplicate or a foreign window received, and windows sent again, add
// nothing; the last window, sent in the same output as the weights (its
// credit came after the end of the data), is in them.
func TestSlaveCountsWindowBytes(t *testing.T) {
	t.Parallel()
	stages := testStages(2, 2)
	ws := dataWindows(stages, 4)
	r := newSlaveRig(t, stages)
	r.join(0, false)
	r.recv("s2", r.credit(3))

	var data, sent []*messages.Chunk
	for k, w := range ws {
		data = append(data, dataChunk(w, uint64(k)))
		for _, e := range r.drive(r.recv(MasterName, data[k])) {
			if c, ok := e.Msg.(*messages.Chunk); ok {
				sent = append(sent, c)
			}
		}
	}
	if len(sent) != 3 {
		t.Fatalf("%d windows sent within a credit of 3; want 3", len(sent))
	}
	in, out := wireBytes(t, data...), wireBytes(t, sent...)
	if s, o := r.s.InputStats().Bytes, r.s.OutputStats().Bytes; s != in || o != out {
		t.Fatalf("InputStats().Bytes, OutputStats().Bytes = %d, %d; want %d, %d", s, o, in, out)
	}

	// A duplicate and a foreign window received, windows 1 and 2 sent
	// again: the counts stay.
	r.recv(MasterName, data[0])
	r.recv("stranger", data[1])
	again := r.at(5).recv("s2", &messages.Credit{RunID: testRun.ID, Incarnation: testRun.Incarnation, RBM: 1, UpTo: 3, Next: 1, Resend: true})
	wantShape(t, "a resend of windows 1 and 2", again.Messages, "s2 chunk, s2 chunk")
	if s, o := r.s.InputStats().Bytes, r.s.OutputStats().Bytes; s != in || o != out {
		t.Fatalf("after a duplicate, a foreign window and a resend: bytes %d in, %d out; want %d, %d", s, o, in, out)
	}

	// The end of the data: the last window waits for credit; with it, it
	// goes in one output with the end of the stream and the weights.
	wantShape(t, "EndOfStream", r.recv(MasterName, endOfData(4, 1)).Messages, "")
	last := r.recv("s2", r.credit(4))
	wantShape(t, "Credit(4)", last.Messages, "s2 chunk, s2 end-of-stream, master status, master weights")
	out += wireBytes(t, msg[*messages.Chunk](t, last.Messages, 0))
	if st := msg[*messages.Status](t, last.Messages, 2); st.BytesIn != in || st.BytesOut != out {
		t.Errorf("final status: bytes %d in, %d out; want %d, %d", st.BytesIn, st.BytesOut, in, out)
	}
	if wt := msg[*messages.Weights](t, last.Messages, 3); wt.BytesIn != in || wt.BytesOut != out {
		t.Errorf("weights: bytes %d in, %d out; want %d, %d: every window, the last included", wt.BytesIn, wt.BytesOut, in, out)
	}
}
