package slavecmd

import (
	"context"
	"errors"
	"flag"
	"io"
	"path/filepath"
	"strings"
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
		{[]string{"--master-gone-after", "-1s"}, ErrUsage},
		{[]string{"--serve", "--name", "a,b"}, ErrUsage},
		{[]string{"--nats", "localhost:4222"}, ErrUsage},
		{[]string{"--nats", "nats://a:4222,,nats://b:4222"}, ErrUsage},
		{[]string{"-h"}, flag.ErrHelp},
	}
	for _, c := range cases {
		if err := Main(context.Background(), c.args, io.Discard, io.Discard); !errors.Is(err, c.want) {
			t.Errorf("Main(%q) = %v; want %v", c.args, err, c.want)
		}
	}
	// A bad URL of a list is named with its place (issue 16).
	if err := Main(context.Background(), []string{"--nats", "nats://a:4222,http://b:4222"}, io.Discard, io.Discard); err == nil || !strings.Contains(err.Error(), `--nats = "nats://a:4222,http://b:4222": item 2 of the list, "http://b:4222"`) {
		t.Errorf("Main(--nats nats://a:4222,http://b:4222) = %v; want a usage error naming --nats and item 2", err)
	}
	missing := filepath.Join(t.TempDir(), "none.creds")
	if err := Main(context.Background(), []string{"--credentials", missing}, io.Discard, io.Discard); err == nil || errors.Is(err, ErrUsage) {
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
