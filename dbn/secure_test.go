package dbn

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/nats-io/nats.go"

	"github.com/pipedbn/pipedbn/pipeline/natsnet"
)

// logWatch is a JSON logger's output that hands every line, decoded, to
// on, in the logging goroutine: what on does happens before the logged
// step goes on.
type logWatch struct {
	mu   sync.Mutex
	buf  bytes.Buffer
	all  bytes.Buffer
	on   func(line map[string]any)
	fail func(format string, args ...any)
}

func (w *logWatch) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.all.Write(p)
	w.buf.Write(p)
	for {
		line, err := w.buf.ReadBytes('\n')
		if err != nil {
			w.buf.Write(line) // not a whole line yet
			return len(p), nil
		}
		var m map[string]any
		if err := json.Unmarshal(line, &m); err != nil {
			w.fail("log line %q: %v", line, err)
			continue
		}
		w.on(m)
	}
}

func (w *logWatch) String() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.all.String()
}

func watchLogs(t *testing.T, on func(line map[string]any)) (hclog.Logger, *logWatch) {
	w := &logWatch{on: on, fail: t.Errorf}
	return hclog.New(&hclog.LoggerOptions{Output: w, JSONFormat: true, Level: hclog.Info}), w
}

// refusedWithoutCredentials checks that the NATS server at url refuses a
// local client that brings no credentials.
func refusedWithoutCredentials(t *testing.T, url string) {
	t.Helper()
	nc, err := nats.Connect(url, nats.MaxReconnects(0), nats.Timeout(5*time.Second))
	if err == nil {
		nc.Close()
		t.Errorf("a client without credentials connected to the embedded server %s; want it refused", url)
		return
	}
	if !errors.Is(err, nats.ErrAuthorization) {
		t.Errorf("a client without credentials on %s: %v; want %v", url, err, nats.ErrAuthorization)
	}
}

// TestEmbeddedServerSecured runs `master run`'s default, the embedded NATS
// server with one local slave process per RBM, interrupts it and resumes it
// in the same output folder, as a new master would after Ctrl-C: each
// start's server refuses a local client without credentials while the
// slaves train on it, the slaves get in with the identities the master
// hands them (their names are their users), nothing of theirs is written
// to the output folder, and the resumed start, with new passwords, finds
// the checkpoints of the first in the master's account.
func TestEmbeddedServerSecured(t *testing.T) {
	t.Parallel()
	cfg := loadConfig(t, `
name: secured
data: {source: synthetic, train_limit: 240, test_limit: 20}
dbn: {layers: [16, 8, 4]}
pretrain: {epochs: 6, batch_size: 20, k_batches: 2, settle: {schedule: after}}
reliability: {checkpoint_every: 2}
finetune: {epochs: 0}
`)
	out := t.TempDir()
	var (
		mu     sync.Mutex
		urls   []string
		epochs []string // the top RBM's epochs done, in the resumed start
	)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	start := 1
	log, logs := watchLogs(t, func(l map[string]any) {
		mu.Lock()
		defer mu.Unlock()
		switch l["@message"] {
		case "embedded NATS server started":
			url, _ := l["url"].(string)
			urls = append(urls, url)
			// The server is up, and the master waits for this line.
			refusedWithoutCredentials(t, url)
		case "epoch done":
			if rbm, _ := l["rbm"].(float64); rbm != 2 {
				return
			}
			if start == 1 && l["epoch"] == "2/6" {
				cancel() // Ctrl-C, with checkpoints of two epochs or more
			}
			if start == 2 {
				epochs = append(epochs, l["epoch"].(string))
			}
		}
	})
	// Slow slaves that report often: the master sees every epoch.
	opt := Options{OutDir: out, SlaveCommand: []string{slaveBin, "--window-delay", "30ms", "--status-every", "50ms"}, Logger: log}
	if _, err := Run(ctx, cfg, opt); !errors.Is(err, context.Canceled) {
		t.Fatalf("first start: %v; want it interrupted (%v)\n%s", err, context.Canceled, logs)
	}
	mu.Lock()
	start = 2
	mu.Unlock()
	res, err := Run(context.Background(), cfg, opt)
	if err != nil {
		t.Fatalf("resumed start: %v\n%s", err, logs)
	}
	if !res.Resumed {
		t.Errorf("the second start did not resume the first")
	}
	mu.Lock()
	defer mu.Unlock()
	if len(urls) != 2 {
		t.Fatalf("embedded servers started: %v; want 2", urls)
	}
	// Restarted from nothing, the top RBM would report epoch 1/6 again;
	// from its checkpoint, it goes on with the epochs it had.
	// The top RBM ends with its part of the settle phase, after the
	// epochs (pretrain.settle.schedule after), a pass or more of it.
	last := slices.Index(epochs, "6/6")
	if n := len(epochs); n < 2 || epochs[0] == "1/6" || last < 0 || last == n-1 || slices.ContainsFunc(epochs[last+1:], func(e string) bool { return e != "settle phase" }) {
		t.Errorf("the resumed start's top RBM reported epochs %v; want it to go on from its checkpoint (after 1/6) to 6/6, then the settle phase", epochs)
	}
	for _, r := range res.RBMs {
		if !strings.HasPrefix(r.Worker, "local-") {
			t.Errorf("rbm %d trained by %q; want a local slave, named after its identity", r.Index, r.Worker)
		}
	}
	if _, err := os.Stat(filepath.Join(out, "secrets")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("local slaves only, yet %s/secrets exists (%v): their identities must stay in memory", out, err)
	}
	for i := 1; i <= 2; i++ {
		b, _ := os.ReadFile(filepath.Join(out, fmt.Sprintf("slave-%d.log", i)))
		if bytes.Contains(b, []byte("Violation")) {
			t.Errorf("slave-%d.log: the server refused the slave something:\n%s", i, b)
		}
	}
}

