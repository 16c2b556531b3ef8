package testbin

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

// module writes a tiny module with a main package ./cmd/hello made of the
// given files and returns its root.
func module(t *testing.T, files map[string]string) string {
	t.Helper()
	root := t.TempDir()
	write(t, filepath.Join(root, "go.mod"), "module example.com/tiny\n\ngo 1.21\n")
	for name, body := range files {
		write(t, filepath.Join(root, "cmd", "hello", name), body)
	}
	return root
}

func write(t *testing.T, name, body string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(name), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(name, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
}

const hello = `package main

import "fmt"

func main() { fmt.Println(greeting) }
`

// output runs bin and returns what it prints.
func output(t *testing.T, bin string) string {
	t.Helper()
	out, err := exec.Command(bin).Output()
	if err != nil {
		t.Fatalf("run %s: %v", bin, err)
	}
	return strings.TrimSpace(string(out))
}

// TestBuildOnce builds a command twice with the same sources: the second
// call reuses the first's binary, then an edit builds a new one beside it
// and an edit of a test file builds nothing.
func TestBuildOnce(t *testing.T) {
	t.Parallel()
	root := module(t, map[string]string{"main.go": hello, "greeting.go": "package main\n\nconst greeting = \"hello\"\n"})
	cache := t.TempDir()

	bin, built, err := build(cache, root, "", "./cmd/hello")
	if err != nil || !built {
		t.Fatalf("first build = %q, built %v, %v; want built", bin, built, err)
	}
	if got := output(t, bin); got != "hello" {
		t.Errorf("%s prints %q; want hello", bin, got)
	}
	again, built, err := build(cache, root, "", "example.com/tiny/cmd/hello")
	if err != nil || built || again != bin {
		t.Errorf("second build = %q, built %v, %v; want %q reused", again, built, err, bin)
	}

	write(t, filepath.Join(root, "cmd", "hello", "hello_test.go"), "package main\n")
	if again, built, err := build(cache, root, "", "./cmd/hello"); err != nil || built || again != bin {
		t.Errorf("build after a test file was added = %q, built %v, %v; want %q reused", again, built, err, bin)
	}

	write(t, filepath.Join(root, "cmd", "hello", "greeting.go"), "package main\n\nconst greeting = \"bonjour\"\n")
	edited, built, err := build(cache, root, "", "./cmd/hello")
	if err != nil || !built || edited == bin {
		t.Fatalf("build after an edit = %q, built %v, %v; want a new binary", edited, built, err)
	}
	if got := output(t, edited); got != "bonjour" {
		t.Errorf("%s prints %q; want bonjour", edited, got)
	}
	if got := output(t, bin); got != "hello" {
		t.Errorf("the binary of the sources before the edit prints %q; want hello", got)
	}
}

// TestBuildConcurrent builds from several callers at once, as the test
// binaries of several packages do: one builds, the others wait and reuse.
func TestBuildConcurrent(t *testing.T) {
	t.Parallel()
	root := module(t, map[string]string{"main.go": hello, "greeting.go": "package main\n\nconst greeting = \"hello\"\n"})
	cache := t.TempDir()

	const callers = 4
	var wg sync.WaitGroup
	bins := make([]string, callers)
	builds := make([]bool, callers)
	errs := make([]error, callers)
	for i := range callers {
		wg.Go(func() { bins[i], builds[i], errs[i] = build(cache, root, "", "./cmd/hello") })
	}
	wg.Wait()
	n := 0
	for i := range callers {
		if errs[i] != nil {
			t.Fatalf("caller %d: %v", i, errs[i])
		}
		if bins[i] != bins[0] {
			t.Errorf("caller %d got %q; caller 0 got %q", i, bins[i], bins[0])
		}
		if builds[i] {
			n++
		}
	}
	if n != 1 {
		t.Errorf("%d of %d concurrent callers built; want 1", n, callers)
	}
}

// TestBuildTags builds with and without a tag that selects a file: two
// binaries, each with its own file.
func TestBuildTags(t *testing.T) {
	t.Parallel()
	root := module(t, map[string]string{
		"main.go":   hello,
		"plain.go":  "//go:build !purego\n\npackage main\n\nconst greeting = \"plain\"\n",
		"purego.go": "//go:build purego\n\npackage main\n\nconst greeting = \"purego\"\n",
	})
	cache := t.TempDir()
	for _, tags := range []string{"", "purego", ""} {
		bin, _, err := build(cache, root, tags, "./cmd/hello")
		if err != nil {
			t.Fatalf("build with tags %q: %v", tags, err)
		}
		want := map[string]string{"": "plain", "purego": "purego"}[tags]
		if got := output(t, bin); got != want {
			t.Errorf("built with tags %q, %s prints %q; want %q", tags, bin, got, want)
		}
	}
}

// TestBuildError: a package that does not compile is an error that shows
// the compiler's message, and leaves nothing to reuse.
func TestBuildError(t *testing.T) {
	t.Parallel()
	root := module(t, map[string]string{"main.go": "package main\n\nvar x int = \"one\"\n\nfunc main() {}\n"})
	cache := t.TempDir()
	for range 2 {
		_, _, err := build(cache, root, "", "./cmd/hello")
		if err == nil {
			t.Fatal("build of a package that does not compile: nil error")
		}
		if msg := err.Error(); !strings.Contains(msg, "main.go:3") || !strings.Contains(msg, `cannot use "one"`) {
			t.Errorf("build error = %q; want the compiler's message about main.go:3", msg)
		}
	}
}

// TestBuildNoPackage: a package that does not exist is an error naming it.
func TestBuildNoPackage(t *testing.T) {
	t.Parallel()
	root := module(t, map[string]string{"main.go": hello})
	_, _, err := build(t.TempDir(), root, "", "./cmd/absent")
	if err == nil || !strings.Contains(err.Error(), "cmd/absent") {
		t.Errorf("build of a missing package: %v; want an error naming cmd/absent", err)
	}
}
