// Package qwen is the source of Qwen Code (a Gemini CLI fork). It follows
// $QWEN_HOME (default ~/.qwen): chats at projects/<cwd slug>/chats/
// <sessionId>.jsonl, written from the first prompt on (record.go maps
// them), and the <sessionId>.runtime.json the TUI writes beside them at
// start ({pid, session_id, work_dir, started_at}), which binds the
// session to its process, as the live registry sessions/<pid>.json
// (registry.go) does exactly. The mapping is in README.md beside this file.
package qwen

import (
	"bytes"
	"io/fs"
	"math"
	"path/filepath"
	"strings"
	"time"

	json "github.com/go-json-experiment/json"

	"github.com/agentbridge/agentbridge"
	"github.com/agentbridge/agentbridge/proc"
	"github.com/agentbridge/agentbridge/sources"
	"github.com/agentbridge/agentbridge/sources/claudecode"
	"github.com/agentbridge/agentbridge/validate"
)

// The source's identity.
const (
	ID          = "qwen"
	DisplayName = "Qwen Code"
	Harness     = "qwen-code"
	EnvHome     = "QWEN_HOME"
)

// hookVocabulary is Qwen Code's hook vocabulary: the events and payloads
// of Claude Code (as its 0.24 CLI builds them: PermissionRequest without a
// tool id, a Notification "Qwen Code needs your permission to use X" of
// type permission_prompt), without StopFailure, installed in settings.json
// of its home, which may hold comments; its prompts cannot be answered
// through the bridge.
var hookVocabulary = func() sources.Hooks {
	h := claudecode.Hooks().WithoutEvents("StopFailure")
	h.Harness, h.Comments, h.AnswerWait = Harness, true, 0
	return h
}()

// agent is the source: its identity and hooks, its chats and registry
// records, and their handler.
var agent = &sources.Agent{
	Single: sources.Single{
		ID: ID, DisplayName: DisplayName, Harness: Harness, HomeEnv: EnvHome,
		DefaultHome: sources.HomeUnder(".qwen"),
		Hooks:       &hookVocabulary,
		Observes: map[string]agentbridge.Observe{
			// A pending approval is a functionCall of a tool that asks in the
			// session's approval mode (mode.go) with nothing after it; a tool
			// that runs without asking looks the same until its result.
			"waiting":   {How: agentbridge.Inferred, From: "journal"},
			"exited":    {How: agentbridge.Observed, From: "process"}, // the pid of the live registry's record (else of <id>.runtime.json), by pidfd
			"subagents": {How: agentbridge.Observed, From: "journal"}, // the agent tool's functionCall and tool_result
			"title":     {How: agentbridge.Observed, From: "journal"},
			"model":     {How: agentbridge.Observed, From: "journal"},
		},
	},
	Process: Agent,
	Tail: func(o sources.Options) sources.TailConfig {
		root, reg := dirs(o.Home)
		return sources.TailConfig{
			Roots: []string{root, reg},
			Match: func(p string) bool { _, runtime, ok := kindOf(root, p); return ok && !runtime },
			Dirs:  func(p string) bool { return descend(root, p) },
			// A registry record is written when its process starts: however
			// old, it is read (a stale one names no live process).
			Recent: func(p string, _ fs.FileInfo) bool { return isRegistry(reg, p) },
		}
	},
	Handler: sources.HandlerFunc(func(o sources.Options, ss *sources.Sessions) sources.Handler {
		root, reg := dirs(o.Home)
		return &handler{Sessions: ss, root: root, reg: reg, states: map[string]*State{},
			pids: map[string]runtimeFile{}, registry: map[string]registered{}, chats: map[string]string{},
			gone: map[string]struct{}{}}
	}),
}

func init() { sources.RegisterAgent(agent) }

// Source follows Qwen Code's chats. It implements hub.Source.
type Source = sources.AgentSource

// New returns the source for o.Home ($QWEN_HOME).
func New(o sources.Options) *Source { return agent.New(o) }

// dirs returns where Qwen Code under home keeps its chats (projects/) and
// its registry of live sessions (sessions/).
func dirs(home string) (root, reg string) {
	return filepath.Join(home, "projects"), filepath.Join(home, "sessions")
}

