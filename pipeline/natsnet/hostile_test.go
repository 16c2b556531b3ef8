package natsnet

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/pipedbn/pipedbn/internal/natsprobe"
	"github.com/pipedbn/pipedbn/messages"
	"github.com/pipedbn/pipedbn/pipeline"
	"github.com/pipedbn/pipedbn/pipeline/driver"
	"github.com/pipedbn/pipedbn/pipeline/protocol"
)

// securedEmbedded starts an embedded server the way `master run` does
// (dbn's pretrainNATS): fresh identities for the master and one per local
// slave, on loopback.
func securedEmbedded(t *testing.T, storeDir string, slaves ...string) (*Embedded, *Identities) {
	t.Helper()
	ids, err := NewIdentities(protocol.MasterName, slaves)
	if err != nil {
		t.Fatal(err)
	}
	srv, err := StartEmbeddedWith(EmbeddedOptions{StoreDir: storeDir, Users: ids})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Shutdown)
	return srv, ids
}

func mustDial(t *testing.T, url string, c Credential) *natsprobe.Client {
	t.Helper()
	h, err := natsprobe.Dial(url, c.Option())
	if err != nil {
		t.Fatalf("connect as %s: %v", c.User, err)
	}
	t.Cleanup(h.Close)
	return h
}

// TestEmbeddedRefusesHostileClients: on the default embedded server, a
// local process without credentials cannot connect, and one that holds a
// slave's identity can neither pass for the master (control), nor for
// another slave (its reports, its middle results), nor hold the identity
// twice.
func TestEmbeddedRefusesHostileClients(t *testing.T) {
	t.Parallel()
	srv, ids := securedEmbedded(t, "", "local-1", "local-2", "local-3")
	if u, err := url.Parse(srv.URL()); err != nil || u.Hostname() != "127.0.0.1" {
		t.Errorf("URL() = %s; want a server on 127.0.0.1 alone", srv.URL())
	}
	const run = "r-1"
	a, b := ids.Slaves[0], ids.Slaves[1]

	t.Run("no credentials", func(t *testing.T) {
		for _, opts := range [][]nats.Option{
			nil,
			{nats.UserInfo(a.User, "not-the-password")},
			{nats.UserInfo(a.User, b.Password)},
			{nats.UserInfo(ids.Master.User, a.Password)},
			{nats.UserInfo("slave-1", a.Password)},
		} {
			h, err := natsprobe.Dial(srv.URL(), opts...)
			if err == nil {
				h.Close()
				t.Fatalf("connect with %d options: accepted; want refused", len(opts))
			}
			if !errors.Is(err, nats.ErrAuthorization) {
				t.Errorf("connect: %v; want %v", err, nats.ErrAuthorization)
			}
		}
		// natsnet's own Connect, as a slave without its identity would.
		if os.Getenv(CredentialsEnv) != "" {
			return
		}
		if nc, err := Connect(srv.URL(), "no-one"); err == nil {
			nc.Close()
			t.Error("Connect without credentials: accepted; want refused")
		} else if !errors.Is(err, nats.ErrAuthorization) {
			t.Errorf("Connect without credentials: %v; want %v", err, nats.ErrAuthorization)
		}
	})

	t.Run("forged messages", func(t *testing.T) {
		master := mustDial(t, srv.URL(), ids.Master)
		slaveB := mustDial(t, srv.URL(), b)
		hostA := mustDial(t, srv.URL(), a)
		// Listeners that would receive the forgeries if the server let them
		// through.
		got := make(chan string, 16)
		listen := func(c *natsprobe.Client, subject string) {
			if _, err := c.Subscribe(subject, func(m *nats.Msg) { got <- m.Subject }); err != nil {
				t.Fatal(err)
			}
			c.Quiet(t)
		}
		listen(slaveB, ctlSubject(b.User))
		listen(slaveB, "pipedbn.data.*.*."+b.User)
		listen(master, "pipedbn.report.*.*")
		listen(master, "pipedbn.credit.*.*."+protocol.MasterName)
		for _, subject := range []string{
			ctlSubject(b.User),                              // a Stop for another slave
			ctlSubject(a.User),                              // a Stop, Assign or Admission of its own making
			reportSubject(run, b.User),                      // another slave's Error, Status or Weights
			dataSubject(run, b.User, b.User),                // another slave's middle results
			dataSubject(run, protocol.MasterName, b.User),   // the training data
			creditSubject(run, b.User, protocol.MasterName), // another slave's credits
			"$JS.API.INFO",                                  // the master's checkpoints
		} {
			if err := hostA.Publish(subject, []byte("forged")); err != nil {
				t.Fatal(err)
			}
			hostA.Refused(t, "publish as "+a.User, subject)
		}
		master.Flush()
		slaveB.Flush()
		select {
		case s := <-got:
			t.Errorf("a forged message on %s was delivered", s)
		case <-time.After(200 * time.Millisecond):
		}
		// What a slave may send still arrives: the refusals are the
		// permissions, not a broken server.
		if err := hostA.Publish(reportSubject(run, a.User), []byte("status")); err != nil {
			t.Fatal(err)
		}
		hostA.Quiet(t)
		select {
		case s := <-got:
			if s != reportSubject(run, a.User) {
				t.Errorf("got a message on %s; want %s", s, reportSubject(run, a.User))
			}
		case <-time.After(5 * time.Second):
			t.Errorf("%s's own report did not reach the master", a.User)
		}
	})

	awaitDisconnected := func(t *testing.T, user string) {
		t.Helper()
		checkFor(t, 5*time.Second, func() error {
			if srv.Connected(user) {
				return errors.New(user + " is still connected")
			}
			return nil
		})
	}

	t.Run("identity held once", func(t *testing.T) {
		// The previous subtest's connection as a is closed, but the server
		// learns it asynchronously.
		awaitDisconnected(t, a.User)
		first := mustDial(t, srv.URL(), a)
		if !srv.Connected(a.User) {
			t.Errorf("Connected(%s) = false while it is connected; want true", a.User)
		}
		if h, err := natsprobe.Dial(srv.URL(), a.Option()); err == nil {
			h.Close()
			t.Fatalf("second connection as %s: accepted; want refused", a.User)
		} else if !errors.Is(err, nats.ErrMaxAccountConnectionsExceeded) {
			t.Fatalf("second connection as %s: %v; want %v", a.User, err, nats.ErrMaxAccountConnectionsExceeded)
		}
		first.Close()
		awaitDisconnected(t, a.User)
		mustDial(t, srv.URL(), a).Quiet(t) // free again
	})
}

