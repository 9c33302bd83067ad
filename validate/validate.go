// Package validate states the Terminay host's rules for agent session
// sources (extension API 3.1, @terminay/extension-api's
// validateAgentSessionSnapshot, validateAgentSessionReset and
// validateAgentSessionSourceDiagnostic; docs/contract.md section 1) on
// snapshots, resets and diagnostics, and checks the bridge's own lifecycle
// events on their own (package fold folds them into snapshots,
// docs/contract.md section 2). It also decodes these documents from JSON
// (Decode*, the bodies of publish and of POST /v1/validate) and makes a
// record's text fit a field (Title, Label, RedactSnapshot, …, on the text
// toolkit of package text).
//
// Every check reports all issues it finds, in the host's form: a JSON path
// ("$", "$.subagents[2].id"), a code and a message. A message never repeats
// the offending value, so an issue can be shown or logged without leaking
// prompt text or paths.
//
// Snapshots, resets and diagnostics are checked under a Profile. Host is
// exactly the host's validator: the same closed field set, enums, limits
// (UTF-16 code units), required fields (id, harness, pid, cwd; a
// subagent's id, type and status) and codes, a wrong JSON type included
// (a pid "12" is invalid_integer, a title 5 invalid_string). Bridge is the
// bridge's own snapshot: pid and cwd are optional (a session without a
// process or directory is still shown to the dashboard and curl), and the
// bridge keeps these stricter rules, so that anything it publishes with a
// pid and cwd passes Host:
//
//   - identity values (session and subagent ids, parentId) are 1–128 bytes
//     of [A-Za-z0-9._:@-] (invalid_id), so that they sit in URLs;
//   - display text has no control character and is valid UTF-8
//     (invalid_string);
//   - cwd is a clean path (invalid_path);
//   - waitingFor only with status waiting or blocked (invalid_string);
//   - a diagnostic code is kebab-case without "--" or a trailing "-"
//     (invalid_id) and its message carries no path (invalid_string).
//
// Decisions the host leaves open, fixed here for the bridge's own
// vocabulary (lifecycle events):
//
//   - "Characters" are UTF-16 code units, as the host counts (a character
//     outside the BMP counts 2); identity values, cwd and diagnostic codes
//     are measured in bytes.
//   - Display text is valid UTF-8 with no control character (Unicode
//     category Cc: C0, DEL, C1); newlines and tabs are control characters.
//     A display-text field that is present must not be empty.
//   - Epoch-millisecond integers (lastTurnEndedAt, occurredAt) are
//     0 ≤ v ≤ 2^53−1 (MaxEpochMillis), so that JavaScript reads them exactly.
//   - exitCode is an integer in [MinExitCode, MaxExitCode]; signal is display
//     text of at most MaxSignal characters; a subagent's type is display text
//     of at most MaxSubagentType characters.
//   - In an event, a JSON value of the wrong JSON type is invalid_type (a
//     string "12" for pid, null for any field); in a snapshot, reset or
//     diagnostic it gets the host's code for the field. A JSON number that
//     is not an integer (1.5) or does not fit in 64 bits is invalid_integer. Integral numbers written
//     with a fraction or exponent (1.0, 1e3) are integers, as in JavaScript
//     (the check is exact and decimal: 1e-400 is not an integer).
//   - A malformed source or harness id is invalid_id.
//   - A diagnostic message carries no path: see text.ContainsPath for what counts
//     as one (URLs do not).
//   - Decode*: malformed JSON (or nesting deeper than MaxJSONDepth, or data
//     after the value) is one invalid_type issue at "$" whose message starts
//     with "malformed JSON". A key given twice is duplicate at its path. A
//     key that is not a plain name (1–64 bytes of [A-Za-z0-9_$-]) is shown
//     as $["key"], bounded and quoted. JSON-level issues (types, unknown and
//     repeated keys) come first in document order, then the rule issues in
//     field order; the order is deterministic.
//   - DecodeReset takes an array of snapshots, or the stream's form
//     {"sessions": [...]} (paths then read "$.sessions[i]").
package validate

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"path"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/agentbridge/agentbridge"
	"github.com/agentbridge/agentbridge/text"
)

// Code is a validation issue code of the host.
type Code string

