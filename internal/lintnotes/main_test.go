package main

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

// scanLine finds dates, commit hashes and issue numbers, and nothing that
// merely looks like them.
func TestScanLine(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		text string
		want []string // "kind match"
	}{
		{"Default 8 since 2026-11-28 (4 from 2026-11-27)", []string{"date 2026-11-28", "date 2026-11-27"}},
		{"1999-12-31 and 2026-02-29", []string{"date 1999-12-31", "date 2026-02-29"}},
		{"not dates: 2026-13-01, 2026-00-10, 2026-11-32, 12026-11-28", nil},
		{"commit 9ddc271's binary", []string{"commit hash 9ddc271"}},
		{"commits b1297c5-4202970", []string{"commit hash b1297c5"}},
		{"7251afb7cfd4f8b2245299d1dfec68956810b427", []string{"commit hash 7251afb7cfd4f8b2245299d1dfec68956810b427"}},
		{"upper case too: 9DDC271", []string{"commit hash 9DDC271"}},
		{"no hashes: 2147483647 deadbeef defaced 784x500 0x1a2b3c4d5e abc123 float64", nil},
		{"sha256 " + strings.Repeat("a1", 32), nil},
		{"issue 14, issue #16, Issue 3 and issues 13", []string{"issue number issue 14", "issue number issue #16", "issue number Issue 3", "issue number issues 13"}},
		{"no issue here, nor a tissue 3, nor issue-free", nil},
	} {
		var got []string
		for _, f := range scanLine("f", 1, tc.text) {
			got = append(got, f.Kind+" "+f.Match)
		}
		if !reflect.DeepEqual(got, tc.want) {
			t.Errorf("scanLine(%q) = %q; want %q", tc.text, got, tc.want)
		}
	}
}

// scanGo reads comments only, each line at its own line number; code that
// holds a date layout or a hex constant is not a match.
func TestScanGo(t *testing.T) {
	t.Parallel()
	src := `// Package p is a test (issue 14).
package p

const layout = "2006-01-02" // the layout time.Parse wants

var mask = 0xdeadbeef12

/*
A block comment: line 9,
and line 10 names commit 9ddc271.
*/
func f() string { return "issue 3" } // seen 2026-11-27
`
	got, err := scanGo("p.go", []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	want := []Finding{
		{"p.go", 1, "issue number", "issue 14"},
		{"p.go", 10, "commit hash", "9ddc271"},
		{"p.go", 12, "date", "2026-11-27"},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("scanGo = %v; want %v", got, want)
	}
	if _, err := scanGo("bad.go", []byte("package p\nfunc (")); err == nil {
		t.Error("scanGo of a file that does not parse: no error")
	}
}

// checked reads non-test Go files, the README, docs/ but its results page,
// and configs/; nothing else.
func TestChecked(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		path     string
		ok, isGo bool
	}{
		{"config/config.go", true, true},
		{"main.go", true, true},
		{"config/config_test.go", false, true},
		{"pipeline/testdata/x.go", false, false},
		{".git/x.go", false, false},
		{"README.md", true, false},
		{"docs/operations.md", true, false},
		{"docs/results.md", false, false},
		{"CHANGELOG.md", false, false},
		{"experiments/results/machines8/README.md", false, false},
		{"experiments/README.md", false, false},
		{"configs/quickstart.yaml", true, false},
		{"configs/other.yml", true, false},
		{"experiments/machines8.yaml", false, false},
		{"deploy/stack.yml", false, false},
	} {
		ok, isGo := checked(tc.path)
		if ok != tc.ok || (ok && isGo != tc.isGo) {
			t.Errorf("checked(%q) = %v, %v; want %v, %v", tc.path, ok, isGo, tc.ok, tc.isGo)
		}
	}
}

// Check reads the files it should, reports file:line, and fails on a Go
// file it cannot parse.
func TestCheck(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	files := map[string]string{
		"README.md":                "# p\n\nMeasured 2026-11-28.\n",
		"docs/results.md":          "Measured 2026-11-28 with commit 9ddc271.\n",
		"docs/design.md":           "As issue 14 asks.\n",
		"configs/a.yaml":           "# since 2026-11-27\nname: a\n",
		"experiments/x.yaml":       "# since 2026-11-27\n",
		"p/p.go":                   "package p\n\n// Fixed in 9ddc271.\nvar s = \"2026-11-28\"\n",
		"p/p_test.go":              "package p\n\n// issue 3\n",
		"p/testdata/broken.go":     "not Go",
		"CHANGELOG.md":             "## 2026-11-28\n",
		"experiments/results/r.md": "2026-11-28\n",
	}
	var names []string
	for name, text := range files {
		path := filepath.Join(root, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
		names = append(names, name)
	}
	got, err := Check(root, names)
	if err != nil {
		t.Fatal(err)
	}
	var lines []string
	for _, f := range got {
		lines = append(lines, f.String())
	}
	want := []string{
		`README.md:3: date "2026-11-28"`,
		`configs/a.yaml:1: date "2026-11-27"`,
		`docs/design.md:1: issue number "issue 14"`,
		`p/p.go:3: commit hash "9ddc271"`,
	}
	if !reflect.DeepEqual(lines, want) {
		t.Errorf("Check = %q; want %q", lines, want)
	}

	if err := os.WriteFile(filepath.Join(root, "p", "bad.go"), []byte("package p\nfunc ("), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := Check(root, append(names, "p/bad.go")); err == nil {
		t.Error("Check with a Go file that does not parse: no error")
	}
}

// The repository itself holds no lab notes where lintnotes looks: what
// `make lint` checks, run by `go test` too.
func TestRepository(t *testing.T) {
	t.Parallel()
	root := filepath.Join("..", "..")
	files, err := listFiles(root)
	if err != nil {
		t.Fatal(err)
	}
	found, err := Check(root, files)
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range found {
		t.Errorf("%s", f)
	}
}
