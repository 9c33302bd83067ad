package sources

import (
	"errors"
	"maps"
	"os"
	"slices"
	"time"

	"github.com/agentbridge/agentbridge"
)

// MapFunc is a source's pure mapping of one input (a journal line, or a
// whole side file) with its session's state S: the events it yields,
// appended to out, and the code it is skipped with ("" when used or
// deliberately ignored).
type MapFunc[S any] func(st S, data []byte, out []agentbridge.Event) ([]agentbridge.Event, string)

// Journals describes an agent's files to the declarative journal handler
// (see Agent): which session a file is, the per-session mapping state, the
// line mapper and the side file's. An Agent whose Handler is a *Journals
// follows them with that handler.
type Journals[S any] struct {
	// Files returns, for a path the tailer follows, the session it belongs
	// to, that session's journal, and its side file ("" when the agent
	// keeps none).
	Files func(path string) (id, journal, side string)
	// New returns the mapping state of session id read from its start.
	New func(id string) S
	// Line maps one journal line.
	Line MapFunc[S]
	// Side maps a whole side file (nil when the agent keeps none); it is
	// read with ReadSmall, at most SideLimit bytes.
	Side      MapFunc[S]
	SideLimit int64
	// StartWindow, when not zero, says that the agent creates a new
	// session right after its process starts, and how long after at most:
	// it settles which of several free processes in one cwd is a new
	// session's (ProcQuery.Window).
	StartWindow time.Duration
}

// NewHandler returns the journal handler of j for the sessions ss of
// agent a (a.Harness is every session's harness); it implements
// HandlerMaker.
func (j *Journals[S]) NewHandler(a *Agent, _ Options, ss *Sessions) Handler {
	return &journalHandler[S]{
		Sessions: ss, harness: a.Harness, a: j, states: map[string]S{}, journals: map[string]string{}, born: map[string]time.Time{},
	}
}

// ProcessExited is what a source whose sessions' processes the journal
// handler finds observes of "exited": the process found by cwd and name
// (Sessions.FindProcess), then its exit through a pidfd.
func ProcessExited() agentbridge.Observe {
	return agentbridge.Observe{How: agentbridge.Inferred, From: "process"}
}

// journalHandler is the Handler of an agent that Journals describes: it maps
// journal lines as they come, reads a changed side file whole once per
// wake (at Idle, however many lines announced it), has the runtime find a
// session's process by cwd (Sessions.FindProcess), and drops a session's state when its journal is
// cut, replaced, removed or rescanned. It runs on the source's goroutine.
type journalHandler[S any] struct {
	*Sessions
	harness  string
	a        *Journals[S]
	states   map[string]S         // by session id
	journals map[string]string    // session id → its journal, for the side files read at Idle
	born     map[string]time.Time // session id → when it began (session.started), for StartWindow
	sides    sideFiles
	evs      []agentbridge.Event // scratch
}

func (h *journalHandler[S]) state(id string) S {
	st, ok := h.states[id]
	if !ok {
		st = h.a.New(id)
		h.states[id] = st
	}
	return st
}

// mark notes that the side file of the session at path may have changed
// (a journal line is followed by a side file write for these agents, and
// a side file's own lines say it changed), and returns whether path is the
// side file.
func (h *journalHandler[S]) mark(path string) (id string, side bool) {
	id, journal, sidePath := h.a.Files(path)
	if h.a.Side != nil && sidePath != "" {
		h.sides.Mark(id, sidePath)
		h.journals[id] = journal
	}
	return id, path == sidePath
}

// Line maps one journal line and folds its events into the session; a
// side file's line only marks it.
func (h *journalHandler[S]) Line(path string, line []byte) {
	id, side := h.mark(path)
	if side {
		return
	}
	var code string
	h.evs, code = h.a.Line(h.state(id), line, h.evs[:0])
	if code != "" {
		h.BadLine(code)
	}
	h.publish(id, path)
}

// Truncated drops the session's state when its journal was cut or
// replaced (it is read again from the start); a side file rewritten is
// only read again.
func (h *journalHandler[S]) Truncated(path string) {
	if id, side := h.mark(path); !side {
		delete(h.states, id)
		delete(h.born, id)
		h.Restart(id)
	}
}