// The host's issue codes.
const (
	// InvalidType: a JSON value of the wrong type (object, array, string,
	// number, …), or malformed JSON.
	InvalidType Code = "invalid_type"
	// InvalidString: display text that is empty, too long, not UTF-8 or
	// carries control characters; a malformed diagnostic code or message.
	InvalidString Code = "invalid_string"
	// InvalidArray: an array with too many entries.
	InvalidArray Code = "invalid_array"
	// InvalidEnum: a value outside its enumeration (status, kind, outcome…).
	InvalidEnum Code = "invalid_enum"
	// InvalidPath: a cwd that is not absolute and clean, or too long.
	InvalidPath Code = "invalid_path"
	// InvalidInteger: a number that is not an integer or is out of range.
	InvalidInteger Code = "invalid_integer"
	// InvalidID: a malformed identity value, harness id, or a state rule on
	// an id (an unknown or already closed wait, tool or subagent).
	InvalidID Code = "invalid_id"
	// UnknownField: a field a closed object or an event kind does not have.
	UnknownField Code = "unknown_field"
	// Duplicate: an id named twice where ids are unique, or a JSON key twice.
	Duplicate Code = "duplicate"
	// HarnessNotEnabled: a harness that is not declared and switched on.
	HarnessNotEnabled Code = "harness_not_enabled"
	// MissingField: a required field of an event or a publish operation is
	// absent (the host reports a missing snapshot field with the field's
	// own code: invalid_string, invalid_integer or invalid_enum).
	MissingField Code = "missing_field"
)

// Codes lists every issue code.
var Codes = []Code{
	InvalidType, InvalidString, InvalidArray, InvalidEnum, InvalidPath,
	InvalidInteger, InvalidID, UnknownField, Duplicate, HarnessNotEnabled,
	MissingField,
}

// Issue is one broken rule.
type Issue struct {
	Path    string `json:"path"`
	Code    Code   `json:"code"`
	Message string `json:"message"`
}

// String renders the issue as "path: code: message".
func (i Issue) String() string { return i.Path + ": " + string(i.Code) + ": " + i.Message }

// The host's limits (EXTENSION_LIMITS of @terminay/extension-api 3.1 and
// the fixed ranges of its validator). Characters are UTF-16 code units.
const (
	MaxSessionID      = 256  // agentSessionIdLength: session and subagent ids, parentId, any characters
	MaxCwd            = 4096 // agentPathLength
	MaxTitle          = 512  // agentTitleLength: session and subagent titles
	MaxModel          = 256  // agentModelLength
	MaxWaitingFor     = 1024 // agentWaitingForLength
	MaxToolName       = 256  // agentToolNameLength
	MaxError          = 1024 // agentErrorLength
	MaxSubagents      = 64   // agentSubagents
	MaxSubagentType   = 128  // agentSubagentTypeLength
	MaxResetSessions  = 1024 // agentSessionsPerReset
	MaxDiagnosticCode = 64   // agentDiagnosticCodeLength
	MaxDiagnosticText = 512  // agentDiagnosticLength
	MaxHarnessBytes   = 64   // harness ids: [a-z][a-z0-9-]{0,63}
	MaxPID            = 1<<31 - 1
	MaxEpochMillis    = 1<<53 - 1 // lastTurnEndedAt (Number.MAX_SAFE_INTEGER), occurredAt
)

// The bridge's own bounds (see the package comment).
const (
	MaxIDBytes   = 128  // identity values, in bytes
	MaxCwdBytes  = 4096 // cwd, in bytes (at least as strict as MaxCwd)
	MaxText      = 200  // characters: event reasons, prompt text, tool names
	MaxSignal    = 32   // characters, e.g. "SIGKILL"
	MinExitCode  = -(1 << 31)
	MaxExitCode  = 1<<32 - 1 // Windows exit codes are unsigned 32-bit
	MaxJSONDepth = 64        // nesting Decode* accept
)

// Harnesses is the set of harness ids switched on for a source. A nil set
// skips the harness check (the caller does not know the switches).
type Harnesses map[string]bool

// issue constructors, so that no check writes a raw literal.

func newIssue(p string, c Code, format string, args ...any) Issue {
	return Issue{Path: p, Code: c, Message: fmt.Sprintf(format, args...)}
}

func child(p, field string) string { return p + "." + field }

func index(p string, i int) string { return p + "[" + strconv.Itoa(i) + "]" }

