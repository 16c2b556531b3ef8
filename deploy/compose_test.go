//go:build compose

// The compose end-to-end test needs a Docker engine, docker-compose (v1) and
// a few minutes, so it has a build tag of its own: `make compose-test` (part
// of `make test`) runs it once, after the race and pure-Go suites.

package deploy

import (
	"archive/tar"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/pipedbn/pipedbn/config"
	"github.com/pipedbn/pipedbn/dbn"
)

// composeJob is the small pipelined job the test runs: two RBMs, three
// slave containers (one stays idle, serving), fine-tuning.
const composeJob = `name: e2e
data:
  train_limit: 2000
  test_limit: 1000
dbn:
  layers: [784, 64, 32]
pretrain:
  mode: pipelined
  epochs: 2
cluster:
  slaves: 2
  join_timeout: 60s
finetune:
  epochs: 1
`

const composeSlaves = 3

// requireDocker skips the test, saying why, unless a Docker engine answers
// and docker-compose is installed.
func requireDocker(t *testing.T) {
	t.Helper()
	if _, err := exec.LookPath("docker"); err != nil {
		t.Skip("skipped: no docker command; the compose end-to-end test needs a Docker engine")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, "docker", "info", "--format", "{{.ServerVersion}}").CombinedOutput()
	if err != nil {
		t.Skipf("skipped: no Docker engine answers (docker info: %v: %s)", err, strings.TrimSpace(string(out)))
	}
	if _, err := exec.LookPath("docker-compose"); err != nil {
		t.Skipf("skipped: Docker %s answers, but docker-compose is not installed", strings.TrimSpace(string(out)))
	}
}

func TestCompose(t *testing.T) {
	requireDocker(t)
	root, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 8*time.Minute)
	defer cancel()

	e := newE2E(t, "e2e.yaml", composeJob, composeSlaves)
	project, tag, dirs, config := e.name, e.tag, e.dirs, e.config
	env := append(os.Environ(),
		"COMPOSE_PROJECT_NAME="+project,
		"PIPEDBN_TAG="+tag,
		"PIPEDBN_BUILD_DIR="+dirs["build"],
		"PIPEDBN_CONFIG="+config,
		"PIPEDBN_RUNS="+dirs["runs"],
		"PIPEDBN_SECRETS="+dirs["secrets"],
		"PIPEDBN_SLAVE_CPUS=0.5",
		"PIPEDBN_SLAVE_THREADS=1",
		"PIPEDBN_NATS_PUBLISH=127.0.0.1:", // a free port
		"PIPEDBN_UID="+strconv.Itoa(os.Getuid()),
		"PIPEDBN_GID="+strconv.Itoa(os.Getgid()),
	)
	run := func(ctx context.Context, name string, args ...string) (string, error) {
		cmd := exec.CommandContext(ctx, name, args...)
		cmd.Dir, cmd.Env = root, env
		cmd.WaitDelay = 10 * time.Second
		out, err := cmd.CombinedOutput()
		return string(out), err
	}
	compose := func(ctx context.Context, args ...string) (string, error) {
		return run(ctx, "docker-compose", append([]string{"-p", project, "-f", filepath.Join(root, "docker-compose.yml")}, args...)...)
	}
	step := func(what string, f func() (string, error)) string {
		t.Helper()
		start := time.Now()
		out, err := f()
		if err != nil {
			t.Fatalf("%s: %v\n%s", what, err, out)
		}
		t.Logf("%s: %.1f s", what, time.Since(start).Seconds())
		return out
	}
	// Tear everything down, always: containers, network, the JetStream
	// volume, and this run's images.
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		if t.Failed() {
			out, _ := compose(ctx, "logs", "--no-color", "--tail", "60")
			t.Logf("compose logs:\n%s", out)
		}
		if out, err := compose(ctx, "down", "-v", "--rmi", "all", "--remove-orphans"); err != nil {
			t.Errorf("docker-compose down: %v\n%s", err, out)
		}
	})

	step("static binaries (deploy/build-binaries.sh)", func() (string, error) {
		return run(ctx, filepath.Join(root, "deploy", "build-binaries.sh"), dirs["build"])
	})
	step("images (docker-compose build)", func() (string, error) { return compose(ctx, "build") })
	for _, img := range []struct {
		name  string
		files []string
	}{
		{"nats", []string{"etc/nats/nats.conf", "healthcheck", "nats-server"}},
		{"master", []string{"master"}},
		{"slave", []string{"slave"}},
	} {
		ref := "pipedbn/" + img.name + ":" + tag
		checkImage(t, ctx, ref, img.files)
		if out, err := run(ctx, "docker", "image", "inspect", "--format", "{{.Size}}", ref); err == nil {
			size, _ := strconv.ParseFloat(strings.TrimSpace(out), 64)
			t.Logf("image %s: %.1f MB", ref, size/1e6)
		}
	}

	out := step(fmt.Sprintf("pipelined job (up --scale slave=%d, until the master exits)", composeSlaves), func() (string, error) {
		return compose(ctx, "up", "--no-build", "--scale", fmt.Sprintf("slave=%d", composeSlaves),
			"--abort-on-container-exit", "--exit-code-from", "master")
	})
	if !strings.Contains(out, "exited with code 0") {
		t.Errorf("docker-compose up: no container exit with code 0 in its output:\n%s", out)
	}
	checkResult(t, filepath.Join(dirs["runs"], "e2e"), e.planned(t, 2000))

	logs, err := compose(ctx, "logs", "--no-color", "nats")
	if err != nil {
		t.Fatalf("docker-compose logs nats: %v\n%s", err, logs)
	}
	if strings.Contains(logs, "Violation") {
		t.Errorf("the NATS server refused something during the run:\n%s", logs)
	}
}

