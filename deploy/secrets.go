// Package deploy runs pipedbn as containers: it generates the secrets of the
// docker-compose setup (the NATS users, their permissions and passwords:
// natsnet.Identities, the accounts config rendered from natsnet's template
// with bcrypt hashes) and holds its tests: the permission tests against an
// embedded nats-server with the same config file, and the compose
// end-to-end test (build tag compose). The images, the compose file and the
// server config are beside it: Dockerfile, ../docker-compose.yml, nats/.
package deploy

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"golang.org/x/crypto/bcrypt"

	"github.com/pipedbn/pipedbn/pipeline/natsnet"
)

// File names in the secrets folder.
const (
	// UsersFile is the NATS server's users, permissions and password
	// hashes, included by nats/nats.conf.
	UsersFile = "nats-users.conf"
	// ClusterUsersFile is the same users for every server of a NATS
	// cluster (deploy/stack.yml): without the one-connection limit of a
	// slave identity, which a cluster cannot keep when a server dies
	// (natsnet.Identities.ClusterConfig); the stack's slaves take
	// identities by task slot instead.
	ClusterUsersFile = "nats-cluster-users.conf"
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
func SlaveUser(k int) string { return natsnet.SlaveUser(k) }

// MaxSlaves bounds Options.Slaves: every slave account imports from every
// other, so the config grows with its square.
const MaxSlaves = natsnet.MaxSlaveIdentities

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
type Secrets = natsnet.Identities

// ErrExist is returned when the folder already holds secrets and
// Options.Force is not set.
var ErrExist = errors.New("deploy: secrets exist")

// Generate writes fresh secrets to dir (made 0700, files 0600): the NATS
// server's users file and the cluster's, the master's identity, the pool of slave identities
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
				if err := refreshUsers(dir, o.Cost); err != nil {
					return nil, err
				}
				return nil, fmt.Errorf("%w in %s (the servers' permissions are refreshed, the passwords kept; replace them with force, then restart the NATS server)", ErrExist, dir)
			}
		}
	}

	slaves := make([]string, o.Slaves)
	for k := range slaves {
		slaves[k] = SlaveUser(k + 1)
	}
	sec, err := natsnet.NewIdentities(MasterUser, slaves)
	if err != nil {
		return nil, err
	}
	files := map[string][]natsnet.Credential{
		MasterFile: {sec.Master},
		SlavesFile: sec.Slaves,
	}
	for k, c := range sec.Slaves {
		files[SlaveFile(k+1)] = []natsnet.Credential{c}
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
	if err := writeUsers(dir, sec, o.Cost); err != nil {
		return nil, err
	}
	for name, cs := range files {
		if err := natsnet.WriteCredentials(filepath.Join(dir, name), credsComment, cs); err != nil {
			return nil, err
		}
	}
	return sec, nil
}

const credsComment = "NATS identities for pipedbn (user:password), made by `make compose-secrets`. SECRET."

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

// refreshUsers writes the servers' users files anew from the identities a
// folder keeps: the passwords stay, the permissions become this build's (a
// folder made by an older build may lack a file, or grant subjects that
// have since changed, such as the registration subject of each slave).
func refreshUsers(dir string, cost int) error {
	master, err := natsnet.ReadCredentials(filepath.Join(dir, MasterFile))
	if err != nil {
		return err
	}
	slaves, err := natsnet.ReadCredentials(filepath.Join(dir, SlavesFile))
	if err != nil {
		return err
	}
	return writeUsers(dir, &natsnet.Identities{Master: master[0], Slaves: slaves}, cost)
}

// writeUsers writes the servers' users files of ids: the single server's
// and the cluster's, with the bcrypt hashes of the passwords only.
func writeUsers(dir string, ids *natsnet.Identities, cost int) error {
	hashes := map[string]string{} // one hash a password for both files
	hash := func(pass string) (string, error) {
		if h, ok := hashes[pass]; ok {
			return h, nil
		}
		h, err := bcrypt.GenerateFromPassword([]byte(pass), cost)
		hashes[pass] = string(h)
		return string(h), err
	}
	conf, err := ids.ServerConfig(hash)
	if err != nil {
		return err
	}
	clusterConf, err := ids.ClusterConfig(hash)
	if err != nil {
		return err
	}
	if err := writeSecret(filepath.Join(dir, UsersFile), conf); err != nil {
		return err
	}
	return writeSecret(filepath.Join(dir, ClusterUsersFile), clusterConf)
}
