// Package testbin builds the project's commands for the tests that run them
// as processes (a slave the master starts, the master's exit codes), once
// for a whole `go test ./...`.
//
// go test runs each package's test binary as its own process, several at a
// time, so a build cached in memory would still be made once per package.
// Build keeps its binaries in a folder under os.TempDir() instead, keyed by
// the module's root, the build tags and the package, one entry per state of
// the sources; a file lock (flock) makes the packages that ask at the same
// time wait for the first one's build and then reuse it.
//
// An entry is named by a hash of everything the binary is built from that can
// change between runs: the toolchain and its settings (go env), the build
// tags, go.mod and go.sum, and every file go list names for the packages of
// the main module (or of a module replaced by a local folder) that the
// command imports: Go, cgo, C, header, assembly and embedded files. Other
// modules are fixed by go.mod and the module cache. So a binary is never
// reused for different sources, and editing a test file rebuilds nothing.
package testbin

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/pipedbn/pipedbn/blas"
)

// keepUnused is how long an entry no Build has asked for is kept. Binaries
// of older sources are not removed at once: another `go test` in the same
// tree, started before an edit, may still be about to run them.
const keepUnused = time.Hour

// attempts is how many times Build builds while the sources change under it
// (someone saving a file during the build) before it gives up.
const attempts = 3

// Tags returns the build tags the commands should be built with to compute
// like this test binary: "purego" when it runs gonum's pure-Go BLAS (it was
// built with -tags purego), else "".
func Tags() string {
	if blas.Name() == "gonum" {
		return "purego"
	}
	return ""
}

// Build builds the main package pkg with Tags and returns the binary's path.
// pkg is an import path ("github.com/pipedbn/pipedbn/cmd/slave") or a path
// relative to the module's root ("./cmd/slave"); the module is the one of
// the current directory, a package's folder under go test. The binary is
// shared with other packages' tests and later runs: the caller must not
// change or remove it.
func Build(pkg string) (string, error) {
	dir := filepath.Join(os.TempDir(), fmt.Sprintf("pipedbn-testbin-%d", os.Getuid()))
	bin, _, err := build(dir, "", Tags(), pkg)
	return bin, err
}

// build is Build with the cache folder, the directory to run go in ("" for
// the current one) and the tags given; built reports whether this call built
// the binary rather than reusing one.
func build(cache, workDir, tags, pkg string) (bin string, built bool, err error) {
	defer func() {
		if err != nil {
			err = fmt.Errorf("testbin: build %s: %w", pkg, err)
		}
	}()
	env, err := goCmd(workDir, "env", "GOMOD", "GOVERSION", "GOOS", "GOARCH", "GOAMD64", "GOEXPERIMENT",
		"GOFLAGS", "GOWORK", "CGO_ENABLED", "CC", "CGO_CFLAGS", "CGO_CPPFLAGS", "CGO_LDFLAGS")
	if err != nil {
		return "", false, err
	}
	gomod, _, _ := strings.Cut(string(env), "\n")
	if gomod == "" || gomod == os.DevNull {
		return "", false, errors.New("not in a module")
	}
	root := filepath.Dir(gomod)
	// The import path names the package the same whichever way pkg does.
	files, importPath, err := sources(root, tags, pkg)
	if err != nil {
		return "", false, err
	}
	name := path.Base(importPath)

	keyDir := filepath.Join(cache, hashOf(root, tags, importPath)[:16]+"-"+name)
	if err := os.MkdirAll(keyDir, 0o755); err != nil {
		return "", false, err
	}
	unlock, err := lock(filepath.Join(keyDir, "lock"))
	if err != nil {
		return "", false, err
	}
	defer unlock()

	for attempt := 1; ; attempt++ {
		sum, err := hashFiles(env, tags, importPath, files)
		if err != nil {
			return "", false, err
		}
		entry := filepath.Join(keyDir, sum[:32])
		bin = filepath.Join(entry, name)
		if _, err := os.Stat(bin); err == nil {
			now := time.Now()
			os.Chtimes(entry, now, now) // used: not pruned for another keepUnused
			prune(keyDir, entry)
			return bin, false, nil
		}

		tmp, err := os.MkdirTemp(keyDir, "build-")
		if err != nil {
			return "", false, err
		}
		if out, err := goCmd(root, "build", "-tags", tags, "-o", filepath.Join(tmp, name), importPath); err != nil {
			os.RemoveAll(tmp)
			return "", false, fmt.Errorf("go build -tags %q %s: %w\n%s", tags, importPath, err, bytes.TrimSpace(out))
		}
		// Published only if the sources are still the ones hashed: a file
		// saved during the build may or may not be in the binary.
		if again, err := hashFiles(env, tags, importPath, files); err == nil && again == sum {
			os.RemoveAll(entry) // an entry whose binary was removed
			if err := os.Rename(tmp, entry); err != nil {
				os.RemoveAll(tmp)
				return "", false, err
			}
			prune(keyDir, entry)
			return bin, true, nil
		}
		os.RemoveAll(tmp)
		if attempt == attempts {
			return "", false, fmt.Errorf("the sources changed during each of %d builds", attempts)
		}
		// The edit may have added or removed files too.
		if files, _, err = sources(root, tags, pkg); err != nil {
			return "", false, err
		}
	}
}