// presence tells the checks which optional fields are present. A nil
// *presence is the typed mode: a field is present when it is not its zero
// value. Decode* fill one from the JSON keys, so that a present-but-empty
// value is checked and a field whose JSON type was wrong (already reported)
// is neither checked nor called missing.
type presence struct {
	m    map[string]fieldState
	subs []*presence // subagents: one per element, nil for a non-object
}

type fieldState uint8

const (
	fieldAbsent fieldState = iota
	fieldOK
	fieldBad // present, but already reported (wrong JSON type, …)
)

func (p *presence) present(name string, nonZero bool) bool {
	if p == nil {
		return nonZero
	}
	return p.m[name] == fieldOK
}

func (p *presence) absent(name string, nonZero bool) bool {
	if p == nil {
		return !nonZero
	}
	return p.m[name] == fieldAbsent
}

func (p *presence) set(name string, st fieldState) {
	if p.m == nil {
		p.m = make(map[string]fieldState)
	}
	p.m[name] = st
}

// ---- profiles ----

// Profile is the set of rules a snapshot, reset or diagnostic is checked
// against (see the package comment).
type Profile uint8

const (
	// Bridge is the bridge's own snapshot: the host's rules with pid and
	// cwd optional, plus the bridge's stricter rules.
	Bridge Profile = iota
	// Host is exactly the Terminay host's rules: what the host accepts.
	Host
)

// ParseProfile parses a profile name: "bridge" (or "") and "host".
func ParseProfile(s string) (Profile, bool) {
	switch s {
	case "", "bridge":
		return Bridge, true
	case "host":
		return Host, true
	}
	return Bridge, false
}

// String returns the profile's name.
func (p Profile) String() string {
	if p == Host {
		return "host"
	}
	return "bridge"
}

// ---- value rules ----

// ValidID reports whether s is a bridge identity value: 1–128 bytes of
// [A-Za-z0-9._:@-]. Every such value is also a valid host id.
func ValidID(s string) bool {
	if len(s) == 0 || len(s) > MaxIDBytes {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' ||
			c == '.' || c == '_' || c == ':' || c == '@' || c == '-') {
			return false
		}
	}
	return true
}

// SafeID returns s when it is a valid identity value (ValidID), "" when s
// is empty, and otherwise a stable id derived from it: "x-" and the first
// 32 hex digits of its SHA-256. The same record id always maps to the same
// derived id (a tool call and its result still match, a re-read journal
// gives the same events), and the original, which may carry anything, even
// conversation text, is never published.
func SafeID(s string) string {
	if s == "" || ValidID(s) {
		return s
	}
	sum := sha256.Sum256([]byte(s))
	return "x-" + hex.EncodeToString(sum[:16])
}

// ValidHarnessID reports whether s is a source or harness id: lowercase
// [a-z][a-z0-9-]{0,63}, so that it sits in a URL path unescaped.
func ValidHarnessID(s string) bool {
	if len(s) == 0 || len(s) > MaxHarnessBytes || s[0] < 'a' || s[0] > 'z' {
		return false
	}
	for i := 1; i < len(s); i++ {
		c := s[i]
		if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-') {
			return false
		}
	}
	return true
}

// ValidCwd reports whether s is a cwd the bridge publishes: absolute, clean
// (no "."/".."/empty segments, no trailing "/" except the root), no NUL,
// valid UTF-8 and at most MaxCwdBytes bytes. Every such cwd passes the
// host's rule (HostCwd).
func ValidCwd(s string) bool {
	return HostCwd(s) && len(s) <= MaxCwdBytes && utf8.ValidString(s) && path.Clean(s) == s
}

// HostCwd reports whether the host accepts s as a cwd: 1–4,096 UTF-16
// units, starting with "/", no NUL. It need not be clean.
func HostCwd(s string) bool {
	return s != "" && text.UTF16Len(s) <= MaxCwd && s[0] == '/' && strings.IndexByte(s, 0) < 0
}

// hostTextProblem is the host's rule for a string: non-empty, at most max
// UTF-16 units.
func hostTextProblem(s string, max int) string {
	if s == "" || text.UTF16Len(s) > max {
		return fmt.Sprintf("must be a non-empty string of at most %d characters (UTF-16 code units)", max)
	}
	return ""
}

// The check helpers take the parent path and the field name, and build the
// field's path only for an issue: a clean value costs no allocation.

