// Package deploy runs pipedbn as containers: it generates the secrets of the
// docker-compose setup (the NATS users, their permissions and passwords) and
// holds its tests: the permission tests against an embedded nats-server with
// the same config file, and the compose end-to-end test (build tag compose).
// The images, the compose file and the server config are beside it:
// Dockerfile, ../docker-compose.yml, nats/.
package deploy

import (
	"bytes"
	"crypto/rand"
	_ "embed"
	"encoding/base64"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"text/template"

	"golang.org/x/crypto/bcrypt"

	"github.com/pipedbn/pipedbn/pipeline/natsnet"
)

//go:embed nats/users.conf.tmpl
var usersTemplate string

// File names in the secrets folder.
const (
	// UsersFile is the NATS server's users, permissions and password
	// hashes, included by nats/nats.conf.
	UsersFile = "nats-users.conf"
	// MasterFile is the master's identity (user:password).
	MasterFile = "master.creds"
	// SlavesFile is the pool of every slave identity, for slaves that
	// claim one at start (the replicas of the compose slave service).
	SlavesFile = "slaves.creds"
)

// SlaveFile is the file of slave identity k alone (1-based), for a slave on
// a host of its own.
func SlaveFile(k int) string { return fmt.Sprintf("slave-%d.creds", k) }

// MasterUser is the master's NATS user.
const MasterUser = "master"

// SlaveUser is the NATS user, and so the slave name, of identity k.
func SlaveUser(k int) string { return fmt.Sprintf("slave-%d", k) }

// MaxSlaves bounds Options.Slaves: every slave account imports from every
// other, so the config grows with its square.
const MaxSlaves = 128

// Options configure Generate.
type Options struct {
	// Slaves is the number of slave identities, the most slaves that can
	// be connected at once. Default 8.
	Slaves int
	// Force replaces existing secrets; without it Generate refuses to
	// touch a folder that has any.
	Force bool
	// Cost is the bcrypt cost of the password hashes; 0 means
	// bcrypt.DefaultCost. Tests lower it.
	Cost int
}

// Secrets are the identities Generate made.
type Secrets struct {
	Master natsnet.Credential
	Slaves []natsnet.Credential
}

// ErrExist is returned when the folder already holds secrets and
// Options.Force is not set.
var ErrExist = errors.New("deploy: secrets exist")

type userData struct {
	User, Hash, Account string
}

type slaveData struct {
	userData
	Others        []userData
	OtherAccounts string
}

// Generate writes fresh secrets to dir (made 0700, files 0600): the NATS
// server's users file, the master's identity, the pool of slave identities
// and one file per slave identity. Passwords are 192 random bits; the
// server's file holds only their bcrypt hashes.
func Generate(dir string, o Options) (*Secrets, error) {
	if o.Slaves == 0 {
		o.Slaves = 8
	}
	if o.Slaves < 1 || o.Slaves > MaxSlaves {
		return nil, fmt.Errorf("slaves = %d: want 1 to %d", o.Slaves, MaxSlaves)
	}
	if o.Cost == 0 {
		o.Cost = bcrypt.DefaultCost
	}
	if !o.Force {
		for _, pattern := range []string{UsersFile, "*.creds"} {
			if m, _ := filepath.Glob(filepath.Join(dir, pattern)); len(m) > 0 {
				return nil, fmt.Errorf("%w in %s (replace them with force, then restart the NATS server)", ErrExist, dir)
			}
		}
	}

	var sec Secrets
	newUser := func(user, account string) (natsnet.Credential, userData, error) {
		var b [24]byte
		if _, err := rand.Read(b[:]); err != nil {
			return natsnet.Credential{}, userData{}, err
		}
		pass := base64.RawURLEncoding.EncodeToString(b[:])
		hash, err := bcrypt.GenerateFromPassword([]byte(pass), o.Cost)
		if err != nil {
			return natsnet.Credential{}, userData{}, err
		}
		return natsnet.Credential{User: user, Password: pass}, userData{user, string(hash), account}, nil
	}
	cred, master, err := newUser(MasterUser, "MASTER")
	if err != nil {
		return nil, err
	}
	sec.Master = cred
	users := make([]userData, o.Slaves)
	for k := range users {
		if cred, users[k], err = newUser(SlaveUser(k+1), fmt.Sprintf("SLAVE_%d", k+1)); err != nil {
			return nil, err
		}
		sec.Slaves = append(sec.Slaves, cred)
	}
	data := struct {
		Master        userData
		Slaves        []slaveData
		SlaveAccounts string
	}{Master: master}
	var all []string
	for k, u := range users {
		others := append(append([]userData{}, users[:k]...), users[k+1:]...)
		var names []string
		for _, x := range others {
			names = append(names, x.Account)
		}
		data.Slaves = append(data.Slaves, slaveData{u, others, strings.Join(names, ", ")})
		all = append(all, u.Account)
	}
	data.SlaveAccounts = strings.Join(all, ", ")
	tmpl, err := template.New("users.conf").Parse(usersTemplate)
	if err != nil {
		return nil, err
	}
	var conf bytes.Buffer
	if err := tmpl.Execute(&conf, data); err != nil {
		return nil, err
	}

	files := map[string][]byte{
		UsersFile:  conf.Bytes(),
		MasterFile: creds(sec.Master),
		SlavesFile: creds(sec.Slaves...),
	}
	for k, c := range sec.Slaves {
		files[SlaveFile(k+1)] = creds(c)
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, err
	}
	if err := os.Chmod(dir, 0o700); err != nil {
		return nil, err
	}
	// Per-slave files of an earlier, larger pool are stale: remove them.
	if old, _ := filepath.Glob(filepath.Join(dir, "slave-*.creds")); len(old) > 0 {
		for _, f := range old {
			if _, keep := files[filepath.Base(f)]; !keep {
				if err := os.Remove(f); err != nil && !errors.Is(err, fs.ErrNotExist) {
					return nil, err
				}
			}
		}
	}
	for name, b := range files {
		if err := writeSecret(filepath.Join(dir, name), b); err != nil {
			return nil, err
		}
	}
	return &sec, nil
}

func creds(cs ...natsnet.Credential) []byte {
	var b bytes.Buffer
	b.WriteString("# NATS identities for pipedbn (user:password), made by `make compose-secrets`. SECRET.\n")
	for _, c := range cs {
		fmt.Fprintf(&b, "%s:%s\n", c.User, c.Password)
	}
	return b.Bytes()
}

// writeSecret writes b to path, readable by its owner only (CreateTemp's
// mode), replacing the file whole.
func writeSecret(path string, b []byte) error {
	tmp, err := os.CreateTemp(filepath.Dir(path), ".tmp-"+filepath.Base(path))
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.Write(b); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), path)
}
