package main

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strings"
	"testing"

	"github.com/pipedbn/pipedbn/blas"
	"github.com/pipedbn/pipedbn/messages"
)

// masterIO runs the built binary and returns its exit code, stdout and
// stderr.
func masterIO(t *testing.T, env []string, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	cmd := exec.Command(masterBin, args...)
	cmd.Env = append(os.Environ(), env...)
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	if err := cmd.Run(); err != nil {
		ee, ok := err.(*exec.ExitError)
		if !ok {
			t.Fatalf("run master: %v", err)
		}
		code = ee.ExitCode()
	}
	return code, out.String(), errOut.String()
}

// TestHelp: master's help goes to stdout with exit 0, lists every command
// and points at the configuration reference.
func TestHelp(t *testing.T) {
	t.Parallel()
	for _, args := range [][]string{{"-h"}, {"--help"}, {"-help"}, {"help"}} {
		code, stdout, stderr := masterIO(t, nil, args...)
		if code != 0 || stderr != "" {
			t.Errorf("master %v: exit %d, stderr %q; want exit 0 and nothing on stderr", args, code, stderr)
		}
		for _, want := range []string{"usage: master COMMAND", "docs/configuration.md", "master COMMAND -h"} {
			if !strings.Contains(stdout, want) {
				t.Errorf("master %v: stdout =\n%s\nwant it to contain %q", args, stdout, want)
			}
		}
		for _, c := range commands {
			if !regexp.MustCompile(`(?m)^  ` + c.name + ` +\S`).MatchString(stdout) {
				t.Errorf("master %v: stdout =\n%s\nwant a line for the command %s", args, stdout, c.name)
			}
		}
		if strings.Contains(stdout, "CONTRACT") || strings.Contains(stdout, "../") {
			t.Errorf("master %v: stdout names a file outside the repository:\n%s", args, stdout)
		}
	}
}

// TestCommandHelp: each command's -h (and master help COMMAND) prints on
// stdout, with exit 0, its usage, a description, the flags it reads and no
// other, and an example.
func TestCommandHelp(t *testing.T) {
	t.Parallel()
	flagLine := regexp.MustCompile(`(?m)^  -([a-z-]+)`)
	for _, tc := range []struct {
		cmd   string
		flags []string // nil: the command's help lists no flags of its own here
	}{
		{"run", []string{"config", "set", "out", "http", "log-level"}},
		{"sweep", []string{"config", "out", "http", "log-level"}},
		{"plan", []string{"config", "set"}},
		{"config", []string{"config", "set", "doc"}},
		{"version", []string{}},
		{"predict", nil},
		{"transform", nil},
	} {
		for _, args := range [][]string{{tc.cmd, "-h"}, {tc.cmd, "--help"}, {"help", tc.cmd}} {
			code, stdout, stderr := masterIO(t, nil, args...)
			if code != 0 || stderr != "" {
				t.Errorf("master %v: exit %d, stderr %q; want exit 0 and nothing on stderr", args, code, stderr)
				continue
			}
			c := lookup(tc.cmd)
			summary := strings.ToUpper(c.summary[:1]) + c.summary[1:] + "."
			for _, want := range []string{"master " + tc.cmd, summary, "Example:\n  master " + tc.cmd} {
				if !strings.Contains(stdout, want) {
					t.Errorf("master %v: stdout =\n%s\nwant it to contain %q", args, stdout, want)
				}
			}
			if tc.flags == nil {
				continue
			}
			var got []string
			for _, m := range flagLine.FindAllStringSubmatch(stdout, -1) {
				got = append(got, m[1])
			}
			if !slices.Equal(slices.Sorted(slices.Values(got)), slices.Sorted(slices.Values(tc.flags))) {
				t.Errorf("master %v lists the flags %v; want exactly %v:\n%s", args, got, tc.flags, stdout)
			}
		}
	}
	code, stdout, stderr := masterIO(t, nil, "slave", "-h")
	if code != 0 || stderr != "" || !strings.Contains(stdout, "usage: slave") || !strings.Contains(stdout, "-nats URL") || !strings.Contains(stdout, "Example:") {
		t.Errorf("master slave -h: exit %d, stdout\n%s\nstderr %q; want the slave's help on stdout, exit 0", code, stdout, stderr)
	}
}