func checkText(is []Issue, p, field, s string, max int) []Issue {
	if msg := text.Problem(s, max); msg != "" {
		is = append(is, newIssue(child(p, field), InvalidString, "%s", msg))
	}
	return is
}

// checkProfText checks display text under a profile.
func checkProfText(is []Issue, p, field, s string, max int, prof Profile) []Issue {
	if prof == Host {
		if msg := hostTextProblem(s, max); msg != "" {
			is = append(is, newIssue(child(p, field), InvalidString, "%s", msg))
		}
		return is
	}
	return checkText(is, p, field, s, max)
}

func checkID(is []Issue, p, field, s string) []Issue {
	if !ValidID(s) {
		is = append(is, newIssue(child(p, field), InvalidID, "must be 1-%d bytes of A-Z a-z 0-9 . _ : @ - (identity values are never shortened)", MaxIDBytes))
	}
	return is
}

// checkSessionID checks a session or subagent id (or parentId): the
// host's rule (invalid_string), then under Bridge the identity rule
// (invalid_id).
func checkSessionID(is []Issue, p, field, s string, prof Profile) []Issue {
	if msg := hostTextProblem(s, MaxSessionID); msg != "" {
		return append(is, newIssue(child(p, field), InvalidString, "%s; identity values are never shortened", msg))
	}
	if prof == Bridge {
		is = checkID(is, p, field, s)
	}
	return is
}

func checkCwd(is []Issue, p, field, s string) []Issue {
	if !ValidCwd(s) {
		is = append(is, newIssue(child(p, field), InvalidPath, "must be an absolute, clean path (no . or .. or empty segments, no trailing /, no NUL) of at most %d bytes", MaxCwdBytes))
	}
	return is
}

func checkRange(is []Issue, p, field string, v, lo, hi int64) []Issue {
	if v < lo || v > hi {
		is = append(is, newIssue(child(p, field), InvalidInteger, "must be an integer from %d to %d", lo, hi))
	}
	return is
}

func enumIssue(p string, values ...string) Issue {
	return newIssue(p, InvalidEnum, "must be one of: %s", strings.Join(values, ", "))
}

func missing(p, field string) Issue {
	return newIssue(child(p, field), MissingField, "is required")
}

// requiredString is the host's issue for a required string that is absent.
func requiredString(p, field string, max int) Issue {
	return newIssue(child(p, field), InvalidString, "is required: a non-empty string of at most %d characters", max)
}

var (
	statusNames      = []string{"running", "waiting", "blocked", "idle"}
	lastTurnNames    = []string{"completed", "failed", "interrupted"}
	subStatusNames   = []string{"running", "completed", "failed", "cancelled"}
	outcomeNames     = []string{"success", "error", "cancelled"}
	waitStateNames   = []string{"waiting", "blocked"}
	statusSet        = setOf(statusNames)
	lastTurnSet      = setOf(lastTurnNames)
	subStatusSet     = setOf(subStatusNames)
	outcomeSet       = setOf(outcomeNames)
	waitStateSet     = setOf(waitStateNames)
	eventKindNames   []string
	eventKindAllowed = map[agentbridge.EventKind]map[string]bool{} // field -> required
)

func setOf(names []string) map[string]bool {
	m := make(map[string]bool, len(names))
	for _, n := range names {
		m[n] = true
	}
	return m
}

func init() {
	spec := map[agentbridge.EventKind]string{
		agentbridge.KindSessionStarted:  "title? model? cwd? pid?",
		agentbridge.KindAgentMetadata:   "title? promptText? agentId? model?",
		agentbridge.KindTurnStarted:     "turnId promptText?",
		agentbridge.KindToolStarted:     "toolId name",
		agentbridge.KindToolFinished:    "toolId outcome?",
		agentbridge.KindWaitStarted:     "waitId state reason?",
		agentbridge.KindWaitFinished:    "waitId",
		agentbridge.KindAgentDone:       "outcome summary?",
		agentbridge.KindAgentExited:     "exitCode? signal?",
		agentbridge.KindSubagentStarted: "subagentId parentAgentId title? type?",
		agentbridge.KindSubagentDone:    "subagentId outcome summary?",
		agentbridge.KindSessionStopped:  "reason?",
	}
	for _, k := range agentbridge.EventKinds {
		eventKindNames = append(eventKindNames, string(k))
		m := map[string]bool{"occurredAt": false}
		for _, f := range strings.Fields(spec[k]) {
			name, optional := strings.CutSuffix(f, "?")
			m[name] = !optional
		}
		eventKindAllowed[k] = m
	}
}

