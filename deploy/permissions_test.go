package deploy

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"golang.org/x/crypto/bcrypt"

	"github.com/pipedbn/pipedbn/internal/natsprobe"
	"github.com/pipedbn/pipedbn/pipeline"
	"github.com/pipedbn/pipedbn/pipeline/driver"
	"github.com/pipedbn/pipedbn/pipeline/natsnet"
	"github.com/pipedbn/pipedbn/pipeline/protocol"
	"github.com/pipedbn/pipedbn/rbm"
)

// secured is a nats-server started from nats/nats.conf, the file the nats
// image runs, with freshly generated users: only the ports and the
// JetStream store differ.
type secured struct {
	url string
	sec *Secrets
	dir string
}

func startSecured(t *testing.T, slaves int) *secured {
	t.Helper()
	dir := t.TempDir()
	sec, err := Generate(dir, Options{Slaves: slaves, Cost: bcrypt.MinCost})
	if err != nil {
		t.Fatal(err)
	}
	conf, err := os.ReadFile(filepath.Join("nats", "nats.conf"))
	if err != nil {
		t.Fatal(err)
	}
	// In the container the users file is mounted as users.conf beside
	// nats.conf, the name nats.conf includes.
	if err := os.WriteFile(filepath.Join(dir, "nats.conf"), conf, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(filepath.Join(dir, UsersFile), filepath.Join(dir, "users.conf")); err != nil {
		t.Fatal(err)
	}
	opts, err := server.ProcessConfigFile(filepath.Join(dir, "nats.conf"))
	if err != nil {
		t.Fatalf("nats/nats.conf with generated users: %v", err)
	}
	if !opts.JetStream {
		t.Error("nats/nats.conf: JetStream is not enabled")
	}
	opts.Host, opts.Port = "127.0.0.1", server.RANDOM_PORT
	opts.HTTPHost, opts.HTTPPort = "", 0
	opts.StoreDir = t.TempDir()
	opts.NoLog, opts.NoSigs = true, true
	srv, err := server.NewServer(opts)
	if err != nil {
		t.Fatal(err)
	}
	go srv.Start()
	if !srv.ReadyForConnections(10 * time.Second) {
		t.Fatal("nats-server not ready after 10s")
	}
	t.Cleanup(func() {
		srv.Shutdown()
		srv.WaitForShutdown()
	})
	return &secured{url: srv.ClientURL(), sec: sec, dir: dir}
}

func (s *secured) slave(k int) natsnet.Credential { return s.sec.Slaves[k-1] }

// client is a connection whose asynchronous errors (refused publishes and
// subscriptions) are collected.
func (s *secured) connect(t *testing.T, c natsnet.Credential) *natsprobe.Client {
	t.Helper()
	cl, err := s.dial(c)
	if err != nil {
		t.Fatalf("connect as %s: %v", c.User, err)
	}
	t.Cleanup(cl.Close)
	return cl
}

func (s *secured) dial(c natsnet.Credential) (*natsprobe.Client, error) {
	return natsprobe.Dial(s.url, nats.UserInfo(c.User, c.Password))
}

func TestWrongCredentialsRefused(t *testing.T) {
	s := startSecured(t, 2)
	for _, tc := range []struct {
		name string
		cred natsnet.Credential
	}{
		{"master wrong password", natsnet.Credential{User: MasterUser, Password: s.slave(1).Password}},
		{"slave wrong password", natsnet.Credential{User: "slave-1", Password: "not-the-password"}},
		{"slave another's password", natsnet.Credential{User: "slave-1", Password: s.slave(2).Password}},
		{"unknown user", natsnet.Credential{User: "slave-9", Password: s.slave(1).Password}},
		{"empty password", natsnet.Credential{User: "slave-1", Password: ""}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cl, err := s.dial(tc.cred)
			if err == nil {
				cl.Close()
				t.Fatalf("connect as %s: accepted; want refused", tc.cred.User)
			}
			if !errors.Is(err, nats.ErrAuthorization) {
				t.Errorf("connect as %s: %v; want %v", tc.cred.User, err, nats.ErrAuthorization)
			}
		})
	}
	t.Run("no credentials", func(t *testing.T) {
		nc, err := nats.Connect(s.url, nats.MaxReconnects(0))
		if err == nil {
			nc.Close()
			t.Fatal("connect without credentials: accepted; want refused")
		}
		if !errors.Is(err, nats.ErrAuthorization) {
			t.Errorf("connect without credentials: %v; want %v", err, nats.ErrAuthorization)
		}
	})
	t.Run("serving slave gives up", func(t *testing.T) {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		bad := []natsnet.Credential{{User: "slave-1", Password: "wrong"}, {User: "slave-2", Password: "wrong"}}
		err := natsnet.ServeSlave(ctx, natsnet.SlaveOptions{URL: s.url, Credentials: bad})
		if !errors.Is(err, nats.ErrAuthorization) || ctx.Err() != nil {
			t.Errorf("ServeSlave with wrong passwords: %v; want %v at once", err, nats.ErrAuthorization)
		}
	})
	t.Run("right credentials", func(t *testing.T) {
		s.connect(t, s.sec.Master).Quiet(t)
		s.connect(t, s.slave(2)).Quiet(t)
	})
}

