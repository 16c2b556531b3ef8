package dbn

import (
	"context"
	"os/exec"
	"path/filepath"
	"slices"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
)

// TestKilledStageGroupRecovers: a stage group's process (RBM_1 and RBM_2 of
// plan 1-2,3) is SIGKILLed in the middle of pre-training; the master
// declares both its slaves lost, restarts the process once, both resume
// from their checkpoints, and the run ends with every mini-batch trained
// exactly once: the same weights, bit for bit, as the run nobody killed.
func TestKilledStageGroupRecovers(t *testing.T) {
	t.Parallel()
	killAndCompare(t, "1-2,3", "local-1,local-2", []string{"local-1", "local-2"})
}

// TestKilledReplicaRecovers: the same with stage replicas (plan 1,2-3x2:
// RBM_1 deals its middle results to two replicas of RBM_2 and RBM_3): the
// process of one replica is SIGKILLed, restarted, resumes from its
// checkpoints while its sibling waits at their next average, and the run
// ends with the undisturbed run's weights, every mini-batch trained
// exactly once.
func TestKilledReplicaRecovers(t *testing.T) {
	t.Parallel()
	killAndCompare(t, "1,2-3x2", "local-2-r1,local-3-r1", []string{"local-2-r1", "local-3-r1"})
}

// killAndCompare runs a small DBN on plan twice, the second time with the
// local slave process named kill SIGKILLed after RBM_2's first epoch, and
// checks that the slaves lost were replaced by new processes of their
// names and that the weights are the same, bit for bit.
func killAndCompare(t *testing.T, plan, kill string, lost []string) {
	body := `
name: group
data: {source: synthetic, train_limit: 240, test_limit: 20}
dbn: {layers: [16, 8, 6, 4]}
pretrain: {epochs: 6, batch_size: 20, k_batches: 2}
reliability: {checkpoint_every: 2, lost_after: 1s}
cluster: {plan: "` + plan + `", sync_every: 1}
finetune: {epochs: 0}
`
	slave := []string{slaveBin, "--window-delay", "20ms", "--status-every", "50ms"}
	calm := t.TempDir()
	if _, err := Run(context.Background(), loadConfig(t, body), Options{OutDir: calm, SlaveCommand: slave}); err != nil {
		t.Fatal(err)
	}

	out := t.TempDir()
	sig := signalAfterEpoch(t, kill, syscall.SIGKILL)
	res, err := Run(context.Background(), loadConfig(t, body), Options{OutDir: out, SlaveCommand: slave, Logger: sig.log})
	if err != nil {
		t.Fatalf("%v\n%s", err, sig.logs)
	}
	if sig.pid() == 0 {
		t.Fatalf("no process %s was killed", kill)
	}
	var got []string
	for _, r := range res.Recoveries {
		got = append(got, r.Lost)
		if r.Replacement != r.Lost {
			t.Errorf("recovery %+v: want a new process of the lost slave's name", r)
		}
	}
	slices.Sort(got)
	if !slices.Equal(got, lost) {
		t.Errorf("recoveries of %v; want %v, once each\n%s", got, lost, sig.logs)
	}
	want, err := readNPZ(filepath.Join(calm, WeightsFile))
	if err != nil {
		t.Fatal(err)
	}
	weights, err := readNPZ(filepath.Join(out, WeightsFile))
	if err != nil {
		t.Fatal(err)
	}
	for name, w := range want {
		if !slices.Equal(weights[name], w) {
			t.Errorf("weights.npz %s differs from the undisturbed run's: a mini-batch was lost or trained twice", name)
		}
	}
	stages := Stages(loadConfig(t, body), 240)
	for i, r := range res.RBMs {
		if want := stages[i].Batches(240); r.Batches != want {
			t.Errorf("rbm %d trained %d mini-batches; want %d (6 epochs of 12 and its part of the settle phase)", r.Index, r.Batches, want)
		}
	}
}

