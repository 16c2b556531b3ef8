package main

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/pipedbn/pipedbn/blas"
	"github.com/pipedbn/pipedbn/internal/testbin"
	"github.com/pipedbn/pipedbn/messages"
)

var slaveBin string

func TestMain(m *testing.M) {
	var err error
	if slaveBin, err = testbin.Build("github.com/pipedbn/pipedbn/cmd/slave"); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	os.Exit(m.Run())
}

// slave runs the built binary and returns its exit code, stdout and stderr.
func slave(t *testing.T, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	cmd := exec.Command(slaveBin, args...)
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	if err := cmd.Run(); err != nil {
		ee, ok := err.(*exec.ExitError)
		if !ok {
			t.Fatalf("run slave: %v", err)
		}
		code = ee.ExitCode()
	}
	return code, out.String(), errOut.String()
}

// TestHelp: slave -h prints its usage, flags and an example on stdout and
// exits 0; a bad flag is exit 2 with the usage on stderr.
func TestHelp(t *testing.T) {
	t.Parallel()
	for _, arg := range []string{"-h", "--help"} {
		code, stdout, stderr := slave(t, arg)
		if code != 0 || stderr != "" {
			t.Errorf("slave %s: exit %d, stderr %q; want exit 0 and nothing on stderr", arg, code, stderr)
		}
		for _, want := range []string{"usage: slave", "slave version", "Joins a pipedbn cluster", "Flags:", "  -nats URL", "  -name NAME", "Example:\n  slave --nats"} {
			if !strings.Contains(stdout, want) {
				t.Errorf("slave %s: stdout =\n%s\nwant it to contain %q", arg, stdout, want)
			}
		}
	}
	code, stdout, stderr := slave(t, "--bogus")
	if code != 2 || stdout != "" || !strings.Contains(stderr, "usage: slave") || !strings.Contains(stderr, "-bogus") {
		t.Errorf("slave --bogus: exit %d, stdout %q, stderr %q; want exit 2 and the usage on stderr", code, stdout, stderr)
	}
}

// TestVersion: slave version prints the module, commit, Go, BLAS and wire
// format versions, one name: value a line.
func TestVersion(t *testing.T) {
	t.Parallel()
	code, stdout, stderr := slave(t, "version")
	if code != 0 || stderr != "" {
		t.Fatalf("slave version: exit %d, stderr %q", code, stderr)
	}
	fields := map[string]string{}
	lines := strings.Split(strings.TrimSuffix(stdout, "\n"), "\n")
	if lines[0] != "slave" {
		t.Errorf("slave version: first line %q; want slave", lines[0])
	}
	for _, l := range lines[1:] {
		k, v, _ := strings.Cut(l, ": ")
		fields[k] = v
	}
	for k, w := range map[string]string{
		"module":      "github.com/pipedbn/pipedbn",
		"blas":        blas.Name() + " (core " + blas.Core() + ")",
		"wire format": fmt.Sprint(messages.Version),
	} {
		if fields[k] != w {
			t.Errorf("slave version: %s = %q; want %q\n%s", k, fields[k], w, stdout)
		}
	}
	for _, k := range []string{"version", "commit", "modified", "go"} {
		if fields[k] == "" {
			t.Errorf("slave version: no %s\n%s", k, stdout)
		}
	}
}