// EventFields returns the fields an event of kind k may carry besides kind
// and occurredAt, with whether each is required; nil for an unknown kind.
func EventFields(k agentbridge.EventKind) map[string]bool {
	m, ok := eventKindAllowed[k]
	if !ok {
		return nil
	}
	out := make(map[string]bool, len(m))
	for f, req := range m {
		if f != "occurredAt" {
			out[f] = req
		}
	}
	return out
}

// ---- snapshots ----

// Snapshot checks a typed snapshot against the bridge's rules (Bridge).
func Snapshot(s agentbridge.Snapshot, enabled Harnesses) []Issue {
	return checkSnapshot(nil, "$", &s, enabled, nil, nil, Bridge)
}

// SnapshotAs checks a typed snapshot under a profile: HostSnapshot with
// Host says whether the host would take it.
func SnapshotAs(s agentbridge.Snapshot, enabled Harnesses, prof Profile) []Issue {
	return checkSnapshot(nil, "$", &s, enabled, nil, nil, prof)
}

func checkSnapshot(is []Issue, p string, s *agentbridge.Snapshot, enabled Harnesses, pr *presence, subPr []*presence, prof Profile) []Issue {
	host := prof == Host
	if pr.present("id", s.ID != "") && s.ID != "" {
		is = checkSessionID(is, p, "id", s.ID, prof)
	} else if pr.absent("id", s.ID != "") || s.ID == "" && pr.present("id", true) {
		is = append(is, requiredString(p, "id", MaxSessionID))
	}
	if pr.present("harness", s.Harness != "") && s.Harness == "" {
		is = append(is, requiredString(p, "harness", MaxHarnessBytes))
		if enabled != nil {
			is = append(is, newIssue(child(p, "harness"), HarnessNotEnabled, "names a harness that is not declared or not switched on for this source"))
		}
	} else if pr.present("harness", s.Harness != "") {
		if len(s.Harness) > MaxHarnessBytes {
			is = append(is, newIssue(child(p, "harness"), InvalidString, "must be a non-empty string of at most %d characters", MaxHarnessBytes))
		} else if !ValidHarnessID(s.Harness) {
			is = append(is, newIssue(child(p, "harness"), InvalidID, "must be a harness id: lowercase [a-z][a-z0-9-]{0,63}"))
		}
		if enabled != nil && !enabled[s.Harness] {
			is = append(is, newIssue(child(p, "harness"), HarnessNotEnabled, "names a harness that is not declared or not switched on for this source"))
		}
	} else if pr.absent("harness", s.Harness != "") {
		is = append(is, requiredString(p, "harness", MaxHarnessBytes))
	}
	if pr.present("pid", s.PID != 0) {
		is = checkRange(is, p, "pid", int64(s.PID), 1, MaxPID)
	} else if host && pr.absent("pid", s.PID != 0) {
		is = append(is, newIssue(child(p, "pid"), InvalidInteger, "is required: the live process holding the session, an integer from 1 to %d", MaxPID))
	}
	switch {
	case pr.present("cwd", s.Cwd != ""):
		switch {
		case s.Cwd == "" || text.UTF16Len(s.Cwd) > MaxCwd:
			is = append(is, newIssue(child(p, "cwd"), InvalidString, "must be a non-empty string of at most %d characters", MaxCwd))
		case host && !HostCwd(s.Cwd):
			is = append(is, newIssue(child(p, "cwd"), InvalidPath, "must be an absolute path (starting with /, no NUL)"))
		case !host:
			is = checkCwd(is, p, "cwd", s.Cwd)
		}
	case host && pr.absent("cwd", s.Cwd != ""):
		is = append(is, requiredString(p, "cwd", MaxCwd))
	}
	if pr.present("title", s.Title != "") {
		is = checkProfText(is, p, "title", s.Title, MaxTitle, prof)
	}
	if pr.present("model", s.Model != "") {
		is = checkProfText(is, p, "model", s.Model, MaxModel, prof)
	}
	statusOK := false
	if pr.present("status", s.Status != "") {
		if statusSet[string(s.Status)] {
			statusOK = true
		} else {
			is = append(is, enumIssue(child(p, "status"), statusNames...))
		}
	}
	if pr.present("waitingFor", s.WaitingFor != "") {
		is = checkProfText(is, p, "waitingFor", s.WaitingFor, MaxWaitingFor, prof)
		if !host && statusOK && s.Status != agentbridge.StatusWaiting && s.Status != agentbridge.StatusBlocked {
			is = append(is, newIssue(child(p, "waitingFor"), InvalidString, "is only allowed with status waiting or blocked"))
		}
	}
	if pr.present("tool", s.Tool != "") {
		is = checkProfText(is, p, "tool", s.Tool, MaxToolName, prof)
	}
	if pr.present("lastTurn", s.LastTurn != "") && !lastTurnSet[string(s.LastTurn)] {
		is = append(is, enumIssue(child(p, "lastTurn"), lastTurnNames...))
	}
	if pr.present("lastTurnEndedAt", s.LastTurnEndedAt != 0) {
		is = checkRange(is, p, "lastTurnEndedAt", s.LastTurnEndedAt, 0, MaxEpochMillis)
	}
	if pr.present("error", s.Error != "") {
		is = checkProfText(is, p, "error", s.Error, MaxError, prof)
	}
	if pr.present("subagents", len(s.Subagents) != 0) {
		sp := child(p, "subagents")
		if len(s.Subagents) > MaxSubagents {
			// the host checks no element of an array too long
			return append(is, newIssue(sp, InvalidArray, "must have at most %d entries", MaxSubagents))
		}
		seen := make(map[string]bool, len(s.Subagents))
		for i := range s.Subagents {
			var spr *presence
			if subPr != nil {
				spr = subPr[i]
				if spr == nil { // not an object: already reported
					continue
				}
			}
			ep := index(sp, i)
			is = checkSubagent(is, ep, &s.Subagents[i], spr, prof)
			id := "\x00absent" // the host compares absent ids too
			if spr.present("id", true) {
				id = s.Subagents[i].ID
			} else if spr != nil && spr.m["id"] == fieldBad {
				continue
			}
			if seen[id] {
				is = append(is, newIssue(ep, Duplicate, "names a subagent id already listed"))
			}
			seen[id] = true
		}
	}
	return is
}