// TestRestartedLocalSlaveKeepsItsIdentity: a local slave that hangs
// (SIGSTOP) still holds its connection, and so its identity, which the
// server admits once at a time; the master declares it lost, kills it and
// starts a new process under the same name, which gets the same identity
// through a new pipe once the old connection is gone, and the run ends.
func TestRestartedLocalSlaveKeepsItsIdentity(t *testing.T) {
	t.Parallel()
	cfg := loadConfig(t, `
name: restarted
data: {source: synthetic, train_limit: 240, test_limit: 20}
dbn: {layers: [16, 8, 4]}
pretrain: {epochs: 6, batch_size: 20, k_batches: 2}
reliability: {checkpoint_every: 2, lost_after: 1s}
cluster: {plan: one-per-rbm}
finetune: {epochs: 0}
`)
	out := t.TempDir()
	sig := signalAfterEpoch(t, localSlaveName(2), syscall.SIGSTOP)
	log, logs := sig.log, sig.logs
	opt := Options{OutDir: out, SlaveCommand: []string{slaveBin, "--window-delay", "30ms", "--status-every", "50ms"}, Logger: log}
	res, err := Run(context.Background(), cfg, opt)
	stopped := sig.pid()
	if stopped != 0 {
		syscall.Kill(stopped, syscall.SIGKILL) // in case the master did not
	}
	if err != nil {
		t.Fatalf("%v\n%s", err, logs)
	}
	if stopped == 0 {
		t.Fatal("no slave was stopped")
	}
	if len(res.Recoveries) == 0 || res.Recoveries[0].Lost != localSlaveName(2) || res.Recoveries[0].Replacement != localSlaveName(2) {
		t.Errorf("recoveries %+v; want %s replaced by a new process of itself", res.Recoveries, localSlaveName(2))
	}
	b, _ := os.ReadFile(filepath.Join(out, "slave-2.log"))
	if bytes.Contains(b, []byte("identity is in use")) || bytes.Contains(b, []byte("Violation")) {
		t.Errorf("slave-2.log: the restarted slave was refused:\n%s", b)
	}
}

// signaller sends a signal to a local slave process once RBM_2 has
// finished an epoch (see signalAfterEpoch).
type signaller struct {
	log  hclog.Logger
	logs *logWatch
	mu   sync.Mutex
	sent int // the pid signalled; 0: none yet
}

// pid returns the pid signalled, 0 if none was.
func (s *signaller) pid() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.sent
}

// signalAfterEpoch returns a signaller whose logger, given to Run, sends
// sig to the process of the local slave (or stage group) name on the run's
// embedded server when RBM_2 reports its first epoch done.
func signalAfterEpoch(t *testing.T, name string, sig syscall.Signal) *signaller {
	s := &signaller{}
	var url string
	s.log, s.logs = watchLogs(t, func(l map[string]any) {
		s.mu.Lock()
		defer s.mu.Unlock()
		switch l["@message"] {
		case "embedded NATS server started":
			url, _ = l["url"].(string)
		case "epoch done":
			if rbm, _ := l["rbm"].(float64); rbm != 2 || s.sent != 0 {
				return
			}
			if s.sent = slavePID(url, name); s.sent == 0 {
				t.Errorf("no process of local slave %s on %s", name, url)
				return
			}
			syscall.Kill(s.sent, sig)
		}
	})
	return s
}

