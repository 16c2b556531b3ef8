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
	"syscall"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

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

// URL is the http:// URL of a listener's address; an unspecified host
// (0.0.0.0, ::) is shown as 127.0.0.1, where this machine reaches it.
func URL(ln net.Listener) string {
	a, ok := ln.Addr().(*net.TCPAddr)
	if !ok {
		return "http://" + ln.Addr().String()
	}
	host := a.IP.String()
	if a.IP == nil || a.IP.IsUnspecified() {
		host = "127.0.0.1"
	}
	return "http://" + net.JoinHostPort(host, fmt.Sprint(a.Port))
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

// Serve serves h on ln in a goroutine of its own, logging to log (nil:
// nowhere) an error that ends serving early. Close stops it.
func Serve(ln net.Listener, h http.Handler, log hclog.Logger) *Server {
	if log == nil {
		log = hclog.NewNullLogger()
	}
	s := &Server{
		srv: &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second,
			ErrorLog: log.StandardLogger(&hclog.StandardLoggerOptions{InferLevels: true})},
		done: make(chan struct{}),
	}
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
