package opencode

import (
	"context"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"
)

// startDirWatch runs a watch of home with hook as its beforeWatch until
// the test ends; the returned channel gets each database it reports
// changed ("" when it asks for every database to be looked at).
func startDirWatch(t *testing.T, home string, hook func(dir string)) <-chan string {
	t.Helper()
	got := make(chan string, 64)
	w := newDirWatch(home, nil)
	w.beforeWatch = hook
	ctx, cancel := context.WithCancel(context.Background())
	w.start(ctx, func(db string, _ bool) {
		select {
		case got <- db:
		default:
		}
	}, func(code, _ string) { t.Errorf("diagnostic %s", code) })
	t.Cleanup(func() { cancel(); w.wait() })
	return got
}

// awaitDB waits for the watch to report db changed ("": the home
// appeared, every database to be looked at).
func awaitDB(t *testing.T, got <-chan string, db string) {
	t.Helper()
	timeout := time.After(time.Minute)
	for {
		select {
		case d := <-got:
			if d == db {
				return
			}
		case <-timeout:
			if db == "" {
				t.Fatal("the watch never saw the home")
			}
			t.Fatalf("the watch never reported %s changed", filepath.Base(db))
		}
	}
}

// The home (and its parent) vanishing between the watch's look and its
// watch (rm -r of the tree while the watch is placed) is waited for on
// the next directory up: the home made again is followed, its database's
// writes reported, with no diagnostic.
func TestDirWatchHomeVanishesBeforeItsWatch(t *testing.T) {
	t.Parallel()
	base := t.TempDir()
	home := filepath.Join(base, "share", "opencode")
	if err := os.MkdirAll(home, 0o755); err != nil {
		t.Fatal(err)
	}
	removed := make(chan struct{})
	var once sync.Once
	got := startDirWatch(t, home, func(dir string) { // on the watch's goroutine
		if dir != home {
			return
		}
		once.Do(func() {
			if err := os.RemoveAll(filepath.Dir(home)); err != nil {
				t.Errorf("removing the tree before the home's watch: %v", err)
			}
			close(removed)
		})
	})
	select {
	case <-removed:
	case <-time.After(time.Minute):
		t.Fatal("the watch never watched the home")
	}
	if err := os.MkdirAll(home, 0o755); err != nil {
		t.Fatal(err)
	}
	awaitDB(t, got, "") // the home appeared: the watch is on it
	db := filepath.Join(home, "opencode.db")
	if err := os.WriteFile(db, []byte("x"), 0o600); err != nil {
		t.Fatal(err)
	}
	awaitDB(t, got, db)
}

// A home waited for on its parent, which then goes (rm -r): the watch
// moves up, and the home made later is followed.
func TestDirWatchAncestorRemovedWhileWaiting(t *testing.T) {
	t.Parallel()
	base := t.TempDir()
	share := filepath.Join(base, "share")
	home := filepath.Join(share, "opencode")
	if err := os.Mkdir(share, 0o755); err != nil {
		t.Fatal(err)
	}
	watching := make(chan string, 8)
	got := startDirWatch(t, home, func(dir string) { watching <- dir })
	next := func() string {
		select {
		case d := <-watching:
			return d
		case <-time.After(time.Minute):
			t.Fatal("no watch placed")
			return ""
		}
	}
	if d := next(); d != share {
		t.Fatalf("the watch waits on %s, want the home's parent", d)
	}
	if err := os.Remove(share); err != nil {
		t.Fatal(err)
	}
	if d := next(); d != base {
		t.Fatalf("after the parent went the watch waits on %s, want the next directory up", d)
	}
	if err := os.MkdirAll(home, 0o755); err != nil {
		t.Fatal(err)
	}
	awaitDB(t, got, "")
}
