// Package codex is the session source for OpenAI's Codex CLI. It follows
// the rollout journals under $CODEX_HOME/sessions/YYYY/MM/DD/ (new date
// folders included), the thread names in $CODEX_HOME/session_index.jsonl,
// and the process holding each rollout open, and reports one session per
// root thread; subagent threads are folded into their root's session.
//
// What is mapped, and how (see Rollout and Engine for the details):
//
//   - session_meta starts a session: id (the thread id), cwd, and the
//     subagent link (source.subagent.thread_spawn.parent_thread_id, or the
//     top-level parent_thread_id); turn_context gives the model.
//   - task_started / task_complete / turn_aborted delimit turns: complete
//     with an error is failed, aborted is cancelled (budget_limited:
//     failed). Rollouts older than those records get inferred turns.
//   - function, custom tool, local shell and tool search calls are tools by
//     call_id, closed by their outputs; a web search call is one finished
//     tool. Outcomes come from exit codes where the records give one.
//   - Subagent threads (spawn_agent) have rollouts of their own: each is
//     listed under its root session (subagent.started; title: its
//     nickname, type: its role) and ends with its own turn, or with the
//     parent's collab_waiting_end / collab_close_end records of older
//     versions. A subagent spawned with the parent's history (fork_context)
//     gets that history copied into its rollout, finished turns included:
//     a turn whose UUIDv7 id is older than the subagent's thread is not its
//     own and does not end it.
//   - Titles: the thread name (session_index.jsonl, thread_name_updated),
//     else the first user message (user_message; since 0.16x an
//     item_completed UserMessage), redacted, paths cut, ≤ 200 characters.
//     No other conversation content is ever published.
//   - The process: Codex writes no pid file; the Codex process writing
//     the rollout when it appears (one pass over /proc/*/fd; see Agent
//     for what counts: open for writing, named codex) is the session's,
//     watched with a pidfd (agent.exited when it ends). A reader (tail -f,
//     less, cp) is never bound, so its exit never ends the session. A
//     rollout compressed to .jsonl.zst is the same session. A rollout
//     written again after its process exited (codex resume appends to
//     it) is bound to the process holding it now: the same session, idle
//     again, its linger cancelled (Sessions.BindPID).
//   - Codex's TUI runs its agent in a shared app-server daemon by default:
//     the daemon holds the rollout and outlives the TUI, so the session's
//     pid is the daemon's (which TUI drives a thread cannot be told from
//     /proc). The session ends when the rollout's last writer closes it
//     (sources.CloseWatch: inotify IN_CLOSE_WRITE, then no other process
//     holding it open for writing): the daemon does that once the thread
//     has had no client for thread_unload_delay_secs. --no-daemon TUIs
//     close it when they exit. No timer of the bridge is involved.
//   - Waiting for approval is never persisted by Codex: it is not reported
//     (Info says waiting is unavailable).
package codex

import (
	"context"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"strings"

	"github.com/agentbridge/agentbridge"
	"github.com/agentbridge/agentbridge/fold"
	"github.com/agentbridge/agentbridge/hub"
	"github.com/agentbridge/agentbridge/proc"
	"github.com/agentbridge/agentbridge/sources"
)

// The source's identity.
const (
	ID          = "codex"
	DisplayName = "Codex"
	Harness     = "codex"
	EnvHome     = "CODEX_HOME"
)

// Agent is how a Codex process is told from other processes holding a
// rollout open: only a process writing the rollout (open for writing) whose
// executable or command name is "codex" (or a release binary
// "codex-<target>"), or a Node or Bun process running Codex's script
// (…/codex/…, codex.js), is the session's process.
// Readers (tail -f, less, cp, an editor) and other writers are never bound.
var Agent = proc.Agent{Names: []string{"codex"}, Runtimes: []string{"node", "bun"}}

// Options configure a Source: Home is the Codex home, empty for the
// default ($CODEX_HOME, else ~/.codex: DefaultHome); a negative Linger
// keeps an exited session while its rollout exists; a nil Logger discards.
type Options = sources.Options

// DefaultHome returns $CODEX_HOME when set (and absolute), else ~/.codex.
func DefaultHome() (string, error) { return sources.DefaultHome(ID) }

// Source reports Codex sessions; it implements hub.Source.
type Source = sources.AgentSource

// New returns a Source for opt. It touches nothing until Run.
func New(opt Options) *Source {
	if opt.Logger == nil {
		opt.Logger = slog.New(slog.DiscardHandler)
	}
	return agent.New(opt)
}

