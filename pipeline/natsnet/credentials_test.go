package natsnet

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/pipedbn/pipedbn/pipeline/driver"
)

func TestReadCredentials(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	for _, tc := range []struct {
		name, text string
		want       []Credential
		err        string
	}{
		{"one", "master:s3cret\n", []Credential{{"master", "s3cret"}}, ""},
		{"pool", "# a pool\n\nslave-1:a:b\n  slave-2:c  \n", []Credential{{"slave-1", "a:b"}, {"slave-2", "c"}}, ""},
		{"no colon", "slave-1 s3cret\n", nil, "line 1: want user:password"},
		{"no user", "# x\n:s3cret\n", nil, "line 2: want user:password"},
		{"no password", "slave-1:\n", nil, "line 1: want user:password"},
		{"empty", "# nothing\n", nil, "no user:password line"},
	} {
		path := filepath.Join(dir, tc.name)
		if err := os.WriteFile(path, []byte(tc.text), 0o600); err != nil {
			t.Fatal(err)
		}
		got, err := ReadCredentials(path)
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("%s: ReadCredentials = %v, %v; want an error with %q", tc.name, got, err, tc.err)
			}
			if err != nil && strings.Contains(err.Error(), "s3cret") {
				t.Errorf("%s: error %q quotes the password", tc.name, err)
			}
			continue
		}
		if err != nil || len(got) != len(tc.want) {
			t.Errorf("%s: ReadCredentials = %v, %v; want %v", tc.name, got, err, tc.want)
			continue
		}
		for i := range got {
			if got[i] != tc.want[i] {
				t.Errorf("%s: ReadCredentials[%d] = %v; want %v", tc.name, i, got[i], tc.want[i])
			}
		}
	}
	if _, err := ReadCredentials(filepath.Join(dir, "missing")); err == nil {
		t.Error("ReadCredentials(missing file): no error")
	}
}

// TestSlaveNameMustBeAUser: with credentials, a slave's name is its NATS
// user; a name that is none of them fails at once, even when serving.
func TestSlaveNameMustBeAUser(t *testing.T) {
	t.Parallel()
	opt := SlaveOptions{
		URL: "nats://127.0.0.1:1", SlaveOptions: driver.SlaveOptions{Name: "slave-9", JoinTimeout: time.Second},
		Credentials: []Credential{{"slave-1", "a"}, {"slave-2", "b"}},
	}
	for name, run := range map[string]func(context.Context, SlaveOptions) error{"RunSlave": RunSlave, "ServeSlave": ServeSlave} {
		err := run(context.Background(), opt)
		if err == nil || !strings.Contains(err.Error(), `slave name "slave-9" is no user of its credentials`) {
			t.Errorf("%s: %v; want an error naming the slave name", name, err)
		}
	}
}

// A credential's Options connect as it; a nil one's are none, so that a
// caller passes them whether or not it has an identity.
func TestCredentialOptions(t *testing.T) {
	var none *Credential
	if opts := none.Options(); len(opts) != 0 {
		t.Errorf("nil credential's Options = %d options; want none", len(opts))
	}
	c := &Credential{User: "u", Password: "p"}
	opts := c.Options()
	if len(opts) != 1 {
		t.Fatalf("Options = %d options; want 1", len(opts))
	}
	var o nats.Options
	if err := opts[0](&o); err != nil || o.User != "u" || o.Password != "p" {
		t.Errorf("Options set user %q password %q (%v); want u, p", o.User, o.Password, err)
	}
}
