// Package hub orders and validates everything sources report. It is the one
// place where a lifecycle event becomes a snapshot change (through
// validate.Session), where revisions are assigned, and where the bounded ring
// of recent stream records is kept for resuming clients. Sources publish into
// it; the HTTP layer (api, sse) reads from it. It never blocks on a client.
package hub

import (
	"context"
	"errors"

	"github.com/agentbridge/agentbridge"
	"github.com/agentbridge/agentbridge/validate"
)

// Errors callers branch on.
var (
	ErrUnknownSource  = errors.New("hub: unknown source")
	ErrUnknownHarness = errors.New("hub: unknown harness")
	ErrNotPush        = errors.New("hub: source does not take published operations")
	ErrInvalid        = errors.New("hub: invalid operation") // wrapped by *InvalidError
)

// InvalidError carries every issue of a rejected publish; nothing of it was
// applied. errors.Is(err, ErrInvalid) holds.
type InvalidError struct{ Issues []validate.Issue }

func (e *InvalidError) Error() string { return "hub: invalid operation" }
func (e *InvalidError) Unwrap() error { return ErrInvalid }

// Source reports the sessions of one agent family.
type Source interface {
	// Info describes the source; it does not change while the hub runs.
	Info() agentbridge.SourceInfo
	// Run reports sessions through st.Publisher until ctx ends, then
	// returns nil. It publishes a reset of the harnesses in st.Enabled first,
	// and a fresh reset after each set received from st.Changes, reporting
	// only switched-on harnesses and releasing the watches of the others.
	Run(ctx context.Context, st Start) error
}

// Start is what a source is given when the hub runs it.
type Start struct {
	Enabled   []string        // harness ids switched on at start
	Changes   <-chan []string // each later enabled set; answer with a reset
	Publisher Sink
}

// Publisher is a source's way into the hub. Every call is validated and
// applied atomically, in call order; a rejected call returns an
// *InvalidError and changes nothing. The hub copies what it keeps.
type Publisher interface {
	// Reset replaces every session the source reported before. The hub takes
	// at most validate.MaxResetSessions in the reset record and streams the
	// rest as upserts.
	Reset(sessions []*validate.Session) error
	// Upsert replaces one session.
	Upsert(s *validate.Session) error
	// Event folds a lifecycle event into a session, creating the session
	// (status idle, with harness) when it is new.
	Event(sessionID, harness string, e agentbridge.Event) error
	// Remove forgets one session.
	Remove(sessionID string) error
	// Diagnostic records a typed problem.
	Diagnostic(d agentbridge.Diagnostic) error
}

// OpKind names a publish operation of POST /v1/sources/{source}/publish.
type OpKind string

// The publish operations.
const (
	OpReset      OpKind = "reset"
	OpUpsert     OpKind = "upsert"
	OpRemove     OpKind = "remove"
	OpDiagnostic OpKind = "diagnostic"
	OpEvent      OpKind = "event"
)

// Op is one decoded publish operation; which fields are set depends on Op.
type Op struct {
	Op         OpKind
	Sessions   []agentbridge.Snapshot // reset
	Session    agentbridge.Snapshot   // upsert
	SessionID  string                 // remove, event
	Diagnostic agentbridge.Diagnostic // diagnostic
	Harness    string                 // event: needed when it makes a new session
	Event      agentbridge.Event      // event
}

// SourceState is a source as GET /v1/sources shows it.
type SourceState struct {
	agentbridge.SourceInfo
	Harnesses []HarnessState `json:"harnesses"`
}

// HarnessState is one harness with its switch.
type HarnessState struct {
	agentbridge.Harness
	Enabled bool `json:"enabled"`
	// Tested is the range of the agent CLI's versions the live suite ran
	// the bridge against (Options.Tested); nil when it ran none.
	Tested *agentbridge.VersionRange `json:"tested,omitempty"`
	// VersionsSeen lists, sorted, the agent CLI versions the source found
	// in this harness's journals since the bridge started (at most
	// MaxVersionsSeen); absent when its journals named none.
	VersionsSeen []string `json:"versionsSeen,omitempty"`
}

// MaxVersionsSeen bounds HarnessState.VersionsSeen; past it the versions
// seen first are dropped.
const MaxVersionsSeen = 32

// Entry is one session as GET /v1/sessions lists it.
type Entry struct {
	Source string `json:"source"`
	// Host is the id of the remote bridge that reports the session; ""
	// (left out of the JSON) for a session of this bridge.
	Host     string               `json:"host,omitempty"`
	Snapshot agentbridge.Snapshot `json:"snapshot"`
	// Activity is what the session is doing now and has used; nil when
	// nothing is known. It is shared: do not change it.
	Activity *agentbridge.Activity `json:"activity,omitempty"`
	// Ended is how the session ended (its process is gone) while it
	// lingers; nil while it has not. Its snapshot is then idle, and it is
	// not host-ready. It is shared: do not change it.
	Ended *agentbridge.Ended `json:"ended,omitempty"`
}

// DiagnosticEntry is one recent diagnostic with where and when it arose.
type DiagnosticEntry struct {
	Source     string                 `json:"source"`
	Host       string                 `json:"host,omitempty"` // the remote it came from; "" for this bridge
	Revision   uint64                 `json:"revision"`
	Diagnostic agentbridge.Diagnostic `json:"diagnostic"`
	At         int64                  `json:"at"` // epoch ms
}

// Filter selects sessions; an empty field selects all. Lists are ORed
// within a field and fields are ANDed.
type Filter struct {
	Sources   []string
	Harnesses []string
	Statuses  []agentbridge.Status
	// Hosts selects by host: a remote's id, or LocalHost for this
	// bridge's own sessions.
	Hosts []string
	// Project and AncestorPID select local sessions only: a remote
	// session's cwd and pid name another machine's file system and
	// processes, so a filter with either never selects one.
	Project     string // absolute root: cwd at or below it, or in a linked worktree
	AncestorPID int    // the session's process descends from it
}

// LocalHost is the value of the host filter that selects this bridge's own
// sessions (which carry no host). No remote may take it as its id.
const LocalHost = "local"

// Stream record names (the SSE `event:` field).
const (
	NameReset      = "reset"
	NameUpsert     = "upsert"
	NameRemove     = "remove"
	NameDiagnostic = "diagnostic"
	NameLifecycle  = "lifecycle"
	NameHarnesses  = "harnesses"
)

// Record is one stream event, encoded once for every client that sees it
// unfiltered. Data is one line of compact JSON, never empty.
type Record struct {
	Rev  uint64
	Name string
	Data []byte
}