// TestEmbeddedCheckpointsSurviveNewIdentities: the checkpoint store is in
// the master's account, and a restarted master (new process, new
// passwords, same store folder) finds it there; no slave identity reaches
// it.
func TestEmbeddedCheckpointsSurviveNewIdentities(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()

	srv, ids := securedEmbedded(t, dir, "local-1", "local-2")
	nc, err := Connect(srv.URL(), "pipedbn-master", ids.Master.Option())
	if err != nil {
		t.Fatal(err)
	}
	store, err := OpenJetStreamStore(ctx, nc, "resumed")
	if err != nil {
		t.Fatalf("JetStream store in the master's account: %v", err)
	}
	if err := store.Put(ctx, "rbm-1", []byte("weights")); err != nil {
		t.Fatal(err)
	}
	// The refusals reach the slave asynchronously: it only sees no answer.
	slave, err := Connect(srv.URL(), "pipedbn-slave", ids.Slaves[0].Option(), nats.MaxReconnects(0),
		nats.ErrorHandler(func(*nats.Conn, *nats.Subscription, error) {}))
	if err != nil {
		t.Fatal(err)
	}
	sctx, scancel := context.WithTimeout(ctx, time.Second)
	if _, err := OpenJetStreamStore(sctx, slave, "resumed"); err == nil {
		t.Error("a slave identity opened the master's checkpoint store")
	}
	scancel()
	slave.Close()
	nc.Close()
	srv.Shutdown()

	srv2, ids2 := securedEmbedded(t, dir, "local-1", "local-2")
	if ids2.Master.Password == ids.Master.Password {
		t.Fatal("the restarted master got the same password")
	}
	if _, err := Connect(srv2.URL(), "old", ids.Master.Option(), nats.MaxReconnects(0)); !errors.Is(err, nats.ErrAuthorization) {
		t.Errorf("the first start's master password on the second: %v; want %v", err, nats.ErrAuthorization)
	}
	nc2, err := Connect(srv2.URL(), "pipedbn-master", ids2.Master.Option())
	if err != nil {
		t.Fatal(err)
	}
	defer nc2.Close()
	store2, err := OpenJetStreamStore(ctx, nc2, "resumed")
	if err != nil {
		t.Fatal(err)
	}
	got, err := store2.Get(ctx, "rbm-1")
	if err != nil || string(got) != "weights" {
		t.Errorf("after the restart the store holds %q, %v; want %q", got, err, "weights")
	}
	if _, err := os.Stat(filepath.Join(dir, "jetstream", MasterAccount)); err != nil {
		t.Errorf("the store is not kept under the master's account: %v", err)
	}
}

