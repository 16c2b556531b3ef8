package deploy

import (
	"bytes"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"golang.org/x/crypto/bcrypt"

	"github.com/pipedbn/pipedbn/pipeline/natsnet"
)

// The cluster's users file holds the same identities and hashes as the
// single server's, without the one-connection limit; a secrets folder made
// before it existed gets it from its identities, and one made by an older
// build gets this build's permissions, its passwords kept.
func TestGenerateClusterUsers(t *testing.T) {
	dir := t.TempDir()
	sec, err := Generate(dir, Options{Slaves: 3, Cost: bcrypt.MinCost})
	if err != nil {
		t.Fatal(err)
	}
	one, err := os.ReadFile(filepath.Join(dir, UsersFile))
	if err != nil {
		t.Fatal(err)
	}
	cluster, err := os.ReadFile(filepath.Join(dir, ClusterUsersFile))
	if err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(string(one), "max_connections: 1"); n != 3 {
		t.Errorf("%s limits %d slave accounts to one connection; want 3", UsersFile, n)
	}
	if strings.Contains(string(cluster), "max_connections") {
		t.Errorf("%s limits connections; a cluster cannot keep the count when a server dies", ClusterUsersFile)
	}
	for _, c := range append([]natsnet.Credential{sec.Master}, sec.Slaves...) {
		if bytes.Contains(cluster, []byte(c.Password)) {
			t.Errorf("%s holds %s's password in clear", ClusterUsersFile, c.User)
		}
	}
	if fi, err := os.Stat(filepath.Join(dir, ClusterUsersFile)); err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("%s: %v, %v; want mode 0600", ClusterUsersFile, fi, err)
	}

	// An older folder: no cluster users yet, and the server's users file
	// of an older build, whose permissions have since changed.
	if err := os.Remove(filepath.Join(dir, ClusterUsersFile)); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, UsersFile), []byte("# an older build's permissions\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := Generate(dir, Options{Slaves: 3, Cost: bcrypt.MinCost}); !errors.Is(err, ErrExist) {
		t.Fatalf("Generate over existing secrets: %v; want %v", err, ErrExist)
	}
	again, err := os.ReadFile(filepath.Join(dir, ClusterUsersFile))
	if err != nil {
		t.Fatalf("Generate over an older folder: %v; want its cluster users made", err)
	}
	refreshed, err := os.ReadFile(filepath.Join(dir, UsersFile))
	if err != nil {
		t.Fatal(err)
	}
	if want := "pipedbn.register." + sec.Slaves[0].User; !strings.Contains(string(refreshed), want) {
		t.Errorf("Generate over an older folder left %s without %q; want this build's permissions", UsersFile, want)
	}
	for _, c := range append([]natsnet.Credential{sec.Master}, sec.Slaves...) {
		if bytes.Contains(refreshed, []byte(c.Password)) {
			t.Errorf("%s holds %s's password in clear", UsersFile, c.User)
		}
	}
	if _, err := GenerateTLS(dir, TLSOptions{}); err != nil {
		t.Fatal(err)
	}
	// The same identities: a server with these users admits the master
	// and every slave of the folder's credentials.
	url := startTLSNode(t, dir, again, nil)
	for _, c := range append([]natsnet.Credential{sec.Master}, sec.Slaves...) {
		nc, err := nats.Connect(url, c.Option(), nats.RootCAs(filepath.Join(dir, CAFile)), nats.MaxReconnects(0))
		if err != nil {
			t.Errorf("connect as %s with the older folder's cluster users: %v", c.User, err)
			continue
		}
		nc.Close()
	}
}