func TestSlaveIdentityHeldOnce(t *testing.T) {
	s := startSecured(t, 2)
	first := s.connect(t, s.slave(1))
	if cl, err := s.dial(s.slave(1)); err == nil {
		cl.Close()
		t.Fatal("second connection as slave-1: accepted; want refused")
	} else if !errors.Is(err, nats.ErrMaxAccountConnectionsExceeded) {
		t.Fatalf("second connection as slave-1: %v; want %v", err, nats.ErrMaxAccountConnectionsExceeded)
	}
	s.connect(t, s.slave(2)) // another identity is free
	first.Close()
	checkFor(t, 5*time.Second, func() error {
		cl, err := s.dial(s.slave(1))
		if err == nil {
			cl.Close()
		}
		return err
	})
}

func TestPublishRefused(t *testing.T) {
	s := startSecured(t, 3)
	master := s.connect(t, s.sec.Master)
	slave1 := s.connect(t, s.slave(1))
	slave2 := s.connect(t, s.slave(2))
	slave3 := s.connect(t, s.slave(3))

	// Listeners that would receive the forged messages if the server let
	// them through.
	got := make(chan string, 64)
	listen := func(c *natsprobe.Client, subject string) {
		if _, err := c.Subscribe(subject, func(m *nats.Msg) { got <- m.Subject }); err != nil {
			t.Fatal(err)
		}
		c.Quiet(t)
	}
	listen(slave3, "pipedbn.data.*.*.slave-3")
	listen(slave3, "pipedbn.credit.*.*.slave-3")
	listen(slave2, "pipedbn.ctl.slave-2")
	listen(master, "pipedbn.report.*.*")
	listen(master, "pipedbn.register.*")

	for _, tc := range []struct {
		who     *natsprobe.Client
		subject string
	}{
		{slave1, "pipedbn.data.run-1.slave-2.slave-3"},   // another slave's middle results
		{slave1, "pipedbn.credit.run-1.slave-2.slave-3"}, // another slave's credit
		{slave1, "pipedbn.report.run-1.slave-2"},         // another slave's report
		{slave1, "pipedbn.data.run-1.master.slave-3"},    // the master's data
		{slave1, "pipedbn.ctl.slave-2"},                  // control: the master's alone
		{slave1, "pipedbn.ctl.slave-1"},
		{slave1, "pipedbn.register.slave-2"}, // a registration in another slave's name
		{slave1, "pipedbn.register"},
		{slave1, "_INBOX.forged"},
		{slave1, "$JS.API.INFO"},
		{slave1, "$O.pipedbn-run-1.C.forged"}, // the master's checkpoints
		{master, "pipedbn.data.run-1.slave-1.slave-3"},
		{master, "pipedbn.report.run-1.slave-1"},
		{master, "pipedbn.credit.run-1.slave-1.slave-3"},
		{master, "pipedbn.register.slave-1"},
		{master, "_INBOX.forged"},
	} {
		if err := tc.who.Publish(tc.subject, []byte("forged")); err != nil {
			t.Fatal(err)
		}
		tc.who.Refused(t, "publish by "+tc.who.Opts.User, tc.subject)
	}
	for _, c := range []*natsprobe.Client{slave3, slave2, master} {
		c.Flush()
	}
	select {
	case subj := <-got:
		t.Errorf("a forged message on %s was delivered", subj)
	case <-time.After(200 * time.Millisecond):
	}
}

