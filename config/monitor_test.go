package config

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
)

// monitor.http defaults to a free loopback port; "" turns serving off.
func TestMonitorHTTP(t *testing.T) {
	c, err := Load(write(t, "m.yaml", "name: m\n"), nil)
	if err != nil {
		t.Fatal(err)
	}
	if c.Monitor.HTTP != "127.0.0.1:0" {
		t.Errorf("monitor.http = %q by default; want 127.0.0.1:0", c.Monitor.HTTP)
	}
	for _, addr := range []string{"", ":8080", "0.0.0.0:9100", "[::1]:0", "localhost:65535", "master.local:80"} {
		// --set values are YAML: [::1] would be a list.
		c, err := Load(write(t, "m.yaml", "name: m\n"), []string{"monitor.http='" + addr + "'"})
		if err != nil {
			t.Errorf("--set monitor.http=%s: %v", addr, err)
			continue
		}
		if c.Monitor.HTTP != addr {
			t.Errorf("--set monitor.http=%s: got %q", addr, c.Monitor.HTTP)
		}
	}
	// Where the run is watched from changes nothing it computes: it is not
	// in the config's JSON, which resume hashes and sweeps stamp.
	if b, _ := json.Marshal(c); strings.Contains(string(b), `"Monitor"`) || strings.Contains(string(b), "127.0.0.1:0") {
		t.Errorf("config JSON %s holds monitor.http", b)
	}
}

// A bad address is a problem naming the key, the value and its source.
func TestMonitorHTTPProblems(t *testing.T) {
	for _, tc := range []struct {
		file string
		sets []string
		env  string
		want string
	}{
		{file: "monitor: {http: localhost}\n", want: `monitor.http = "localhost": must be host:port`},
		{file: "monitor: {http: '127.0.0.1:70000'}\n", want: `monitor.http = "127.0.0.1:70000": the port must be a number in [0, 65535]`},
		{file: "monitor: {http: 'a b:80'}\n", want: `monitor.http = "a b:80": the host must be an IP address or a host name`},
		{sets: []string{"monitor.http=:http"}, want: `monitor.http = ":http" (from --set monitor.http): the port must be a number`},
		{env: "nohost", want: `monitor.http = "nohost" (from env PIPEDBN_MONITOR_HTTP): must be host:port`},
		{file: "monitor: 8080\n", want: `monitor = 8080: must be a map of the keys monitor.*`},
		{file: "monitor: {port: 1}\n", want: `monitor.port = 1: unknown key`},
	} {
		if tc.env != "" {
			t.Setenv("PIPEDBN_MONITOR_HTTP", tc.env)
		}
		_, err := Load(write(t, "m.yaml", "name: m\n"+tc.file), tc.sets)
		var ps Problems
		if !errors.As(err, &ps) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("Load(%q, %v, env %q) = %v; want a problem %q", tc.file, tc.sets, tc.env, err, tc.want)
		}
		if tc.env != "" {
			t.Setenv("PIPEDBN_MONITOR_HTTP", "127.0.0.1:0")
		}
	}
}

// The --http flag is checked as the key is, its problem naming the flag.
func TestSetMonitorHTTP(t *testing.T) {
	c, err := Load(write(t, "m.yaml", "name: m\n"), nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := c.SetMonitorHTTP(""); err != nil || c.Monitor.HTTP != "" {
		t.Errorf(`SetMonitorHTTP("") = %v, monitor.http %q; want nil, ""`, err, c.Monitor.HTTP)
	}
	err = c.SetMonitorHTTP("host:port")
	if want := `m.yaml: monitor.http = "host:port" (from --http): the port must be a number`; err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("SetMonitorHTTP(host:port) = %v; want %q", err, want)
	}
	if c.Monitor.HTTP != "" {
		t.Errorf("a refused --http changed monitor.http to %q", c.Monitor.HTTP)
	}
}
