package sources

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// setupRoot watches and scans root, or waits for it to appear.
func (t *Tailer) setupRoot(root string) {
	fi, err := os.Stat(root)
	switch {
	case err == nil && fi.IsDir():
		if t.addTree(root) {
			// Gone between the stat and the watch (a tree being removed):
			// wait for it like a root missing from the start.
			t.waitFor(root)
		}
	case err == nil:
		t.diagOnce(CodeRootNotDir, "a configured journal root is not a directory; its sessions are not reported")
		t.waitFor(root) // follow it again once a directory takes its place
	case errors.Is(err, fs.ErrNotExist):
		t.waitFor(root)
	default:
		t.fsErr(err, "a journal root cannot be read")
	}
}

// waitFor watches the nearest existing ancestor of a missing root.
func (t *Tailer) waitFor(root string) {
	for a := filepath.Dir(root); ; a = filepath.Dir(a) {
		if t.waitOn(a, root) || a == filepath.Dir(a) {
			return
		}
	}
}

// waitOn waits for root below ancestor a when a is a directory: it
// watches a, then looks for the next directory on the way down, which may
// have been made before the watch took (mkdir -p). It reports false when
// a is no directory, or vanished between the stat and the watch (rm -r of
// the tree above root, still in progress): its event went to a's parent,
// which is not watched, so the caller waits on that parent instead.
func (t *Tailer) waitOn(a, root string) bool {
	if fi, err := os.Stat(a); err != nil || !fi.IsDir() {
		return false
	}
	if _, watched := t.waiting[a]; !watched {
		if _, dir := t.dirs[a]; !dir {
			if err := t.watch(a); err != nil {
				if Vanished(err) {
					t.log.Debug("ancestor of a missing root vanished before its watch", "watching", a)
					return false
				}
				t.watchErr(err)
				return true
			}
		}
	}
	t.waiting[a] = append(t.waiting[a], root)
	t.log.Debug("waiting for journal root", "root", root, "watching", a)
	if fi, err := os.Stat(childToward(a, root)); err == nil && fi.IsDir() {
		t.recheckWaiting(a, t.waiting[a])
	}
	return true
}

// childToward returns the entry of directory anc on the way down to path,
// which lies below anc.
func childToward(anc, path string) string {
	for {
		up := filepath.Dir(path)
		if up == anc || up == path {
			return path
		}
		path = up
	}
}

// leadsTo reports whether p is one of roots or an ancestor of one.
func leadsTo(p string, roots []string) bool {
	for _, r := range roots {
		if r == p || strings.HasPrefix(r, p+"/") {
			return true
		}
	}
	return false
}

// recheckWaiting sets up the missing roots under a watched ancestor once
// something changed in it.
func (t *Tailer) recheckWaiting(anc string, roots []string) {
	delete(t.waiting, anc)
	if _, dir := t.dirs[anc]; !dir {
		_ = t.w.Remove(anc)
	}
	for _, r := range roots {
		t.now = time.Now()
		t.setupRoot(r)
	}
}
