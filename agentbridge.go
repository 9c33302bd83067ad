// Package agentbridge holds the vocabulary that every part of the bridge
// speaks: session snapshots, lifecycle events, diagnostics, the
// descriptions of sources and their harnesses, and the wire types of the
// HTTP surface (listed sessions, stream record names, publish operations,
// filters) that clients read. It depends on nothing but the
// standard library; validation lives in package validate, the ordered state
// in package hub, journal parsing in package sources and its sub-packages.
//
// The JSON shape of every type here is the external contract (docs/ and
// openapi.yaml): field names must not change.
package agentbridge

// Status is where a session stands.
type Status string

// The session statuses of the host's AgentSessionSnapshot. A session that
// finished its turn is idle with LastTurn and LastTurnEndedAt set; one whose
// process is gone is idle with Ended set beside its snapshot.
const (
	StatusIdle    Status = "idle"    // no turn in progress (none yet, or the last one ended)
	StatusRunning Status = "running" // a turn is in progress
	StatusWaiting Status = "waiting" // needs the user (approval, input)
	StatusBlocked Status = "blocked" // cannot go on for another reason
)

// Statuses lists every valid Status in display order.
var Statuses = []Status{StatusIdle, StatusRunning, StatusWaiting, StatusBlocked}

// LastTurn says how the last turn of a session ended.
type LastTurn string

// The last-turn values of the host. A turn that was cancelled (event
// outcome "cancelled") is "interrupted" in the snapshot.
const (
	LastTurnCompleted   LastTurn = "completed"
	LastTurnFailed      LastTurn = "failed"
	LastTurnInterrupted LastTurn = "interrupted"
)

// Outcome is how a turn, tool or subagent ended, as events report it.
type Outcome string

// The outcomes of the contract.
const (
	OutcomeSuccess   Outcome = "success"
	OutcomeError     Outcome = "error"
	OutcomeCancelled Outcome = "cancelled"
)

// SubagentStatus is where a subagent stands.
type SubagentStatus string

// The subagent statuses of the contract.
const (
	SubagentRunning   SubagentStatus = "running"
	SubagentCompleted SubagentStatus = "completed"
	SubagentFailed    SubagentStatus = "failed"
	SubagentCancelled SubagentStatus = "cancelled"
)

// Snapshot is the Terminay host's AgentSessionSnapshot (extension API 3.1):
// everything a client shows of one session, the same closed field set. Zero
// values mean "absent": PID 0, LastTurnEndedAt 0 and empty strings are
// omitted from JSON.
//
// The host requires PID and Cwd; the bridge also holds sessions without
// them (no process bound yet, a journal that names no directory). A
// session is host-ready (HostReady) when it has both and has not ended.
type Snapshot struct {
	ID              string     `json:"id"`
	Harness         string     `json:"harness"`
	PID             int        `json:"pid,omitempty"`
	Cwd             string     `json:"cwd,omitempty"`
	Title           string     `json:"title,omitempty"`
	Model           string     `json:"model,omitempty"`
	Status          Status     `json:"status,omitempty"` // the bridge always sets it (idle when a push source gave none)
	WaitingFor      string     `json:"waitingFor,omitempty"`
	Tool            string     `json:"tool,omitempty"` // the tool running now
	LastTurn        LastTurn   `json:"lastTurn,omitempty"`
	LastTurnEndedAt int64      `json:"lastTurnEndedAt,omitempty"`
	Error           string     `json:"error,omitempty"` // bounded, redacted: why the last turn failed
	Subagents       []Subagent `json:"subagents,omitempty"`
}

// Clone returns a deep copy of s, so that a holder can change it freely.
func (s Snapshot) Clone() Snapshot {
	if s.Subagents != nil {
		s.Subagents = append([]Subagent(nil), s.Subagents...)
	}
	return s
}

// Subagent is a child agent shown under its root session. ParentID names
// another subagent of the same session when the journal nests them ("":
// the root session). Type is required; a journal that names none gives
// DefaultSubagentType.
type Subagent struct {
	ID       string         `json:"id"`
	ParentID string         `json:"parentId,omitempty"`
	Type     string         `json:"type"`
	Title    string         `json:"title,omitempty"`
	Status   SubagentStatus `json:"status"`
}

// DefaultSubagentType is the type of a subagent whose journal names none.
const DefaultSubagentType = "subagent"

// Ended is how a session ended (its process is gone, or the agent said so),
// shown beside its snapshot while it lingers: At is epoch ms (0: unknown),
// ExitCode and Signal how the process ended when known, Reason a short
// display text. An ended session's snapshot is idle; it is not host-ready.
type Ended struct {
	At       int64  `json:"at"`
	ExitCode *int   `json:"exitCode,omitempty"`
	Signal   string `json:"signal,omitempty"`
	Reason   string `json:"reason,omitempty"`
}

