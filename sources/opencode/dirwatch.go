package opencode

import (
	"context"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"

	"github.com/fsnotify/fsnotify"

	"github.com/agentbridge/agentbridge/sources"
)

// dirWatch watches the home directory itself (not its subdirectories)
// with fsnotify and reports every change to a database or its -wal file.
// A home that does not exist yet is waited for by watching its nearest
// existing ancestor; one that goes away is waited for again. It never
// polls: the goroutine sleeps in the kernel between events.
type dirWatch struct {
	home   string
	notify func(db string, lost bool) // lost: events were lost, or the home (re)appeared: look at every database
	diag   func(code, message string) // a watch could not be placed (typed, no path)
	log    *slog.Logger
	wg     sync.WaitGroup
	// beforeWatch, tests only, runs before each watch is added (on the
	// watch's goroutine): the directory can be removed there, between
	// the look and the watch.
	beforeWatch func(dir string)
}

func newDirWatch(home string, log *slog.Logger) *dirWatch {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &dirWatch{home: home, log: log}
}

// start runs the watch until ctx ends, calling notify (and diag, when a
// watch cannot be placed: the inotify limits) from its own goroutine;
// wait waits for it to end.
func (w *dirWatch) start(ctx context.Context, notify func(db string, lost bool), diag func(code, message string)) {
	w.notify, w.diag = notify, diag
	w.wg.Add(1)
	go func() {
		defer w.wg.Done()
		w.run(ctx)
	}()
}

func (w *dirWatch) wait() { w.wg.Wait() }

func (w *dirWatch) run(ctx context.Context) {
	fw, err := fsnotify.NewWatcher()
	if err != nil {
		w.log.Debug("opencode: cannot watch the data directory", "err", err)
		w.diag(sources.WatchDiagnostic(err))
		return
	}
	defer fw.Close()
	watched := ""
	// place watches the home, or its nearest existing ancestor while it
	// does not exist; after each watch is added it checks that the next
	// directory on the way did not appear meanwhile (its Create event would
	// have gone to no watch). A directory that vanishes between the look
	// and its watch (rm -r of the tree) is looked for again: its Remove
	// went to its parent, not watched, so the watch goes up.
	place := func() {
		for range 64 {
			dir := w.home
			for {
				if fi, err := os.Stat(dir); err == nil && fi.IsDir() {
					break
				}
				if dir == filepath.Dir(dir) {
					return
				}
				dir = filepath.Dir(dir)
			}
			if dir != watched {
				if watched != "" {
					_ = fw.Remove(watched)
					watched = ""
				}
				if w.beforeWatch != nil {
					w.beforeWatch(dir)
				}
				if err := fw.Add(dir); err != nil {
					if sources.Vanished(err) {
						w.log.Debug("opencode: directory vanished before its watch: looking again")
						continue
					}
					w.log.Debug("opencode: cannot watch", "err", err)
					w.diag(sources.WatchDiagnostic(err))
					return
				}
				watched = dir
			}
			if dir == w.home {
				w.notify("", true) // it exists: look at what it holds
				return
			}
			next := w.home
			for filepath.Dir(next) != dir {
				next = filepath.Dir(next)
			}
			if _, err := os.Stat(next); err != nil {
				return // wait for its Create
			}
		}
	}
	place()
	for {
		select {
		case <-ctx.Done():
			return
		case ev, ok := <-fw.Events:
			if !ok {
				return
			}
			switch {
			case watched != w.home:
				// waiting for the home: move down when a directory on the
				// way appears, up when the one watched goes
				if (strings.HasPrefix(w.home+"/", ev.Name+"/") && ev.Has(fsnotify.Create)) ||
					(ev.Name == watched && (ev.Has(fsnotify.Remove) || ev.Has(fsnotify.Rename))) {
					place()
				}
			case ev.Name == w.home && (ev.Has(fsnotify.Remove) || ev.Has(fsnotify.Rename)):
				w.notify("", true)
				place()
			default:
				if db := dbOf(w.home, ev.Name); db != "" && ev.Op != fsnotify.Chmod {
					w.notify(db, false)
				}
			}
		case err, ok := <-fw.Errors:
			if !ok {
				return
			}
			w.log.Debug("opencode: data directory watch error", "err", err)
			w.notify("", true)
		}
	}
}
