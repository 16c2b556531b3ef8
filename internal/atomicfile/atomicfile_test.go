package atomicfile

import (
	"os"
	"path/filepath"
	"testing"
)

// A write replaces the file whole, leaves no temporary file behind and
// makes the file readable by everyone.
func TestWriteFile(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	path := filepath.Join(dir, "result.json")
	if err := os.WriteFile(path, []byte("old, longer content"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := WriteJSON(path, map[string]int{"a": 1}); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := string(b), "{\n  \"a\": 1\n}\n"; got != want {
		t.Errorf("WriteJSON wrote %q; want %q", got, want)
	}
	st, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if got := st.Mode().Perm(); got != 0o644 {
		t.Errorf("mode = %v; want 0644", got)
	}
	entries, _ := os.ReadDir(dir)
	if len(entries) != 1 {
		t.Errorf("folder holds %d entries; want only result.json", len(entries))
	}
	if err := WriteFile(filepath.Join(dir, "missing", "x"), nil); err == nil {
		t.Error("WriteFile into a missing folder: no error")
	}
}

// A private write is its owner's alone and leaves no temporary file.
func TestWritePrivate(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	path := filepath.Join(dir, "000000000040")
	if err := WritePrivate(path, []byte("checkpoint")); err != nil {
		t.Fatal(err)
	}
	if b, err := os.ReadFile(path); string(b) != "checkpoint" || err != nil {
		t.Fatalf("read back %q, %v; want checkpoint", b, err)
	}
	if st, err := os.Stat(path); err != nil || st.Mode().Perm() != 0o600 {
		t.Fatalf("mode %v, %v; want 0600", st.Mode().Perm(), err)
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 1 {
		t.Errorf("%d files in the folder; want 1, no temporary file left", len(entries))
	}
}
