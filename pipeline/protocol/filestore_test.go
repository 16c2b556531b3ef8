package protocol

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"testing"
)

func TestFileStore(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	dir := filepath.Join(t.TempDir(), "checkpoints")
	s, err := OpenFileStore(dir)
	if err != nil {
		t.Fatal(err)
	}
	if got := s.Where(); got != "files in "+dir {
		t.Errorf("Where() = %q; want files in %s", got, dir)
	}
	if names, err := s.List(ctx); names != nil || err != nil {
		t.Fatalf("List() of a new store = %v, %v; want nothing", names, err)
	}
	for name, v := range map[string]string{"rbm-2/000000000040": "old", "master": "state", "rbm-1-replica-1/000000000005": "r"} {
		if err := s.Put(ctx, name, []byte(v)); err != nil {
			t.Fatalf("Put(%s): %v", name, err)
		}
	}
	if err := s.Put(ctx, "rbm-2/000000000040", []byte("new")); err != nil {
		t.Fatal(err)
	}
	if got, err := s.Get(ctx, "rbm-2/000000000040"); string(got) != "new" || err != nil {
		t.Fatalf("Get after a second Put = %q, %v; want new", got, err)
	}
	// A put the master did not finish is not an object.
	if err := os.WriteFile(filepath.Join(dir, "rbm-2", ".000000000045.123456"), []byte("half"), 0o600); err != nil {
		t.Fatal(err)
	}
	want := []string{"master", "rbm-1-replica-1/000000000005", "rbm-2/000000000040"}
	if names, err := s.List(ctx); !reflect.DeepEqual(names, want) || err != nil {
		t.Fatalf("List() = %v, %v; want %v", names, err, want)
	}
	if err := s.Delete(ctx, "rbm-2/000000000040"); err != nil {
		t.Fatal(err)
	}
	if err := s.Delete(ctx, "rbm-2/000000000040"); err != nil {
		t.Errorf("Delete of a name not stored: %v; want nil", err)
	}
	if got, err := s.Get(ctx, "rbm-2/000000000040"); got != nil || !errors.Is(err, ErrNotStored) {
		t.Fatalf("Get after Delete = %q, %v; want ErrNotStored", got, err)
	}
	for _, bad := range []string{"", "../outside", "/etc/passwd", "rbm-2/../../x", "rbm-2/.000000000045.1"} {
		if err := s.Put(ctx, bad, []byte("x")); err == nil {
			t.Errorf("Put(%q) = nil; want an error naming the invalid name", bad)
		}
	}
	if _, err := os.Stat(filepath.Join(filepath.Dir(dir), "outside")); err == nil {
		t.Error("a Put wrote outside the store's folder")
	}
	if err := s.Destroy(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(dir); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("after Destroy, %s: %v; want it gone", dir, err)
	}
}
