// Package copilot reports GitHub Copilot CLI's sessions. Copilot writes
// one append-only journal per session at
// $COPILOT_HOME/session-state/<sessionId>/events.jsonl (COPILOT_HOME
// defaults to ~/.copilot), one event per line in the envelope
// {"id","parentId","timestamp","type","data"}; events of a subagent carry
// "agentId" too. Unlike most agents, Copilot writes its approvals to disk
// (permission.requested / permission.completed), so waiting is observed
// from the journal. The mapping is record.go (pure), the process binding
// process.go, the rules README.md.
//
// The session id is the directory's name (the same as session.start's
// data.sessionId). The directory's other files (workspace.yaml, session.db,
// inuse.<pid>.lock, checkpoints/, files/) are never read as journals; only
// the lock files' names are listed, to find the process.
package copilot

import (
	"github.com/agentbridge/agentbridge/validate"
	"io/fs"
	"maps"
	"path/filepath"
	"slices"
	"time"

	"github.com/agentbridge/agentbridge"
	"github.com/agentbridge/agentbridge/proc"
	"github.com/agentbridge/agentbridge/sources"
)

// The source's identity.
const (
	ID          = "copilot"
	DisplayName = "GitHub Copilot CLI"
	Harness     = "copilot-cli"
	EnvHome     = "COPILOT_HOME"
	journalName = "events.jsonl"
)

// agent is the source: its identity, its journals and their handler
// (newHandler).
var agent = &sources.Agent{
	Single: sources.Single{
		ID: ID, DisplayName: DisplayName, Harness: Harness, HarnessName: "Copilot CLI", HomeEnv: EnvHome,
		DefaultHome: sources.HomeUnder(".copilot"),
		Observes: map[string]agentbridge.Observe{
			"waiting":   {How: agentbridge.Observed, From: "journal"}, // permission.requested and the other requests are on disk
			"exited":    {How: agentbridge.Observed, From: "process"}, // the lock file's process through a pidfd; session.shutdown
			"subagents": {How: agentbridge.Observed, From: "journal"}, // subagent.started / completed / failed
			"title":     {How: agentbridge.Observed, From: "journal"}, // session.title_changed, else the first prompt
			"model":     {How: agentbridge.Observed, From: "journal"}, // model_change, auto_mode_resolved, assistant.message
		},
	},
	Process: Agent,
	Tail: func(o sources.Options) sources.TailConfig {
		root := sessionsRoot(o.Home)
		return sources.TailConfig{
			Roots: []string{root},
			Match: func(p string) bool { return sessionID(root, p) != "" },
			Dirs:  func(p string) bool { return filepath.Dir(p) == root && validate.ValidID(filepath.Base(p)) },
			// A journal older than the window is read at start when a live
			// process has its session (a lock names it): Copilot does not
			// hold the journal open, so the default (its holder) never is.
			Recent: func(p string, _ fs.FileInfo) bool { return liveLatest(proc.Root, lockPIDs(filepath.Dir(p))) > 0 },
		}
	},
	Handler: sources.HandlerFunc(func(o sources.Options, ss *sources.Sessions) sources.Handler {
		return newHandler(ss, sessionsRoot(o.Home))
	}),
}

func init() { sources.RegisterAgent(agent) }

// Source reports Copilot CLI's sessions. It implements hub.Source.
type Source = sources.AgentSource

// New returns the source for opt.Home (Copilot's home: $COPILOT_HOME, else
// ~/.copilot); it touches nothing until Run. opt.Window bounds which
// journals are read at start, and how long a session with no process and
// no event stays; opt.Linger how long an exited one stays.
func New(opt sources.Options) *Source { return agent.New(opt) }

// SessionsDir returns where Copilot under home keeps its session
// directories.
func SessionsDir(home string) string { return filepath.Join(home, "session-state") }

// sessionsRoot is SessionsDir(home), cleaned: the root the journals' paths
// are parsed against.
func sessionsRoot(home string) string { return filepath.Clean(SessionsDir(home)) }

