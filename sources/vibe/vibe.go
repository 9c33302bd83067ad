// Package vibe is the session source for Mistral Vibe (the vibe CLI).
// Vibe keeps one directory per session at
// $VIBE_HOME/logs/session/<prefix>_<date>_<time>_<short id>/ with
// messages.jsonl (the chat messages, appended as each is saved) and
// meta.json (session id, start time, working directory, title, the
// active model, stats; rewritten whole, renamed over, after each save).
// Subagents run by the task tool keep their own directories below
// agents/; they are never root sessions.
//
// The records carry no timestamps, cwd or model: meta.json gives cwd and
// model (read whole with sources.ReadSmall when it changes). A turn starts
// at a user message that Vibe did not inject itself and ends at the
// assistant message that calls no tool; a subagent is a task tool call
// and ends with its result. The session id is the directory's name. Vibe
// opens its files only to write, so the process (comm "vibe") is found by
// its working directory (Sessions.FindProcess) and watched with a pidfd.
package vibe

import (
	"path/filepath"

	"github.com/agentbridge/agentbridge"
	"github.com/agentbridge/agentbridge/proc"
	"github.com/agentbridge/agentbridge/sources"
	"github.com/agentbridge/agentbridge/validate"
)

// The source's identity.
const (
	ID          = "vibe"
	DisplayName = "Mistral Vibe"
	Harness     = "mistral-vibe"
	EnvHome     = "VIBE_HOME"
)

// The files of a session directory.
const (
	messagesFile = "messages.jsonl"
	metaFile     = "meta.json"
	maxMeta      = 4 << 20 // meta.json holds the config and system prompt: tens of kilobytes
)

// Source reports Mistral Vibe's sessions. It implements hub.Source.
type Source = sources.AgentSource

// New returns the source for the agent's home o.Home (Window, Linger and
// Logger as sources.Options says); it touches nothing until Run.
func New(o sources.Options) *Source { return agent.New(o) }

// SessionsDir returns where Vibe under home keeps its session directories.
func SessionsDir(home string) string { return filepath.Join(home, "logs", "session") }

// agent is the source: Vibe's session directories, mapped with the
// journal handler (sources.Journals). Vibe writes meta.json after the
// messages it saves, so each save is followed by a meta.json read.
var agent = &sources.Agent{
	Single: sources.Single{
		ID: ID, DisplayName: DisplayName, Harness: Harness, HomeEnv: EnvHome,
		DefaultHome: sources.HomeUnder(".vibe"),
		Observes: map[string]agentbridge.Observe{
			"waiting":   {How: agentbridge.Unavailable}, // tool approvals are not written down
			"exited":    sources.ProcessExited(),
			"subagents": {How: agentbridge.Observed, From: "journal"}, // task tool calls and their results
			"title":     {How: agentbridge.Observed, From: "journal"}, // the first prompt, or meta.json's manual title
			"model":     {How: agentbridge.Observed, From: "sidecar"}, // meta.json's active model
		},
	},
	Process: proc.Agent{Exact: true, Names: []string{"vibe"}},
	Tail: func(o sources.Options) sources.TailConfig {
		root := SessionsDir(o.Home)
		return sources.TailConfig{
			Roots: []string{root},
			Match: func(p string) bool {
				b := filepath.Base(p)
				return (b == messagesFile || b == metaFile) && filepath.Dir(filepath.Dir(p)) == root && validate.ValidID(idOf(p))
			},
			Dirs: func(p string) bool { return filepath.Dir(p) == root }, // session directories, never their agents/
		}
	},
	Handler: &sources.Journals[*session]{
		Files: func(p string) (id, journal, side string) {
			dir := filepath.Dir(p)
			return filepath.Base(dir), filepath.Join(dir, messagesFile), filepath.Join(dir, metaFile)
		},
		New:       newSession,
		Line:      (*session).mapRecord,
		Side:      (*session).mapMeta,
		SideLimit: maxMeta,
	},
}

// idOf is the session id of a file in a session directory: the
// directory's name.
func idOf(path string) string { return filepath.Base(filepath.Dir(path)) }
