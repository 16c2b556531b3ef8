//go:build compose || stack

package deploy

import (
	"crypto/rand"
	"encoding/hex"
	"os"
	"path/filepath"
	"testing"

	"golang.org/x/crypto/bcrypt"

	"github.com/pipedbn/pipedbn/config"
	"github.com/pipedbn/pipedbn/dbn"
)

// e2e is what an end-to-end test on a shared engine needs: a name of its
// own, folders for the binaries, the runs and the secrets, the job's
// config and the slaves' credentials.
type e2e struct {
	// name ("pipedbn-e2e-<id>") names the compose project or the stack,
	// tag ("e2e-<id>") the images: unique, so that runs on a shared engine
	// never mix.
	name, tag string
	// dirs: "build", "runs" (made) and "secrets" (with the credentials of
	// the slaves), in a temporary folder.
	dirs map[string]string
	// config is the job's config file.
	config string
}

// newE2E prepares an end-to-end run of job, written to file in a
// temporary folder, with credentials for slaves slaves.
func newE2E(t *testing.T, file, job string, slaves int) *e2e {
	t.Helper()
	var rnd [4]byte
	rand.Read(rnd[:])
	id := hex.EncodeToString(rnd[:])
	tmp := t.TempDir()
	e := &e2e{name: "pipedbn-e2e-" + id, tag: "e2e-" + id, dirs: map[string]string{}, config: filepath.Join(tmp, file)}
	for _, d := range []string{"build", "runs", "secrets"} {
		e.dirs[d] = filepath.Join(tmp, d)
	}
	if err := os.Mkdir(e.dirs["runs"], 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(e.config, []byte(job), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := Generate(e.dirs["secrets"], Options{Slaves: slaves, Cost: bcrypt.MinCost}); err != nil {
		t.Fatal(err)
	}
	return e
}

// planned returns the mini-batches each RBM of the job trains on its n
// training examples, its part of the settle phase included.
func (e *e2e) planned(t *testing.T, n int) []int {
	t.Helper()
	cfg, err := config.Load(e.config, nil)
	if err != nil {
		t.Fatal(err)
	}
	var batches []int
	for _, s := range dbn.Stages(cfg, n) {
		batches = append(batches, s.Batches(n))
	}
	return batches
}
