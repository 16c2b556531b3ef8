package data

import (
	"archive/zip"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"slices"
	"strings"
)

// npzFile is an open .npz archive (a zip of .npy members, what numpy.savez
// and numpy.savez_compressed write).
type npzFile struct {
	path string
	f    *os.File
	z    *zip.Reader
}

// openNPZ opens the archive at path. Errors are one line naming the file.
func openNPZ(path string) (*npzFile, error) {
	f, st, err := openFile(path, "an .npz archive")
	if err != nil {
		return nil, fmt.Errorf("npz file %s: %w", path, err)
	}
	n, err := newNPZ(path, f, st.Size())
	if err != nil {
		f.Close()
		return nil, err
	}
	n.f = f
	return n, nil
}

// newNPZ reads the zip directory of the archive r of size bytes; path names
// it in errors.
func newNPZ(path string, r io.ReaderAt, size int64) (*npzFile, error) {
	z, err := zip.NewReader(r, size)
	if err != nil {
		if size == 0 {
			return nil, fmt.Errorf("npz file %s: %w", path, malformedf("empty, want a zip archive of .npy arrays (numpy.savez)"))
		}
		return nil, fmt.Errorf("npz file %s: %w", path, malformedf("not a zip archive (%v), want one of .npy arrays (numpy.savez)", err))
	}
	return &npzFile{path: path, z: z}, nil
}

func (n *npzFile) Close() error {
	if n.f == nil {
		return nil
	}
	return n.f.Close()
}

// names lists the archive's arrays, as numpy.load names them (without
// .npy).
func (n *npzFile) names() []string {
	var s []string
	for _, m := range n.z.File {
		s = append(s, printable(strings.TrimSuffix(m.Name, ".npy")))
	}
	return s
}

// has reports whether the archive holds the array name.
func (n *npzFile) has(name string) bool { return n.member(name) != nil }

func (n *npzFile) member(name string) *zip.File {
	// numpy.savez names members NAME.npy; npyio (weights.npz) NAME, which
	// numpy.load reads too.
	for _, m := range n.z.File {
		if m.Name == name+".npy" || m.Name == name {
			return m
		}
	}
	return nil
}

// header reads the header of the array name only.
func (n *npzFile) header(name string) (npyHeader, error) {
	m := n.member(name)
	if m == nil {
		return npyHeader{}, n.missing(name)
	}
	rc, err := m.Open()
	if err != nil {
		return npyHeader{}, fmt.Errorf("npz file %s: array %s: %w", n.path, name, malformedf("cannot open the member: %v", err))
	}
	defer rc.Close()
	h, err := readNPYHeader(rc)
	if err != nil {
		return npyHeader{}, fmt.Errorf("npz file %s: array %s: %w", n.path, name, err)
	}
	return h, nil
}

// read decodes the array name, streaming it out of the archive.
func (n *npzFile) read(name string, want arrayWant) (*npyArray, error) {
	m := n.member(name)
	if m == nil {
		return nil, n.missing(name)
	}
	wrap := func(err error) error { return fmt.Errorf("npz file %s: array %s: %w", n.path, name, err) }
	if m.UncompressedSize64 > MaxNPYBytes+MaxNPYHeader {
		return nil, wrap(malformedf("declares %d bytes, more than %d", m.UncompressedSize64, int64(MaxNPYBytes)))
	}
	rc, err := m.Open()
	if err != nil {
		return nil, wrap(malformedf("cannot open the member: %v", err))
	}
	defer rc.Close()
	want.size = int64(m.UncompressedSize64)
	a, err := readNPY(rc, want)
	if err != nil {
		if !errors.Is(err, ErrMalformed) {
			// Read from the archive, not the disk: a bad checksum, a
			// corrupt deflate stream, data ending before its size.
			err = malformedf("corrupt member: %v", err)
		}
		return nil, wrap(err)
	}
	return a, nil
}

// missing is the error for an array the archive does not hold.
func (n *npzFile) missing(name string) error {
	have := n.names()
	slices.Sort(have)
	list := strings.Join(have, ", ")
	if len(have) == 0 {
		list = "none"
	}
	return fmt.Errorf("npz file %s: %w", n.path, malformedf("no array %s (it holds: %s)", name, list))
}

// openFile opens path, a file that is not a folder, and stats it. what
// names the file wanted, for the error.
func openFile(path, what string) (*os.File, fs.FileInfo, error) {
	f, err := os.Open(path)
	if err != nil {
		var pe *fs.PathError
		if errors.As(err, &pe) {
			err = pe.Err // the caller names the path
		}
		return nil, nil, fmt.Errorf("cannot open: %w", err)
	}
	st, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, nil, fmt.Errorf("stat: %w", err)
	}
	if st.IsDir() {
		f.Close()
		return nil, nil, fmt.Errorf("is a directory, want %s", what)
	}
	return f, st, nil
}

// readNPYFile decodes the .npy file at path. Errors name the file.
func readNPYFile(path string, want arrayWant) (*npyArray, error) {
	f, st, err := openFile(path, "a .npy array")
	if err != nil {
		return nil, fmt.Errorf("npy file %s: %w", path, err)
	}
	defer f.Close()
	want.size = st.Size()
	a, err := readNPY(f, want)
	if err != nil {
		return nil, fmt.Errorf("npy file %s: %w", path, err)
	}
	return a, nil
}

// npyFileHeader reads only the header of the .npy file at path.
func npyFileHeader(path string) (npyHeader, error) {
	f, _, err := openFile(path, "a .npy array")
	if err != nil {
		return npyHeader{}, fmt.Errorf("npy file %s: %w", path, err)
	}
	defer f.Close()
	h, err := readNPYHeader(io.LimitReader(f, MaxNPYHeader+16))
	if err != nil {
		return npyHeader{}, fmt.Errorf("npy file %s: %w", path, err)
	}
	return h, nil
}