func TestNewIdentities(t *testing.T) {
	t.Parallel()
	ids, err := NewIdentities(protocol.MasterName, []string{"local-1", "local-2"})
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	for _, c := range append([]Credential{ids.Master}, ids.Slaves...) {
		if len(c.Password) != 32 || seen[c.Password] { // 24 bytes, base64
			t.Errorf("%s: password of %d characters (or a repeat); want 32, each its own", c.User, len(c.Password))
		}
		seen[c.Password] = true
	}
	if ids.Master.User != protocol.MasterName || ids.Slaves[1].User != "local-2" {
		t.Errorf("users %s, %v; want %s and the slaves in order", ids.Master.User, ids.Slaves, protocol.MasterName)
	}
	many := make([]string, MaxSlaveIdentities+1)
	for k := range many {
		many[k] = SlaveUser(k + 1)
	}
	for _, tc := range []struct {
		master string
		slaves []string
	}{
		{protocol.MasterName, nil},
		{protocol.MasterName, many},
		{protocol.MasterName, []string{"local-1", "local-1"}},
		{protocol.MasterName, []string{"local-1", protocol.MasterName}},
		{"boss", []string{"boss"}},
		{protocol.MasterName, []string{"a.b"}},
		{protocol.MasterName, []string{"*"}},
		{"bad\"user", []string{"local-1"}},
	} {
		if _, err := NewIdentities(tc.master, tc.slaves); err == nil {
			t.Errorf("NewIdentities(%q, %d slaves %.3q): no error", tc.master, len(tc.slaves), tc.slaves)
		}
	}

	// A config for a disk holds what hash makes of the passwords, never
	// the passwords.
	conf, err := ids.ServerConfig(func(p string) (string, error) { return "hashed-" + p[:4], nil })
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range append([]Credential{ids.Master}, ids.Slaves...) {
		if strings.Contains(string(conf), c.Password) {
			t.Errorf("the hashed config holds %s's password", c.User)
		}
		if !strings.Contains(string(conf), `"hashed-`+c.Password[:4]+`"`) {
			t.Errorf("the hashed config lacks %s's hash", c.User)
		}
	}
	if _, err := ids.ServerConfig(func(string) (string, error) { return `x"y`, nil }); err == nil {
		t.Error("ServerConfig with a hash that ends the quote: no error")
	}
	if _, err := ids.ServerConfig(func(string) (string, error) { return "", errors.New("no") }); err == nil {
		t.Error("ServerConfig with a failing hash: no error")
	}
}

func TestWriteCredentials(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "pool.creds")
	want := []Credential{{"slave-1", "a:b"}, {"slave-2", "c"}}
	for range 2 { // the second replaces the first
		if err := WriteCredentials(path, "two slaves\nSECRET.", want); err != nil {
			t.Fatal(err)
		}
	}
	fi, err := os.Stat(path)
	if err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("mode %v, %v; want 0600", fi.Mode().Perm(), err)
	}
	got, err := ReadCredentials(path)
	if err != nil || len(got) != 2 || got[0] != want[0] || got[1] != want[1] {
		t.Errorf("ReadCredentials(WriteCredentials(%v)) = %v, %v", want, got, err)
	}
	b, _ := os.ReadFile(path)
	if !strings.HasPrefix(string(b), "# two slaves\n# SECRET.\n") {
		t.Errorf("file starts %q; want the comment as # lines", b)
	}
	if m, _ := filepath.Glob(filepath.Join(filepath.Dir(path), ".tmp-*")); len(m) > 0 {
		t.Errorf("temporary files left: %v", m)
	}
}

