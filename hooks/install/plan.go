package install

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/agentbridge/agentbridge/internal/smallfile"
)

// readFile reads a settings file safely (a FIFO or device is refused, a
// huge file is refused, never read whole).
func readFile(path string) ([]byte, error) {
	b, err := smallfile.Read(path, maxSettings)
	switch {
	case errors.Is(err, smallfile.ErrNotRegular):
		return nil, fmt.Errorf("%s is not a regular file", filepath.Base(path))
	case errors.Is(err, smallfile.ErrTooLarge):
		return nil, fmt.Errorf("%s is over %d bytes", filepath.Base(path), maxSettings)
	}
	return b, err
}

// resolve follows a symlinked settings file (dotfile managers), so that
// the file it points to is the one edited.
func resolve(path string) string {
	if p, err := filepath.EvalSymlinks(path); err == nil {
		return p
	}
	return path
}

func planFile(t Target, path string, uninstall bool) (Edit, error) {
	if fi, err := os.Lstat(path); err == nil && fi.Mode()&os.ModeSymlink != 0 {
		if _, err := os.Stat(path); errors.Is(err, os.ErrNotExist) {
			// writing would replace the user's link (a dotfile manager's)
			// with a file; following it would create a file elsewhere
			return Edit{}, fmt.Errorf("%s is a symbolic link to a file that does not exist; create that file or remove the link (nothing was changed)", path)
		}
	}
	path = resolve(path)
	e := Edit{File: path, Harness: t.Harness, mode: 0o600, uninstall: uninstall}
	b, err := readFile(path)
	switch {
	case errors.Is(err, os.ErrNotExist):
	case err != nil:
		return e, err
	default:
		fi, err := os.Stat(path)
		if err != nil {
			return e, err
		}
		e.Existed, e.mode, e.Before = true, fi.Mode().Perm(), b
	}
	return e, nil
}

func planJSON(t Target, uninstall bool, change func(*doc) error) (Edit, error) {
	e, err := planFile(t, t.HooksFile(), uninstall)
	if err != nil {
		return e, err
	}
	dl := specOf(t.Harness).dialect()
	d, err := parseDoc(e.Before, dl)
	if err != nil {
		return e, fmt.Errorf("%s: %w (nothing was changed)", e.File, err)
	}
	if err := change(d); err != nil {
		return e, fmt.Errorf("%s: %w (nothing was changed)", e.File, err)
	}
	e.After = d.pack()
	if len(bytes.TrimSpace(e.Before)) == 0 && len(d.obj().Members) == 0 {
		e.After = e.Before // nothing to add to an empty file
	} else if len(bytes.TrimSpace(e.Before)) == 0 && len(e.After) > 0 && !bytes.HasSuffix(e.After, []byte("\n")) {
		e.After = append(e.After, '\n') // a new (or blank) file ends with a line break
	}
	// what is written must read back, as the agent reads it
	if _, err := parseDoc(e.After, dl); err != nil {
		return e, fmt.Errorf("%s: the edit would not read back (%v); nothing was changed", e.File, err)
	}
	if err := e.fits(); err != nil {
		return e, err
	}
	e.finish()
	return e, nil
}

func planText(t Target, path string, uninstall bool, change func(string) (string, error)) (Edit, error) {
	e, err := planFile(t, path, uninstall)
	if err != nil {
		return e, err
	}
	after, err := change(string(e.Before))
	if err != nil {
		return e, fmt.Errorf("%s: %w (nothing was changed)", e.File, err)
	}
	e.After = []byte(after)
	if err := e.fits(); err != nil {
		return e, err
	}
	e.finish()
	return e, nil
}
