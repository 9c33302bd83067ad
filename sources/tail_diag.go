package sources

import (
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"slices"
	"syscall"

	"github.com/fsnotify/fsnotify"

	"github.com/agentbridge/agentbridge"
)

// Diagnostic codes the tailer and Sessions report. Messages never carry a
// path or file content.
const (
	CodeLineTooLong    = "line-too-long"          // a line over MaxLine was skipped; the file is still followed
	CodeInvalidUTF8    = "invalid-utf8"           // lines that are not UTF-8 were skipped
	CodeInvalidJSON    = "invalid-json"           // lines that are not JSON objects were skipped (BadLine)
	CodeInvalidRecord  = "invalid-record"         // records with unusable fields were skipped (BadLine)
	CodeInvalidEvent   = "invalid-event"          // events the fold rejected were dropped
	CodePermission     = "permission-denied"      // a directory or journal cannot be read
	CodeWatchLimit     = "inotify-watch-limit"    // fs.inotify.max_user_watches reached
	CodeInstanceLimit  = "inotify-instance-limit" // fs.inotify.max_user_instances reached
	CodeEventsLost     = "file-events-lost"       // inotify queue overflow: rescanned everything
	CodeReadError      = "read-error"             // a journal or directory could not be read
	CodeRootNotDir     = "root-not-directory"     // a configured root is not a directory
	CodeWatchError     = "watch-error"            // fsnotify failed otherwise: rescanned everything
	CodeReset          = "reset-failed"           // the hub refused a reset (a bug: logged too)
	CodePublishRefused = "publish-refused"        // the hub refused an event or upsert
)

func (t *Tailer) count(code string) {
	if t.bad == nil {
		t.bad = map[string]int{}
	}
	t.bad[code]++
}

// flushBad turns the skipped-line counts of a batch into one diagnostic per
// code.
func (t *Tailer) flushBad() {
	if len(t.bad) == 0 {
		return
	}
	for _, c := range slices.Sorted(maps.Keys(t.bad)) {
		n := t.bad[c]
		switch c {
		case CodeHeldLimit:
			t.diag(c, fmt.Sprintf("skipped %s whose unfinished part did not fit the %d MiB held for the unfinished lines of all journals together; the journals are still followed", lines(n), t.cfg.MaxHeld>>20))
		case CodeJournalTooLarge:
			t.diag(c, fmt.Sprintf("a journal grew by more than %d MiB at once, far more than any real one; it is followed from its end, and what it held is not reported", t.cfg.MaxJournal>>20))
		case CodeLineTooLong:
			t.diag(c, fmt.Sprintf("skipped %s over %d MiB; the journal is still followed", lines(n), t.cfg.MaxLine>>20))
		case CodeInvalidUTF8:
			t.diag(c, fmt.Sprintf("skipped %s that %s not valid UTF-8", lines(n), are(n)))
		case CodeSideNotRegular, CodeSideTooLarge:
			t.diag(c, sideMessage(c, n))
		}
	}
	clear(t.bad)
}

func lines(n int) string {
	if n == 1 {
		return "1 journal line"
	}
	return fmt.Sprintf("%d journal lines", n)
}

func are(n int) string {
	if n == 1 {
		return "is"
	}
	return "are"
}

func (t *Tailer) diag(code, msg string) {
	t.h.Diagnostic(agentbridge.Diagnostic{Code: code, Message: msg})
}

func (t *Tailer) diagOnce(code, msg string) {
	if t.said[code] {
		return
	}
	t.said[code] = true
	t.diag(code, msg)
}

// watchErr reports a failure to create a watcher or add a watch; the
// inotify limits name their sysctl.
func (t *Tailer) watchErr(err error) {
	t.log.Debug("watch failed", "err", err)
	t.diagOnce(WatchDiagnostic(err))
}

// WatchDiagnostic is the typed diagnostic of a failure to watch a
// directory with inotify (the limits named with the sysctl to raise), for
// every source that watches on its own. It carries no path.
func WatchDiagnostic(err error) (code, message string) {
	switch {
	case errors.Is(err, syscall.ENOSPC):
		return CodeWatchLimit, "the inotify watch limit is reached, so some journal directories are not followed; raise the sysctl fs.inotify.max_user_watches (e.g. sysctl -w fs.inotify.max_user_watches=524288), then restart agentbridge"
	case errors.Is(err, syscall.EMFILE):
		return CodeInstanceLimit, "the inotify instance limit is reached, so journals are not followed; raise the sysctl fs.inotify.max_user_instances (e.g. sysctl -w fs.inotify.max_user_instances=1024), then restart agentbridge"
	case errors.Is(err, fs.ErrPermission):
		return CodePermission, "a journal directory cannot be watched (permission denied); its sessions are not reported"
	}
	return CodeWatchError, "a journal directory cannot be watched (" + errnoText(err) + ")"
}

// fsErr reports a failure to read a directory or journal without its path.
func (t *Tailer) fsErr(err error, what string) {
	t.log.Debug(what, "err", err)
	if errors.Is(err, fs.ErrPermission) {
		t.diagOnce(CodePermission, what+" (permission denied); its sessions are not reported")
		return
	}
	t.diagOnce(CodeReadError, what+" ("+errnoText(err)+")")
}

// errnoText names an error without the path an *fs.PathError carries.
func errnoText(err error) string {
	var errno syscall.Errno
	if errors.As(err, &errno) {
		return errno.Error()
	}
	if errors.Is(err, fsnotify.ErrEventOverflow) {
		return "event queue overflow"
	}
	return "unexpected error"
}