// agent describes the source: what it can know, and from where. Its run
// is its own (follow): a close watch lives beside the tailer.
var agent = &sources.Agent{Single: sources.Single{
	ID: ID, DisplayName: DisplayName, Harness: Harness, HomeEnv: EnvHome,
	DefaultHome: sources.HomeUnder(".codex"),
	Hooks:       &hookVocabulary,
	Observes: map[string]agentbridge.Observe{
		"waiting":   {How: agentbridge.Unavailable},               // approvals are never persisted
		"exited":    sources.ExitedByHolder(),                     // through the process holding the rollout
		"subagents": {How: agentbridge.Observed, From: "journal"}, // subagent threads' own rollouts
		"title":     {How: agentbridge.Observed, From: "journal"}, // the thread name or first prompt
		"model":     {How: agentbridge.Observed, From: "journal"}, // turn_context records
	},
}, Run: follow}

// follow follows the Codex home o.Home until ctx ends (hub.Source).
func follow(ctx context.Context, st hub.Start, o Options) error {
	home := o.Home
	if home == "" {
		var err error
		if home, err = DefaultHome(); err != nil {
			return err
		}
	}
	home = filepath.Clean(home)
	h := &handler{
		home:     home,
		sessions: filepath.Join(home, "sessions"),
		index:    filepath.Join(home, "session_index.jsonl"),
		eng:      NewEngine(),
		seen:     map[string]bool{},
		dirty:    map[string]bool{},
		looked:   map[string]bool{},
		log:      o.Logger,
	}
	cfg := o.Follow(sources.TailConfig{Roots: []string{home}, Match: h.match, Dirs: h.dirs, Recent: h.recent})
	cfg.Agent = Agent
	cw, err := sources.NewCloseWatch(ctx, Agent, func(path string) {
		if ss := h.Sessions; ss != nil {
			ss.Post(func() { h.closed(path) })
		}
	})
	if err != nil {
		o.Logger.Debug("no close watch: sessions hosted by the Codex daemon end only with it", "err", err)
	} else {
		h.closes = cw
		defer cw.Close()
	}
	return sources.Follow(ctx, st, cfg, func(ss *sources.Sessions) sources.Handler {
		h.Sessions = ss
		h.eng.SetViews(func(id string) fold.View { return ss.View(id) })
		return h
	})
}

// handler is the tailer's Handler: it feeds rollout lines to the engine
// and the engine's events to the shared Sessions. Everything runs on the
// tailer's goroutine.
type handler struct {
	*sources.Sessions
	home, sessions, index string
	eng                   *Engine
	seen                  map[string]bool     // rollout paths read since the last rescan
	dirty                 map[string]bool     // rollout paths with lines since their last flush
	looked                map[string]bool     // exited sessions whose holder was looked up in this wake
	closes                *sources.CloseWatch // nil when inotify is unavailable
	log                   *slog.Logger
}

func (h *handler) match(p string) bool {
	if p == h.index {
		return true
	}
	base := filepath.Base(p)
	return strings.HasPrefix(p, h.sessions+"/") && strings.HasPrefix(base, "rollout-") && strings.HasSuffix(base, ".jsonl")
}

func (h *handler) dirs(p string) bool {
	return p == h.sessions || strings.HasPrefix(p, h.sessions+"/")
}

// recent reads the session index whatever its age, and old rollouts that
// a process still holds open.
func (h *handler) recent(p string, info fs.FileInfo) bool {
	if p == h.index {
		return true
	}
	return h.Sessions != nil && h.HeldOpen(p, info)
}

// Line implements sources.Handler.
func (h *handler) Line(path string, line []byte) {
	if path == h.index {
		id, name, ok := parseIndexLine(line)
		if !ok {
			h.BadLine(sources.CodeInvalidRecord)
			return
		}
		h.publish(h.eng.SetName(id, name))
		return
	}
	key := keyOf(path)
	if !h.seen[path] {
		h.seen[path] = true
		if id, root, ok := h.eng.Thread(key); ok && root {
			h.Restart(id) // the same rollout again (e.g. decompressed)
		}
		pid := h.Holder(path)
		h.log.Debug("rollout opened", "writer", pid)
		h.eng.Open(key, pid)
		if h.closes != nil {
			if err := h.closes.Add(path); err != nil {
				h.log.Debug("cannot watch the rollout's close", "err", err)
			}
		}
	} else if id, root, ok := h.eng.Thread(key); ok && root && h.resumed(id) {
		// The rollout goes on after its process exited (codex resume
		// appends to it): announce the session again with the process
		// holding the rollout now. session.started with a pid binds it,
		// cancelling the exited session's linger (Sessions.BindPID); a
		// session that lingered out comes back whole.
		pid := h.Holder(path)
		h.log.Debug("rollout written after its session ended", "session", id, "writer", pid)
		if pid > 0 || h.Get(id) == nil {
			h.publish(h.eng.Restate(key, pid))
		} else {
			h.looked[id] = true // no holder now: look again next wake
		}
	}
	h.dirty[path] = true
	h.publish(h.eng.Line(key, line))
	if h.eng.Bad() {
		h.BadLine(sources.CodeInvalidJSON)
	}
	if kind, known := h.eng.Kind(); kind != "" {
		id, root, _ := h.eng.Thread(key)
		if !root {
			id = "" // a subagent's thread: its turns are not the session's
		}
		h.Record(id, kind, known)
		if kind == "session_meta" {
			if m, ok := h.eng.Meta(key); ok {
				h.Version(Harness, m.CLIVersion)
			}
		}
	}
}