// sessionID returns the session of a journal path under root
// (root/<id>/events.jsonl), or "" when path is no journal.
func sessionID(root, path string) string {
	if filepath.Base(path) != journalName {
		return ""
	}
	dir := filepath.Dir(path)
	if filepath.Dir(dir) != root {
		return ""
	}
	if id := filepath.Base(dir); validate.ValidID(id) {
		return id
	}
	return ""
}

// handler maps journal lines to events and binds sessions to processes;
// Sessions does the rest. It runs on the source's goroutine only.
type handler struct {
	*sources.Sessions
	root    string
	procfs  string               // /proc, or a fake in tests
	maps    map[string]*mapper   // per session
	pending map[string]bindQuery // sessions to bind to a process at Idle
	buf     []agentbridge.Event
}

// bindQuery is what finding a session's process needs.
type bindQuery struct {
	dir   string
	cwd   string
	since time.Time
}

func newHandler(ss *sources.Sessions, root string) *handler {
	return &handler{Sessions: ss, root: root, procfs: proc.Root, maps: map[string]*mapper{}, pending: map[string]bindQuery{}}
}

// Line maps one record and folds its events into the file's session.
func (h *handler) Line(path string, line []byte) {
	id := sessionID(h.root, path)
	m := h.maps[id]
	if m == nil {
		m = &mapper{session: id}
		h.maps[id] = m
	}
	var code string
	h.buf, code = m.Map(h.View(id), line, h.buf[:0])
	if code != "" {
		h.BadLine(code)
	}
	for _, e := range h.buf {
		if !h.Event(id, Harness, e) || e.Kind != agentbridge.KindSessionStarted {
			continue
		}
		if t := m.env.Type; t == typeSessionStart || t == typeSessionResume {
			q := bindQuery{dir: filepath.Dir(path), cwd: e.Cwd}
			if e.OccurredAt > 0 {
				q.since = time.UnixMilli(e.OccurredAt)
			}
			h.pending[id] = q // a (new) process has the session: find it at Idle
		}
	}
}

// Idle binds the sessions that (re)started since the last Idle to their
// processes, after every line of the burst was read (a session that ended
// in the same burst is not bound), then lets Sessions flush.
func (h *handler) Idle() {
	if len(h.pending) > 0 {
		h.bindPending()
	}
	h.Sessions.Idle()
}

// ScanDone binds the sessions the scan read before the reset is sent, so
// that a session whose process is gone shows ended from the start.
func (h *handler) ScanDone() {
	if len(h.pending) > 0 {
		h.bindPending()
	}
	h.Sessions.ScanDone()
}

// bindPending binds each pending session by its lock file, and asks the
// runtime's binder for the others (one pass over /proc for all of them,
// at this Idle), never binding a process that a lock or another session
// already claims.
func (h *handler) bindPending() {
	locked := map[int]bool{}
	for _, id := range slices.Sorted(maps.Keys(h.pending)) {
		if h.Get(id) == nil || h.Exited(id) {
			continue
		}
		q := h.pending[id]
		if pid := liveLatest(h.procfs, lockPIDs(q.dir)); pid > 0 {
			locked[pid] = true
			h.BindPID(id, pid)
		} else if q.cwd != "" {
			h.FindProcess(id, sources.ProcQuery{Cwd: q.cwd, Running: q.since, Born: q.since, Window: startWindow,
				Taken: func(pid int) bool { return locked[pid] }})
		}
	}
	clear(h.pending)
}

// Rescan drops every mapper: all journals are read again from the start.
func (h *handler) Rescan() {
	clear(h.maps)
	clear(h.pending)
	h.Sessions.Rescan()
}

// Truncated drops the session's state: its journal (rewritten by /undo,
// or by Escape twice, which withdraws the last prompt and rewinds the
// journal to before it) is read again. The runtime keeps the session's
// process across it; the rewritten journal names no pid.
func (h *handler) Truncated(path string) {
	id := sessionID(h.root, path)
	delete(h.maps, id)
	h.Restart(id)
}

// Removed ends the session: its journal is gone.
func (h *handler) Removed(path string) {
	id := sessionID(h.root, path)
	delete(h.maps, id)
	delete(h.pending, id)
	h.Stop(id, "journal removed")
}