// slavePID is the pid of the slave process named name on the NATS server
// at url, 0 if none.
func slavePID(url, name string) int {
	procs, _ := filepath.Glob("/proc/[0-9]*/cmdline")
	for _, p := range procs {
		b, err := os.ReadFile(p)
		if err != nil {
			continue
		}
		args := strings.Join(strings.Split(string(b), "\x00"), " ")
		if strings.Contains(args, " --nats "+url+" ") && strings.Contains(args, " --name "+name+" ") {
			pid, _ := strconv.Atoi(filepath.Base(filepath.Dir(p)))
			return pid
		}
	}
	return 0
}

// TestSlavesByHandJoinEmbedded: with cluster.slaves > 0 the master writes
// its embedded server's pool of slave identities to out/secrets (a folder
// and file of the master's user alone) and logs how a slave joins; slaves
// started that way train the run.
func TestSlavesByHandJoinEmbedded(t *testing.T) {
	t.Parallel()
	cfg := loadConfig(t, `
name: by-hand
data: {source: synthetic, train_limit: 120, test_limit: 20}
dbn: {layers: [16, 8, 4]}
pretrain: {epochs: 2, batch_size: 20, k_batches: 2}
cluster: {slaves: 3}
finetune: {epochs: 0}
`)
	out := t.TempDir()
	var (
		mu     sync.Mutex
		slaves []*exec.Cmd
		logsOf []*bytes.Buffer
		join   string
	)
	log, logs := watchLogs(t, func(l map[string]any) {
		if l["@message"] == "embedded NATS server started" {
			refusedWithoutCredentials(t, l["url"].(string))
		}
		if l["@message"] != "waiting for slaves" {
			return
		}
		mu.Lock()
		defer mu.Unlock()
		join, _ = l["join_with"].(string)
		args := strings.Fields(join)
		if len(args) != 5 || args[0] != "slave" || args[1] != "--nats" || args[3] != "--credentials" {
			t.Errorf("join_with = %q; want slave --nats URL --credentials FILE", join)
			return
		}
		for range 2 {
			var b bytes.Buffer
			cmd := exec.Command(slaveBin, args[1:]...)
			cmd.Stdout, cmd.Stderr = &b, &b
			if err := cmd.Start(); err != nil {
				t.Error(err)
				return
			}
			slaves, logsOf = append(slaves, cmd), append(logsOf, &b)
		}
	})
	res, err := Run(context.Background(), cfg, Options{OutDir: out, Logger: log})
	mu.Lock()
	defer mu.Unlock()
	for i, cmd := range slaves {
		if werr := cmd.Wait(); werr != nil {
			t.Errorf("slave %d: %v\n%s", i+1, werr, logsOf[i])
		}
	}
	if err != nil {
		t.Fatalf("%v\n%s", err, logs)
	}
	pool := filepath.Join(out, "secrets", "slaves.creds")
	if !strings.HasSuffix(join, " --credentials "+pool) {
		t.Errorf("join_with = %q; want the pool %s", join, pool)
	}
	for path, want := range map[string]os.FileMode{filepath.Dir(pool): 0o700, pool: 0o600} {
		if fi, err := os.Stat(path); err != nil || fi.Mode().Perm() != want {
			t.Errorf("%s: mode %v, %v; want %v", path, fi.Mode().Perm(), err, want)
		}
	}
	creds, err := natsnet.ReadCredentials(pool)
	if err != nil || len(creds) != 3 {
		t.Fatalf("the pool holds %d identities, %v; want 3 (cluster.slaves)", len(creds), err)
	}
	users := map[string]bool{}
	for _, c := range creds {
		users[c.User] = true
	}
	for _, r := range res.RBMs {
		if !users[r.Worker] {
			t.Errorf("rbm %d trained by %q; want one of the pool's identities %v", r.Index, r.Worker, users)
		}
	}
	sc := bufio.NewScanner(strings.NewReader(logs.String()))
	for sc.Scan() {
		if strings.Contains(sc.Text(), creds[0].Password) {
			t.Errorf("the master's log holds a slave's password: %s", sc.Text())
		}
	}
}
