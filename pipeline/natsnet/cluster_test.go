package natsnet

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/pipedbn/pipedbn/internal/testbin"
	"github.com/pipedbn/pipedbn/pipeline"
	"github.com/pipedbn/pipedbn/pipeline/driver"
	"github.com/pipedbn/pipedbn/pipeline/protocol"
)

// natsCluster is a NATS cluster of nats-server processes (the version
// go.mod pins, built by testbin) on loopback: routes between all of them,
// JetStream on each with a store of its own, and the accounts of a set of
// Identities (ClusterConfig). Processes, so that a test can SIGKILL one as
// a host or container dies: no goodbye to the others.
type natsCluster struct {
	t     *testing.T
	nodes []*clusterNode
}

type clusterNode struct {
	name      string
	port      int
	cmd       *exec.Cmd
	log       bytes.Buffer
	done      chan struct{}
	stopped   bool
	stoppedMu sync.Mutex
}

// startCluster starts n nodes named n1..nN, with the accounts of ids
// (passwords in clear, in the test's temporary folder), and waits until
// every node accepts clients and the cluster's JetStream has a leader.
func startCluster(t *testing.T, ids *Identities, n int) *natsCluster {
	t.Helper()
	bin, err := testbin.Build("github.com/nats-io/nats-server/v2")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	users, err := ids.ClusterConfig(nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "users.conf"), users, 0o600); err != nil {
		t.Fatal(err)
	}
	c := &natsCluster{t: t}
	routePorts := make([]int, n)
	var routes []string
	for i := range n {
		routePorts[i] = freePort(t)
		routes = append(routes, fmt.Sprintf("nats-route://127.0.0.1:%d", routePorts[i]))
	}
	for i := range n {
		nd := &clusterNode{name: fmt.Sprintf("n%d", i+1), port: freePort(t), done: make(chan struct{})}
		conf := fmt.Sprintf(`server_name: %s
listen: 127.0.0.1:%d
max_payload: 8MB
max_pending: 512MB
jetstream { store_dir: %q }
cluster {
  name: pipedbn
  listen: 127.0.0.1:%d
  routes: [%s]
}
include users.conf
`, nd.name, nd.port, filepath.Join(dir, "js-"+nd.name), routePorts[i], strings.Join(routes, ", "))
		file := filepath.Join(dir, nd.name+".conf")
		if err := os.WriteFile(file, []byte(conf), 0o600); err != nil {
			t.Fatal(err)
		}
		nd.cmd = exec.Command(bin, "-c", file)
		nd.cmd.Stdout, nd.cmd.Stderr = &nd.log, &nd.log
		if err := nd.cmd.Start(); err != nil {
			t.Fatal(err)
		}
		go func() { nd.cmd.Wait(); close(nd.done) }()
		c.nodes = append(c.nodes, nd)
	}
	t.Cleanup(c.stop)
	for _, nd := range c.nodes {
		checkFor(t, 30*time.Second, func() error {
			conn, err := net.DialTimeout("tcp", fmt.Sprintf("127.0.0.1:%d", nd.port), time.Second)
			if err == nil {
				conn.Close()
			}
			return err
		})
	}
	return c
}

// urls is the comma-separated list of the nodes' client URLs.
func (c *natsCluster) urls() string {
	var us []string
	for _, nd := range c.nodes {
		us = append(us, fmt.Sprintf("nats://127.0.0.1:%d", nd.port))
	}
	return strings.Join(us, ",")
}

// url is the client URL of the node called name.
func (c *natsCluster) url(name string) string {
	for _, nd := range c.nodes {
		if nd.name == name {
			return fmt.Sprintf("nats://127.0.0.1:%d", nd.port)
		}
	}
	c.t.Fatalf("no node %s", name)
	return ""
}

// kill SIGKILLs the node called name.
func (c *natsCluster) kill(name string) {
	for _, nd := range c.nodes {
		if nd.name == name {
			nd.stoppedMu.Lock()
			nd.stopped = true
			nd.stoppedMu.Unlock()
			nd.cmd.Process.Signal(syscall.SIGKILL)
			<-nd.done
			return
		}
	}
	c.t.Errorf("no node %s", name)
}

func (c *natsCluster) stop() {
	for _, nd := range c.nodes {
		nd.cmd.Process.Signal(syscall.SIGTERM)
	}
	for _, nd := range c.nodes {
		select {
		case <-nd.done:
		case <-time.After(10 * time.Second):
			nd.cmd.Process.Kill()
			<-nd.done
		}
		if c.t.Failed() || os.Getenv("PIPEDBN_TEST_LOGS") != "" {
			c.t.Logf("log of NATS node %s:\n%s", nd.name, lastLines(nd.log.String(), 40))
		}
	}
}

func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// TestClusterNodeLossLosesNothing runs the chaos setup on a cluster of three
// NATS servers, secured, the checkpoints in a bucket replicated on all three,
// the master and the slaves given every server's URL, and SIGKILLs a server
// in the middle of the run (issue 16): the one the master is connected to,
// or another one. The master and the slaves of that server reconnect to the
// others, the windows in flight are asked for and sent again, the
// checkpoints stay readable and writable on the two servers left, and the
// run completes with every mini-batch trained exactly once, the
// uninterrupted run's weights bit for bit, and no slave declared lost.
func TestClusterNodeLossLosesNothing(t *testing.T) {
	t.Run("master's server", func(t *testing.T) { clusterNodeLoss(t, true) })
	t.Run("another server", func(t *testing.T) { clusterNodeLoss(t, false) })
}