// checkImage checks that the image holds just its files: no secret, no
// stray file from the build context.
func checkImage(t *testing.T, ctx context.Context, ref string, want []string) {
	t.Helper()
	name := strings.NewReplacer("/", "-", ":", "-").Replace(ref)
	if out, err := exec.CommandContext(ctx, "docker", "create", "--name", name, ref).CombinedOutput(); err != nil {
		t.Fatalf("docker create %s: %v\n%s", ref, err, out)
	}
	defer exec.Command("docker", "rm", "-f", "-v", name).Run() // -v: the nats image declares a volume
	cmd := exec.CommandContext(ctx, "docker", "export", name)
	var stdout bytes.Buffer
	cmd.Stdout = &stdout
	if err := cmd.Run(); err != nil {
		t.Fatalf("docker export %s: %v", ref, err)
	}
	secret := regexp.MustCompile(`(?i)creds|users\.conf|secret|password`)
	var got []string
	tr := tar.NewReader(&stdout)
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatalf("%s: read its files: %v", ref, err)
		}
		if secret.MatchString(h.Name) {
			t.Errorf("%s holds %s", ref, h.Name)
		}
		// Docker adds empty placeholders (.dockerenv, etc/hosts, ...).
		if h.Typeflag == tar.TypeReg && h.Size > 0 {
			got = append(got, h.Name)
		}
	}
	if strings.Join(got, " ") != strings.Join(want, " ") {
		t.Errorf("%s holds files %v; want %v", ref, got, want)
	}
}

// checkResult checks the master's result.json (RBM_i trained batches[i-1]
// mini-batches) and weights.npz.
func checkResult(t *testing.T, dir string, batches []int) {
	t.Helper()
	res, err := dbn.ReadResult(filepath.Join(dir, dbn.ResultFile))
	if err != nil {
		t.Fatalf("result.json: %v", err)
	}
	if res.Name != "e2e" || res.Mode != config.Pipelined || fmt.Sprint(res.Layers) != "[784 64 32]" {
		t.Errorf("result.json: name %q, mode %q, layers %v; want e2e, pipelined, [784 64 32]", res.Name, res.Mode, res.Layers)
	}
	if len(res.RBMs) != 2 {
		t.Fatalf("result.json: %d RBMs; want 2", len(res.RBMs))
	}
	workers := map[string]bool{}
	for i, r := range res.RBMs {
		if r.Index != i+1 || r.Batches != batches[i] || len(r.ReconError) != 2 {
			t.Errorf("result.json: rbm %d: index %d, %d batches, %d recon errors; want %d, %d, 2", i+1, r.Index, r.Batches, len(r.ReconError), i+1, batches[i])
		}
		if !regexp.MustCompile(`^slave-[1-9][0-9]*$`).MatchString(r.Worker) || workers[r.Worker] {
			t.Errorf("result.json: rbm %d trained by %q; want a slave identity of its own (slave-k)", i+1, r.Worker)
		}
		workers[r.Worker] = true
	}
	if res.Finetune == nil || res.Finetune.Epochs != 1 || res.Finetune.TestAccuracy <= 0 || res.Finetune.TestAccuracy > 1 {
		t.Errorf("result.json: finetune %+v; want 1 epoch and a test accuracy", res.Finetune)
	}
	w, err := os.ReadFile(filepath.Join(dir, res.Weights))
	if err != nil {
		t.Fatalf("weights: %v", err)
	}
	if !bytes.HasPrefix(w, []byte("PK")) {
		t.Errorf("%s is not an .npz (zip) file", res.Weights)
	}
}