func TestSubscribeRefused(t *testing.T) {
	s := startSecured(t, 2)
	master := s.connect(t, s.sec.Master)
	slave1 := s.connect(t, s.slave(1))
	for _, tc := range []struct {
		who     *natsprobe.Client
		subject string
	}{
		{slave1, "pipedbn.register.*"}, // a slave must not answer registrations
		{slave1, "pipedbn.register.slave-1"},
		{slave1, "pipedbn.report.*.*"},
		{slave1, "pipedbn.ctl.slave-2"},
		{slave1, "pipedbn.ctl.*"},
		{slave1, ">"},
		{slave1, "pipedbn.data.*.*.slave-2"}, // windows for another slave
		{slave1, "pipedbn.data.*.*.*"},
		{slave1, "pipedbn.credit.*.*.slave-2"},
		{master, "pipedbn.ctl.*"},
		{master, "pipedbn.data.*.*.*"},
		{master, "pipedbn.credit.*.*.slave-1"},
		{master, ">"},
	} {
		if _, err := tc.who.SubscribeSync(tc.subject); err != nil {
			t.Fatal(err)
		}
		tc.who.Refused(t, "subscription by "+tc.who.Opts.User, tc.subject)
	}
}

// TestAllowedRoutes checks every route of the protocol across the accounts:
// what each side publishes reaches the one that needs it, and only it.
func TestAllowedRoutes(t *testing.T) {
	s := startSecured(t, 3)
	master := s.connect(t, s.sec.Master)
	slaves := []*natsprobe.Client{nil, s.connect(t, s.slave(1)), s.connect(t, s.slave(2)), s.connect(t, s.slave(3))}

	sub := func(c *natsprobe.Client, subject string) *nats.Subscription {
		sb, err := c.SubscribeSync(subject)
		if err != nil {
			t.Fatal(err)
		}
		c.Quiet(t)
		return sb
	}
	expect := func(sb *nats.Subscription, who, subject string, n int) {
		t.Helper()
		for range n {
			m, err := sb.NextMsg(2 * time.Second)
			if err != nil {
				t.Errorf("%s: waiting for a message on %s: %v", who, subject, err)
				return
			}
			if m.Subject != subject {
				t.Errorf("%s: got a message on %s; want one on %s", who, m.Subject, subject)
			}
		}
		if m, err := sb.NextMsg(100 * time.Millisecond); err == nil {
			t.Errorf("%s: unexpected message on %s", who, m.Subject)
		}
	}
	pub := func(c *natsprobe.Client, subject string) {
		if err := c.Publish(subject, []byte("x")); err != nil {
			t.Fatal(err)
		}
		c.Quiet(t)
	}

	// Control reaches the addressed slave alone.
	ctl2 := sub(slaves[2], "pipedbn.ctl.slave-2")
	pub(master, "pipedbn.ctl.slave-2")
	pub(master, "pipedbn.ctl.slave-3")
	expect(ctl2, "slave-2", "pipedbn.ctl.slave-2", 1)

	// Data and credits reach the party they are addressed to, which may be
	// any other (the next or the previous stage, or a stage replica: the
	// assignment is made at run time), and it alone.
	data := []*nats.Subscription{nil, sub(slaves[1], "pipedbn.data.*.*.slave-1"), sub(slaves[2], "pipedbn.data.*.*.slave-2"), sub(slaves[3], "pipedbn.data.*.*.slave-3")}
	for k := 1; k <= 3; k++ {
		pub(master, fmt.Sprintf("pipedbn.data.r.master.slave-%d", k))
	}
	for k := 1; k <= 3; k++ {
		expect(data[k], fmt.Sprintf("slave-%d", k), fmt.Sprintf("pipedbn.data.r.master.slave-%d", k), 1)
	}
	pub(slaves[1], "pipedbn.data.r.slave-1.slave-2")
	pub(slaves[1], "pipedbn.data.r.slave-1.slave-3")
	pub(slaves[1], "pipedbn.data.r.slave-1.slave-1")
	expect(data[2], "slave-2", "pipedbn.data.r.slave-1.slave-2", 1)
	expect(data[3], "slave-3", "pipedbn.data.r.slave-1.slave-3", 1)
	expect(data[1], "slave-1", "pipedbn.data.r.slave-1.slave-1", 1) // its own, in its own account

	credits := sub(master, "pipedbn.credit.*.*.master")
	credits3 := sub(slaves[3], "pipedbn.credit.*.*.slave-3")
	pub(slaves[2], "pipedbn.credit.r.slave-2.master")
	pub(slaves[2], "pipedbn.credit.r.slave-2.slave-3")
	pub(slaves[2], "pipedbn.credit.r.slave-2.slave-1")
	expect(credits, "master", "pipedbn.credit.r.slave-2.master", 1)
	expect(credits3, "slave-3", "pipedbn.credit.r.slave-2.slave-3", 1)

	// Reports reach the master.
	reports := sub(master, "pipedbn.report.*.*")
	pub(slaves[3], "pipedbn.report.r.slave-3")
	expect(reports, "master", "pipedbn.report.r.slave-3", 1)

	// Registration is a request the master answers, on a subject that
	// names its sender.
	reg := sub(master, "pipedbn.register.*")
	go func() {
		if m, err := reg.NextMsg(2 * time.Second); err == nil && m.Subject == "pipedbn.register.slave-1" {
			m.Respond([]byte("welcome"))
		}
	}()
	reply, err := slaves[1].Request("pipedbn.register.slave-1", []byte("hello"), 2*time.Second)
	if err != nil || string(reply.Data) != "welcome" {
		t.Errorf("slave-1 registration: %v, %v; want the master's reply", reply, err)
	}
	master.Quiet(t)
}

