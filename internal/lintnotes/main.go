// Command lintnotes keeps lab notes out of the product and glue short.
//
// Lab notes: it fails, naming file:line and the match, where a Go comment
// of a non-test file, the README, a page of docs/ (docs/results.md apart,
// the results page) or a config of configs/ holds a date (YYYY-MM-DD), a
// commit hash or an issue number. A comment gives a reason; measurements,
// with their dates, belong in experiments/results/<folder>/README.md and
// docs/results.md, and a comment names the folder. Go files are parsed and
// only their comments are read, so hex constants, date layouts and the
// like in code are not matches.
//
// Short functions: it fails, naming file:line, the function and its
// length, where a function or method of a non-test, non-generated Go file
// runs over MaxFuncLines lines, counted from the func keyword to the
// closing brace. Orchestration reads as steps of a screen each: split a
// long function by step and name each step.
//
// `make lint` runs it from the repository root:
//
//	go run ./internal/lintnotes [root]
//
// Nothing is allow-listed: a legitimate match (a DOI, say) needs a narrow
// rule here, with a test, not an exception by file.
package main

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
)

// A Finding is one match: where, which kind and the text matched.
type Finding struct {
	File  string // slash-separated, relative to the root
	Line  int
	Kind  string // "date", "commit hash" or "issue number"
	Match string
}

func (f Finding) String() string {
	return fmt.Sprintf("%s:%d: %s %q", f.File, f.Line, f.Kind, f.Match)
}

var (
	// dateRE: a calendar date, month 01-12 and day 01-31, as a word.
	dateRE = regexp.MustCompile(`\b\d{4}-(?:0[1-9]|1[0-2])-(?:0[1-9]|[12]\d|3[01])\b`)
	// hexRE: a candidate commit hash, 7 to 40 hex digits as a word; it is a
	// match only with at least one letter and one digit (isHash), so that
	// plain numbers and words such as "defaced" are not.
	hexRE = regexp.MustCompile(`(?i)\b[0-9a-f]{7,40}\b`)
	// issueRE: "issue" or "issues", then a number, with or without a "#".
	issueRE = regexp.MustCompile(`(?i)\bissues?\s*#?\d+`)
)

// isHash reports whether w, all hex digits, holds a letter and a digit.
func isHash(w string) bool {
	return strings.ContainsAny(w, "0123456789") && strings.ContainsAny(strings.ToLower(w), "abcdef")
}

// scanLine returns the findings in one line of text.
func scanLine(file string, line int, text string) []Finding {
	var out []Finding
	for _, m := range dateRE.FindAllString(text, -1) {
		out = append(out, Finding{file, line, "date", m})
	}
	for _, m := range hexRE.FindAllString(text, -1) {
		if isHash(m) {
			out = append(out, Finding{file, line, "commit hash", m})
		}
	}
	for _, m := range issueRE.FindAllString(text, -1) {
		out = append(out, Finding{file, line, "issue number", m})
	}
	return out
}

// scanText checks every line of a text file (Markdown, YAML).
func scanText(file string, src []byte) []Finding {
	var out []Finding
	sc := bufio.NewScanner(bytes.NewReader(src))
	sc.Buffer(make([]byte, 0, 64*1024), 1<<24)
	for n := 1; sc.Scan(); n++ {
		out = append(out, scanLine(file, n, sc.Text())...)
	}
	return out
}

// scanGo checks the comments of a Go source file, and nothing else.
func scanGo(file string, src []byte) ([]Finding, error) {
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, file, src, parser.ParseComments|parser.SkipObjectResolution)
	if err != nil {
		return nil, err
	}
	var out []Finding
	for _, g := range f.Comments {
		for _, c := range g.List {
			first := fset.Position(c.Slash).Line
			for i, text := range strings.Split(c.Text, "\n") {
				out = append(out, scanLine(file, first+i, text)...)
			}
		}
	}
	return out, nil
}

// MaxFuncLines is the most lines a hand-written function may span, from
// its func keyword to its closing brace.
const MaxFuncLines = 80

// A LongFunc is a function over MaxFuncLines lines: where it starts, its
// name (Recv.Name for a method) and how many lines it spans.
type LongFunc struct {
	File  string // slash-separated, relative to the root
	Line  int    // the line of the func keyword
	Name  string
	Lines int
}

func (f LongFunc) String() string {
	return fmt.Sprintf("%s:%d: func %s is %d lines (at most %d)", f.File, f.Line, f.Name, f.Lines, MaxFuncLines)
}

// funcName returns the name of a function, or Recv.Name for a method (the
// receiver's type without pointer or type parameters).
func funcName(fd *ast.FuncDecl) string {
	if fd.Recv == nil || len(fd.Recv.List) == 0 {
		return fd.Name.Name
	}
	t := fd.Recv.List[0].Type
	for {
		switch x := t.(type) {
		case *ast.StarExpr:
			t = x.X
			continue
		case *ast.IndexExpr:
			t = x.X
			continue
		case *ast.IndexListExpr:
			t = x.X
			continue
		case *ast.ParenExpr:
			t = x.X
			continue
		}
		break
	}
	if id, ok := t.(*ast.Ident); ok {
		return id.Name + "." + fd.Name.Name
	}
	return fd.Name.Name
}