// resumed reports whether a line of the root session id's rollout means
// that it was taken up again: the bridge forgot the session (it lingered
// out after its process exited), or the session is exited and no /proc
// lookup was made for it in this wake yet.
func (h *handler) resumed(id string) bool {
	if h.Get(id) == nil {
		return true
	}
	return !h.looked[id] && h.Exited(id)
}

// Truncated implements sources.Handler: the rollout is read again.
func (h *handler) Truncated(path string) {
	if path == h.index {
		return // the names read again overwrite the ones kept
	}
	key := keyOf(path)
	if id, root, ok := h.eng.Thread(key); ok && root {
		h.Restart(id)
	}
	delete(h.seen, path)
	delete(h.dirty, path)
}

// Removed implements sources.Handler. A rollout compressed in place
// (rollout-….jsonl → rollout-….jsonl.zst) is the same session and keeps its
// state; any other removal stops the session.
func (h *handler) Removed(path string) {
	if path == h.index {
		return
	}
	delete(h.seen, path)
	delete(h.dirty, path)
	if h.closes != nil {
		h.closes.Remove(path)
	}
	if _, err := os.Stat(path + ".zst"); err == nil {
		h.log.Debug("rollout compressed: same session", "path", path)
		return
	}
	h.publish(h.eng.Close(keyOf(path)))
}

// Rescan implements sources.Handler.
func (h *handler) Rescan() {
	h.eng.Reset()
	clear(h.seen)
	clear(h.dirty)
	h.Sessions.Rescan()
}

// ScanDone implements sources.Handler: rollouts read at the scan are
// flushed, and the root sessions no process holds open are exited (their
// Codex is gone: it holds a live rollout open), before the reset.
func (h *handler) ScanDone() {
	for path := range h.dirty {
		key := keyOf(path)
		h.publish(h.eng.Flush(key))
		if id, root, ok := h.eng.Thread(key); ok && root && h.eng.pid(key) == 0 {
			ev := agentbridge.Event{Kind: agentbridge.KindAgentExited}
			if fi, err := os.Stat(path); err == nil {
				ev.OccurredAt = fi.ModTime().UnixMilli()
			}
			h.Event(id, Harness, ev)
		}
	}
	clear(h.dirty)
	h.Sessions.ScanDone()
}

// Idle implements sources.Handler: the rollouts read since the last wake
// have been read to their end for now.
func (h *handler) Idle() {
	for path := range h.dirty {
		h.publish(h.eng.Flush(keyOf(path)))
	}
	clear(h.dirty)
	clear(h.looked)
	h.Sessions.Idle()
}

// closed ends the root session of a rollout that its last writer closed
// (CloseWatch checked that no other process holds it open for writing).
// Codex's app-server daemon hosts the agent of a TUI and outlives it: it
// closes the rollout once the thread has had no client for
// thread_unload_delay_secs, and that close is the only sign on disk that
// the session is over. A TUI without the daemon (--no-daemon) closes its
// rollout when it exits, so both modes end the same way (its pidfd says
// the same; the second exit is a no-op). A rollout written again later
// (codex resume) brings the session back through the resume path of
// Line.
func (h *handler) closed(path string) {
	id, root, ok := h.eng.Thread(keyOf(path))
	if !ok || !root || h.Get(id) == nil || h.Exited(id) {
		return
	}
	// Look again now, on the source's goroutine: a process that took the
	// rollout up since the close (codex resume) writes it.
	if pids, _ := proc.FindWriters(proc.Root, path, Agent); len(pids) > 0 {
		h.log.Debug("rollout closed, but written again", "session", id, "writers", pids)
		return
	}
	h.log.Debug("rollout closed by its last writer: the session ends", "session", id)
	h.Event(id, Harness, agentbridge.Event{Kind: agentbridge.KindAgentExited})
}

// publish folds the engine's events into the sessions. A subagent.done
// for a subagent the fold already ended (its root exited) is dropped
// quietly.
func (h *handler) publish(pubs []Pub) {
	for _, p := range pubs {
		if p.Event.Kind == agentbridge.KindSubagentDone && !h.View(p.Session).SubagentRunning(p.Event.SubagentID) {
			continue
		}
		h.Event(p.Session, Harness, p.Event)
	}
}

// keyOf is the engine key of a rollout path: its file name without
// ".jsonl" or ".jsonl.zst", so that compressing a rollout in place keeps
// its key.
func keyOf(path string) string {
	name := filepath.Base(path)
	return strings.TrimSuffix(strings.TrimSuffix(name, ".zst"), ".jsonl")
}

var _ hub.Source = (*Source)(nil)
