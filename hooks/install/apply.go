package install

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// fits refuses an edit that would make the file larger than what status
// and uninstall read (maxSettings): written, it could not be undone.
func (e Edit) fits() error {
	if len(e.After) > maxSettings {
		return fmt.Errorf("%s: the edit would make the file larger than %d bytes, more than status and uninstall read; nothing was changed", e.File, maxSettings)
	}
	return nil
}

// finish marks an uninstall that leaves nothing in a file install created
// (it has no backup) as the file's removal.
func (e *Edit) finish() {
	if !e.uninstall || !e.Existed || bytes.Equal(e.Before, e.After) {
		return
	}
	if _, err := os.Stat(e.File + BackupSuffix); err == nil || !isEmpty(e.After) {
		return
	}
	e.Remove, e.After = true, nil
}

// Apply writes planned edits, all or none: first it checks that every file
// that changes can be written, so that a read-only file changes nothing at
// all; a write that fails after others succeeded puts those back. Before
// its first change to a file that existed, install copies it to
// <file>.agentbridge-backup (never overwritten).
func Apply(plan []Edit) ([]Change, error) {
	var todo []Edit
	for _, e := range plan {
		if e.Changes() {
			todo = append(todo, e)
		}
	}
	for _, e := range todo {
		if err := e.unchanged(); err != nil {
			return nil, err
		}
		if e.Existed {
			// a file without its owner's write bit is read-only on
			// purpose, also for root (whom access(2) lets write it)
			if e.mode&0o200 == 0 {
				return nil, fmt.Errorf("%s is read-only; nothing was changed", e.File)
			}
			if err := writable(e.File); err != nil {
				return nil, fmt.Errorf("%s cannot be written (%w); nothing was changed", e.File, err)
			}
		}
		dir := filepath.Dir(e.File)
		if _, err := os.Stat(dir); err == nil {
			if err := writable(dir); err != nil {
				return nil, fmt.Errorf("%s cannot be written (%w); nothing was changed", dir, err)
			}
		}
	}
	var out []Change
	var done []Edit
	undo := func(err error) ([]Change, error) {
		for _, e := range slices.Backward(done) {
			if e.Existed {
				_ = writeFile(e.File, e.Before, e.mode)
			} else {
				_ = os.Remove(e.File)
			}
		}
		return nil, fmt.Errorf("%w; the files changed before were put back", err)
	}
	for _, e := range todo {
		c := Change{File: e.File, Changed: true}
		if e.Remove {
			if err := os.Remove(e.File); err != nil && !errors.Is(err, os.ErrNotExist) {
				return undo(err)
			}
			c.Removed = true
			out, done = append(out, c), append(done, e)
			continue
		}
		if err := e.unchanged(); err != nil {
			return undo(err)
		}
		backup := e.File + BackupSuffix
		if _, err := os.Lstat(backup); errors.Is(err, os.ErrNotExist) && e.Existed && !e.uninstall {
			if err := writeFile(backup, e.Before, e.mode); err != nil {
				return undo(fmt.Errorf("back up %s: %w", e.File, err))
			}
			c.Backup = backup
		}
		if err := os.MkdirAll(filepath.Dir(e.File), 0o700); err != nil {
			return undo(err)
		}
		if err := writeFile(e.File, e.After, e.mode); err != nil {
			return undo(fmt.Errorf("write %s: %w", e.File, err))
		}
		out, done = append(out, c), append(done, e)
	}
	return out, nil
}

// unchanged checks that the file still holds what the edit was planned
// on (another program, the agent itself, may have written it since): an
// edit of what is there now would lose that write.
func (e Edit) unchanged() error {
	b, err := readFile(e.File)
	switch {
	case errors.Is(err, os.ErrNotExist) && !e.Existed:
		return nil
	case err == nil && e.Existed && bytes.Equal(b, e.Before):
		return nil
	}
	return fmt.Errorf("%s was written by another program since it was read; it was not changed: run the command again", e.File)
}

func isEmpty(b []byte) bool {
	s := strings.TrimSpace(string(b))
	return s == "" || s == "{}"
}
