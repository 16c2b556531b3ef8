package protocol

import (
	"fmt"
	"slices"
	"testing"

	"github.com/pipedbn/pipedbn/messages"
)

// milestoneRig is a masterRig whose Observer records every milestone the
// master passes, with the rig's clock, as "name@seconds".
func milestoneRig(t *testing.T, l, epochs int, edit func(*MasterConfig)) (*masterRig, *[]string) {
	t.Helper()
	var passed []string
	var r *masterRig
	r = newMasterRig(t, l, epochs, 2, func(c *MasterConfig) {
		c.Observer.Passed = func(ms Milestone) { passed = append(passed, fmt.Sprintf("%s@%g", ms, r.now.Seconds())) }
		if edit != nil {
			edit(c)
		}
	})
	return r, &passed
}

// done is slave's report that RBM i is trained, batches in all.
func (r *masterRig) done(i int, slave string, batches int) *messages.Status {
	st := r.status(i, slave, batches)
	st.State = messages.StateDone
	return st
}

func TestMasterMilestones(t *testing.T) {
	t.Parallel()
	r, passed := milestoneRig(t, 3, 2, nil) // 4 windows of one mini-batch
	r.start()
	r.at(0.5).recv("s3", r.status(3, "s3", 0)) // the top RBM begins: nothing trained yet
	r.at(1).recv("s1", dataCredit(2, 0, 0, false))
	r.at(1.5).recv("s1", dataCredit(3, 1, 0, false)) // more windows: FirstDealt only once
	r.at(2).recv("s1", r.status(1, "s1", 1))
	r.recv("s2", r.status(2, "s2", 1))
	r.at(3).recv("s3", r.status(3, "s3", 1))
	r.at(3.5).recv("s3", r.status(3, "s3", 2))
	r.at(4).recv("s1", r.done(1, "s1", 4))
	r.at(5).recv("s2", r.done(2, "s2", 4))
	r.at(6).recv("s3", r.done(3, "s3", 4))
	for i := 1; i <= 3; i++ {
		r.at(7).recv(fmt.Sprintf("s%d", i), fakeWeights(r.stage(i), 1))
	}
	r.wantDone(nil)
	if want := []string{"first window dealt@1", "filled@3", "bottom trained@4", "all trained@6"}; !slices.Equal(*passed, want) {
		t.Fatalf("milestones passed: %q; want %q", *passed, want)
	}
}

// A run of fewer windows than RBMs trains RBM_1 before the top RBM trains
// its first window: each milestone is passed when it happens.
func TestMasterMilestonesOfAShortRun(t *testing.T) {
	t.Parallel()
	r, passed := milestoneRig(t, 3, 1, nil)
	r.start()
	r.at(1).recv("s1", dataCredit(2, 0, 0, false))
	r.at(2).recv("s1", r.done(1, "s1", 2))
	r.at(3).recv("s3", r.status(3, "s3", 1))
	r.at(4).recv("s2", r.done(2, "s2", 2))
	r.at(5).recv("s3", r.done(3, "s3", 2))
	if want := []string{"first window dealt@1", "bottom trained@2", "filled@3", "all trained@5"}; !slices.Equal(*passed, want) {
		t.Fatalf("milestones passed: %q; want %q", *passed, want)
	}
}

// Weights count as the report of the RBM trained, should that report be
// lost; the milestones the weights imply are passed first, in order.
func TestMasterMilestonesFromWeights(t *testing.T) {
	t.Parallel()
	r, passed := milestoneRig(t, 2, 1, nil)
	r.start()
	r.at(1).recv("s2", fakeWeights(r.stage(2), 2))
	r.at(2).recv("s1", fakeWeights(r.stage(1), 1))
	r.wantDone(nil)
	if want := []string{"first window dealt@1", "filled@1", "bottom trained@2", "all trained@2"}; !slices.Equal(*passed, want) {
		t.Fatalf("milestones passed: %q; want %q", *passed, want)
	}
}

// A slave resumed from a checkpoint reports the checkpoint's mini-batches
// before it trains: the top RBM fills the pipeline once it trained past
// them.
func TestMasterMilestonesOfAResumedRun(t *testing.T) {
	t.Parallel()
	stored := readStored(t, storeOf(t, [][2]int{{1, 2}, {1, 4}}), 1)
	r, passed := milestoneRig(t, 1, 3, func(c *MasterConfig) { c.Stored = stored })
	r.m.Start(0)
	get := r.m.Ready().Store[0]
	r.register("s1", 1)
	r.m.Loaded(r.now, get, fakeCheckpoint(r.stage(1), 4, 4), nil)
	r.m.Ready()
	r.at(1).recv("s1", dataCredit(6, 4, 4, true))
	r.at(2).recv("s1", r.status(1, "s1", 4))
	r.at(3).recv("s1", r.status(1, "s1", 5))
	if want := []string{"first window dealt@1", "filled@3"}; !slices.Equal(*passed, want) {
		t.Fatalf("milestones passed: %q; want %q", *passed, want)
	}
}

// The slave of the top RBM reports its first window trained at once, the
// moment the pipeline is filled; later windows wait for the heartbeat, and
// the slaves below hand their windows on instead.
func TestSlaveOfTheTopRBMReportsItsFirstWindow(t *testing.T) {
	t.Parallel()
	r := newSlaveRig(t, testStages(1, 2))
	r.at(1).join(0, false)
	ws := dataWindows(r.stages, 2)
	out := r.at(1.1).recv(MasterName, dataChunk(ws[0], 0))
	out = r.at(1.2).trained(out.Job)
	wantShape(t, "Trained(0) of the top RBM", out.Messages, "master credit, master status")
	if st := msg[*messages.Status](t, out.Messages, 1); st.Batches != 1 || st.RBM != 1 {
		t.Fatalf("status after the first window: rbm %d, %d batches; want rbm 1, 1", st.RBM, st.Batches)
	}
	out = r.at(1.3).recv(MasterName, dataChunk(ws[1], 1))
	out = r.at(1.4).trained(out.Job)
	if got := only(out.Messages, messages.KindStatus); len(got) != 0 {
		t.Fatalf("Trained(1) of the top RBM sends [%s]; want no status before StatusEvery", describe(out.Messages))
	}
}