// Equal reports whether e and o say the same (nil: not ended).
func (e *Ended) Equal(o *Ended) bool {
	if e == nil || o == nil {
		return e == o
	}
	return e.At == o.At && e.Signal == o.Signal && e.Reason == o.Reason &&
		(e.ExitCode == nil) == (o.ExitCode == nil) && (e.ExitCode == nil || *e.ExitCode == *o.ExitCode)
}

// HostReady reports whether the host can show s: it has a pid and a cwd,
// and it has not ended (ended is the Ended beside it, nil when none).
func HostReady(s *Snapshot, ended *Ended) bool {
	return s.PID > 0 && s.Cwd != "" && ended == nil
}

// EventKind names a lifecycle event.
type EventKind string

// The lifecycle event kinds of the contract (section 2).
const (
	KindSessionStarted  EventKind = "session.started"
	KindAgentMetadata   EventKind = "agent.metadata"
	KindTurnStarted     EventKind = "turn.started"
	KindToolStarted     EventKind = "tool.started"
	KindToolFinished    EventKind = "tool.finished"
	KindWaitStarted     EventKind = "wait.started"
	KindWaitFinished    EventKind = "wait.finished"
	KindAgentDone       EventKind = "agent.done"
	KindAgentExited     EventKind = "agent.exited"
	KindSubagentStarted EventKind = "subagent.started"
	KindSubagentDone    EventKind = "subagent.done"
	KindSessionStopped  EventKind = "session.stopped"
)

// EventKinds lists every valid EventKind.
var EventKinds = []EventKind{
	KindSessionStarted, KindAgentMetadata, KindTurnStarted, KindToolStarted,
	KindToolFinished, KindWaitStarted, KindWaitFinished, KindAgentDone,
	KindAgentExited, KindSubagentStarted, KindSubagentDone, KindSessionStopped,
}

// Event is one lifecycle event. It is a flat union: which fields a kind may
// carry is the validator's business (validate.Event), so that a source sets
// only what its kind names and the JSON form stays the contract's. Zero
// values are absent; ExitCode is a pointer because 0 is a real exit code.
type Event struct {
	Kind       EventKind `json:"kind"`
	OccurredAt int64     `json:"occurredAt,omitempty"` // epoch ms, only when trustworthy

	Title      string `json:"title,omitempty"`      // session.started, agent.metadata, subagent.started
	Model      string `json:"model,omitempty"`      // session.started, agent.metadata
	Cwd        string `json:"cwd,omitempty"`        // session.started
	PID        int    `json:"pid,omitempty"`        // session.started
	PromptText string `json:"promptText,omitempty"` // agent.metadata, turn.started
	AgentID    string `json:"agentId,omitempty"`    // agent.metadata

	TurnID  string  `json:"turnId,omitempty"`  // turn.started
	ToolID  string  `json:"toolId,omitempty"`  // tool.started, tool.finished
	Name    string  `json:"name,omitempty"`    // tool.started
	Outcome Outcome `json:"outcome,omitempty"` // tool.finished, agent.done, subagent.done

	WaitID string `json:"waitId,omitempty"` // wait.started, wait.finished
	State  Status `json:"state,omitempty"`  // wait.started: waiting or blocked
	Reason string `json:"reason,omitempty"` // wait.started, session.stopped

	Summary  string `json:"summary,omitempty"`  // agent.done, subagent.done
	ExitCode *int   `json:"exitCode,omitempty"` // agent.exited
	Signal   string `json:"signal,omitempty"`   // agent.exited, e.g. "SIGKILL"

	SubagentID    string `json:"subagentId,omitempty"`    // subagent.started, subagent.done
	ParentAgentID string `json:"parentAgentId,omitempty"` // subagent.started
	Type          string `json:"type,omitempty"`          // subagent.started

	// Usage is the bridge's internal side channel for token counts: a
	// source sets it on an agent.metadata event when the journal records
	// what a model call used. It is not part of the event's JSON (lifecycle
	// records and POST /v1/sources/{id}/publish do not carry it); clients
	// see the sum in the session's Activity.
	Usage *UsageReport `json:"-"`
}

// Usage counts the tokens a session's model calls used. InputTokens are
// the input tokens not read from a prompt cache; CacheReadTokens those read
// from it, CacheWriteTokens those written to it; OutputTokens include any
// reasoning tokens.
type Usage struct {
	InputTokens      int64 `json:"inputTokens"`
	OutputTokens     int64 `json:"outputTokens"`
	CacheReadTokens  int64 `json:"cacheReadTokens"`
	CacheWriteTokens int64 `json:"cacheWriteTokens"`
}