// TestPipelinedRunOnSecuredServer runs the real protocol, master and slaves
// of natsnet, on the secured server, twice, with slaves that claim their
// identities from the shared pool and serve one run after the other: the
// permissions are enough for the protocol, and nothing is refused.
func TestPipelinedRunOnSecuredServer(t *testing.T) {
	const slaves = 3
	s := startSecured(t, slaves)
	var logs syncBuffer
	log := hclog.New(&hclog.LoggerOptions{Output: &logs, Level: hclog.Info, Name: "test"})

	var masterErrs []error
	var mu sync.Mutex
	nc, err := natsnet.Connect(s.url, "pipedbn-master", nats.UserInfo(s.sec.Master.User, s.sec.Master.Password),
		nats.ErrorHandler(func(_ *nats.Conn, _ *nats.Subscription, err error) {
			mu.Lock()
			masterErrs = append(masterErrs, err)
			mu.Unlock()
		}))
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()

	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	serveErrs := make(chan error, slaves)
	for range slaves {
		wg.Add(1)
		go func() {
			defer wg.Done()
			serveErrs <- natsnet.ServeSlave(ctx, natsnet.SlaveOptions{URL: s.url, Credentials: s.sec.Slaves, SlaveOptions: driver.SlaveOptions{
				Threads: 1, JoinTimeout: 20 * time.Second, StatusEvery: 100 * time.Millisecond, Logger: log,
			}})
		}()
	}
	defer func() {
		cancel()
		wg.Wait()
	}()

	layers := []int{36, 24, 16, 8}
	const n, epochs, batch = 200, 2, 20
	x := make([]float32, n*layers[0])
	rng := rand.New(rand.NewPCG(1, 2))
	for i := range x {
		if rng.Float64() < 0.3 {
			x[i] = 1
		}
	}
	var stages []pipeline.StageConfig
	for i := 1; i < len(layers); i++ {
		stages = append(stages, pipeline.StageConfig{
			Index: i, Visible: layers[i-1], Hidden: layers[i], Units: rbm.Bernoulli,
			Epochs: epochs, BatchSize: batch, K: 2, CDK: 1, Middle: rbm.Probabilities,
			LearningRate: [2]float64{0.1, 0.05}, Momentum: [2]float64{0.5, 0.9}, Seed: uint64(i),
		})
	}
	for run := 1; run <= 2; run++ {
		rctx, rcancel := context.WithTimeout(ctx, time.Minute)
		runID := fmt.Sprintf("secured-%d", run)
		// The master keeps the checkpoints in JetStream, in its own account.
		store, err := natsnet.OpenJetStreamStore(rctx, nc, runID)
		if err != nil {
			t.Fatalf("run %d: %v", run, err)
		}
		res, err := natsnet.NewMaster(nc, log.Named("master")).Run(rctx, driver.Plan{
			MasterConfig: protocol.MasterConfig{
				Run:             protocol.Run{ID: runID},
				Stages:          stages,
				Data:            x,
				N:               n,
				ShuffleSeed:     3,
				Credits:         2,
				CheckpointEvery: 2,
				Timing:          protocol.Timing{JoinTimeout: 30 * time.Second},
			},
			Store: store,
		})
		rcancel()
		if err != nil {
			t.Fatalf("run %d: %v\nlogs:\n%s", run, err, logs.String())
		}
		stored, err := store.List(ctx)
		if err != nil || !slices.ContainsFunc(stored, func(n string) bool { return strings.HasPrefix(n, "rbm-") }) {
			t.Errorf("run %d: store holds %v, %v; want checkpoints", run, stored, err)
		}
		names := map[string]bool{}
		for i, r := range res {
			if r.Stats.Batches != epochs*n/batch {
				t.Errorf("run %d: rbm %d trained %d batches; want %d", run, i+1, r.Stats.Batches, epochs*n/batch)
			}
			names[r.Slave] = true
		}
		for k := 1; k <= slaves; k++ {
			if !names[SlaveUser(k)] {
				t.Errorf("run %d: slaves %v; want slave-1..slave-%d, the pool's identities", run, names, slaves)
				break
			}
		}
	}
	if err := nc.Flush(); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	if len(masterErrs) > 0 {
		t.Errorf("the server refused the master: %v", masterErrs)
	}
	mu.Unlock()
	if l := logs.String(); strings.Contains(l, "NATS error") {
		t.Errorf("the server refused a slave:\n%s", l)
	}

	cancel()
	wg.Wait()
	for range slaves {
		if err := <-serveErrs; !errors.Is(err, context.Canceled) {
			t.Errorf("ServeSlave: %v; want %v", err, context.Canceled)
		}
	}

	// While every identity is held, one more slave gets none.
	for k := 1; k <= slaves; k++ {
		checkFor(t, 5*time.Second, func() error {
			cl, err := s.dial(s.slave(k))
			if err == nil {
				t.Cleanup(cl.Close)
			}
			return err
		})
	}
	err = natsnet.RunSlave(context.Background(), natsnet.SlaveOptions{URL: s.url, Credentials: s.sec.Slaves, SlaveOptions: driver.SlaveOptions{JoinTimeout: time.Second}})
	if !errors.Is(err, natsnet.ErrIdentitiesInUse) {
		t.Errorf("a slave on a pool of %d held identities: %v; want %v", slaves, err, natsnet.ErrIdentitiesInUse)
	}
}