// Agent says which processes are Qwen Code's: Node running its package's
// script (a chain of three; the runtime's binder takes the innermost).
var Agent = proc.Agent{Names: []string{"qwen"}, Runtimes: []string{"node", "bun"}, Scripts: []string{"qwen-code"}}

// findOrphans asks the runtime's binder for the process of each session
// written since the last call that has neither a live registry record
// nor a runtime file (one removed, or never written): the Qwen Code
// process in its cwd, never one that another session's record or runtime
// file names. With none, the session has ended.
func (h *handler) findOrphans() {
	for id, chat := range h.chats {
		if _, ok := h.pids[id]; ok {
			continue
		}
		if _, ok := h.registry[id]; ok {
			continue
		}
		if s := h.Get(id); s != nil && s.Snapshot().Cwd != "" {
			h.FindProcess(id, sources.ProcQuery{Cwd: s.Snapshot().Cwd, Wrote: chat, Taken: h.named})
		}
	}
	clear(h.chats)
}

// named reports whether a runtime file or a live registry record names
// pid.
func (h *handler) named(pid int) bool {
	for _, rt := range h.pids {
		if rt.PID == pid {
			return true
		}
	}
	for _, r := range h.registry {
		if r.pid == pid {
			return true
		}
	}
	return false
}

// Idle asks for the processes of sessions without a runtime file, then
// lets Sessions find them and flush.
func (h *handler) Idle() {
	h.findOrphans()
	h.Sessions.Idle()
}

// ScanDone is Idle for the scan: before the reset.
func (h *handler) ScanDone() {
	h.findOrphans()
	h.Sessions.ScanDone()
}

// kindOf recognises projects/<slug>/chats/<id>.jsonl (runtime false) and
// projects/<slug>/chats/<id>.runtime.json (runtime true).
func kindOf(root, p string) (id string, runtime, ok bool) {
	rel, found := strings.CutPrefix(p, root+"/")
	parts := strings.Split(rel, "/")
	if !found || len(parts) != 3 || parts[1] != "chats" {
		return "", false, false
	}
	if id, ok := strings.CutSuffix(parts[2], ".runtime.json"); ok && validate.ValidID(id) {
		return id, true, true
	}
	if id, ok := strings.CutSuffix(parts[2], ".jsonl"); ok && validate.ValidID(id) {
		return id, false, true
	}
	return "", false, false
}

func descend(root, p string) bool {
	rel, ok := strings.CutPrefix(p, root+"/")
	parts := strings.Split(rel, "/")
	return ok && (len(parts) == 1 || (len(parts) == 2 && parts[1] == "chats"))
}

// handler maps lines to events; Sessions does the rest. It runs on the
// source's goroutine only.
type handler struct {
	*sources.Sessions
	root     string
	reg      string                 // the live registry's directory
	states   map[string]*State      // by session id
	pids     map[string]runtimeFile // runtime files read, by session id
	registry map[string]registered  // live registry records, by session id
	chats    map[string]string      // session id → its chat, written since the last findOrphans
	// gone holds the sessions whose runtime file names a process that is
	// gone: their chat's later lines (a turn read after the verdict, when
	// the runtime file was read first, as after a bridge restart) do not
	// make them alive again.
	gone map[string]struct{}
}

// MatchWhole picks the runtime files, which the runtime reads whole
// (sources.WholeFiles).
func (h *handler) MatchWhole(p string) bool {
	_, runtime, ok := kindOf(h.root, p)
	return ok && runtime || isRegistry(h.reg, p)
}

// WholeFile takes a runtime file's or a registry record's content (nil:
// it went away).
func (h *handler) WholeFile(p string, data []byte) {
	if isRegistry(h.reg, p) {
		h.readRegistry(p, data)
		return
	}
	id, _, _ := kindOf(h.root, p)
	if data == nil {
		delete(h.pids, id)
		return
	}
	h.readRuntime(id, data)
}

