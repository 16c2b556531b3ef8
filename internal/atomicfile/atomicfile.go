// Package atomicfile writes result files whole or not at all: through a
// temporary file in the same folder and a rename, so that a crash or a
// Ctrl-C never leaves a half-written result.json, weights.npz or sweep.csv
// for a later run or sweep to trust.
package atomicfile

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
)

// WriteFile writes b to path atomically, readable by everyone (0644):
// results are for sharing.
func WriteFile(path string, b []byte) error { return write(path, b, 0o644, false) }

// WritePrivate writes b to path atomically, readable by its owner alone
// (0600), and syncs it to the disk before the rename: for a checkpoint,
// which a resumed run trusts. Its temporary file, until the rename, is
// named "." + the file's name + "." and a random suffix.
func WritePrivate(path string, b []byte) error { return write(path, b, 0o600, true) }

func write(path string, b []byte, mode os.FileMode, sync bool) error {
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".*")
	if err != nil {
		return err
	}
	// CreateTemp makes the file private.
	if err := tmp.Chmod(mode); err != nil {
		tmp.Close()
		return err
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.Write(b); err != nil {
		tmp.Close()
		return fmt.Errorf("write %s: %w", path, err)
	}
	if sync {
		if err := tmp.Sync(); err != nil {
			tmp.Close()
			return fmt.Errorf("write %s: %w", path, err)
		}
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	return os.Rename(tmp.Name(), path)
}

// WriteJSON writes v to path atomically as indented JSON with a final
// newline.
func WriteJSON(path string, v any) error {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return err
	}
	return WriteFile(path, append(b, '\n'))
}