// TestMasterCredentialsFromEnvironment checks the master's way in: the
// file that natsnet.CredentialsEnv names.
func TestMasterCredentialsFromEnvironment(t *testing.T) {
	s := startSecured(t, 2)
	if nc, err := natsnet.Connect(s.url, "no-credentials"); err == nil {
		nc.Close()
		t.Fatal("Connect without credentials: accepted; want refused")
	} else if !errors.Is(err, nats.ErrAuthorization) {
		t.Fatalf("Connect without credentials: %v; want %v", err, nats.ErrAuthorization)
	}
	t.Setenv(natsnet.CredentialsEnv, filepath.Join(s.dir, MasterFile))
	nc, err := natsnet.Connect(s.url, "pipedbn-master")
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	if err := nc.Publish("pipedbn.ctl.slave-1", nil); err != nil {
		t.Fatal(err)
	}
	if err := nc.Flush(); err != nil {
		t.Fatal(err)
	}
	t.Setenv(natsnet.CredentialsEnv, filepath.Join(s.dir, SlavesFile))
	if _, err := natsnet.Connect(s.url, "pool"); err == nil || !strings.Contains(err.Error(), "exactly one") {
		t.Errorf("Connect with a pool file: %v; want an error asking for exactly one identity", err)
	}
}

// TestByHandConfig: nats/by-hand.conf, the server of "A cluster by hand",
// takes the users `make compose-secrets` writes to ../secrets, listens on
// loopback unless told otherwise, and refuses a client without credentials.
func TestByHandConfig(t *testing.T) {
	dir := t.TempDir()
	sec, err := Generate(filepath.Join(dir, "secrets"), Options{Slaves: 2, Cost: bcrypt.MinCost})
	if err != nil {
		t.Fatal(err)
	}
	conf, err := os.ReadFile(filepath.Join("nats", "by-hand.conf"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(filepath.Join(dir, "nats"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "nats", "by-hand.conf"), conf, 0o600); err != nil {
		t.Fatal(err)
	}
	opts, err := server.ProcessConfigFile(filepath.Join(dir, "nats", "by-hand.conf"))
	if err != nil {
		t.Fatalf("nats/by-hand.conf with generated users: %v", err)
	}
	if opts.Host != "127.0.0.1" || opts.Port != 4222 || !opts.JetStream || opts.MaxPayload != 8<<20 {
		t.Errorf("nats/by-hand.conf: listen %s:%d, jetstream %v, max_payload %d; want 127.0.0.1:4222, true, 8MB",
			opts.Host, opts.Port, opts.JetStream, opts.MaxPayload)
	}
	opts.Port = server.RANDOM_PORT
	opts.StoreDir = t.TempDir()
	opts.NoLog, opts.NoSigs = true, true
	srv, err := server.NewServer(opts)
	if err != nil {
		t.Fatal(err)
	}
	go srv.Start()
	if !srv.ReadyForConnections(10 * time.Second) {
		t.Fatal("nats-server not ready after 10s")
	}
	defer func() {
		srv.Shutdown()
		srv.WaitForShutdown()
	}()
	if nc, err := nats.Connect(srv.ClientURL(), nats.MaxReconnects(0)); err == nil {
		nc.Close()
		t.Error("connect without credentials: accepted; want refused")
	}
	s := &secured{url: srv.ClientURL(), sec: sec}
	s.connect(t, sec.Master).Quiet(t)
	s.connect(t, s.slave(2)).Quiet(t)
}

func TestGenerate(t *testing.T) {
	dir := t.TempDir()
	sec, err := Generate(dir, Options{Slaves: 4, Cost: bcrypt.MinCost})
	if err != nil {
		t.Fatal(err)
	}
	if len(sec.Slaves) != 4 || sec.Master.User != MasterUser {
		t.Fatalf("Generate: %d slaves, master %q; want 4, %q", len(sec.Slaves), sec.Master.User, MasterUser)
	}
	fi, err := os.Stat(dir)
	if err != nil || fi.Mode().Perm() != 0o700 {
		t.Errorf("secrets dir mode %v, %v; want 0700", fi.Mode().Perm(), err)
	}
	users, err := os.ReadFile(filepath.Join(dir, UsersFile))
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range append([]natsnet.Credential{sec.Master}, sec.Slaves...) {
		if bytes.Contains(users, []byte(c.Password)) {
			t.Errorf("%s holds %s's password in clear", UsersFile, c.User)
		}
	}
	for _, tc := range []struct {
		file string
		want []natsnet.Credential
	}{
		{MasterFile, []natsnet.Credential{sec.Master}},
		{SlavesFile, sec.Slaves},
		{SlaveFile(3), sec.Slaves[2:3]},
	} {
		fi, err := os.Stat(filepath.Join(dir, tc.file))
		if err != nil || fi.Mode().Perm() != 0o600 {
			t.Errorf("%s: mode %v, %v; want 0600", tc.file, fi.Mode().Perm(), err)
		}
		got, err := natsnet.ReadCredentials(filepath.Join(dir, tc.file))
		if err != nil {
			t.Fatal(err)
		}
		if len(got) != len(tc.want) {
			t.Fatalf("%s: %d identities; want %d", tc.file, len(got), len(tc.want))
		}
		for i := range got {
			if got[i] != tc.want[i] {
				t.Errorf("%s: identity %d is %s; want %s", tc.file, i, got[i].User, tc.want[i].User)
			}
		}
	}
	if _, err := Generate(dir, Options{Slaves: 2}); !errors.Is(err, ErrExist) {
		t.Errorf("Generate over existing secrets: %v; want %v", err, ErrExist)
	}
	if _, err := Generate(dir, Options{Slaves: 2, Force: true, Cost: bcrypt.MinCost}); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(dir, SlaveFile(3))); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("%s of the larger pool survived a smaller one: %v", SlaveFile(3), err)
	}
	for _, n := range []int{-1, MaxSlaves + 1} {
		if _, err := Generate(t.TempDir(), Options{Slaves: n}); err == nil {
			t.Errorf("Generate(Slaves: %d): no error", n)
		}
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
		time.Sleep(50 * time.Millisecond)
	}
}

// syncBuffer is a bytes.Buffer for several goroutines' logs.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.String()
}
