package opencode

import (
	"context"
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"

	"github.com/fsnotify/fsnotify"
)

// dirWatch watches the home directory itself (not its subdirectories)
// with fsnotify and reports every change to a database or its -wal file.
// A home that does not exist yet is waited for by watching its nearest
// existing ancestor; one that goes away is waited for again. It never
// polls: the goroutine sleeps in the kernel between events.
type dirWatch struct {
	home   string
	notify func(db string, lost bool) // lost: events were lost, or the home (re)appeared: look at every database
	log    *slog.Logger
	wg     sync.WaitGroup
}

func newDirWatch(home string, log *slog.Logger) *dirWatch {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &dirWatch{home: home, log: log}
}

// start runs the watch until ctx ends, calling notify from its own
// goroutine; wait waits for it to end.
func (w *dirWatch) start(ctx context.Context, notify func(db string, lost bool)) {
	w.notify = notify
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
		return
	}
	defer fw.Close()
	watched := ""
	place := func() {
		if watched != "" {
			_ = fw.Remove(watched)
			watched = ""
		}
		for dir := w.home; ; dir = filepath.Dir(dir) {
			if err := fw.Add(dir); err == nil {
				watched = dir
				break
			} else if !errors.Is(err, os.ErrNotExist) && !errors.Is(err, os.ErrPermission) && !strings.Contains(err.Error(), "not a directory") {
				w.log.Debug("opencode: cannot watch", "dir", dir, "err", err)
			}
			if dir == filepath.Dir(dir) {
				return
			}
		}
		if watched == w.home {
			w.notify("", true) // it exists now: look at what it holds
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
				// waiting for the home: move down when a directory on the way appears
				if strings.HasPrefix(w.home+"/", ev.Name+"/") && ev.Has(fsnotify.Create) {
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
