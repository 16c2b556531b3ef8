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

// funcSrc returns the source of a function named name whose declaration,
// from "func" to "}", spans n lines (n >= 2), preceded by a doc comment
// that does not count.
func funcSrc(decl string, n int) string {
	var b strings.Builder
	b.WriteString("// A doc comment,\n// two lines that do not count.\n")
	b.WriteString(decl + " {\n")
	for i := 0; i < n-2; i++ {
		b.WriteString("\t_ = 0\n")
	}
	b.WriteString("}\n")
	return b.String()
}

// longFuncs counts from the func keyword to the closing brace, reports
// functions and methods (Recv.Name) over MaxFuncLines, at the func
// keyword's line, and passes one of exactly MaxFuncLines.
func TestLongFuncs(t *testing.T) {
	t.Parallel()
	src := "package p\n\n" + // lines 1-2
		funcSrc("func short()", MaxFuncLines) + // doc 3-4, func 5-84
		funcSrc("func long()", MaxFuncLines+1) + // doc 85-86, func 87-167
		funcSrc("func (s *S) Ptr()", MaxFuncLines+2) + // doc 168-169, func 170-251
		funcSrc("func (g G[T]) Generic()", MaxFuncLines+5) + // doc 252-253, func 254-338
		funcSrc("func (p Pair[K, V]) Two()", MaxFuncLines+1) + // doc 339-340, func 341-421
		"func asm(x int) int\n" + // a declaration without a body
		"type S struct{}\ntype G[T any] struct{}\ntype Pair[K, V any] struct{}\n"
	got, err := longFuncs("p.go", []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	want := []LongFunc{
		{"p.go", 87, "long", MaxFuncLines + 1},
		{"p.go", 170, "S.Ptr", MaxFuncLines + 2},
		{"p.go", 254, "G.Generic", MaxFuncLines + 5},
		{"p.go", 341, "Pair.Two", MaxFuncLines + 1},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("longFuncs = %v; want %v", got, want)
	}
	if s, w := got[1].String(), "p.go:170: func S.Ptr is 82 lines (at most 80)"; s != w {
		t.Errorf("LongFunc.String() = %q; want %q", s, w)
	}
	if _, err := longFuncs("bad.go", []byte("package p\nfunc (")); err == nil {
		t.Error("longFuncs of a file that does not parse: no error")
	}
}

// A function literal is part of the function that holds it: the literal's
// lines count toward its holder, and a long literal at package level (a
// var) is no function declaration.
func TestLongFuncsLiterals(t *testing.T) {
	t.Parallel()
	lit := "\tf := func() {\n" + strings.Repeat("\t\t_ = 0\n", MaxFuncLines) + "\t}\n\tf()\n"
	src := "package p\n\nfunc holder() {\n" + lit + "}\n\nvar v = func() {\n" +
		strings.Repeat("\t_ = 0\n", MaxFuncLines) + "}\n"
	got, err := longFuncs("p.go", []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	want := []LongFunc{{"p.go", 3, "holder", MaxFuncLines + 5}}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("longFuncs = %v; want %v", got, want)
	}
}

// A generated file (the "// Code generated ... DO NOT EDIT." line) is not
// hand-written: its long functions are not reported.
func TestLongFuncsGenerated(t *testing.T) {
	t.Parallel()
	body := funcSrc("func long()", MaxFuncLines+10)
	gen := "// Code generated by stringer; DO NOT EDIT.\n\npackage p\n\n" + body
	if got, err := longFuncs("gen.go", []byte(gen)); err != nil || len(got) != 0 {
		t.Errorf("longFuncs(generated) = %v, %v; want none", got, err)
	}
	// The marker must be a line of its own before the package clause.
	notGen := "package p\n\n// Code generated by hand; DO NOT EDIT. (not a marker here)\n" + body
	if got, err := longFuncs("p.go", []byte(notGen)); err != nil || len(got) != 1 {
		t.Errorf("longFuncs(marker after package) = %v, %v; want one", got, err)
	}
}

// CheckFuncs reads non-test Go files only, outside testdata, and reports
// them sorted by file and line.
func TestCheckFuncs(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	long := funcSrc("func long()", MaxFuncLines+1)
	files := map[string]string{
		"b/b.go":             "package b\n\n" + long,
		"a/a.go":             "package a\n\n" + funcSrc("func ok()", 3) + long,
		"a/a_test.go":        "package a\n\n" + long,
		"a/testdata/x.go":    "package x\n\n" + long,
		"docs/long.md":       long,
		"vendor/v/v.go":      "package v\n\n" + long,
		"cmd/c/main.go":      "package main\n\n" + funcSrc("func main()", MaxFuncLines),
		"examples/e/e.go":    "package e\n\n" + funcSrc("func (e *E) M()", MaxFuncLines+3) + "type E struct{}\n",
		"gen/gen.go":         "// Code generated by x; DO NOT EDIT.\n\npackage gen\n\n" + long,
		"deleted/deleted.go": "",
	}
	var names []string
	for name, text := range files {
		names = append(names, name)
		if name == "deleted/deleted.go" {
			continue // tracked by git, gone from the work tree
		}
		path := filepath.Join(root, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	got, err := CheckFuncs(root, names)
	if err != nil {
		t.Fatal(err)
	}
	var lines []string
	for _, f := range got {
		lines = append(lines, f.String())
	}
	want := []string{
		"a/a.go:10: func long is 81 lines (at most 80)",
		"b/b.go:5: func long is 81 lines (at most 80)",
		"examples/e/e.go:5: func E.M is 83 lines (at most 80)",
	}
	if !reflect.DeepEqual(lines, want) {
		t.Errorf("CheckFuncs = %q; want %q", lines, want)
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

// No hand-written function of the repository runs over MaxFuncLines lines:
// what `make lint` checks, run by `go test` too. Every offender fails the
// test; no file or function is exempt.
func TestRepositoryFuncs(t *testing.T) {
	t.Parallel()
	root := filepath.Join("..", "..")
	files, err := listFiles(root)
	if err != nil {
		t.Fatal(err)
	}
	long, err := CheckFuncs(root, files)
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range long {
		t.Errorf("%s", f)
	}
}
