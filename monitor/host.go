package monitor

import (
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"os"
	"strings"

	"github.com/hashicorp/go-hclog"
)

// boundIP is the address ln listens on: loopback, a specific address, or
// unspecified (every interface); nil if ln is not TCP.
func boundIP(ln net.Listener) net.IP {
	if a, ok := ln.Addr().(*net.TCPAddr); ok {
		return a.IP
	}
	return nil
}

// beyondLoopback reports whether other hosts may reach a server bound to
// ip.
func beyondLoopback(ip net.IP) bool { return ip != nil && !ip.IsLoopback() }

// hostName is this host's name in lower case, "" if unknown.
func hostName() string {
	h, err := os.Hostname()
	if err != nil {
		return ""
	}
	return strings.ToLower(strings.TrimSuffix(h, "."))
}

// allowHost reports whether a server bound to bound answers a request
// whose Host header is host, host the name of the machine it runs on.
//
// DNS rebinding lets a web page read a server that only its visitor's
// browser reaches: the attacker's name, resolved again, points at the
// server, and the browser sends that name as Host. So a server on
// loopback answers to localhost, 127.0.0.1 and [::1] (any port: an ssh
// tunnel's is another); one bound beyond loopback answers also to any IP
// address (an address typed in cannot be rebound), to this host's name,
// and to any name without a dot (a compose service's, a short host name:
// names that no outside DNS serves). Other names get 421.
func allowHost(bound net.IP, hostname, host string) bool {
	h := host
	if name, _, err := net.SplitHostPort(host); err == nil {
		h = name
	}
	h = strings.TrimSuffix(strings.ToLower(strings.Trim(h, "[]")), ".")
	if h == "" {
		return false
	}
	if h == "localhost" {
		return true
	}
	if ip, err := netip.ParseAddr(h); err == nil {
		return ip.IsLoopback() || beyondLoopback(bound)
	}
	if !beyondLoopback(bound) {
		return false
	}
	return h == hostname || !strings.Contains(h, ".")
}

// checkHost serves h the requests that allowHost lets through, and says
// why to the others, with 421 Misdirected Request.
func checkHost(h http.Handler, bound net.IP, hostname string) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !allowHost(bound, hostname, r.Host) {
			names := "localhost, 127.0.0.1 or [::1]"
			if beyondLoopback(bound) {
				names = "localhost, an IP address, this host's name or a name without a dot"
			}
			http.Error(w, fmt.Sprintf("monitor: Host %q is not this server's: it answers to %s (a guard against DNS rebinding)", r.Host, names),
				http.StatusMisdirectedRequest)
			return
		}
		h.ServeHTTP(w, r)
	})
}

// hostURLs are the http:// URLs of port on this host's addresses that
// other hosts may reach, IPv4 first: none of loopback or link-local.
func hostURLs(port int) []string {
	addrs, err := net.InterfaceAddrs()
	if err != nil {
		return nil
	}
	var v4, v6 []string
	for _, a := range addrs {
		n, ok := a.(*net.IPNet)
		if !ok || !n.IP.IsGlobalUnicast() {
			continue
		}
		if n.IP.To4() != nil {
			v4 = append(v4, portURL(n.IP.String(), port))
		} else {
			v6 = append(v6, portURL(n.IP.String(), port))
		}
	}
	return append(v4, v6...)
}

// warnExposed logs one warning if other hosts may reach ln, with the URLs
// they reach it at: the monitor has no TLS and no passwords.
func warnExposed(log hclog.Logger, ln net.Listener, bound net.IP) {
	if !beyondLoopback(bound) {
		return
	}
	port := ln.Addr().(*net.TCPAddr).Port
	urls := []string{portURL(bound.String(), port)}
	if bound.IsUnspecified() {
		urls = hostURLs(port)
		if len(urls) == 0 {
			urls = []string{fmt.Sprintf("http://<this host's address>:%d", port)}
		}
	}
	log.Warn("the status page, /api/status and /metrics are reachable from other hosts, with no authentication and no TLS",
		"address", ln.Addr().String(), "urls", strings.Join(urls, " "))
}