// clusterNodeLoss is a run of TestClusterNodeLossLosesNothing that kills
// the master's server, or another one.
func clusterNodeLoss(t *testing.T, mastersServer bool) {
	c := newChaosSetup(t)
	var users []string
	for i := range c.cfgs {
		users = append(users, SlaveUser(i+1))
	}
	ids, err := NewIdentities(protocol.MasterName, users)
	if err != nil {
		t.Fatal(err)
	}
	cl := startCluster(t, ids, 3)
	nc, err := Connect(cl.urls(), "master", ids.Master.Option())
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	start := time.Now()
	store, err := OpenJetStreamStore(context.Background(), nc, "cluster")
	if err != nil {
		t.Fatal(err)
	}
	if store.Replicas() != 3 {
		t.Errorf("the checkpoint bucket has %d replicas on a cluster of 3; want 3", store.Replicas())
	}
	first := nc.ConnectedServerName()
	victim := first
	if !mastersServer {
		for _, nd := range cl.nodes {
			if nd.name != first {
				victim = nd.name
				break
			}
		}
	}

	pool := filepath.Join(t.TempDir(), "slaves.creds")
	if err := WriteCredentials(pool, "", ids.Slaves); err != nil {
		t.Fatal(err)
	}
	// Slave 1 is given the server to be killed alone: it dies with it, and
	// reconnects to a server it learnt of from the cluster (nats.go keeps
	// the URLs the servers announce). The others get every URL.
	ps := newProcs(t, cl.url(victim))
	defer ps.stop()
	for i, u := range users {
		if i == 1 {
			ps.url = cl.urls()
		}
		if err := ps.start(u, "--credentials", pool); err != nil {
			t.Fatal(err)
		}
	}
	t.Logf("JetStream bucket ready after %.1f s", time.Since(start).Seconds())
	start = time.Now()
	var (
		once   sync.Once
		killed = make(chan string, 1)
		mu     sync.Mutex
		recs   []protocol.Recovery
		lost   []string
	)
	got, err := NewMaster(nc, testLogger(t)).Run(context.Background(), driver.Plan{
		MasterConfig: protocol.MasterConfig{
			Run:             protocol.Run{ID: "cluster"},
			Stages:          c.cfgs,
			Data:            c.x,
			N:               c.n,
			ShuffleSeed:     77,
			Credits:         c.credits,
			CheckpointEvery: c.every,
			Timing:          protocol.Timing{JoinTimeout: 30 * time.Second},
			Observer: protocol.Observer{
				Hooks: pipeline.Hooks{Window: func(s pipeline.Stats) {
					if s.Index == 2 && s.Batches >= 20 {
						once.Do(func() {
							go func() { cl.kill(victim); killed <- victim }()
						})
					}
				}},
				Lost:      func(rbm int, slave string, silent time.Duration) { mu.Lock(); lost = append(lost, slave); mu.Unlock() },
				Recovered: func(r protocol.Recovery) { mu.Lock(); recs = append(recs, r); mu.Unlock() },
			},
		},
		Store: store,
	})
	if err != nil {
		ps.dumpLogs()
		t.Fatal(err)
	}
	t.Logf("run: %.1f s", time.Since(start).Seconds())
	var name string
	select {
	case name = <-killed:
	default:
		t.Fatal("the run ended before a server was killed")
	}
	c.check(t, got)
	now := nc.ConnectedServerName()
	t.Logf("master on %s at the start, %s killed, on %s at the end", first, name, now)
	if now == name || !nc.IsConnected() {
		t.Errorf("the master is on %s (connected: %v) after %s was killed; want another server", now, nc.IsConnected(), name)
	}
	if !mastersServer && now != first {
		t.Errorf("the master moved from %s to %s when %s was killed; want it to stay", first, now, name)
	}
	mu.Lock()
	if len(lost) > 0 || len(recs) > 0 {
		t.Errorf("slaves declared lost %v, recoveries %+v; want none: a slave of the killed server reconnects to another within LostAfter", lost, recs)
	}
	mu.Unlock()
	// The checkpoints are still there, on the two servers left (once they
	// have elected a new leader of the bucket's stream, if it was the
	// killed server).
	start = time.Now()
	checkFor(t, 30*time.Second, func() error {
		names, err := store.List(context.Background())
		if err == nil && len(names) == 0 {
			err = fmt.Errorf("no checkpoint")
		}
		if err != nil {
			return fmt.Errorf("store after the run: %w; want the run's checkpoints", err)
		}
		cp, err := store.Get(context.Background(), names[len(names)-1])
		if err != nil || len(cp) == 0 {
			return fmt.Errorf("store after the run: get %s: %d bytes, %v", names[len(names)-1], len(cp), err)
		}
		return nil
	})
	t.Logf("checkpoints listed and read %.1f s after the run", time.Since(start).Seconds())
	ps.stop() // the slaves' logs are complete once they exited
	ps.mu.Lock()
	log := ps.logs[users[0]].String()
	ps.mu.Unlock()
	if !strings.Contains(log, "NATS reconnected") {
		t.Errorf("slave %s, on the killed server, did not log its reconnection:\n%s", users[0], log)
	}
	if os.Getenv("PIPEDBN_TEST_LOGS") != "" {
		ps.dumpLogs()
	}
}
