package config

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/agentbridge/agentbridge/internal/smallfile"
)

// RevisionFile keeps the hub's revision high-water mark (a decimal number)
// in a file of the state directory, next to the token file, so that the
// stream's revisions grow across restarts (it implements
// hub.RevisionStore). The hub writes it once per block of revisions, not
// per record.
type RevisionFile string

// RevisionFile is the file that keeps the revision mark:
// $XDG_STATE_HOME/agentbridge/revision (or ~/.local/state/agentbridge/),
// or beside a configured tokenFile; empty when no state directory can be
// named.
func (c *Config) RevisionFile() RevisionFile {
	if c.StateDir == "" {
		return ""
	}
	return RevisionFile(filepath.Join(c.StateDir, "revision"))
}

// Load returns the saved mark; 0 when the file does not exist.
func (f RevisionFile) Load() (uint64, error) {
	// A mark is at most 20 digits; smallfile refuses a FIFO, a device or
	// a huge file in its place instead of hanging or reading it whole.
	b, err := smallfile.Read(string(f), 64)
	if errors.Is(err, fs.ErrNotExist) {
		return 0, nil
	}
	if err != nil {
		return 0, fmt.Errorf("read revision mark: %w", err)
	}
	n, err := strconv.ParseUint(strings.TrimSpace(string(b)), 10, 64)
	if err != nil {
		return 0, fmt.Errorf("revision mark %s: not a number", f)
	}
	return n, nil
}

// Save replaces the mark atomically (a synced temporary file renamed over
// it, mode 0600, in a directory made with mode 0700).
func (f RevisionFile) Save(mark uint64) error {
	path := string(f)
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return fmt.Errorf("make state directory: %w", err)
	}
	tmp, err := os.CreateTemp(filepath.Dir(path), ".revision-*")
	if err != nil {
		return fmt.Errorf("save revision mark: %w", err)
	}
	_, err = tmp.WriteString(strconv.FormatUint(mark, 10) + "\n")
	if err == nil {
		err = tmp.Sync()
	}
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp.Name(), path)
	}
	if err != nil {
		os.Remove(tmp.Name())
		return fmt.Errorf("save revision mark: %w", err)
	}
	return nil
}
