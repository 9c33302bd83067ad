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
// found by its working directory (Sessions.FindProcess) and watched with a pidfd.
// Headless runs (kiro-cli chat --no-interactive) may write no journal at
// all: such a run is not seen.
package kiro

import (
	"path/filepath"
	"strings"

	"github.com/agentbridge/agentbridge"
	"github.com/agentbridge/agentbridge/proc"
	"github.com/agentbridge/agentbridge/sources"
	"github.com/agentbridge/agentbridge/validate"
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
type Source = sources.AgentSource

// New returns the source for the agent's home o.Home (Window, Linger and
// Logger as sources.Options says); it touches nothing until Run.
func New(o sources.Options) *Source { return agent.New(o) }

// SessionsDir returns where Kiro CLI under home keeps its journals.
func SessionsDir(home string) string { return filepath.Join(home, "sessions", "cli") }

// agent is the source: Kiro CLI's journals and sidecars, mapped with the
// journal handler (sources.Journals).
var agent = &sources.Agent{
	Single: sources.Single{
		ID: ID, DisplayName: DisplayName, Harness: Harness, HomeEnv: EnvHome,
		DefaultHome: sources.HomeUnder(".kiro"),
		Observes: map[string]agentbridge.Observe{
			"waiting":   {How: agentbridge.Unavailable}, // tool approvals are not written down
			"exited":    sources.ProcessExited(),
			"subagents": {How: agentbridge.Unavailable},               // no recording shows how subagents are written
			"title":     {How: agentbridge.Observed, From: "sidecar"}, // the sidecar's title, else the first prompt
			"model":     {How: agentbridge.Observed, From: "sidecar"}, // the sidecar's model
		},
	},
	Process: proc.Agent{Exact: true, Names: []string{"kiro-cli"}}, // the kiro-cli chat process, not its kiro-cli-chat helper
	Tail: func(o sources.Options) sources.TailConfig {
		return sources.TailConfig{
			Roots: []string{SessionsDir(o.Home)},
			Match: isSessionFile,
			Dirs:  func(string) bool { return false }, // everything sits directly in sessions/cli
		}
	},
	Handler: &sources.Journals[*session]{
		Files: func(p string) (id, journal, side string) {
			id, _ = idOf(p)
			stem := filepath.Join(filepath.Dir(p), id)
			return id, stem + ".jsonl", stem + ".json"
		},
		New:       func(string) *session { return newSession() },
		Line:      (*session).mapRecord,
		Side:      (*session).mapSidecar,
		SideLimit: maxSidecar,
	},
}

// isSessionFile picks <uuid>.jsonl journals and their <uuid>.json sidecars.
func isSessionFile(path string) bool {
	id, _ := idOf(path)
	return validate.ValidID(id)
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
