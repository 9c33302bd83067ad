package install

import (
	"os"
	"path/filepath"
)

// writable is nil on Windows: the agents' settings are edited under WSL,
// where the bridge runs; a failed write is reported when it happens.
func writable(string) error { return nil }

// writeFile replaces path with b through a temporary file in the same
// directory renamed over it (renameio has no Windows support).
func writeFile(path string, b []byte, mode os.FileMode) error {
	f, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".*")
	if err != nil {
		return err
	}
	tmp := f.Name()
	defer os.Remove(tmp)
	if _, err := f.Write(b); err != nil {
		f.Close()
		return err
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	if err := os.Chmod(tmp, mode); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}