// Add returns the sum of u and v.
func (u Usage) Add(v Usage) Usage {
	return Usage{u.InputTokens + v.InputTokens, u.OutputTokens + v.OutputTokens,
		u.CacheReadTokens + v.CacheReadTokens, u.CacheWriteTokens + v.CacheWriteTokens}
}

// Sub returns u minus v.
func (u Usage) Sub(v Usage) Usage {
	return Usage{u.InputTokens - v.InputTokens, u.OutputTokens - v.OutputTokens,
		u.CacheReadTokens - v.CacheReadTokens, u.CacheWriteTokens - v.CacheWriteTokens}
}

// UsageReport is one token count a source read from a journal (see
// Event.Usage). Counting rules of the fold:
//
//   - Total: the counts are the session's totals so far (a journal that
//     records cumulative counts, like Codex's token_count); they replace
//     the sum.
//   - MessageID set: the counts of that one model message. A report for a
//     message counted recently replaces its counts instead of adding them
//     (agents that write one record per content block repeat a message's
//     usage on each).
//   - Otherwise the counts are added.
type UsageReport struct {
	Usage
	MessageID string `json:"messageId,omitempty"`
	Total     bool   `json:"total,omitempty"`
}

// Activity is what a session is doing now and what it has used, beside
// its Snapshot (which it never changes): when its status began, the tool
// running now, when the current turn started, and its token usage. Zero
// values are absent (unknown).
type Activity struct {
	StatusSince   int64         `json:"statusSince,omitempty"`   // epoch ms the status began
	Tool          *ToolActivity `json:"tool,omitempty"`          // the tool running now
	TurnStartedAt int64         `json:"turnStartedAt,omitempty"` // epoch ms the running turn began
	Usage         *Usage        `json:"usage,omitempty"`         // summed over the session
}

// ToolActivity is the tool a session runs now.
type ToolActivity struct {
	Name  string `json:"name"`
	Since int64  `json:"since,omitempty"` // epoch ms it started
}

// IsZero reports whether a carries nothing.
func (a *Activity) IsZero() bool {
	return a == nil || (a.StatusSince == 0 && a.Tool == nil && a.TurnStartedAt == 0 && a.Usage == nil)
}

// Equal reports whether a and b show the same.
func (a *Activity) Equal(b *Activity) bool {
	if a.IsZero() || b.IsZero() {
		return a.IsZero() == b.IsZero()
	}
	return a.StatusSince == b.StatusSince && a.TurnStartedAt == b.TurnStartedAt &&
		(a.Tool == nil) == (b.Tool == nil) && (a.Tool == nil || *a.Tool == *b.Tool) &&
		(a.Usage == nil) == (b.Usage == nil) && (a.Usage == nil || *a.Usage == *b.Usage)
}

// Diagnostic is a typed problem a source reports: a kebab-case code and a
// message that carries no file-system paths and no conversation content.
type Diagnostic struct {
	Code    string `json:"code"`
	Message string `json:"message"`
}

// CodeFormatDrift is the code of the diagnostic a source raises when an
// agent's journal stops making sense to it (unknown record kinds, a
// session with records but no recognised turn): the agent's format may
// have changed. Its message names record kinds only.
const CodeFormatDrift = "format-drift"

// VersionRange is a closed range of an agent CLI's versions, as npm names
// them: the versions the live suite ran the bridge against.
type VersionRange struct {
	Min string `json:"min"`
	Max string `json:"max"`
}

// Harness is one agent kind a source can report, with its own switch.
type Harness struct {
	ID          string `json:"id"`
	DisplayName string `json:"displayName"`
}

// Observation says how a source knows a thing: it reads it from the agent's
// own records, infers it from indirect evidence, or cannot know it.
type Observation string

// The observation levels shown by GET /v1/sources.
const (
	Observed    Observation = "observed"
	Inferred    Observation = "inferred"
	Unavailable Observation = "unavailable"
)

// Observe says how a source knows one thing: the level, and where it comes
// from when that is worth saying ("journal", "registry", "hooks",
// "process"). GET /v1/sources shows it as {"how": …, "from": …}.
type Observe struct {
	How  Observation `json:"how"`
	From string      `json:"from,omitempty"`
}

// SourceInfo describes a source: its id, name, declared harnesses, the
// environment variables it reads, and what it can observe, keyed by what is
// observed ("waiting", "exited", "subagents", …).
type SourceInfo struct {
	ID                   string             `json:"id"`
	DisplayName          string             `json:"displayName"`
	Harnesses            []Harness          `json:"harnesses"`
	EnvironmentVariables []string           `json:"environmentVariables"`
	Observes             map[string]Observe `json:"observes,omitempty"`
	Push                 bool               `json:"push"` // takes POST /v1/sources/{id}/publish
}