// TestUsageErrors: a bad command line is exit 2 with the command's usage
// on stderr and nothing on stdout; a flag a command does not read is one.
func TestUsageErrors(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"plan", "--config", "x.yaml", "--http", ":0"}, "usage: master plan"},
		{[]string{"plan", "--config", "x.yaml", "--out", "d"}, "usage: master plan"},
		{[]string{"sweep", "--config", "x.yaml", "--set", "seed=2"}, "usage: master sweep"},
		{[]string{"version", "now"}, "usage: master version"},
		{[]string{"config"}, "usage: master config"},
		{[]string{"config", "--doc", "--config", "x.yaml"}, "usage: master config"},
		{[]string{"help", "fly"}, "usage: master COMMAND"},
		{[]string{"fly"}, "usage: master COMMAND"},
	} {
		code, stdout, stderr := masterIO(t, nil, tc.args...)
		if code != 2 || stdout != "" || !strings.Contains(stderr, tc.want) {
			t.Errorf("master %v: exit %d, stdout %q, stderr\n%s\nwant exit 2, nothing on stdout and %q on stderr", tc.args, code, stdout, stderr, tc.want)
		}
	}
}

// TestVersion: master version prints the module, commit, Go, BLAS and wire
// format versions.
func TestVersion(t *testing.T) {
	t.Parallel()
	code, stdout, stderr := masterIO(t, nil, "version")
	if code != 0 || stderr != "" {
		t.Fatalf("master version: exit %d, stderr %q", code, stderr)
	}
	checkVersion(t, "master", stdout)
}

// checkVersion checks the output of `program version`.
func checkVersion(t *testing.T, program, out string) {
	t.Helper()
	fields := map[string]string{}
	lines := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
	if lines[0] != program {
		t.Errorf("%s version: first line %q; want %q", program, lines[0], program)
	}
	for _, l := range lines[1:] {
		k, v, ok := strings.Cut(l, ": ")
		if !ok {
			t.Errorf("%s version: line %q is no name: value", program, l)
		}
		fields[k] = v
	}
	want := map[string]string{
		"module":      "github.com/pipedbn/pipedbn",
		"go":          runtime.Version() + " " + runtime.GOOS + "/" + runtime.GOARCH,
		"blas":        blas.Name() + " (core " + blas.Core() + ")",
		"wire format": fmt.Sprint(messages.Version),
	}
	for k, w := range want {
		if fields[k] != w {
			t.Errorf("%s version: %s = %q; want %q\n%s", program, k, fields[k], w, out)
		}
	}
	for _, k := range []string{"version", "commit", "modified"} {
		if fields[k] == "" {
			t.Errorf("%s version: no %s\n%s", program, k, out)
		}
	}
}

// TestConfigRoundTrip: master config prints the effective config (file,
// environment and --set), and the printed config read back by --config is
// the same config.
func TestConfigRoundTrip(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	first := filepath.Join(dir, "first.yaml")
	body := "data: {source: synthetic, train_limit: 100}\ndbn: {layers: [16, 8]}\npretrain: {mode: greedy}\n" +
		"sweep: {vary: [{key: pretrain.k_batches, values: [1, 2]}]}\n"
	if err := os.WriteFile(first, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	env := []string{"PIPEDBN_SEED=9"}
	code, y1, stderr := masterIO(t, env, "config", "--config", first, "--set", "pretrain.epochs=3", "--set", "cluster.join_timeout=90s")
	if code != 0 || stderr != "" {
		t.Fatalf("master config: exit %d, stderr %q", code, stderr)
	}
	for _, want := range []string{"name: first\n", "seed: 9\n", "epochs: 3\n", "layers: [16, 8]\n", "join_timeout: 1m30s\n", "mode: greedy\n", "http: 127.0.0.1:0\n"} {
		if !strings.Contains(y1, want) {
			t.Errorf("master config printed\n%s\nwant it to contain %q", y1, want)
		}
	}
	second := filepath.Join(dir, "second.yaml")
	if err := os.WriteFile(second, []byte(y1), 0o644); err != nil {
		t.Fatal(err)
	}
	code, y2, stderr := masterIO(t, nil, "config", "--config", second)
	if code != 0 || stderr != "" {
		t.Fatalf("master config --config (its own output): exit %d, stderr %q", code, stderr)
	}
	// The first lines, a comment, name the file.
	body1, body2 := y1[strings.Index(y1, "\nname:"):], y2[strings.Index(y2, "\nname:"):]
	if body1 != body2 {
		t.Errorf("master config of its own output =\n%s\nwant the config it was made from:\n%s", y2, y1)
	}
}

// TestConfigDoc: master config --doc prints docs/configuration.md.
func TestConfigDoc(t *testing.T) {
	t.Parallel()
	code, stdout, stderr := masterIO(t, nil, "config", "--doc")
	if code != 0 || stderr != "" {
		t.Fatalf("master config --doc: exit %d, stderr %q", code, stderr)
	}
	want, err := os.ReadFile("../../docs/configuration.md")
	if err != nil {
		t.Fatal(err)
	}
	if stdout != string(want) {
		t.Errorf("master config --doc differs from docs/configuration.md: run make docs")
	}
}