func checkSubagent(is []Issue, p string, a *agentbridge.Subagent, pr *presence, prof Profile) []Issue {
	if pr.present("id", a.ID != "") && a.ID != "" {
		is = checkSessionID(is, p, "id", a.ID, prof)
	} else if pr.absent("id", a.ID != "") || a.ID == "" && pr.present("id", true) {
		is = append(is, requiredString(p, "id", MaxSessionID))
	}
	if pr.present("parentId", a.ParentID != "") {
		is = checkSessionID(is, p, "parentId", a.ParentID, prof)
	}
	if pr.present("type", a.Type != "") && a.Type != "" {
		is = checkProfText(is, p, "type", a.Type, MaxSubagentType, prof)
	} else if pr.absent("type", a.Type != "") || a.Type == "" && pr.present("type", true) {
		is = append(is, requiredString(p, "type", MaxSubagentType))
	}
	if pr.present("title", a.Title != "") {
		is = checkProfText(is, p, "title", a.Title, MaxTitle, prof)
	}
	if pr.present("status", a.Status != "") {
		if !subStatusSet[string(a.Status)] {
			is = append(is, enumIssue(child(p, "status"), subStatusNames...))
		}
	} else if pr.absent("status", a.Status != "") {
		is = append(is, enumIssue(child(p, "status"), subStatusNames...))
	}
	return is
}

// Reset checks the sessions of one reset against the bridge's rules: each
// snapshot, at most MaxResetSessions, and no id twice (duplicate).
func Reset(sessions []agentbridge.Snapshot, enabled Harnesses) []Issue {
	return checkReset(nil, "$", sessions, enabled, nil, Bridge)
}

// ResetAs checks a reset under a profile.
func ResetAs(sessions []agentbridge.Snapshot, enabled Harnesses, prof Profile) []Issue {
	return checkReset(nil, "$", sessions, enabled, nil, prof)
}

func tooManySessions(p string) Issue {
	return newIssue(p, InvalidArray, "must hold at most %d sessions; report the rest with upserts", MaxResetSessions)
}

