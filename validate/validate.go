// Package validate enforces the host's rules (CONTRACT section 1) on
// snapshots, resets, diagnostics and lifecycle events, and folds lifecycle
// events into snapshots (CONTRACT section 2, see Session).
//
// Every check reports all issues it finds, in the host's form: a JSON path
// ("$", "$.subagents[2].id"), a code and a message. A message never repeats
// the offending value, so an issue can be shown or logged without leaking
// prompt text or paths.
package validate

import (
	"encoding/json"

	"github.com/agentbridge/agentbridge"
)

// Code is a validation issue code of the host.
type Code string

// The host's issue codes.
const (
	InvalidType       Code = "invalid_type"
	InvalidString     Code = "invalid_string"
	InvalidArray      Code = "invalid_array"
	InvalidEnum       Code = "invalid_enum"
	InvalidPath       Code = "invalid_path"
	InvalidInteger    Code = "invalid_integer"
	InvalidID         Code = "invalid_id"
	UnknownField      Code = "unknown_field"
	Duplicate         Code = "duplicate"
	HarnessNotEnabled Code = "harness_not_enabled"
	MissingField      Code = "missing_field"
)

// Issue is one broken rule.
type Issue struct {
	Path    string `json:"path"`
	Code    Code   `json:"code"`
	Message string `json:"message"`
}

// Bounds of the contract (the host's EXTENSION_LIMITS).
const (
	MaxIDBytes        = 128
	MaxCwdBytes       = 4096
	MaxTitle          = 200 // characters
	MaxModel          = 128 // characters
	MaxWaitingFor     = 200 // characters
	MaxSubagents      = 64
	MaxResetSessions  = 1024
	MaxDiagnosticCode = 64  // bytes, lowercase kebab-case
	MaxDiagnosticText = 512 // characters
	MaxPID            = 4194304
	MaxText           = 200 // characters: reasons, summaries, prompt text, names
)

// Harnesses is the set of harness ids switched on for a source. A nil set
// skips the harness check (the caller does not know the switches).
type Harnesses map[string]bool

// Snapshot checks a typed snapshot against every rule of CONTRACT section 1.
func Snapshot(s agentbridge.Snapshot, enabled Harnesses) []Issue { panic("todo") }

// Reset checks the sessions of one reset: each snapshot, at most
// MaxResetSessions, and no id twice (duplicate).
func Reset(sessions []agentbridge.Snapshot, enabled Harnesses) []Issue { panic("todo") }

// Diagnostic checks a diagnostic's code and message.
func Diagnostic(d agentbridge.Diagnostic) []Issue { panic("todo") }

// Event checks one lifecycle event on its own: kind, required and allowed
// fields for the kind, ids, enums and text bounds. Rules that need the
// session's state (an open wait id, say) are Session.Apply's.
func Event(e agentbridge.Event) []Issue { panic("todo") }

// DecodeSnapshot decodes raw JSON and checks it: besides Snapshot's rules it
// reports invalid_type, unknown_field and missing_field. The snapshot is
// only meaningful when no issue is returned.
func DecodeSnapshot(raw json.RawMessage, enabled Harnesses) (agentbridge.Snapshot, []Issue) {
	panic("todo")
}

// DecodeReset decodes and checks a JSON array of snapshots.
func DecodeReset(raw json.RawMessage, enabled Harnesses) ([]agentbridge.Snapshot, []Issue) {
	panic("todo")
}

// DecodeDiagnostic decodes and checks a JSON diagnostic.
func DecodeDiagnostic(raw json.RawMessage) (agentbridge.Diagnostic, []Issue) { panic("todo") }

// DecodeEvent decodes and checks a JSON lifecycle event.
func DecodeEvent(raw json.RawMessage) (agentbridge.Event, []Issue) { panic("todo") }

// Nest rewrites the paths of issues found in a nested value so that they
// read from the outer document: Nest(is, "$[2].session") turns "$.id" into
// "$[2].session.id".
func Nest(issues []Issue, prefix string) []Issue { panic("todo") }