// GenerateTLS makes a CA and a server certificate valid for the stack's
// names and the extra hosts, for server and client authentication, the key
// readable by its owner only.
func TestGenerateTLS(t *testing.T) {
	dir := t.TempDir()
	hosts, err := GenerateTLS(dir, TLSOptions{Hosts: []string{"nats.example.org", "10.0.0.5", "nats1"}})
	if err != nil {
		t.Fatal(err)
	}
	if want := len(TLSHosts) + 2; len(hosts) != want {
		t.Errorf("GenerateTLS: hosts %v; want the %d defaults and 2 more", hosts, want)
	}
	roots := x509.NewCertPool()
	caPEM, err := os.ReadFile(filepath.Join(dir, CAFile))
	if err != nil || !roots.AppendCertsFromPEM(caPEM) {
		t.Fatalf("%s: %v; want a PEM certificate", CAFile, err)
	}
	certPEM, err := os.ReadFile(filepath.Join(dir, ServerCertFile))
	if err != nil {
		t.Fatal(err)
	}
	block, _ := pem.Decode(certPEM)
	if block == nil {
		t.Fatalf("%s: no PEM block", ServerCertFile)
	}
	cert, err := x509.ParseCertificate(block.Bytes)
	if err != nil {
		t.Fatal(err)
	}
	for _, h := range []string{"nats1", "nats2", "nats3", "nats", "localhost", "127.0.0.1", "nats.example.org", "10.0.0.5"} {
		for _, usage := range []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth} {
			if _, err := cert.Verify(x509.VerifyOptions{DNSName: h, Roots: roots, KeyUsages: []x509.ExtKeyUsage{usage}}); err != nil {
				t.Errorf("the certificate for %s (usage %v): %v", h, usage, err)
			}
		}
	}
	if _, err := cert.Verify(x509.VerifyOptions{DNSName: "nats4", Roots: roots}); err == nil {
		t.Errorf("the certificate is valid for nats4; want only the names asked for")
	}
	if _, err := cert.Verify(x509.VerifyOptions{DNSName: "nats1", Roots: roots, CurrentTime: time.Now().Add(3 * 365 * 24 * time.Hour)}); err == nil {
		t.Errorf("the certificate is valid in 3 years; want 2")
	}
	fi, err := os.Stat(filepath.Join(dir, ServerKeyFile))
	if err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("%s: %v, %v; want mode 0600", ServerKeyFile, fi, err)
	}
	if _, err := GenerateTLS(dir, TLSOptions{}); !errors.Is(err, ErrExist) {
		t.Errorf("GenerateTLS over existing files: %v; want %v", err, ErrExist)
	}
	if _, err := GenerateTLS(dir, TLSOptions{Force: true, Hosts: []string{""}}); err == nil {
		t.Errorf("GenerateTLS with an empty host: no error")
	}
}

// startTLSNode starts a nats-server from nats/cluster.conf, the stack's
// node config, with the secrets of dir (users: the given accounts config)
// where the stack mounts them, its store in a temporary folder, free ports,
// and routes to the given URLs instead of nats1..nats3. It returns the
// client URL, tls://localhost:PORT, and shuts the server down at the end.
func startTLSNode(t *testing.T, dir string, users []byte, routes []string) string {
	t.Helper()
	srv := newTLSNode(t, "n1", dir, users, routes, -1)
	return fmt.Sprintf("tls://localhost:%d", srv.Addr().(*net.TCPAddr).Port)
}

// newTLSNode is startTLSNode's server, named name (the stack's --name),
// its route port clusterPort (-1: a free one).
func newTLSNode(t *testing.T, name, dir string, users []byte, routes []string, clusterPort int) *server.Server {
	t.Helper()
	conf, err := os.ReadFile(filepath.Join("nats", "cluster.conf"))
	if err != nil {
		t.Fatal(err)
	}
	node := t.TempDir()
	// The stack's mount points, moved to this test's folders.
	conf = bytes.ReplaceAll(conf, []byte("/run/secrets/nats-server-cert"), []byte(filepath.Join(dir, ServerCertFile)))
	conf = bytes.ReplaceAll(conf, []byte("/run/secrets/nats-server-key"), []byte(filepath.Join(dir, ServerKeyFile)))
	conf = bytes.ReplaceAll(conf, []byte("/run/secrets/nats-ca"), []byte(filepath.Join(dir, CAFile)))
	conf = bytes.ReplaceAll(conf, []byte("store_dir: /data"), []byte(fmt.Sprintf("store_dir: %q", filepath.Join(node, "js"))))
	if bytes.Contains(conf, []byte("/run/secrets")) {
		t.Fatalf("nats/cluster.conf names a secret this test does not know:\n%s", conf)
	}
	if err := os.WriteFile(filepath.Join(node, "cluster.conf"), conf, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(node, "users.conf"), users, 0o600); err != nil {
		t.Fatal(err)
	}
	opts, err := server.ProcessConfigFile(filepath.Join(node, "cluster.conf"))
	if err != nil {
		t.Fatalf("nats/cluster.conf: %v", err)
	}
	if opts.TLSConfig == nil || opts.Cluster.TLSConfig == nil || !opts.Cluster.NoAdvertise || !opts.JetStream || opts.Cluster.Name != "pipedbn" {
		t.Fatalf("nats/cluster.conf: TLS for clients %v, for routes %v, no_advertise %v, JetStream %v, cluster %q; want TLS both, no_advertise, JetStream, pipedbn",
			opts.TLSConfig != nil, opts.Cluster.TLSConfig != nil, opts.Cluster.NoAdvertise, opts.JetStream, opts.Cluster.Name)
	}
	if len(opts.Routes) != 3 {
		t.Errorf("nats/cluster.conf: %d routes; want nats1, nats2, nats3", len(opts.Routes))
	}
	opts.ServerName = name
	opts.Host, opts.Port, opts.HTTPPort = "127.0.0.1", -1, 0
	opts.Cluster.Host, opts.Cluster.Port = "127.0.0.1", clusterPort
	opts.Routes = server.RoutesFromStr(strings.Join(routes, ","))
	opts.NoLog, opts.NoSigs = true, true
	srv, err := server.NewServer(opts)
	if err != nil {
		t.Fatal(err)
	}
	go srv.Start()
	if !srv.ReadyForConnections(10 * time.Second) {
		t.Fatal("nats-server from nats/cluster.conf: not ready after 10s")
	}
	t.Cleanup(func() { srv.Shutdown(); srv.WaitForShutdown() })
	return srv
}

