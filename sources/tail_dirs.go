package sources

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/fsnotify/fsnotify"
)

// watch adds an inotify watch on path.
func (t *Tailer) watch(path string) error {
	if t.beforeWatch != nil {
		t.beforeWatch(path)
	}
	return t.w.Add(path)
}

// Vanished reports whether a watch failed because its path no longer
// leads to anything: it went away since it was looked at (a tree being
// removed). A watcher that waits for a missing directory on its nearest
// existing ancestor then waits on the next directory up instead.
func Vanished(err error) bool {
	return errors.Is(err, fs.ErrNotExist) || errors.Is(err, syscall.ENOTDIR)
}

// addTree watches dir, then walks it (so nothing created before the watch
// took is missed), following files and descending into subdirectories.
// Files older than the window are only stat'ed, at a scan and in a
// directory that appears later alike. It reports whether dir vanished
// before its watch took; below a root, the watched parent saw it go.
func (t *Tailer) addTree(dir string) (gone bool) {
	if _, ok := t.dirs[dir]; ok {
		return false
	}
	if err := t.watch(dir); err != nil {
		if Vanished(err) {
			return true
		}
		t.watchErr(err)
		return false
	}
	t.dirs[dir] = struct{}{}
	d, err := os.Open(dir)
	if err != nil {
		if !Vanished(err) { // else gone after the watch took: its event follows
			t.fsErr(err, "a journal directory cannot be read")
		}
		return false
	}
	entries, err := d.ReadDir(-1)
	d.Close()
	if err != nil {
		t.fsErr(err, "a journal directory cannot be read")
	}
	for _, e := range entries {
		p := dir + "/" + e.Name()
		switch {
		case e.IsDir():
			if t.cfg.Dirs == nil || t.cfg.Dirs(p) {
				t.addTree(p)
			}
		case t.isWhole(p, false):
			if !t.wholeOld(p, e) {
				t.readWhole(p)
			}
		case e.Type().IsRegular() && t.cfg.Match(p):
			if _, ok := t.files[p]; ok {
				continue
			}
			if t.cfg.Window > 0 {
				info, err := e.Info()
				if err != nil {
					continue // gone meanwhile
				}
				if info.ModTime().Before(t.now.Add(-t.cfg.Window)) && (t.cfg.Recent == nil || !t.cfg.Recent(p, info)) {
					continue // old: picked up when written again
				}
			}
			f := &file{}
			t.files[p] = f
			t.read(p, f)
		}
	}
	return false
}

// handle acts on the coalesced events of one path, treating the file
// system as the truth and the events as hints. It reports whether it
// rebuilt everything.
func (t *Tailer) handle(p string, op fsnotify.Op) bool {
	if roots, ok := t.waiting[filepath.Dir(p)]; ok && leadsTo(p, roots) {
		t.recheckWaiting(filepath.Dir(p), roots)
	}
	if _, ok := t.dirs[p]; ok {
		if op.Has(fsnotify.Remove) || op.Has(fsnotify.Rename) {
			return t.dirGone(p)
		}
		return false
	}
	if _, ok := t.waiting[p]; ok && (op.Has(fsnotify.Remove) || op.Has(fsnotify.Rename)) {
		t.log.Debug("watched ancestor of a missing root vanished: rebuilding")
		t.rebuild()
		return true
	}
	fi, err := os.Lstat(p)
	if err != nil {
		if _, ok := t.files[p]; ok {
			delete(t.files, p)
			t.h.Removed(p)
		}
		t.wholeGone(p)
		return false
	}
	switch {
	case fi.IsDir():
		parent := filepath.Dir(p)
		if _, ok := t.dirs[parent]; ok && (t.cfg.Dirs == nil || t.cfg.Dirs(p)) {
			t.now = time.Now()
			t.addTree(p)
		}
	case t.isWhole(p, fi.IsDir()):
		if _, ok := t.dirs[filepath.Dir(p)]; ok {
			t.readWhole(p) // on any change, chmod included: it is small
		}
	case fi.Mode().IsRegular() && t.cfg.Match(p):
		f := t.files[p]
		if f == nil && op == fsnotify.Chmod {
			return false // attributes only, of a file not followed (an old one)
		}
		// A Chmod alone of a followed file reads it too: it may have
		// been unreadable until now (chmod 000, written, chmod 644).
		if f == nil {
			if _, ok := t.dirs[filepath.Dir(p)]; !ok {
				return false
			}
			f = &file{}
			t.files[p] = f
		}
		t.read(p, f)
	default:
		if _, ok := t.files[p]; ok { // a journal replaced by something else
			delete(t.files, p)
			t.h.Removed(p)
		}
	}
	return false
}

// dirGone forgets a directory that vanished or was replaced, with its
// subdirectories and files; a vanished root rebuilds everything. A
// directory that exists again at the path is watched and walked anew.
func (t *Tailer) dirGone(dir string) bool {
	for _, r := range t.roots {
		if r == dir {
			t.log.Debug("journal root vanished or was replaced: rebuilding", "root", dir)
			t.rebuild()
			return true
		}
	}
	prefix := dir + "/"
	for d := range t.dirs {
		if d == dir || strings.HasPrefix(d, prefix) {
			delete(t.dirs, d)
			_ = t.w.Remove(d) // often gone already with its inode
		}
	}
	for _, p := range below(t.files, dir) {
		delete(t.files, p)
		t.h.Removed(p)
	}
	t.wholeGoneUnder(dir)
	if fi, err := os.Lstat(dir); err == nil && fi.IsDir() {
		if _, ok := t.dirs[filepath.Dir(dir)]; ok {
			t.now = time.Now()
			t.addTree(dir)
		}
	}
	return false
}