// sleepingSlaves starts local "slaves" that only sleep, one process per
// stage group of groups, and ends them when the test ends.
func sleepingSlaves(t *testing.T, groups [][2]int) *localSlaves {
	t.Helper()
	ctx, cancel := context.WithCancelCause(context.Background())
	ls := &localSlaves{
		ctx: ctx, cancel: cancel, log: hclog.NewNullLogger(), command: []string{"/bin/sh", "-c", "sleep 60", "sh"},
		out: t.TempDir(), layout: &layout{procs: procsOf(groups...), threads: 1}, threads: 1, lostAfter: time.Minute, lenient: true,
		auth: &localAuth{}, cmds: map[int]*exec.Cmd{}, exits: map[int]chan struct{}{}, started: map[int]time.Time{},
		restarts: map[int]int{}, restarting: map[int]*sync.Mutex{},
	}
	for p := range groups {
		ls.restarting[p] = new(sync.Mutex)
	}
	t.Cleanup(func() {
		cancel(nil)
		ls.mu.Lock()
		for _, c := range ls.cmds {
			c.Process.Kill()
		}
		ls.mu.Unlock()
		ls.exited.Wait()
	})
	for p := range groups {
		if err := ls.start(p, false); err != nil {
			t.Fatal(err)
		}
	}
	return ls
}

// TestRestartCalledOffForATakenBackSlave: a local slave that stalled past
// lost_after and then spoke again is taken back by the master; its restart,
// asked for at the loss, must leave its process alone (killing it would
// throw away its work since its checkpoint, and lose it a second time).
func TestRestartCalledOffForATakenBackSlave(t *testing.T) {
	t.Parallel()
	ls := sleepingSlaves(t, [][2]int{{1, 1}})
	ctx := ls.ctx
	ls.mu.Lock()
	ls.started[0] = time.Now().Add(-time.Hour) // long before the loss
	first, exited := ls.cmds[0].Process.Pid, ls.exits[0]
	ls.mu.Unlock()

	wanted, takeBack := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- ls.restart(wanted, 1, "local-1") }()
	time.Sleep(comeBackGrace / 5)
	takeBack() // the master heard from it again
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	select {
	case <-exited:
		t.Fatal("the taken-back slave's process was killed")
	default:
	}
	ls.mu.Lock()
	defer ls.mu.Unlock()
	if ls.restarts[0] != 0 || ls.cmds[0].Process.Pid != first {
		t.Errorf("restarts %d, pid %d (was %d); want the process left alone", ls.restarts[0], ls.cmds[0].Process.Pid, first)
	}
}

// TestSimultaneousLossesRestartAGroupOnce: the master reports the losses of
// both slaves of a stage group at the same moment (their last words were
// in one tick); the group's process is restarted once, not once per slave:
// two processes with the same names would take each other's names away.
func TestSimultaneousLossesRestartAGroupOnce(t *testing.T) {
	t.Parallel()
	ls := sleepingSlaves(t, [][2]int{{1, 2}, {3, 3}})
	ctx := ls.ctx
	ls.mu.Lock()
	ls.started[0] = time.Now().Add(-time.Hour) // long before the losses
	first := ls.cmds[0].Process.Pid
	ls.mu.Unlock()

	var wg sync.WaitGroup
	for _, lost := range []string{"local-1", "local-2"} {
		wg.Go(func() {
			if err := ls.restart(ctx, 1, lost); err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
	ls.mu.Lock()
	defer ls.mu.Unlock()
	if got := ls.restarts[0]; got != 1 {
		t.Errorf("the group's process was restarted %d times, want 1", got)
	}
	if ls.cmds[0].Process.Pid == first {
		t.Error("the group's process was not restarted")
	}
	if ls.restarts[1] != 0 {
		t.Errorf("the other group's process was restarted %d times", ls.restarts[1])
	}
}