// checkFor polls f until it returns nil or the time is up.
func checkFor(t *testing.T, total time.Duration, f func() error) {
	t.Helper()
	deadline := time.Now().Add(total)
	for {
		err := f()
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("after %s: %v", total, err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestRegistrationIsBoundToItsIdentity: on the default embedded server, a
// client holding one slave's identity registers again and again, before
// the real slaves come and while they train, under the other slaves' names
// and under made-up ones, on every registration subject it can try. None of
// it gets a seat or locks a real slave out: the real slaves train every RBM,
// and each registration that reached the master is refused and counted
// as foreign in the master's rejections.
func TestRegistrationIsBoundToItsIdentity(t *testing.T) {
	t.Parallel()
	srv, ids := securedEmbedded(t, "", "local-1", "local-2", "local-3", "local-4")
	a, real := ids.Slaves[0], ids.Slaves[1:]
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	nc, err := Connect(srv.URL(), "pipedbn-master", ids.Master.Option())
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	hostile := mustDial(t, srv.URL(), a)
	admissions := make(chan string, 16)
	if _, err := hostile.Subscribe(ctlSubject(a.User), func(m *nats.Msg) { admissions <- m.Subject }); err != nil {
		t.Fatal(err)
	}
	hostile.Quiet(t)

	// The forgeries: every real slave's name and a new made-up one each
	// round, on the subject of registrations before they were bound to
	// their sender, on a's own and on another slave's.
	var (
		own       int                   // forgeries on a's own subject: those the master sees
		id        uint64                // of the next forgery's fragments
		flooding  = make(chan struct{}) // closed after the first rounds
		stop      = make(chan struct{})
		stopped   = make(chan struct{})
		stopOnce  sync.Once
		startOnce sync.Once
	)
	forge := func(subject, name string) {
		id++
		parts, err := messages.EncodeParts(&messages.Register{Name: name, Host: "attacker-host", CPUs: 64, PID: 666, Protocol: messages.Version, Process: 666}, 1<<20, id)
		if err != nil {
			t.Error(err)
			return
		}
		for _, p := range parts {
			hostile.Publish(subject, p)
		}
	}
	attack := func() {
		defer close(stopped)
		for round := 1; ; round++ {
			names := []string{fmt.Sprintf("ghost-%d", round)}
			for _, c := range real {
				names = append(names, c.User)
			}
			for _, name := range names {
				forge("pipedbn.register", name)
				forge(registerSubject(a.User), name)
				own++
			}
			forge(registerSubject(real[0].User), real[0].User)
			hostile.Flush()
			if round == 3 {
				close(flooding)
			}
			select {
			case <-stop:
				return
			case <-time.After(50 * time.Millisecond):
			}
		}
	}
	// halt ends the attack, or keeps it from starting.
	halt := func() {
		stopOnce.Do(func() {
			close(stop)
			startOnce.Do(func() { close(stopped) })
			<-stopped
		})
	}

	var (
		mu     sync.Mutex
		joined []string
	)
	cfgs := stageConfigs([]int{9, 6, 4, 3}, 3, 4, 1)
	m := NewMaster(nc, testLogger(t))
	ran := make(chan error, 1)
	var got []protocol.Trained
	go func() {
		var err error
		got, err = m.Run(ctx, driver.Plan{
			MasterConfig: protocol.MasterConfig{
				Run:     protocol.Run{ID: "impostor"},
				Stages:  cfgs,
				Data:    examples(3, 64, 9),
				N:       64,
				Credits: 2,
				Timing:  protocol.Timing{JoinTimeout: 20 * time.Second},
				Observer: protocol.Observer{
					Joined: func(name, _ string, _ int) { mu.Lock(); joined = append(joined, name); mu.Unlock() },
					// Stopped while the run has most of its windows to go, so that
					// everything forged reaches the master before it ends.
					Hooks: pipeline.Hooks{Window: func(s pipeline.Stats) {
						if s.Index == len(cfgs) && s.Batches >= 4 {
							halt()
						}
					}},
				},
			},
			Listening: func() { startOnce.Do(func() { go attack() }) },
		})
		ran <- err
	}()
	select {
	case <-flooding:
	case err := <-ran:
		halt()
		t.Fatalf("the run ended before the real slaves came: %v", err)
	}
	var wg sync.WaitGroup
	for _, c := range real {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := RunSlave(ctx, SlaveOptions{URL: srv.URL(), Credentials: []Credential{c}, SlaveOptions: driver.SlaveOptions{Threads: 1, JoinTimeout: 20 * time.Second, StatusEvery: 50 * time.Millisecond, WindowDelay: 20 * time.Millisecond, Logger: testLogger(t)}}); err != nil {
				t.Errorf("slave %s: %v", c.User, err)
			}
		}()
	}
	err = <-ran
	halt()
	cancel()
	wg.Wait()
	if err != nil {
		t.Fatalf("run under attack: %v", err)
	}
	want := []string{real[0].User, real[1].User, real[2].User}
	for i, tr := range got {
		if !slices.Contains(want, tr.Slave) {
			t.Errorf("rbm %d trained by %s; want one of %v", i+1, tr.Slave, want)
		}
	}
	mu.Lock()
	slices.Sort(joined)
	if !slices.Equal(joined, want) {
		t.Errorf("joined %v; want %v alone", joined, want)
	}
	mu.Unlock()
	if r := m.Rejected(); r[messages.RejectForeign] != uint64(own) || r.Total() != uint64(own) {
		t.Errorf("master rejected %v; want foreign=%d, the registrations forged on %s's subject", r, own, a.User)
	}
	select {
	case s := <-admissions:
		t.Errorf("%s got an answer on %s; want none", a.User, s)
	default:
	}
}
