package natsnet

import (
	"bytes"
	"crypto/rand"
	_ "embed"
	"encoding/base64"
	"fmt"
	"strings"
	"text/template"

	"github.com/pipedbn/pipedbn/pipeline"
	"github.com/pipedbn/pipedbn/pipeline/protocol"
)

// usersTemplate is the accounts config of a secured server: one account for
// the master, one per slave identity, and what each may publish and
// subscribe to. Identities.ServerConfig renders it.
//
//go:embed users.conf.tmpl
var usersTemplate string

var usersConf = template.Must(template.New("users.conf").Parse(usersTemplate))

// MasterAccount is the NATS account of the master's identity. The run's
// checkpoints are a JetStream object store in it, kept under the account's
// name in the server's store folder: a restarted master with new passwords
// finds them because the name stays.
const MasterAccount = "MASTER"

// slaveAccount is the account of slave identity k (1-based).
func slaveAccount(k int) string { return fmt.Sprintf("SLAVE_%d", k) }

// MaxSlaveIdentities bounds the slave identities of one server: every slave
// account imports from every other, so the config grows with their square.
// It is pipeline.MaxSlaves, which the checks before a run hold it to.
const MaxSlaveIdentities = pipeline.MaxSlaves

// Identities are the NATS users of a secured server: the master's and one
// per slave identity, each with a random password. A slave identity is held
// by one connection at a time, and its user is the slave's name on the wire.
type Identities struct {
	Master Credential
	Slaves []Credential
}

// NewIdentities makes the identities of a master and its slaves with fresh
// passwords of 192 random bits. The slave users must be valid slave names
// (protocol.CheckName), distinct, 1 to MaxSlaveIdentities of them; the master's a
// name of the same letters, none of the slaves'.
func NewIdentities(master string, slaves []string) (*Identities, error) {
	if len(slaves) < 1 || len(slaves) > MaxSlaveIdentities {
		return nil, fmt.Errorf("identities: %d slaves: want 1 to %d", len(slaves), MaxSlaveIdentities)
	}
	// The master's user may be protocol.MasterName, which no slave may take.
	if err := protocol.CheckName(master); err != nil && master != protocol.MasterName {
		return nil, fmt.Errorf("identities: master %w", err)
	}
	seen := map[string]bool{master: true}
	ids := &Identities{}
	var err error
	if ids.Master, err = newCredential(master); err != nil {
		return nil, err
	}
	for _, s := range slaves {
		if err := protocol.CheckName(s); err != nil {
			return nil, fmt.Errorf("identities: slave %w", err)
		}
		if seen[s] {
			return nil, fmt.Errorf("identities: user %q twice", s)
		}
		seen[s] = true
		c, err := newCredential(s)
		if err != nil {
			return nil, err
		}
		ids.Slaves = append(ids.Slaves, c)
	}
	return ids, nil
}

func newCredential(user string) (Credential, error) {
	var b [24]byte
	if _, err := rand.Read(b[:]); err != nil {
		return Credential{}, fmt.Errorf("identities: %w", err)
	}
	return Credential{User: user, Password: base64.RawURLEncoding.EncodeToString(b[:])}, nil
}

type userData struct {
	User, Hash, Account string // Hash: what the config holds for the password
}

type slaveData struct {
	userData
	Others        []userData
	OtherAccounts string
}

// ServerConfig renders the accounts config of a server that admits ids
// alone (users.conf.tmpl): the master in MasterAccount, with JetStream, and
// every slave identity in an account of its own that admits one connection,
// each allowed to publish only on its own subjects. hash turns a password
// into what the config holds, such as a bcrypt hash; nil keeps the password
// in clear, only for a config that never touches a disk.
func (ids *Identities) ServerConfig(hash func(password string) (string, error)) ([]byte, error) {
	return ids.render(hash, true)
}

// ClusterConfig renders the accounts config of every server of a NATS
// cluster that admits ids alone: ServerConfig's, but a slave identity is
// not limited to one connection. The servers of a cluster share their
// accounts' connection counts, and a server that dies (SIGKILL, a lost
// host) leaves its connections counted on the others for minutes (until
// they declare it an orphan, 150 s and more): a slave of that server that
// reconnects to another would be refused all that time. So on a cluster
// each slave must be given an identity of its own (slave --name slave-K, as
// the Swarm stack does by task slot): no claim from a shared pool, and a
// second process with a name in use is refused by the master, not by the
// servers.
func (ids *Identities) ClusterConfig(hash func(password string) (string, error)) ([]byte, error) {
	return ids.render(hash, false)
}

// render renders users.conf.tmpl; oneConnection limits each slave account
// to one connection.
func (ids *Identities) render(hash func(password string) (string, error), oneConnection bool) ([]byte, error) {
	if len(ids.Slaves) == 0 {
		// An export to no account would be an export to every account.
		return nil, fmt.Errorf("identities: no slave identity")
	}
	if hash == nil {
		hash = func(p string) (string, error) { return p, nil }
	}
	user := func(c Credential, account string) (userData, error) {
		h, err := hash(c.Password)
		if err != nil {
			return userData{}, fmt.Errorf("identities: hash %s's password: %w", c.User, err)
		}
		// The config quotes users and passwords: nothing may end the quote.
		for _, s := range []string{c.User, h} {
			if s == "" || strings.ContainsAny(s, "\"\\\n\r") {
				return userData{}, fmt.Errorf("identities: %s: user or password hash empty or not quotable", c.User)
			}
		}
		return userData{c.User, h, account}, nil
	}
	master, err := user(ids.Master, MasterAccount)
	if err != nil {
		return nil, err
	}
	users := make([]userData, len(ids.Slaves))
	for k, c := range ids.Slaves {
		if users[k], err = user(c, slaveAccount(k+1)); err != nil {
			return nil, err
		}
	}
	data := struct {
		Master        userData
		Slaves        []slaveData
		SlaveAccounts string
		OneConnection bool
	}{Master: master, OneConnection: oneConnection}
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
	var conf bytes.Buffer
	if err := usersConf.Execute(&conf, data); err != nil {
		return nil, err
	}
	return conf.Bytes(), nil
}

// account is the account of user among ids, "" if none.
func (ids *Identities) account(user string) string {
	if user == ids.Master.User {
		return MasterAccount
	}
	for k, c := range ids.Slaves {
		if c.User == user {
			return slaveAccount(k + 1)
		}
	}
	return ""
}