// Two nodes of nats/cluster.conf route to each other over TLS, each
// verifying the other's certificate; a client that trusts the CA reaches
// the other node's subscribers through the route, one that does not is
// refused, and so is a client that does not speak TLS.
func TestClusterConfTLS(t *testing.T) {
	dir := t.TempDir()
	sec, err := Generate(dir, Options{Slaves: 2, Cost: bcrypt.MinCost})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := GenerateTLS(dir, TLSOptions{}); err != nil {
		t.Fatal(err)
	}
	users, err := os.ReadFile(filepath.Join(dir, ClusterUsersFile))
	if err != nil {
		t.Fatal(err)
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := l.Addr().(*net.TCPAddr).Port
	l.Close()
	n1 := newTLSNode(t, "n1", dir, users, nil, port)
	n2 := newTLSNode(t, "n2", dir, users, []string{fmt.Sprintf("nats-route://127.0.0.1:%d", port)}, -1)
	checkFor(t, 20*time.Second, func() error {
		if n1.NumRoutes() == 0 || n2.NumRoutes() == 0 {
			return fmt.Errorf("routes: n1 %d, n2 %d; want the two nodes routed (TLS, verified)", n1.NumRoutes(), n2.NumRoutes())
		}
		return nil
	})
	ca := nats.RootCAs(filepath.Join(dir, CAFile))
	url := func(s *server.Server) string { return fmt.Sprintf("tls://localhost:%d", s.Addr().(*net.TCPAddr).Port) }

	slave, err := nats.Connect(url(n2), sec.Slaves[0].Option(), ca, nats.MaxReconnects(0))
	if err != nil {
		t.Fatal(err)
	}
	defer slave.Close()
	sub, err := slave.SubscribeSync("pipedbn.ctl." + sec.Slaves[0].User)
	if err != nil {
		t.Fatal(err)
	}
	slave.Flush()
	master, err := nats.Connect(url(n1), sec.Master.Option(), ca, nats.MaxReconnects(0))
	if err != nil {
		t.Fatal(err)
	}
	defer master.Close()
	if !master.TLSRequired() {
		t.Errorf("the node does not require TLS of its clients")
	}
	checkFor(t, 10*time.Second, func() error {
		if err := master.Publish("pipedbn.ctl."+sec.Slaves[0].User, []byte("stop")); err != nil {
			return err
		}
		if _, err := sub.NextMsg(200 * time.Millisecond); err != nil {
			return fmt.Errorf("a control message from n1 to a slave on n2: %w", err)
		}
		return nil
	})

	if nc, err := nats.Connect(url(n1), sec.Master.Option(), nats.MaxReconnects(0)); err == nil {
		nc.Close()
		t.Errorf("a client that does not trust the CA connected")
	} else if !strings.Contains(err.Error(), "certificate") {
		t.Errorf("a client that does not trust the CA: %v; want a certificate error", err)
	}
	plain, err := net.DialTimeout("tcp", n1.Addr().String(), time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer plain.Close()
	plain.SetDeadline(time.Now().Add(5 * time.Second))
	info := make([]byte, 4096)
	n, _ := plain.Read(info)
	if !bytes.Contains(info[:n], []byte(`"tls_required":true`)) {
		t.Errorf("the node's INFO to a plain client: %q; want tls_required", info[:n])
	}
}