// goCmd runs the go command in dir and returns its standard output, or an
// error that holds its standard error.
func goCmd(dir string, args ...string) ([]byte, error) {
	cmd := exec.Command("go", args...)
	cmd.Dir = dir
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		if args[0] == "build" {
			// The compiler's messages go to either.
			return append(stdout.Bytes(), stderr.Bytes()...), err
		}
		return nil, fmt.Errorf("go %s: %w\n%s", args[0], err, bytes.TrimSpace(stderr.Bytes()))
	}
	return stdout.Bytes(), nil
}

// listed is what sources reads of go list's description of a package.
type listed struct {
	ImportPath string
	Dir        string
	Module     *struct {
		Main    bool
		Replace *struct{ Version string } // Version "": a folder
	}
	GoFiles, CgoFiles, CFiles, CXXFiles, HFiles, SFiles, SysoFiles, EmbedFiles []string
}

// sources returns pkg's import path and the files it is built from that are
// not fixed by go.mod: the go.mod and go.sum of root and the files of the
// packages it imports (it included) from the main module or from a module
// replaced by a folder.
func sources(root, tags, pkg string) (files []string, importPath string, err error) {
	out, err := goCmd(root, "list", "-deps", "-tags", tags,
		"-json=ImportPath,Dir,Module,GoFiles,CgoFiles,CFiles,CXXFiles,HFiles,SFiles,SysoFiles,EmbedFiles", pkg)
	if err != nil {
		return nil, "", err
	}
	files = []string{filepath.Join(root, "go.mod"), filepath.Join(root, "go.sum")}
	for dec := json.NewDecoder(bytes.NewReader(out)); ; {
		var p listed
		if err := dec.Decode(&p); err == io.EOF {
			break
		} else if err != nil {
			return nil, "", fmt.Errorf("go list: %w", err)
		}
		// -deps lists pkg last, after what it imports.
		importPath = p.ImportPath
		if m := p.Module; m == nil || !m.Main && (m.Replace == nil || m.Replace.Version != "") {
			continue
		}
		for _, list := range [][]string{p.GoFiles, p.CgoFiles, p.CFiles, p.CXXFiles, p.HFiles, p.SFiles, p.SysoFiles, p.EmbedFiles} {
			for _, f := range list {
				files = append(files, filepath.Join(p.Dir, f))
			}
		}
	}
	return files, importPath, nil
}

// hashFiles hashes the go env output, tags, pkg and the named files (name
// and content); a file that does not exist hashes as absent.
func hashFiles(env []byte, tags, pkg string, files []string) (string, error) {
	h := sha256.New()
	fmt.Fprintf(h, "%q %q %q\n", env, tags, pkg)
	for _, f := range files {
		b, err := os.ReadFile(f)
		if errors.Is(err, os.ErrNotExist) {
			fmt.Fprintf(h, "%q absent\n", f)
			continue
		}
		if err != nil {
			return "", err
		}
		fmt.Fprintf(h, "%q %d\n", f, len(b))
		h.Write(b)
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

func hashOf(s ...string) string {
	h := sha256.New()
	fmt.Fprintf(h, "%q", s)
	return hex.EncodeToString(h.Sum(nil))
}

// lock takes an exclusive flock on the file at name, creating it, and
// returns its release. flock locks belong to the open file, so two calls in
// one process exclude each other too.
func lock(name string) (unlock func(), err error) {
	f, err := os.OpenFile(name, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return nil, err
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX); err != nil {
		f.Close()
		return nil, fmt.Errorf("lock %s: %w", name, err)
	}
	// Closing the file releases the lock.
	return func() { f.Close() }, nil
}

// prune removes the entries of keyDir other than keep (and builds left by a
// process that died) that no Build has used for keepUnused. It runs under
// keyDir's lock, so no build is under way there.
func prune(keyDir, keep string) {
	des, err := os.ReadDir(keyDir)
	if err != nil {
		return
	}
	for _, de := range des {
		p := filepath.Join(keyDir, de.Name())
		if !de.IsDir() || p == keep {
			continue
		}
		if info, err := de.Info(); err == nil && time.Since(info.ModTime()) > keepUnused {
			os.RemoveAll(p)
		}
	}
}
