package main

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// After kill -9 of `master run`, its local slave processes end too, within
// seconds: none outlives it to train on, take a name the resumed run's
// slaves need or write into their logs (issue 13, defect 4).
func TestLocalSlavesDieWithKilledMaster(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	cfg := filepath.Join(dir, "long.yaml")
	// Long enough that the master is killed in the middle of pre-training.
	if err := os.WriteFile(cfg, []byte(`
name: long
data: {source: synthetic, train_limit: 2048, test_limit: 64}
dbn: {layers: [16, 16, 16]}
pretrain: {mode: pipelined, epochs: 500, batch_size: 16, k_batches: 2}
cluster: {transport: nats, cpus_per_worker: 0, plan: one-per-rbm}
finetune: {epochs: 0}
`), 0o644); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "out")
	cmd := exec.Command(masterBin, "run", "--config", cfg, "--out", out)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Process.Kill()
	var slaves []int
	for deadline := time.Now().Add(60 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		slaves = children(cmd.Process.Pid)
		log, _ := os.ReadFile(filepath.Join(out, "slave-2.log"))
		if len(slaves) == 2 && bytes.Contains(log, []byte("assigned")) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no 2 training local slaves after 60s (children %v)\n%s", slaves, stderr.String())
		}
	}
	if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	cmd.Wait()
	killed := time.Now()
	for _, pid := range slaves {
		for alive(pid) {
			if time.Since(killed) > 5*time.Second {
				t.Fatalf("local slave %d still runs 5s after its master was killed", pid)
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
	t.Logf("local slaves %v ended %s after kill -9 of their master", slaves, time.Since(killed).Round(10*time.Millisecond))
}

// children returns the processes whose parent is pid.
func children(pid int) []int {
	var out []int
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		child, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if state, parent := procStat(child); parent == pid && state != "Z" {
			out = append(out, child)
		}
	}
	return out
}

// alive reports whether process pid runs (a zombie does not).
func alive(pid int) bool {
	state, _ := procStat(pid)
	return state != "" && state != "Z"
}

// procStat returns the state and parent of process pid from
// /proc/pid/stat ("" if there is no such process).
func procStat(pid int) (state string, parent int) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return "", 0
	}
	// pid (comm) state ppid ...: comm may hold spaces and parentheses.
	f := strings.Fields(string(b[bytes.LastIndexByte(b, ')')+1:]))
	if len(f) < 2 {
		return "", 0
	}
	parent, _ = strconv.Atoi(f[1])
	return f[0], parent
}

// kill -9 of `master run` while it fine-tunes loses no pre-training: the
// same command fine-tunes the saved network again and finishes.
func TestKilledWhileFinetuningRestartsFinetuning(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	cfg := filepath.Join(dir, "ft.yaml")
	// Fine-tuning long enough that the master is killed in the middle.
	if err := os.WriteFile(cfg, []byte(`
name: ft
data: {source: synthetic, train_limit: 2048, test_limit: 64}
dbn: {layers: [64, 64, 64]}
pretrain: {mode: pipelined, epochs: 2, batch_size: 16, k_batches: 2}
cluster: {transport: nats, cpus_per_worker: 0, plan: one-per-rbm}
finetune: {epochs: 2000, batch_size: 16, validation: 0}
`), 0o644); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "out")
	cmd := exec.Command(masterBin, "run", "--config", cfg, "--out", out)
	var stderr syncBuffer // read while the master writes it
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Process.Kill()
	for deadline := time.Now().Add(60 * time.Second); !strings.Contains(stderr.String(), "fine-tuning epoch done"); time.Sleep(50 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("no fine-tuning epoch after 60s\n%s", stderr.String())
		}
	}
	if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	cmd.Wait()
	before, err := os.ReadFile(filepath.Join(out, "result.json"))
	if err != nil {
		t.Fatal(err)
	}

	again := exec.Command(masterBin, "run", "--config", cfg, "--out", out, "--set", "finetune.epochs=2000")
	log, err := again.CombinedOutput()
	if err != nil {
		t.Fatalf("the same command again: %v\n%s", err, log)
	}
	if !strings.Contains(string(log), "fine-tuning it again") || strings.Contains(string(log), "pre-training: mode=") {
		t.Errorf("the same command again: want fine-tuning again and no pre-training; log:\n%s", log)
	}
	var first, second struct {
		PretrainSeconds  float64 `json:"pretrain_seconds"`
		FinetuneRestarts int     `json:"finetune_restarts"`
		Finetune         *struct {
			Epochs       int     `json:"epochs"`
			TestAccuracy float64 `json:"test_accuracy"`
		} `json:"finetune"`
	}
	after, _ := os.ReadFile(filepath.Join(out, "result.json"))
	if err := json.Unmarshal(before, &first); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(after, &second); err != nil {
		t.Fatal(err)
	}
	if first.Finetune != nil || second.FinetuneRestarts != 1 || second.PretrainSeconds != first.PretrainSeconds || second.Finetune == nil || second.Finetune.Epochs != 2000 {
		t.Errorf("result.json killed %s, then %s; want no fine-tuning, then 2000 epochs of it on the same pre-training, restarted once", before, after)
	}
}
