package slavecmd

import (
	"context"
	"errors"
	"flag"
	"io"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
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

// TestUsageDefaults checks that the values the synopsis shows (Usage's
// [--flag value], value not a placeholder in capitals) are the flags'
// defaults, as -h prints them: the defaults live in protocol and natsnet,
// and the synopsis must follow them.
func TestUsageDefaults(t *testing.T) {
	t.Parallel()
	var help strings.Builder
	if err := Main(context.Background(), []string{"-h"}, &help, io.Discard); !errors.Is(err, flag.ErrHelp) {
		t.Fatalf("Main(-h) = %v; want flag.ErrHelp", err)
	}
	// PrintDefaults writes "  -name type" and then the usage, which ends
	// with "(default value)" unless the default is the zero value.
	defaults := map[string]string{}
	var name string
	for _, line := range strings.Split(help.String(), "\n") {
		if m := regexp.MustCompile(`^  -([a-z-]+)`).FindStringSubmatch(line); m != nil {
			name, defaults[m[1]] = m[1], ""
		}
		if m := regexp.MustCompile(`\(default (.*)\)$`).FindStringSubmatch(line); m != nil && name != "" {
			defaults[name] = strings.Trim(m[1], `"`)
		}
	}
	shown := regexp.MustCompile(`\[--([a-z-]+) ([^\]]+)\]`).FindAllStringSubmatch(Usage, -1)
	checked := 0
	for _, m := range shown {
		flagName, value := m[1], m[2]
		if strings.ToUpper(value) == value {
			continue // a placeholder: URL, NAME, FILE, N
		}
		def, ok := defaults[flagName]
		if !ok {
			t.Errorf("Usage shows --%s, which -h does not list", flagName)
			continue
		}
		checked++
		if got, err := time.ParseDuration(value); err == nil {
			want := time.Duration(0)
			if def != "" {
				if want, err = time.ParseDuration(def); err != nil {
					t.Errorf("--%s: default %q is not a duration", flagName, def)
					continue
				}
			}
			if got != want {
				t.Errorf("Usage shows --%s %s; the flag's default is %s", flagName, value, want)
			}
			continue
		}
		if value != def {
			t.Errorf("Usage shows --%s %s; the flag's default is %q", flagName, value, def)
		}
	}
	if checked < 4 {
		t.Errorf("checked %d defaults of Usage; want the 5 it shows", checked)
	}
}
