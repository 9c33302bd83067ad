package agentbridge

// This file is the wire vocabulary of the bridge's HTTP surface: what GET
// /v1/sessions, /v1/sources and /v1/diagnostics list, the records of the
// stream (GET /v1/events), the operations of POST
// /v1/sources/{source}/publish and the filters of the listing and the
// stream. The hub keeps and orders them; clients (package client) read them
// without depending on the server.

// Entry is one session as GET /v1/sessions lists it.
type Entry struct {
	Source string `json:"source"`
	// Host is the id of the remote bridge that reports the session; ""
	// (left out of the JSON) for a session of this bridge.
	Host     string   `json:"host,omitempty"`
	Snapshot Snapshot `json:"snapshot"`
	// Activity is what the session is doing now and has used; nil when
	// nothing is known. It is shared: do not change it.
	Activity *Activity `json:"activity,omitempty"`
	// Ended is how the session ended (its process is gone) while it
	// lingers; nil while it has not. Its snapshot is then idle, and it is
	// not host-ready. It is shared: do not change it.
	Ended *Ended `json:"ended,omitempty"`
}

// DiagnosticEntry is one recent diagnostic with where and when it arose.
type DiagnosticEntry struct {
	Source     string     `json:"source"`
	Host       string     `json:"host,omitempty"` // the remote it came from; "" for this bridge
	Revision   uint64     `json:"revision"`
	Diagnostic Diagnostic `json:"diagnostic"`
	At         int64      `json:"at"` // epoch ms
}

// SourceState is a source as GET /v1/sources shows it.
type SourceState struct {
	SourceInfo
	Harnesses []HarnessState `json:"harnesses"`
}

// HarnessState is one harness with its switch.
type HarnessState struct {
	Harness
	Enabled bool `json:"enabled"`
	// Tested is the range of the agent CLI's versions the live suite ran
	// the bridge against (hub.Options.Tested); nil when it ran none.
	Tested *VersionRange `json:"tested,omitempty"`
	// VersionsSeen lists, sorted, the agent CLI versions the source found
	// in this harness's journals since the bridge started (at most
	// hub.MaxVersionsSeen); absent when its journals named none.
	VersionsSeen []string `json:"versionsSeen,omitempty"`
}

// The names of the stream's records (the SSE `event:` field, the NDJSON
// line's "event").
const (
	RecordReset      = "reset"
	RecordUpsert     = "upsert"
	RecordRemove     = "remove"
	RecordDiagnostic = "diagnostic"
	RecordLifecycle  = "lifecycle"
	RecordHarnesses  = "harnesses"
)

// RecordNames lists every record name of the stream.
var RecordNames = []string{RecordReset, RecordUpsert, RecordRemove, RecordDiagnostic, RecordLifecycle, RecordHarnesses}

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
	Sessions   []Snapshot // reset
	Session    Snapshot   // upsert
	SessionID  string     // remove, event
	Diagnostic Diagnostic // diagnostic
	Harness    string     // event: needed when it makes a new session
	Event      Event      // event
}

// Filter selects sessions, as the query of GET /v1/sessions and
// /v1/events does; an empty field selects all. Lists are ORed within a
// field and fields are ANDed.
type Filter struct {
	Sources   []string
	Harnesses []string
	Statuses  []Status
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
