// Package example is the reference session source: the "Example Agent" of
// the host's extension docs. Its agent writes one JSON-lines journal per
// session at $EXAMPLE_AGENT_HOME/sessions/<id>.jsonl with the records of
// publish-lifecycle-events (session, prompt, tool_started, approval_needed,
// approval_resolved, complete) plus tool_finished, subagent_started,
// subagent_done and exit. It is the model every other file-based source
// copies: one sources.Agent (this file: its identity, the files it
// follows, its handler) registered with one line (register.go), and a pure
// mapping from a record to an event (record.go).
//
// Its handler is written by hand (a sources.HandlerFunc embedding
// *sources.Sessions) because this agent may hold its journal open, so a
// session's process is bound by the journal's holder. An agent that does
// not, and whose journal lines map with a little per-session state, says
// so declaratively instead: a *sources.Journals as the Agent's Handler,
// its Process named (see package pi).
//
// Journal record fields (all optional unless said):
//
//	{"type":"session","ts":RFC3339,"title","model","cwd","pid"}
//	{"type":"prompt","turnId"(required),"text"}
//	{"type":"tool_started","toolId"(required),"name"}
//	{"type":"tool_finished","toolId"(required),"ok","cancelled"}
//	{"type":"approval_needed","requestId"(required),"reason"}
//	{"type":"approval_resolved","requestId"(required)}
//	{"type":"complete","ok","cancelled","summary"}
//	{"type":"subagent_started","subagentId"(required),"parentId","title","agentType"}
//	{"type":"subagent_done","subagentId"(required),"ok","cancelled","summary"}
//	{"type":"exit","code","signal"}
//
// The session id is the file name's stem. Every record may carry "ts",
// which becomes occurredAt. Unknown record types are ignored.
package example

import (
	"log/slog"
	"path/filepath"
	"strings"
	"time"

	"github.com/agentbridge/agentbridge"
	"github.com/agentbridge/agentbridge/sources"
	"github.com/agentbridge/agentbridge/validate"
)

// The source's identity.
const (
	ID          = "example"
	DisplayName = "Example Agent"
	Harness     = "example-agent"
	EnvHome     = "EXAMPLE_AGENT_HOME"
)

// Config configures the source.
type Config struct {
	// Home is the agent's home ($EXAMPLE_AGENT_HOME); journals are at
	// Home/sessions/<id>.jsonl.
	Home string
	// Window: journals last written longer ago are not read at start
	// (sources.TailConfig.Window); zero means sources.DefaultWindow.
	Window time.Duration
	// Linger: how long an exited session stays (sources.NewSessions).
	Linger time.Duration
	// Logger gets debug lines; nil discards.
	Logger *slog.Logger
}

// Source reports the Example Agent's sessions. It implements hub.Source.
type Source = sources.AgentSource

// New returns the source for cfg; it touches nothing until Run.
func New(cfg Config) *Source {
	return agent.New(sources.Options{Home: cfg.Home, Window: cfg.Window, Linger: cfg.Linger, Logger: cfg.Logger})
}

// SessionsDir returns where the agent under home keeps its journals.
func SessionsDir(home string) string { return filepath.Join(home, "sessions") }

// agent is the source: what it is (Single), the files it follows (Tail)
// and the handler of its sessions. register.go registers it.
var agent = &sources.Agent{
	Single: sources.Single{
		ID: ID, DisplayName: DisplayName, Harness: Harness, HomeEnv: EnvHome,
		Observes: map[string]agentbridge.Observe{
			"waiting":   {How: agentbridge.Observed, From: "journal"}, // approval_needed records
			"exited":    {How: agentbridge.Observed, From: "journal"}, // exit records, and the journal's process through a pidfd
			"subagents": {How: agentbridge.Observed, From: "journal"},
			"tools":     {How: agentbridge.Observed, From: "journal"},
			"title":     {How: agentbridge.Observed, From: "journal"},
			"model":     {How: agentbridge.Observed, From: "journal"},
		},
	},
	Optional: true, // the reference agent: only when its home is named
	Tail: func(o sources.Options) sources.TailConfig {
		return sources.TailConfig{
			Roots: []string{SessionsDir(o.Home)},
			Match: isJournal,
			Dirs:  func(string) bool { return false }, // journals sit directly in sessions/
		}
	},
	Handler: sources.HandlerFunc(func(_ sources.Options, ss *sources.Sessions) sources.Handler { return &handler{Sessions: ss} }),
}

// isJournal picks <id>.jsonl files whose stem is a valid session id.
func isJournal(path string) bool {
	return strings.HasSuffix(path, ".jsonl") && validate.ValidID(sources.Stem(path, ".jsonl"))
}

// handler maps journal lines to events; Sessions does the rest. It runs on
// the source's goroutine only.
type handler struct {
	*sources.Sessions
	rec record // scratch for mapRecord
}

// Line maps one record and folds its event into the file's session.
func (h *handler) Line(path string, line []byte) {
	id := sources.Stem(path, ".jsonl")
	e, ok, code := mapRecord(id, line, &h.rec)
	if !ok {
		if code != "" {
			h.BadLine(code)
		}
		return
	}
	if h.Event(id, Harness, e) && e.Kind == agentbridge.KindSessionStarted && e.PID == 0 {
		h.BindHolder(id, path) // the agent may hold its journal open for writing
	}
}

// Truncated drops the session's state: its journal is read again.
func (h *handler) Truncated(path string) { h.Restart(sources.Stem(path, ".jsonl")) }

// Removed ends the session: its journal is gone.
func (h *handler) Removed(path string) { h.Stop(sources.Stem(path, ".jsonl"), "journal removed") }
