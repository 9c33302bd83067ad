// Package kiro is the session source for Kiro CLI (kiro-cli). Kiro CLI
// keeps one JSON-lines journal per session at
// $KIRO_HOME/sessions/cli/<uuid>.jsonl (Prompt, AssistantMessage,
// ToolResults, Clear records in a versioned envelope) and rewrites a
// metadata sidecar beside it, <uuid>.json (session_id, cwd, title, the
// model, and per finished turn its message ids and end reason).
//
// The journal carries no cwd, model or end-of-turn record: a turn ends at
// the assistant message that calls no tool, or, when the journal never
// shows one (an interrupted or failed turn), when the sidecar lists the
// turn as ended. The sidecar is read whole with sources.ReadSmall when it
// or the journal changes. The session id is the file name's <uuid>. Kiro
// CLI opens its journal only to write, so the process (comm "kiro-cli") is
// found by its working directory (kit.Procs) and watched with a pidfd.
// Headless runs (kiro-cli chat --no-interactive) may write no journal at
// all: such a run is not seen.
package kiro

import (
	"context"
	"path/filepath"
	"strings"

	"github.com/agentbridge/agentbridge"
	"github.com/agentbridge/agentbridge/hub"
	"github.com/agentbridge/agentbridge/proc"
	"github.com/agentbridge/agentbridge/sources"
	"github.com/agentbridge/agentbridge/sources/internal/kit"
)

// The source's identity.
const (
	ID          = "kiro"
	DisplayName = "Kiro CLI"
	Harness     = "kiro-cli"
	EnvHome     = "KIRO_HOME"
)

// maxSidecar bounds the sidecar read: it grows by about a kilobyte a turn.
const maxSidecar = 4 << 20

// Source reports Kiro CLI's sessions. It implements hub.Source.
type Source struct{ cfg sources.Options }

// New returns the source for the agent's home o.Home (Window, Linger and
// Logger as sources.Options says); it touches nothing until Run.
func New(o sources.Options) *Source { return &Source{cfg: o} }

// SessionsDir returns where Kiro CLI under home keeps its journals.
func SessionsDir(home string) string { return filepath.Join(home, "sessions", "cli") }

// Info describes the source.
func (s *Source) Info() agentbridge.SourceInfo {
	return agentbridge.SourceInfo{
		ID:                   ID,
		DisplayName:          DisplayName,
		Harnesses:            []agentbridge.Harness{{ID: Harness, DisplayName: DisplayName}},
		EnvironmentVariables: []string{EnvHome},
		Observes: map[string]agentbridge.Observe{
			"waiting":   {How: agentbridge.Unavailable},               // tool approvals are not written down
			"exited":    {How: agentbridge.Inferred, From: "process"}, // the process found by cwd and name, then a pidfd
			"subagents": {How: agentbridge.Unavailable},               // no recording shows how subagents are written
			"title":     {How: agentbridge.Observed, From: "sidecar"}, // the sidecar's title, else the first prompt
			"model":     {How: agentbridge.Observed, From: "sidecar"}, // the sidecar's model
		},
	}
}

// Run follows the journals until ctx ends (see hub.Source).
func (s *Source) Run(ctx context.Context, st hub.Start) error {
	return sources.Follow(ctx, st, sources.FollowConfig{
		Tail: sources.TailConfig{
			Roots:  []string{SessionsDir(s.cfg.Home)},
			Match:  isSessionFile,
			Dirs:   func(string) bool { return false }, // everything sits directly in sessions/cli
			Window: s.cfg.Window,
		},
		Linger: s.cfg.Linger,
		Logger: s.cfg.Logger,
	}, func(ss *sources.Sessions) sources.Handler {
		return &handler{Sessions: ss, home: s.cfg.Home, sessions: map[string]*session{}, procs: kit.Procs{Root: proc.Root, Names: []string{"kiro-cli"}}}
	})
}

// isSessionFile picks <uuid>.jsonl journals and their <uuid>.json sidecars.
func isSessionFile(path string) bool {
	id, _ := idOf(path)
	return sources.ValidID(id)
}

// idOf returns the session id of a journal or sidecar path and whether it
// is the sidecar; "" for other files.
func idOf(path string) (id string, side bool) {
	switch base := filepath.Base(path); {
	case strings.HasSuffix(base, ".jsonl"):
		return strings.TrimSuffix(base, ".jsonl"), false
	case strings.HasSuffix(base, ".json"):
		return strings.TrimSuffix(base, ".json"), true
	}
	return "", false
}

// handler maps journal lines and sidecars to events; Sessions does the
// rest. It runs on the source's goroutine only.
type handler struct {
	*sources.Sessions
	home     string
	sessions map[string]*session // by session id
	sidecars kit.SideFiles       // to read at Idle
	procs    kit.Procs
	evs      []agentbridge.Event // scratch
}

func (h *handler) state(id string) *session {
	st := h.sessions[id]
	if st == nil {
		st = newSession()
		h.sessions[id] = st
	}
	return st
}

func (h *handler) markDirty(id, path string) {
	h.sidecars.Mark(id, strings.TrimSuffix(path, "l")) // <uuid>.jsonl → <uuid>.json
}

// Line maps one journal record; a sidecar line only says the sidecar
// changed (it is read whole at Idle).
func (h *handler) Line(path string, line []byte) {
	id, side := idOf(path)
	h.markDirty(id, path)
	if side {
		return
	}
	var code string
	h.evs, code = h.state(id).mapRecord(line, h.evs[:0])
	if code != "" {
		h.BadLine(code)
	}
	kit.Publish(h.Sessions, &h.procs, id, Harness, path, h.evs)
}

// Truncated drops the session's state when its journal was cut or
// replaced; a rewritten sidecar is only read again.
func (h *handler) Truncated(path string) {
	id, side := idOf(path)
	h.markDirty(id, path)
	if side {
		return
	}
	delete(h.sessions, id)
	h.Restart(id)
}

// Removed ends the session when its journal is gone.
func (h *handler) Removed(path string) {
	id, side := idOf(path)
	if side {
		return
	}
	delete(h.sessions, id)
	h.sidecars.Forget(id)
	h.Stop(id, "journal removed")
}

// Rescan forgets every session: all files are read again from the start.
func (h *handler) Rescan() {
	clear(h.sessions)
	h.sidecars.Reset()
	h.Sessions.Rescan()
}

// Idle reads the sidecars that changed, binds new sessions to their
// processes (one pass over /proc), then lets Sessions flush.
func (h *handler) Idle() {
	h.sidecars.Read(maxSidecar, func(id string, data []byte) {
		var code string
		h.evs, code = h.state(id).mapSidecar(data, h.evs[:0])
		if code != "" {
			h.BadLine(code) // a sidecar caught half-written is read again at its next change
		}
		kit.Publish(h.Sessions, &h.procs, id, Harness, filepath.Join(SessionsDir(h.home), id+".jsonl"), h.evs)
	})
	h.procs.Flush(h.BindPID)
	h.Sessions.Idle()
}

var _ hub.Source = (*Source)(nil)
