package protocol

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/pipedbn/pipedbn/internal/atomicfile"
)

// FileStore is a Store in a folder of the master's machine, one file per
// name: the store of runs on the embedded NATS server, whose JetStream
// would keep its files on the same disk. A Put writes a temporary file,
// syncs it and renames it over the name (atomicfile.WritePrivate), so a
// name holds a whole object or its previous one, whenever the master stops.
//
// It does the work of a JetStream object store put without the server,
// which saves a pipelined run some of its checkpoints' cost (measured in
// experiments/results/README.md, "One box, step by step").
type FileStore struct {
	dir string
}

// OpenFileStore returns the store in dir, creating the folder if need be.
func OpenFileStore(dir string) (*FileStore, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("checkpoint store: %w", err)
	}
	return &FileStore{dir: dir}, nil
}

// file is the path of name, which must be a relative slash-separated path
// below the store's folder ("rbm-2/000000000040", "master") with no
// element that starts with a dot: those are a Put's temporary files.
func (s *FileStore) file(name string) (string, error) {
	if name == "" || !fs.ValidPath(name) || hidden(name) {
		return "", fmt.Errorf("checkpoint store %s: invalid name %q", s.dir, name)
	}
	return filepath.Join(s.dir, filepath.FromSlash(name)), nil
}

// hidden reports whether an element of the slash-separated name starts
// with a dot.
func hidden(name string) bool {
	for _, e := range strings.Split(name, "/") {
		if strings.HasPrefix(e, ".") {
			return true
		}
	}
	return false
}

// Put implements Store.
func (s *FileStore) Put(_ context.Context, name string, data []byte) error {
	p, err := s.file(name)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
		return fmt.Errorf("checkpoint store: put %s: %w", name, err)
	}
	if err := atomicfile.WritePrivate(p, data); err != nil {
		return fmt.Errorf("checkpoint store: put %s: %w", name, err)
	}
	return nil
}

// Get implements Store.
func (s *FileStore) Get(_ context.Context, name string) ([]byte, error) {
	p, err := s.file(name)
	if err != nil {
		return nil, err
	}
	b, err := os.ReadFile(p)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("%s: %w", name, ErrNotStored)
	}
	return b, err
}

// Delete implements Store.
func (s *FileStore) Delete(_ context.Context, name string) error {
	p, err := s.file(name)
	if err != nil {
		return err
	}
	if err := os.Remove(p); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	return nil
}

// List implements Store.
func (s *FileStore) List(context.Context) ([]string, error) {
	var names []string
	err := fs.WalkDir(os.DirFS(s.dir), ".", func(name string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if !d.IsDir() && !hidden(name) {
			names = append(names, name)
		}
		return nil
	})
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	sort.Strings(names)
	return names, err
}

// Where implements Store.
func (s *FileStore) Where() string { return "files in " + s.dir }

// Destroy deletes the folder and everything in it: the run is complete.
func (s *FileStore) Destroy(context.Context) error { return os.RemoveAll(s.dir) }
