package natsnet

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/nats-io/nats.go"
)

// CredentialsEnv names the environment variable that holds the path of a
// credentials file (see ReadCredentials). Connect uses the file's identity
// when the caller passes no credentials of its own, so that the master
// needs no flag; the slave reads it as the default of --credentials.
const CredentialsEnv = "PIPEDBN_NATS_CREDENTIALS"

// Credential is a NATS user and its password.
type Credential struct {
	User, Password string
}

// Option is the connection option that connects as c.
func (c Credential) Option() nats.Option { return nats.UserInfo(c.User, c.Password) }

// Options are the connection options that connect as c, none for a nil c:
// what Connect and ConnectWait take, for callers that do not import
// nats.go.
func (c *Credential) Options() []nats.Option {
	if c == nil {
		return nil
	}
	return []nats.Option{c.Option()}
}

// SlaveUser is the user, and so the slave name, of identity k (1-based) of
// a pool of slave identities.
func SlaveUser(k int) string { return fmt.Sprintf("slave-%d", k) }

// ErrIdentitiesInUse is returned when every identity a slave may claim is
// held by another connection.
var ErrIdentitiesInUse = errors.New("natsnet: every identity is in use")

// ReadCredentials reads a credentials file: one `user:password` a line,
// blank lines and lines starting with '#' skipped. A file of one line is one
// identity (the master's, or one slave's on its own host); a file of several
// is a pool that slaves claim identities from. Errors never quote a line,
// since it holds a password.
func ReadCredentials(path string) ([]Credential, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("credentials: %w", err)
	}
	defer f.Close()
	var creds []Credential
	sc := bufio.NewScanner(f)
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		user, pass, ok := strings.Cut(line, ":")
		if !ok || user == "" || pass == "" {
			return nil, fmt.Errorf("credentials file %s line %d: want user:password", path, n)
		}
		creds = append(creds, Credential{User: user, Password: pass})
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("credentials file %s: %w", path, err)
	}
	if len(creds) == 0 {
		return nil, fmt.Errorf("credentials file %s: no user:password line", path)
	}
	return creds, nil
}

// WriteCredentials writes creds to path in ReadCredentials' format, headed
// by comment (each of its lines made a '#' line), readable by its owner
// only: a new file of mode 0600 replaces the old one whole, so that no
// reader ever sees half a file or a wider mode.
func WriteCredentials(path, comment string, creds []Credential) error {
	var b bytes.Buffer
	if comment != "" {
		for _, l := range strings.Split(strings.TrimRight(comment, "\n"), "\n") {
			b.WriteString(strings.TrimRight("# "+l, " ") + "\n")
		}
	}
	for _, c := range creds {
		fmt.Fprintf(&b, "%s:%s\n", c.User, c.Password)
	}
	// CreateTemp makes the file 0600.
	tmp, err := os.CreateTemp(filepath.Dir(path), ".tmp-"+filepath.Base(path))
	if err != nil {
		return fmt.Errorf("credentials: %w", err)
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.Write(b.Bytes()); err != nil {
		tmp.Close()
		return fmt.Errorf("credentials: %w", err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("credentials: %w", err)
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return fmt.Errorf("credentials: %w", err)
	}
	return nil
}

// envCredentials returns the connection option for the one identity in the
// file CredentialsEnv names, or nil when the variable is unset.
func envCredentials() (nats.Option, error) {
	path := os.Getenv(CredentialsEnv)
	if path == "" {
		return nil, nil
	}
	creds, err := ReadCredentials(path)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", CredentialsEnv, err)
	}
	if len(creds) != 1 {
		return nil, fmt.Errorf("%s: credentials file %s holds %d identities; this connection needs exactly one", CredentialsEnv, path, len(creds))
	}
	return nats.UserInfo(creds[0].User, creds[0].Password), nil
}

// hasAuth reports whether opts carry credentials of their own.
func hasAuth(opts []nats.Option) bool {
	var o nats.Options
	for _, opt := range opts {
		if opt != nil {
			opt(&o)
		}
	}
	return o.User != "" || o.Token != "" || o.Nkey != "" || o.UserJWT != nil || o.UserInfo != nil || o.TokenHandler != nil
}

// claimIdentity connects as the first of creds the server admits. The
// server's config gives every slave identity its own account limited to one
// connection (Identities.ServerConfig), so slaves that share one pool, such as the
// replicas of a compose service, each end up with an identity of their own.
func claimIdentity(url, name string, creds []Credential, opts []nats.Option) (*nats.Conn, Credential, error) {
	for _, c := range creds {
		all := append(append([]nats.Option{}, opts...), c.Option())
		nc, err := Connect(url, name+c.User, all...)
		if err == nil {
			return nc, c, nil
		}
		if !errors.Is(err, nats.ErrMaxAccountConnectionsExceeded) {
			return nil, c, fmt.Errorf("as %s: %w", c.User, err)
		}
	}
	users := make([]string, len(creds))
	for i, c := range creds {
		users[i] = c.User
	}
	return nil, Credential{}, fmt.Errorf("%w: %s (start fewer slaves, or make more identities)", ErrIdentitiesInUse, strings.Join(users, ", "))
}
