// Package pi is the session source for Pi, the coding agent of
// @mariozechner/pi-coding-agent. Pi keeps one JSON-lines journal per
// session at $PI_CODING_AGENT_DIR/sessions/--<cwd with / as ->--/
// <timestamp>_<uuid>.jsonl (PI_CODING_AGENT_SESSION_DIR, when set, names
// the sessions directory itself, and the journals sit directly in it). The
// journal is a tree of entries (session header, model_change, message, …)
// appended in order; Pi writes nothing until the first reply of a session
// is complete, then everything up to it at once.
//
// The mapping (record.go, README.md) is a pure function of the entry and a
// little per-journal state. The session id is the journal name's <uuid>
// (the header's id). Pi has no approval prompts, so a session is never
// waiting. Pi opens its journal only to append, so the process is found by
// its working directory and command name (Sessions.FindProcess) and watched with a
// pidfd; of several Pi processes in one directory, the one that started
// just before a session began (Pi creates a session at startup) and runs
// no other session is taken.
package pi

import (
	"path/filepath"
	"strings"
	"time"

	"github.com/agentbridge/agentbridge"
	"github.com/agentbridge/agentbridge/proc"
	"github.com/agentbridge/agentbridge/sources"
	"github.com/agentbridge/agentbridge/validate"
)

// The source's identity.
const (
	ID          = "pi"
	DisplayName = "Pi"
	Harness     = "pi"
	EnvHome     = "PI_CODING_AGENT_DIR"
	EnvSessions = "PI_CODING_AGENT_SESSION_DIR"
)

// Source reports Pi's sessions. It implements hub.Source.
type Source = sources.AgentSource

// New returns the source for the agent's home o.Home (Window, Linger and
// Logger as sources.Options says; o.Getenv reads
// PI_CODING_AGENT_SESSION_DIR); it touches nothing until Run.
func New(o sources.Options) *Source { return agent.New(o) }

// sessionsDir is $PI_CODING_AGENT_SESSION_DIR when it is absolute (Pi's
// own order: the variable wins over the home), else home/sessions.
func sessionsDir(home string, getenv func(string) string) string {
	if getenv != nil {
		if d := getenv(EnvSessions); d != "" && filepath.IsAbs(d) {
			return filepath.Clean(d)
		}
	}
	return SessionsDir(home)
}

// SessionsDir returns where Pi under home keeps its journals by default.
func SessionsDir(home string) string { return filepath.Join(home, "sessions") }

// agent is the source: Pi's journals, mapped by (*session).mapRecord with
// the journal handler (sources.Journals); there is no side file.
var agent = &sources.Agent{
	Single: sources.Single{
		ID: ID, DisplayName: DisplayName, Harness: Harness, HomeEnv: EnvHome,
		Env:         []string{EnvSessions},
		DefaultHome: sources.HomeUnder(".pi", "agent"),
		Observes: map[string]agentbridge.Observe{
			"waiting":   {How: agentbridge.Unavailable}, // Pi asks for no approvals
			"exited":    sources.ProcessExited(),
			"subagents": {How: agentbridge.Unavailable},               // Pi has no subagents of its own
			"title":     {How: agentbridge.Observed, From: "journal"}, // /name, else the first prompt
			"model":     {How: agentbridge.Observed, From: "journal"}, // model_change and each reply's model
		},
	},
	Process: proc.Agent{Exact: true, Names: []string{"pi"}}, // Pi sets its process title
	Tail: func(o sources.Options) sources.TailConfig {
		root := sessionsDir(o.Home, o.Getenv)
		return sources.TailConfig{
			Roots: []string{root},
			Match: isJournal,
			Dirs:  func(p string) bool { return filepath.Dir(p) == root }, // --<cwd>--/ only
		}
	},
	Handler: &sources.Journals[*session]{
		Files: func(p string) (string, string, string) { return sessionID(p), p, "" },
		New:   func(string) *session { return newSession() },
		Line:  (*session).mapRecord,
		// Pi creates a new session as it starts (the header's timestamp is a
		// few seconds after the process began: 2–3 s measured under load), so
		// of two TUIs in one directory the one started just before a session
		// began is its writer.
		StartWindow: 20 * time.Second,
	},
}

// isJournal picks <timestamp>_<uuid>.jsonl files.
func isJournal(path string) bool {
	return strings.HasSuffix(path, ".jsonl") && validate.ValidID(sessionID(path))
}

// sessionID is the journal name's <uuid>: what follows the last "_" of its
// stem (the whole stem when there is none, e.g. pi --session <file>).
func sessionID(path string) string {
	stem := sources.Stem(path, ".jsonl")
	return stem[strings.LastIndexByte(stem, '_')+1:]
}
