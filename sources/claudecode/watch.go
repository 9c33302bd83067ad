package claudecode

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/fsnotify/fsnotify"
)

func newWatcher() (*fsnotify.Watcher, error) {
	w, err := fsnotify.NewWatcher()
	if err != nil {
		return nil, fmt.Errorf("watch registry: %w", err)
	}
	return w, nil
}

// watchNearest adds a watch on dir, or when it does not exist on its
// nearest existing ancestor, and returns the directory watched.
func watchNearest(w *fsnotify.Watcher, dir string) (string, error) {
	for d := dir; ; {
		err := w.Add(d)
		if err == nil {
			return d, nil
		}
		if !errors.Is(err, os.ErrNotExist) {
			return "", fmt.Errorf("watch registry: %w", err)
		}
		up := filepath.Dir(d)
		if up == d {
			return "", fmt.Errorf("watch registry: %w", err)
		}
		d = up
	}
}

// nearest returns dir when it is a directory, else its nearest ancestor
// that is one (the directory watchNearest would watch).
func nearest(dir string) string {
	for d := dir; ; {
		if fi, err := os.Stat(d); err == nil && fi.IsDir() {
			return d
		}
		up := filepath.Dir(d)
		if up == d {
			return d
		}
		d = up
	}
}

// loop handles the events of one watcher. It returns again=true when the
// watch must be rebuilt (the registry directory appeared or went away).
func (r *registryWatch) loop(ctx context.Context, w *fsnotify.Watcher, watched string) (again bool, err error) {
	for {
		select {
		case <-ctx.Done():
			return false, nil
		case err, ok := <-w.Errors:
			if !ok {
				return false, nil
			}
			if errors.Is(err, fsnotify.ErrEventOverflow) && watched == r.dir {
				files := r.readAll()
				r.post(func() { r.h.syncRegistry(files) })
				continue
			}
			return true, nil // rebuild the watch
		case ev, ok := <-w.Events:
			if !ok {
				return false, nil
			}
			if watched != r.dir {
				if nearest(r.dir) != watched {
					// the registry directory, or an ancestor nearer to
					// it (e.g. ~/.claude before ~/.claude/sessions),
					// appeared: watch that instead
					return true, nil
				}
				continue
			}
			if ev.Name == r.dir && ev.Has(fsnotify.Remove|fsnotify.Rename) {
				return true, nil // the directory itself went away
			}
			if filepath.Dir(ev.Name) != r.dir || ev.Op == fsnotify.Chmod {
				continue
			}
			pid := RegistryPID(filepath.Base(ev.Name))
			if pid == 0 {
				continue
			}
			data, err := os.ReadFile(ev.Name)
			switch {
			case err == nil:
			case errors.Is(err, os.ErrNotExist):
				data = nil // removed (or renamed away)
			default:
				continue // unreadable now; the next write brings it again
			}
			f := regFile{pid, data}
			r.post(func() { r.h.registryFile(f) })
		}
	}
}
