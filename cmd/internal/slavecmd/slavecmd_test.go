package slavecmd

import (
	"context"
	"errors"
	"flag"
	"io"
	"path/filepath"
	"testing"
)

// A bad command line is a usage error and starts no slave; -h is help.
func TestMainBadCommandLine(t *testing.T) {
	t.Parallel()
	cases := []struct {
		args []string
		want error
	}{
		{[]string{"extra"}, ErrUsage},
		{[]string{"--bogus"}, ErrUsage},
		{[]string{"--threads", "many"}, ErrUsage},
		{[]string{"--log-level", "loud"}, ErrUsage},
		{[]string{"-h"}, flag.ErrHelp},
	}
	for _, c := range cases {
		if err := Main(context.Background(), c.args, io.Discard); !errors.Is(err, c.want) {
			t.Errorf("Main(%q) = %v; want %v", c.args, err, c.want)
		}
	}
	missing := filepath.Join(t.TempDir(), "none.creds")
	if err := Main(context.Background(), []string{"--credentials", missing}, io.Discard); err == nil || errors.Is(err, ErrUsage) {
		t.Errorf("Main(--credentials %s) = %v; want an error naming the file, not a usage error", missing, err)
	}
}

func TestSanitize(t *testing.T) {
	t.Parallel()
	cases := []struct{ in, want string }{
		{"host-1_a", "host-1_a"},
		{"my.host.example", "my-host-example"},
		{"a b/c", "a-b-c"},
		{"x123456789012345678901234567890123456789012345", "x123456789012345678901234567890123456789"},
	}
	for _, c := range cases {
		if got := sanitize(c.in); got != c.want {
			t.Errorf("sanitize(%q) = %q; want %q", c.in, got, c.want)
		}
	}
}