func checkReset(is []Issue, p string, sessions []agentbridge.Snapshot, enabled Harnesses, prs []*presence, prof Profile) []Issue {
	if len(sessions) > MaxResetSessions {
		is = append(is, tooManySessions(p))
		if prof == Host {
			return is // the host checks no element of a reset too long
		}
	}
	seen := make(map[string]bool, len(sessions))
	for i := range sessions {
		ep := index(p, i)
		if prs == nil {
			is = checkSnapshot(is, ep, &sessions[i], enabled, nil, nil, prof)
		} else {
			if prs[i] == nil { // not an object: already reported
				continue
			}
			is = checkSnapshot(is, ep, &sessions[i], enabled, prs[i], prs[i].subs, prof)
		}
		if id := sessions[i].ID; id != "" {
			if seen[id] {
				is = append(is, newIssue(ep, Duplicate, "names a session id already in this reset"))
			}
			seen[id] = true
		}
	}
	return is
}

// ---- diagnostics ----

// Diagnostic checks a diagnostic's code and message against the bridge's
// rules.
func Diagnostic(d agentbridge.Diagnostic) []Issue { return checkDiagnostic(nil, "$", &d, nil, Bridge) }

// DiagnosticAs checks a diagnostic under a profile.
func DiagnosticAs(d agentbridge.Diagnostic, prof Profile) []Issue {
	return checkDiagnostic(nil, "$", &d, nil, prof)
}

// ValidDiagnosticCode reports whether s is lowercase kebab-case
// ([a-z][a-z0-9]*(-[a-z0-9]+)*) of at most MaxDiagnosticCode bytes.
func ValidDiagnosticCode(s string) bool {
	if !hostDiagnosticCode(s) || s[len(s)-1] == '-' {
		return false
	}
	return !strings.Contains(s, "--")
}

// hostDiagnosticCode is the host's pattern for a code: [a-z][a-z0-9-]{0,63}.
func hostDiagnosticCode(s string) bool { return ValidHarnessID(s) }

func checkDiagnostic(is []Issue, p string, d *agentbridge.Diagnostic, pr *presence, prof Profile) []Issue {
	if pr.present("code", d.Code != "") {
		switch {
		case d.Code == "" || text.UTF16Len(d.Code) > MaxDiagnosticCode:
			is = append(is, newIssue(child(p, "code"), InvalidString, "must be a non-empty string of at most %d characters", MaxDiagnosticCode))
		case prof == Host && !hostDiagnosticCode(d.Code):
			is = append(is, newIssue(child(p, "code"), InvalidID, "must be a lowercase kebab-case code ([a-z][a-z0-9-]*)"))
		case prof == Bridge && !ValidDiagnosticCode(d.Code):
			is = append(is, newIssue(child(p, "code"), InvalidID, "must be lowercase kebab-case (e.g. watch-failed) of at most %d characters", MaxDiagnosticCode))
		}
	} else if pr.absent("code", d.Code != "") {
		is = append(is, requiredString(p, "code", MaxDiagnosticCode))
	}
	if pr.present("message", d.Message != "") {
		if prof == Host {
			is = checkProfText(is, p, "message", d.Message, MaxDiagnosticText, prof)
		} else if msg := text.Problem(d.Message, MaxDiagnosticText); msg != "" {
			is = append(is, newIssue(child(p, "message"), InvalidString, "%s", msg))
		} else if text.ContainsPath(d.Message) {
			is = append(is, newIssue(child(p, "message"), InvalidString, "must not carry file-system paths"))
		}
	} else if pr.absent("message", d.Message != "") {
		is = append(is, requiredString(p, "message", MaxDiagnosticText))
	}
	return is
}

// ---- nesting ----

// Nest rewrites the paths of issues found in a nested value so that they
// read from the outer document: Nest(is, "$[2].session") turns "$.id" into
// "$[2].session.id". It returns a new slice; issues is not changed.
func Nest(issues []Issue, prefix string) []Issue {
	if issues == nil {
		return nil
	}
	out := make([]Issue, len(issues))
	for i, is := range issues {
		if rest, ok := strings.CutPrefix(is.Path, "$"); ok {
			is.Path = prefix + rest
		} else {
			is.Path = prefix + "." + is.Path
		}
		out[i] = is
	}
	return out
}
