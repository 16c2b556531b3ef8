package monitor

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"syscall"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"golang.org/x/net/netutil"

	"github.com/pipedbn/pipedbn/internal/atomicfile"
)

// URLFile, in a run's output folder, holds the URL its master serves on
// (one line), written when the run starts.
const URLFile = "monitor.url"

// Listen listens on addr (host:port; port 0 picks a free one), where the
// monitor will serve. Its error says why in a few words: "address already
// in use", "no such host".
func Listen(addr string) (net.Listener, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, listenError(err)
	}
	return ln, nil
}

// listenError drops what net.Listen's error repeats (the operation and the
// address) and keeps the reason.
func listenError(err error) error {
	var errno syscall.Errno
	var dns *net.DNSError
	var op *net.OpError
	switch {
	case errors.As(err, &errno):
		return fmt.Errorf("cannot listen: %w", errno)
	case errors.As(err, &dns):
		return fmt.Errorf("cannot listen: %s", dns.Err)
	case errors.As(err, &op) && op.Err != nil:
		return fmt.Errorf("cannot listen: %w", op.Err)
	}
	return fmt.Errorf("cannot listen: %w", err)
}

// URL is the http:// URL of a listener's address. An unspecified host
// (0.0.0.0, ::) is shown as the first of this host's addresses (URLs), as
// other hosts reach it: 127.0.0.1 only when the host has no other.
func URL(ln net.Listener) string {
	a, ok := ln.Addr().(*net.TCPAddr)
	if !ok {
		return "http://" + ln.Addr().String()
	}
	if a.IP == nil || a.IP.IsUnspecified() {
		if urls := hostURLs(a.Port); len(urls) > 0 {
			return urls[0]
		}
		return portURL("127.0.0.1", a.Port)
	}
	return portURL(a.IP.String(), a.Port)
}

// portURL is the http:// URL of host and port.
func portURL(host string, port int) string {
	return "http://" + net.JoinHostPort(host, strconv.Itoa(port))
}

// WriteURL writes url to dir/URLFile.
func WriteURL(dir, url string) error {
	return atomicfile.WriteFile(filepath.Join(dir, URLFile), []byte(url+"\n"))
}

// ReadURL returns the URL in dir/URLFile, or "" if there is none.
func ReadURL(dir string) string {
	b, err := os.ReadFile(filepath.Join(dir, URLFile))
	if err != nil {
		return ""
	}
	s := string(b)
	for len(s) > 0 && (s[len(s)-1] == '\n' || s[len(s)-1] == '\r') {
		s = s[:len(s)-1]
	}
	return s
}

// Server serves a monitor's handler until Close.
type Server struct {
	srv  *http.Server
	done chan struct{}
}

// The defaults of ServeOptions. No endpoint streams (the status page
// polls /api/status every second), so one write timeout fits them all.
const (
	// DefaultReadHeaderTimeout closes a connection that sent no complete
	// request header in time, so that a client that connects and says
	// nothing does not keep a file descriptor.
	DefaultReadHeaderTimeout = 5 * time.Second
	// DefaultReadTimeout bounds reading a request: the monitor serves GETs,
	// with no body.
	DefaultReadTimeout = 10 * time.Second
	// DefaultWriteTimeout bounds writing a response, /metrics the largest.
	DefaultWriteTimeout = 30 * time.Second
	// DefaultIdleTimeout closes a keep-alive connection idle this long:
	// longer than the page's polls and Prometheus's default 15 s scrape
	// interval, which keep theirs.
	DefaultIdleTimeout = 20 * time.Second
)

// ServeOptions configures Serve; a zero field takes its default.
type ServeOptions struct {
	// Logger gets an error that ends serving early and the warning of a
	// server reachable from other hosts. nil: nowhere.
	Logger hclog.Logger
	// MaxConns caps the connections open at once; more wait in the
	// kernel's backlog until one closes. Default DefaultMaxConns().
	MaxConns int
	// ReadHeaderTimeout, ReadTimeout, WriteTimeout and IdleTimeout are
	// http.Server's; defaults DefaultReadHeaderTimeout, DefaultReadTimeout,
	// DefaultWriteTimeout and DefaultIdleTimeout.
	ReadHeaderTimeout time.Duration
	ReadTimeout       time.Duration
	WriteTimeout      time.Duration
	IdleTimeout       time.Duration
}

// DefaultMaxConns is ServeOptions.MaxConns's default: 256, or an eighth
// of the process's file descriptor limit (RLIMIT_NOFILE) if that is less,
// at least 4. The monitor's clients (a few pages, a Prometheus) need a few
// connections; the other descriptors stay the run's, for its checkpoints,
// NATS and slaves, which idle clients could otherwise take them from.
func DefaultMaxConns() int {
	n := 256
	if lim, ok := fileLimit(); ok && lim/8 < uint64(n) {
		n = int(lim / 8)
	}
	return max(n, 4)
}

// Serve serves h on ln in a goroutine of its own, until Close. It caps the
// connections open at once, times out slow and idle ones, and refuses with
// 421 a request whose Host header is not this server's (allowHost says
// which are). Bound beyond loopback, it logs a warning that other hosts
// reach the page, with its URLs.
func Serve(ln net.Listener, h http.Handler, opt ServeOptions) *Server {
	log := opt.Logger
	if log == nil {
		log = hclog.NewNullLogger()
	}
	or := func(d, def time.Duration) time.Duration {
		if d > 0 {
			return d
		}
		return def
	}
	maxConns := opt.MaxConns
	if maxConns <= 0 {
		maxConns = DefaultMaxConns()
	}
	bound := boundIP(ln)
	warnExposed(log, ln, bound)
	s := &Server{
		srv: &http.Server{
			Handler:           checkHost(h, bound, hostName()),
			ReadHeaderTimeout: or(opt.ReadHeaderTimeout, DefaultReadHeaderTimeout),
			ReadTimeout:       or(opt.ReadTimeout, DefaultReadTimeout),
			WriteTimeout:      or(opt.WriteTimeout, DefaultWriteTimeout),
			IdleTimeout:       or(opt.IdleTimeout, DefaultIdleTimeout),
			ErrorLog:          log.StandardLogger(&hclog.StandardLoggerOptions{InferLevels: true}),
		},
		done: make(chan struct{}),
	}
	ln = netutil.LimitListener(ln, maxConns)
	go func() {
		defer close(s.done)
		if err := s.srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			log.Error("the monitor stopped serving", "error", err)
		}
	}()
	return s
}

// Close stops serving: requests under way get a second to finish.
func (s *Server) Close() error {
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	err := s.srv.Shutdown(ctx)
	if err != nil {
		err = s.srv.Close()
	}
	<-s.done
	return err
}

// Handler returns the HTTP handler of the run: /api/status, /metrics, and
// at / the live status page.
func (r *Run) Handler() http.Handler {
	return newHandler(func() any { r.notePoll(); return r.Status() }, collector{r})
}

// newHandler serves status() as JSON at /api/status and c, with the Go
// runtime's and the process's metrics, at /metrics, from a registry of its
// own (never the global one), and the status page at /.
func newHandler(status func() any, c prometheus.Collector) *http.ServeMux {
	reg := prometheus.NewRegistry()
	reg.MustRegister(c, collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	mux := http.NewServeMux()
	mux.Handle("GET /metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{Registry: reg}))
	mux.HandleFunc("GET /api/status", func(w http.ResponseWriter, _ *http.Request) {
		b, err := json.MarshalIndent(status(), "", "  ")
		if err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Cache-Control", "no-store")
		w.Write(append(b, '\n'))
	})
	handlePage(mux)
	return mux
}