// Removed ends the session when its journal is gone.
func (h *journalHandler[S]) Removed(path string) {
	id, _, sidePath := h.a.Files(path)
	if path == sidePath {
		return
	}
	delete(h.states, id)
	delete(h.journals, id)
	delete(h.born, id)
	h.sides.Forget(id)
	h.Stop(id, "journal removed")
}

// Rescan forgets every session: all files are read again from the start.
func (h *journalHandler[S]) Rescan() {
	clear(h.states)
	clear(h.journals)
	clear(h.born)
	h.sides.Reset()
	h.Sessions.Rescan()
}

// Idle reads the side files that changed, then lets Sessions find the
// processes asked for (one pass over /proc) and flush.
func (h *journalHandler[S]) Idle() {
	h.sides.Read(h.a.SideLimit, func(id string, data []byte) {
		var code string
		h.evs, code = h.a.Side(h.state(id), data, h.evs[:0])
		if code != "" {
			h.BadLine(code) // a side file caught half-written is read again at its next change
		}
		h.publish(id, h.journals[id])
	}, h.BadLine)
	h.Sessions.Idle()
}

// publish folds h.evs into session id and asks for its process (the
// journal is the writer's evidence: its writer was running at its last
// write) when a session.started names its cwd, and when a turn starts in
// a session with no process: one whose process ended (a resumed session
// is written by a new process) or was never found.
func (h *journalHandler[S]) publish(id, journal string) {
	for _, e := range h.evs {
		if e.Kind == agentbridge.KindSessionStarted {
			if e.OccurredAt > 0 {
				h.born[id] = time.UnixMilli(e.OccurredAt)
			}
			// A session's start time is when it began, not when the
			// process writing it now did (a resumed session is written by
			// a later one): the process is checked against the journal's
			// last write instead of Sessions' start-time guard.
			e.OccurredAt = 0
		}
		orphan := e.Kind == agentbridge.KindTurnStarted && h.Exited(id)
		if !h.Event(id, h.harness, e) {
			continue
		}
		switch {
		case e.Kind == agentbridge.KindSessionStarted && e.Cwd != "":
			h.find(id, e.Cwd, journal)
		case e.Kind == agentbridge.KindTurnStarted:
			if snap := h.Get(id).Snapshot(); orphan || snap.PID == 0 {
				h.find(id, snap.Cwd, journal)
			}
		}
	}
}

// find asks for session id's process: in cwd, running when the journal
// was last written, and (StartWindow) started just before the session
// began.
func (h *journalHandler[S]) find(id, cwd, journal string) {
	fi, err := os.Stat(journal)
	if err != nil {
		return
	}
	h.FindProcess(id, ProcQuery{Cwd: cwd, Running: fi.ModTime(), Born: h.born[id], Window: h.a.StartWindow})
}

// sideFiles remembers which sessions' side files (sidecars an agent
// rewrites whole) changed, so that each is read once, whole, at the
// tailer's next idle moment however many lines announced it.
type sideFiles struct{ paths map[string]string } // session id → side file

// Mark says session id's side file at path may have changed.
func (s *sideFiles) Mark(id, path string) {
	if s.paths == nil {
		s.paths = map[string]string{}
	}
	s.paths[id] = path
}

// Forget drops what was marked for id (its session is gone).
func (s *sideFiles) Forget(id string) { delete(s.paths, id) }

// Reset drops every mark.
func (s *sideFiles) Reset() { clear(s.paths) }

// Read reads each marked side file with ReadSmall (regular files
// of at most limit bytes), in session id order, hands the bytes to f, and
// drops the marks. A side file that is missing or not a small regular
// file is skipped until its next change; one that is a FIFO, a device
// (or a link to one) or too large is reported to bad with its typed code
// (CodeSideNotRegular, CodeSideTooLarge).
func (s *sideFiles) Read(limit int64, f func(id string, data []byte), bad func(code string)) {
	for _, id := range slices.Sorted(maps.Keys(s.paths)) {
		data, err := ReadSmall(s.paths[id], limit)
		switch {
		case err == nil:
			f(id, data)
		case errors.Is(err, ErrNotRegular):
			bad(CodeSideNotRegular)
		case errors.Is(err, ErrTooLarge):
			bad(CodeSideTooLarge)
		}
	}
	clear(s.paths)
}