// Line maps one line of a chat.
func (h *handler) Line(p string, line []byte) {
	id, runtime, ok := kindOf(h.root, p)
	if !ok || runtime {
		return
	}
	st := h.states[id]
	if st == nil {
		st = &State{}
		h.states[id] = st
	}
	if bytes.Contains(line, []byte(`"functionCall"`)) {
		st.SetApprovalMode(h.approvalMode(id))
	}
	h.chats[id] = p
	events, code := Map(id, h.View(id), line, st)
	if code != "" {
		h.BadLine(code)
		return
	}
	for _, e := range events {
		if !h.Event(id, Harness, e) {
			continue
		}
		if e.Kind == agentbridge.KindSessionStarted {
			if r, ok := h.registry[id]; ok {
				h.BindPID(id, r.pid) // the registry names the process exactly
			} else if rt, ok := h.pids[id]; ok {
				h.bind(id, rt)
			}
		}
	}
	if _, ok := h.gone[id]; ok {
		h.EndedAt(id, time.Time{}) // a turn read after the verdict revived it
	}
}

// readRuntime takes <id>.runtime.json and binds the session to its
// process when that process is the one the file describes.
func (h *handler) readRuntime(id string, data []byte) {
	var rt runtimeFile
	if json.Unmarshal(data, &rt) != nil || rt.PID <= 0 || rt.PID > validate.MaxPID || (rt.SessionID != "" && rt.SessionID != id) {
		h.BadLine(sources.CodeInvalidRecord)
		return
	}
	h.pids[id] = rt
	delete(h.gone, id) // a new runtime file: a new verdict
	if _, exact := h.registry[id]; !exact && h.Get(id) != nil {
		h.bind(id, rt) // the registry's record, when there is one, wins
	}
}

// bind binds the session to the runtime file's process. A runtime file
// outlives its process (Qwen Code leaves it behind on /quit and Ctrl-C),
// and its started_at is when the TUI wrote it (after Node started,
// seconds later under load; again at a session swap), not when the
// process started. The process that wrote it started before started_at:
// a pid that names no process, or a process started later (beyond the
// granularity of boot-time arithmetic: another process that reused the
// pid), means the session's process has ended, and the session ends at
// once (agent.exited), also when the bridge starts long after.
func (h *handler) bind(id string, rt runtimeFile) {
	written := time.Duration(0)
	if rt.StartedAt > 0 && rt.StartedAt < math.MaxInt32 {
		written = time.Duration(rt.StartedAt * float64(time.Second))
	}
	if written > 0 {
		st, err := proc.ReadStat(h.ProcRoot(), rt.PID)
		if err != nil {
			h.gone[id] = struct{}{}
			h.EndedAt(id, time.Time{}) // gone
			return
		}
		at, err := proc.StartedAtIn(h.ProcRoot(), st)
		if err != nil || at.Sub(time.Unix(0, int64(written))) > startSlack {
			h.gone[id] = struct{}{}
			h.EndedAt(id, time.Time{}) // the pid names another process now
			return
		}
		// session.started at the process's start: the pid-reuse guard
		// compares the process with it (a resumed session's new process
		// started after the chat's first record).
		h.Event(id, Harness, agentbridge.Event{Kind: agentbridge.KindSessionStarted, OccurredAt: at.UnixMilli()})
	}
	h.BindPID(id, rt.PID)
	if h.Exited(id) {
		h.gone[id] = struct{}{} // the pid names no process
	}
}

// startSlack is how much later than the runtime file's started_at its
// process may seem to have started: /proc gives the boot time in whole
// seconds.
const startSlack = 2 * time.Second

// Truncated starts the chat's mapping again: it is read from the start.
func (h *handler) Truncated(p string) {
	id, runtime, ok := kindOf(h.root, p)
	if !ok || runtime {
		return
	}
	delete(h.states, id)
	h.Restart(id)
}

// Removed ends the chat's session.
func (h *handler) Removed(p string) {
	id, runtime, ok := kindOf(h.root, p)
	if !ok || runtime {
		return
	}
	delete(h.states, id)
	delete(h.gone, id)
	h.Stop(id, "journal removed")
}

// Rescan drops the mapping state: every file is read again.
func (h *handler) Rescan() {
	clear(h.states)
	clear(h.pids)
	clear(h.chats)
	clear(h.registry)
	clear(h.gone)
	h.Sessions.Rescan()
}