// longFuncs returns the functions of a Go source file that span more than
// MaxFuncLines lines, none for a generated file (ast.IsGenerated: the
// "// Code generated ... DO NOT EDIT." line). Function literals count as
// part of the function that holds them.
func longFuncs(file string, src []byte) ([]LongFunc, error) {
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, file, src, parser.ParseComments|parser.SkipObjectResolution)
	if err != nil {
		return nil, err
	}
	if ast.IsGenerated(f) {
		return nil, nil
	}
	var out []LongFunc
	for _, d := range f.Decls {
		fd, ok := d.(*ast.FuncDecl)
		if !ok || fd.Body == nil {
			continue // not a function, or one declared without a body
		}
		first := fset.Position(fd.Type.Func).Line
		n := fset.Position(fd.Body.Rbrace).Line - first + 1
		if n > MaxFuncLines {
			out = append(out, LongFunc{file, first, funcName(fd), n})
		}
	}
	return out, nil
}

// checked reports whether the file at the slash-separated path p, relative
// to the root, is one that lintnotes reads, and whether as Go.
func checked(p string) (ok, isGo bool) {
	for _, seg := range strings.Split(p, "/") {
		if seg == "testdata" || seg == "vendor" || strings.HasPrefix(seg, ".") {
			return false, false
		}
	}
	dir, base := path.Split(p)
	switch {
	case strings.HasSuffix(base, ".go"):
		return !strings.HasSuffix(base, "_test.go"), true
	case p == "README.md":
		return true, false
	case dir == "docs/" && strings.HasSuffix(base, ".md"):
		// docs/results.md is the results page: its measurements are dated.
		return base != "results.md", false
	case dir == "configs/" && (strings.HasSuffix(base, ".yaml") || strings.HasSuffix(base, ".yml")):
		return true, false
	}
	return false, false
}

// Check reads the given files (slash-separated, relative to root), those
// that checked accepts, and returns their findings, sorted by file and line.
func Check(root string, files []string) ([]Finding, error) {
	var out []Finding
	for _, p := range files {
		ok, isGo := checked(p)
		if !ok {
			continue
		}
		src, ok, err := readFile(root, p)
		if err != nil {
			return nil, err
		}
		if !ok {
			continue // tracked by git but deleted in the work tree
		}
		if !isGo {
			out = append(out, scanText(p, src)...)
			continue
		}
		fs, err := scanGo(p, src)
		if err != nil {
			return nil, err
		}
		out = append(out, fs...)
	}
	sortByPlace(out, func(n Finding) (string, int) { return n.File, n.Line })
	return out, nil
}

// CheckFuncs reads the non-test Go files among the given ones
// (slash-separated, relative to root; testdata and vendor apart, as for
// Check) and returns their functions over MaxFuncLines lines, sorted by
// file and line.
func CheckFuncs(root string, files []string) ([]LongFunc, error) {
	var out []LongFunc
	for _, p := range files {
		if ok, isGo := checked(p); !ok || !isGo {
			continue
		}
		src, ok, err := readFile(root, p)
		if err != nil {
			return nil, err
		}
		if !ok {
			continue // tracked by git but deleted in the work tree
		}
		long, err := longFuncs(p, src)
		if err != nil {
			return nil, err
		}
		out = append(out, long...)
	}
	sortByPlace(out, func(n LongFunc) (string, int) { return n.File, n.Line })
	return out, nil
}

// readFile reads file p (slash-separated, relative to root); false, and
// no error, for a file git tracks that the work tree no longer holds.
func readFile(root, p string) ([]byte, bool, error) {
	src, err := os.ReadFile(filepath.Join(root, filepath.FromSlash(p)))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, false, nil
	}
	return src, err == nil, err
}

// sortByPlace sorts findings by file, then line.
func sortByPlace[T any](out []T, place func(T) (string, int)) {
	sort.SliceStable(out, func(i, j int) bool {
		fi, li := place(out[i])
		fj, lj := place(out[j])
		if fi != fj {
			return fi < fj
		}
		return li < lj
	})
}

// listFiles returns the files under root: those git tracks where root is
// a git work tree, else every file found by walking it.
func listFiles(root string) ([]string, error) {
	cmd := exec.Command("git", "ls-files", "-z")
	cmd.Dir = root
	if b, err := cmd.Output(); err == nil {
		var files []string
		for _, p := range strings.Split(string(b), "\x00") {
			if p != "" {
				files = append(files, p)
			}
		}
		return files, nil
	}
	var files []string
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, err := filepath.Rel(root, p)
		if err != nil {
			return err
		}
		files = append(files, filepath.ToSlash(rel))
		return nil
	})
	return files, err
}

func main() {
	root := "."
	if len(os.Args) > 2 {
		fmt.Fprintln(os.Stderr, "usage: lintnotes [root]")
		os.Exit(2)
	}
	if len(os.Args) == 2 {
		root = os.Args[1]
	}
	files, err := listFiles(root)
	if err != nil {
		fmt.Fprintln(os.Stderr, "lintnotes:", err)
		os.Exit(1)
	}
	notes, err := Check(root, files)
	if err != nil {
		fmt.Fprintln(os.Stderr, "lintnotes:", err)
		os.Exit(1)
	}
	long, err := CheckFuncs(root, files)
	if err != nil {
		fmt.Fprintln(os.Stderr, "lintnotes:", err)
		os.Exit(1)
	}
	for _, f := range notes {
		fmt.Println(f)
	}
	for _, f := range long {
		fmt.Println(f)
	}
	if len(notes) > 0 {
		fmt.Fprintf(os.Stderr, "lintnotes: %d lab notes in the product: move measurements to experiments/results/<folder>/README.md and name the folder\n", len(notes))
	}
	if len(long) > 0 {
		fmt.Fprintf(os.Stderr, "lintnotes: %d functions over %d lines: split each by step and name the steps\n", len(long), MaxFuncLines)
	}
	if len(notes) > 0 || len(long) > 0 {
		os.Exit(1)
	}
}
