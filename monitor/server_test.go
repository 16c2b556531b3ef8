package monitor

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
)

// countingListener counts the connections it accepted that are still open,
// and the most open at once.
type countingListener struct {
	net.Listener
	mu         sync.Mutex
	open, most int
}

func (l *countingListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	l.mu.Lock()
	l.open++
	l.most = max(l.most, l.open)
	l.mu.Unlock()
	return &countedConn{Conn: c, l: l}, nil
}

func (l *countingListener) counts() (open, most int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.open, l.most
}

type countedConn struct {
	net.Conn
	l    *countingListener
	once sync.Once
}

func (c *countedConn) Close() error {
	c.once.Do(func() {
		c.l.mu.Lock()
		c.l.open--
		c.l.mu.Unlock()
	})
	return c.Conn.Close()
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

// syncBuffer is a bytes.Buffer for a logger and a test at once.
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

// Clients that open connections and leave them idle, more than the cap,
// hold no more than the cap of the server's connections, lose them to the
// timeouts, and a page's request is still answered.
func TestServeSurvivesIdleConnections(t *testing.T) {
	const maxConns, idle = 4, 200 * time.Millisecond
	tcp, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ln := &countingListener{Listener: tcp}
	r := NewRun("idle", "pipelined", URL(tcp))
	srv := Serve(ln, r.Handler(), ServeOptions{Logger: hclog.NewNullLogger(), MaxConns: maxConns,
		ReadHeaderTimeout: idle, IdleTimeout: idle})
	defer srv.Close()

	// Half say nothing; half make one keep-alive request and then idle.
	var clients []net.Conn
	defer func() {
		for _, c := range clients {
			c.Close()
		}
	}()
	for i := range 6 * maxConns {
		c, err := net.Dial("tcp", tcp.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		clients = append(clients, c)
		if i%2 == 1 {
			fmt.Fprintf(c, "GET /api/status HTTP/1.1\r\nHost: %s\r\n\r\n", tcp.Addr())
		}
	}
	client := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{DisableKeepAlives: true}}
	for range 3 {
		resp, err := client.Get(URL(tcp) + "/api/status")
		if err != nil {
			t.Fatalf("GET /api/status with %d idle connections: %v", len(clients), err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK || !strings.Contains(string(b), `"name": "idle"`) {
			t.Fatalf("GET /api/status with %d idle connections: %s\n%s", len(clients), resp.Status, b)
		}
	}
	if _, most := ln.counts(); most > maxConns {
		t.Errorf("the server held %d connections at once; want at most MaxConns = %d", most, maxConns)
	}
	// Every idle client's connection gets its turn and is closed.
	checkFor(t, 10*time.Second, func() error {
		if open, _ := ln.counts(); open != 0 {
			return fmt.Errorf("the server holds %d connections of idle clients; want 0 after the idle timeout", open)
		}
		return nil
	})
	for i, c := range clients {
		c.SetReadDeadline(time.Now().Add(5 * time.Second))
		if i%2 == 1 {
			resp, err := http.ReadResponse(bufio.NewReader(c), nil)
			if err != nil {
				t.Fatalf("client %d's request: %v", i, err)
			}
			resp.Body.Close()
		}
		if _, err := c.Read(make([]byte, 1)); err != io.EOF {
			t.Errorf("client %d read %v; want EOF: the server closed its idle connection", i, err)
		}
	}
}

// Requests whose Host header is not the server's are refused: on
// loopback, only localhost, 127.0.0.1 and [::1] are.
func TestServeChecksHost(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := Serve(ln, NewRun("host", "greedy", URL(ln)).Handler(), ServeOptions{})
	defer srv.Close()
	port := ln.Addr().(*net.TCPAddr).Port
	client := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{DisableKeepAlives: true}}
	for _, tc := range []struct {
		host string
		want int
	}{
		{fmt.Sprintf("127.0.0.1:%d", port), http.StatusOK},
		{fmt.Sprintf("localhost:%d", port), http.StatusOK},
		{fmt.Sprintf("LocalHost.:%d", port), http.StatusOK},
		{fmt.Sprintf("[::1]:%d", port), http.StatusOK},
		{"localhost:9000", http.StatusOK}, // ssh -L 9000:127.0.0.1:PORT
		{"localhost", http.StatusOK},
		{fmt.Sprintf("rebind.example:%d", port), http.StatusMisdirectedRequest},
		{fmt.Sprintf("127.0.0.1.rebind.example:%d", port), http.StatusMisdirectedRequest},
		{fmt.Sprintf("192.0.2.1:%d", port), http.StatusMisdirectedRequest},
		{fmt.Sprintf("%s:%d", hostName(), port), http.StatusMisdirectedRequest},
	} {
		for _, path := range []string{"/", "/api/status", "/metrics"} {
			req, err := http.NewRequest("GET", URL(ln)+path, nil)
			if err != nil {
				t.Fatal(err)
			}
			req.Host = tc.host
			resp, err := client.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != tc.want {
				t.Errorf("GET %s with Host %s: %s; want %d\n%s", path, tc.host, resp.Status, tc.want, b)
			}
		}
	}
}

// Bound beyond loopback, a server also answers to IP addresses, this
// host's name and names without a dot, never to other names.
func TestAllowHost(t *testing.T) {
	t.Parallel()
	loop, specific, any := net.ParseIP("127.0.0.1"), net.ParseIP("192.0.2.7"), net.IPv6unspecified
	for _, tc := range []struct {
		bound net.IP
		host  string
		want  bool
	}{
		{loop, "127.0.0.1:80", true},
		{loop, "127.0.0.2:80", true},
		{loop, "[::1]:80", true},
		{loop, "localhost", true},
		{loop, "", false},
		{loop, "192.0.2.7:80", false},
		{loop, "box", false},
		{loop, "box.lab.example", false},
		{specific, "192.0.2.7:8080", true},
		{specific, "[2001:db8::1]:8080", true},
		{specific, "localhost:8080", true},
		{specific, "box.lab.example:8080", true},
		{specific, "BOX.lab.example.", true},
		{specific, "master:8080", true},
		{specific, "rebind.example:8080", false},
		{specific, "box.lab.example.rebind.example", false},
		{specific, "", false},
		{any, "10.0.0.5:8080", true},
		{any, "master:8080", true},
		{any, "rebind.example:8080", false},
	} {
		if got := allowHost(tc.bound, "box.lab.example", tc.host); got != tc.want {
			t.Errorf("allowHost(%s, box.lab.example, %q) = %v; want %v", tc.bound, tc.host, got, tc.want)
		}
	}
}

// Bound on every interface, the server logs one warning that other hosts
// reach it, with this host's URLs, and its URL is one of them, not
// 127.0.0.1's; on loopback it logs nothing.
func TestServeWarnsBeyondLoopback(t *testing.T) {
	for _, addr := range []string{"0.0.0.0:0", "127.0.0.1:0"} {
		ln, err := Listen(addr)
		if err != nil {
			t.Fatal(err)
		}
		var out syncBuffer
		log := hclog.New(&hclog.LoggerOptions{Name: "monitor", Output: &out, Level: hclog.Info})
		srv := Serve(ln, http.NotFoundHandler(), ServeOptions{Logger: log})
		srv.Close()
		port := ln.Addr().(*net.TCPAddr).Port
		lines := strings.Split(strings.TrimSpace(out.String()), "\n")
		if addr == "127.0.0.1:0" {
			if out.String() != "" {
				t.Errorf("Serve on %s logged %q; want nothing", addr, out.String())
			}
			continue
		}
		if len(lines) != 1 || !strings.Contains(lines[0], "[WARN]") || !strings.Contains(lines[0], "reachable from other hosts, with no authentication") {
			t.Errorf("Serve on %s logged %q; want one warning that other hosts reach it", addr, out.String())
		}
		urls := hostURLs(port)
		if len(urls) == 0 {
			urls = []string{fmt.Sprintf("http://<this host's address>:%d", port)}
		} else if u := URL(ln); u != urls[0] {
			t.Errorf("URL = %s; want %s, this host's first address", u, urls[0])
		}
		for _, u := range urls {
			if !strings.Contains(lines[0], u) {
				t.Errorf("the warning %q does not list %s", lines[0], u)
			}
		}
		if strings.Contains(lines[0], "127.0.0.1") {
			t.Errorf("the warning %q gives 127.0.0.1, which is not where other hosts reach the server", lines[0])
		}
	}
}
