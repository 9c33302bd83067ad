package validate

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"math"
	"strconv"
	"strings"

	"github.com/agentbridge/agentbridge"
	"github.com/agentbridge/agentbridge/text"
)

// DecodeSnapshot decodes raw JSON and checks it against the bridge's
// rules: besides Snapshot's rules it reports unknown_field, a key given
// twice, and a value of the wrong JSON type with the host's code for the
// field. The snapshot is only meaningful when no issue is returned.
func DecodeSnapshot(raw json.RawMessage, enabled Harnesses) (agentbridge.Snapshot, []Issue) {
	return DecodeSnapshotAs(raw, enabled, Bridge)
}

// DecodeSnapshotAs is DecodeSnapshot under a profile.
func DecodeSnapshotAs(raw json.RawMessage, enabled Harnesses, prof Profile) (agentbridge.Snapshot, []Issue) {
	var s agentbridge.Snapshot
	n, is := parseJSON(raw)
	if is != nil {
		return s, is
	}
	var pr *presence
	pr, is = decodeSnapshot(is, "$", n, &s)
	if pr == nil {
		return s, is
	}
	return s, checkSnapshot(is, "$", &s, enabled, pr, pr.subs, prof)
}

// DecodeReset decodes and checks a JSON array of snapshots. It also takes
// the reset's stream form, an object {"sessions": [...]}; paths then read
// "$.sessions[i]".
func DecodeReset(raw json.RawMessage, enabled Harnesses) ([]agentbridge.Snapshot, []Issue) {
	return DecodeResetAs(raw, enabled, Bridge)
}

// DecodeResetAs is DecodeReset under a profile. Under Host a reset of more
// than MaxResetSessions is that one issue, as the host reports it.
func DecodeResetAs(raw json.RawMessage, enabled Harnesses, prof Profile) ([]agentbridge.Snapshot, []Issue) {
	n, is := parseJSON(raw)
	if is != nil {
		return nil, is
	}
	p := "$"
	if n.kind == kindObject {
		var arr *node
		for i, m := range n.members {
			switch {
			case m.key == "sessions" && arr == nil:
				arr = &n.members[i].val
			case m.key == "sessions":
				is = append(is, newIssue(keyPath(p, m.key), Duplicate, "is given twice"))
			default:
				is = append(is, newIssue(keyPath(p, m.key), UnknownField, "is not a field of a reset"))
			}
		}
		if arr == nil {
			return nil, append(is, missing(p, "sessions"))
		}
		n, p = arr, child(p, "sessions")
	}
	if n.kind != kindArray {
		return nil, append(is, typeIssueAs(p, "an array of session snapshots", n, InvalidArray))
	}
	elems := n.elems
	if len(elems) > MaxResetSessions && prof == Host {
		return nil, append(is, tooManySessions(p))
	}
	if len(elems) > MaxResetSessions {
		// Invalid as a whole: check the sessions up to the bound only, so
		// that a hostile array of half a million elements costs no more
		// than a full reset.
		is = append(is, tooManySessions(p))
		elems = elems[:MaxResetSessions]
	}
	sessions := make([]agentbridge.Snapshot, len(elems))
	prs := make([]*presence, len(elems))
	for i := range elems {
		prs[i], is = decodeSnapshot(is, index(p, i), &elems[i], &sessions[i])
	}
	return sessions, checkReset(is, p, sessions, enabled, prs, prof)
}

// parseObject parses raw, which must be one JSON object.
func parseObject(raw json.RawMessage) (*node, []Issue) {
	n, is := parseJSON(raw)
	if is == nil && n.kind != kindObject {
		is = append(is, typeIssue("$", "an object", n))
	}
	return n, is
}

// DecodeDiagnostic decodes and checks a JSON diagnostic (Bridge).
func DecodeDiagnostic(raw json.RawMessage) (agentbridge.Diagnostic, []Issue) {
	return DecodeDiagnosticAs(raw, Bridge)
}

// DecodeDiagnosticAs is DecodeDiagnostic under a profile.
func DecodeDiagnosticAs(raw json.RawMessage, prof Profile) (agentbridge.Diagnostic, []Issue) {
	var d agentbridge.Diagnostic
	n, is := parseObject(raw)
	if is != nil {
		return d, is
	}
	var pr presence
	is = eachMember(is, "$", n, func(is []Issue, key string, v *node) ([]Issue, bool) {
		switch key {
		case "code":
			return decodeStringAs(is, "$", key, v, &d.Code, &pr, InvalidString), true
		case "message":
			return decodeStringAs(is, "$", key, v, &d.Message, &pr, InvalidString), true
		}
		return is, false
	}, "a diagnostic")
	return d, checkDiagnostic(is, "$", &d, &pr, prof)
}

// DecodeEvent decodes and checks a JSON lifecycle event.
func DecodeEvent(raw json.RawMessage) (agentbridge.Event, []Issue) {
	var e agentbridge.Event
	n, is := parseObject(raw)
	if is != nil {
		return e, is
	}
	var pr presence
	is = eachMember(is, "$", n, func(is []Issue, key string, v *node) ([]Issue, bool) {
		var kind string
		switch key {
		case "kind":
			is = decodeString(is, "$", key, v, &kind, &pr)
			e.Kind = agentbridge.EventKind(kind)
		case "occurredAt":
			is = decodeInt(is, "$", key, v, &e.OccurredAt, &pr)
		case "pid":
			var pid int64
			is = decodeInt(is, "$", key, v, &pid, &pr)
			e.PID = toInt(pid)
		case "exitCode":
			var code int64
			is = decodeInt(is, "$", key, v, &code, &pr)
			if pr.m[key] == fieldOK {
				c := toInt(code)
				e.ExitCode = &c
			}
		default:
			dst := eventStringField(&e, key)
			if dst == nil {
				return is, false
			}
			is = decodeString(is, "$", key, v, dst, &pr)
		}
		return is, true
	}, "an event")
	return e, checkEvent(is, "$", &e, &pr)
}

func eventStringField(e *agentbridge.Event, key string) *string {
	switch key {
	case "title":
		return &e.Title
	case "model":
		return &e.Model
	case "cwd":
		return &e.Cwd
	case "promptText":
		return &e.PromptText
	case "agentId":
		return &e.AgentID
	case "turnId":
		return &e.TurnID
	case "toolId":
		return &e.ToolID
	case "name":
		return &e.Name
	case "outcome":
		return (*string)(&e.Outcome)
	case "waitId":
		return &e.WaitID
	case "state":
		return (*string)(&e.State)
	case "reason":
		return &e.Reason
	case "summary":
		return &e.Summary
	case "signal":
		return &e.Signal
	case "subagentId":
		return &e.SubagentID
	case "parentAgentId":
		return &e.ParentAgentID
	case "type":
		return &e.Type
	}
	return nil
}

// decodeSnapshot fills s from the object n; it returns nil presence when n
// is not an object (reported).
func decodeSnapshot(is []Issue, p string, n *node, s *agentbridge.Snapshot) (*presence, []Issue) {
	pr := &presence{}
	return decodeObject(is, p, n, pr, "a session snapshot", func(is []Issue, key string, v *node) ([]Issue, bool) {
		switch key {
		case "pid":
			var pid int64
			is = decodeIntAs(is, p, key, v, &pid, pr, InvalidInteger)
			s.PID = toInt(pid)
		case "lastTurnEndedAt":
			is = decodeIntAs(is, p, key, v, &s.LastTurnEndedAt, pr, InvalidInteger)
		case "status":
			is = decodeStringAs(is, p, key, v, (*string)(&s.Status), pr, InvalidEnum)
		case "lastTurn":
			is = decodeStringAs(is, p, key, v, (*string)(&s.LastTurn), pr, InvalidEnum)
		case "subagents":
			var ok bool
			if is, ok = expectKind(is, p, key, v, pr, kindArray, "an array", InvalidArray); !ok {
				return is, true
			}
			sp := child(p, key)
			s.Subagents = make([]agentbridge.Subagent, len(v.elems))
			pr.subs = make([]*presence, len(v.elems))
			for i := range v.elems {
				pr.subs[i], is = decodeSubagent(is, index(sp, i), &v.elems[i], &s.Subagents[i])
			}
		default:
			dst := snapshotStringField(s, key)
			if dst == nil {
				return is, false
			}
			is = decodeStringAs(is, p, key, v, dst, pr, InvalidString)
		}
		return is, true
	})
}

// snapshotStringField returns the snapshot's plain string member key (not
// an enum), or nil for a key that is no such member.
func snapshotStringField(s *agentbridge.Snapshot, key string) *string {
	switch key {
	case "id":
		return &s.ID
	case "harness":
		return &s.Harness
	case "cwd":
		return &s.Cwd
	case "title":
		return &s.Title
	case "model":
		return &s.Model
	case "waitingFor":
		return &s.WaitingFor
	case "tool":
		return &s.Tool
	case "error":
		return &s.Error
	}
	return nil
}

func decodeSubagent(is []Issue, p string, n *node, a *agentbridge.Subagent) (*presence, []Issue) {
	pr := &presence{}
	return decodeObject(is, p, n, pr, "a subagent", func(is []Issue, key string, v *node) ([]Issue, bool) {
		switch key {
		case "id":
			return decodeStringAs(is, p, key, v, &a.ID, pr, InvalidString), true
		case "parentId":
			return decodeStringAs(is, p, key, v, &a.ParentID, pr, InvalidString), true
		case "type":
			return decodeStringAs(is, p, key, v, &a.Type, pr, InvalidString), true
		case "title":
			return decodeStringAs(is, p, key, v, &a.Title, pr, InvalidString), true
		case "status":
			return decodeStringAs(is, p, key, v, (*string)(&a.Status), pr, InvalidEnum), true
		}
		return is, false
	})
}

// decodeObject decodes n, which must be an object (a what), member by
// member with f (eachMember), and returns pr, where f records the members
// it found; it returns nil presence when n is not an object (reported).
func decodeObject(is []Issue, p string, n *node, pr *presence, what string, f func(is []Issue, key string, v *node) ([]Issue, bool)) (*presence, []Issue) {
	if n.kind != kindObject {
		return nil, append(is, typeIssue(p, "an object ("+what+")", n))
	}
	return pr, eachMember(is, p, n, f, what)
}

// eachMember calls f for every member of the object n, reporting a key
// given twice (duplicate) and the keys f does not know (unknown_field).
func eachMember(is []Issue, p string, n *node, f func(is []Issue, key string, v *node) ([]Issue, bool), what string) []Issue {
	var seen map[string]bool
	if len(n.members) > 1 {
		seen = make(map[string]bool, len(n.members))
	}
	for i := range n.members {
		m := &n.members[i]
		if seen != nil {
			if seen[m.key] {
				is = append(is, newIssue(keyPath(p, m.key), Duplicate, "is given twice"))
				continue
			}
			seen[m.key] = true
		}
		var known bool
		if is, known = f(is, m.key, &m.val); !known {
			is = append(is, newIssue(keyPath(p, m.key), UnknownField, "is not a field of %s", what))
		}
	}
	return is
}

// keyPath is the path of an object member whose key came from the input:
// p.key for a plain key (1–64 bytes of [A-Za-z0-9_$-]), else p["key"] with
// the key bounded to 64 characters and quoted, so that a path stays short
// and printable whatever the input holds.
func keyPath(p, key string) string {
	plain := len(key) > 0 && len(key) <= 64
	for i := 0; plain && i < len(key); i++ {
		c := key[i]
		plain = c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '$' || c == '-'
	}
	if plain {
		return child(p, key)
	}
	return p + "[" + strconv.Quote(text.Bound(key, 64)) + "]"
}

func decodeString(is []Issue, p, key string, v *node, dst *string, pr *presence) []Issue {
	return decodeStringAs(is, p, key, v, dst, pr, InvalidType)
}

// decodeStringAs decodes a string; a value of another JSON type is an
// issue with code.
func decodeStringAs(is []Issue, p, key string, v *node, dst *string, pr *presence, code Code) []Issue {
	is, ok := expectKind(is, p, key, v, pr, kindString, "a string", code)
	if ok {
		*dst = v.str
	}
	return is
}

// expectKind reports whether the member key's value v is of JSON kind k and
// marks it so in pr; a value of another kind is an issue with code, saying
// it must be want.
func expectKind(is []Issue, p, key string, v *node, pr *presence, k nodeKind, want string, code Code) ([]Issue, bool) {
	if v.kind != k {
		pr.set(key, fieldBad)
		return append(is, typeIssueAs(child(p, key), want, v, code)), false
	}
	pr.set(key, fieldOK)
	return is, true
}

func decodeInt(is []Issue, p, key string, v *node, dst *int64, pr *presence) []Issue {
	return decodeIntAs(is, p, key, v, dst, pr, InvalidType)
}

// decodeIntAs decodes an integer; a value of another JSON type is an
// issue with code.
func decodeIntAs(is []Issue, p, key string, v *node, dst *int64, pr *presence, code Code) []Issue {
	is, ok := expectKind(is, p, key, v, pr, kindNumber, "an integer", code)
	if !ok {
		return is
	}
	n, ok := parseInteger(v.str)
	if !ok {
		pr.set(key, fieldBad)
		return append(is, newIssue(child(p, key), InvalidInteger, "must be a whole number within 64 bits"))
	}
	*dst = n
	return is
}

// parseInteger parses a JSON number that denotes an integer, also when it
// is written with a fraction or an exponent (1.0, 1e3, 120e-1), as
// JavaScript reads it. The check is exact (decimal), so 1e-400 and
// 1.0000000000000000000001 are not integers. It fails on values outside
// int64. s is a JSON number as the decoder delivers it.
func parseInteger(s string) (int64, bool) {
	if n, err := strconv.ParseInt(s, 10, 64); err == nil {
		return n, true
	}
	sign := ""
	if strings.HasPrefix(s, "-") {
		sign, s = "-", s[1:]
	}
	mant, expPart, hasExp := strings.Cut(strings.ToLower(s), "e")
	exp := 0
	if hasExp {
		var err error
		if exp, err = strconv.Atoi(expPart); err != nil {
			// Out of range: huge either way; the sign says which.
			exp = 1 << 30
			if strings.HasPrefix(expPart, "-") {
				exp = -exp
			}
		}
	}
	intPart, fracPart, _ := strings.Cut(mant, ".")
	digits, point := intPart+fracPart, len(intPart)+exp
	for len(digits) > 0 && digits[0] == '0' {
		digits, point = digits[1:], point-1
	}
	if digits == "" {
		return 0, true
	}
	// The value is 0.digits × 10^point, digits[0] not 0.
	if point <= 0 || point > 19 {
		return 0, false // a fraction, or beyond int64
	}
	cut := min(point, len(digits))
	if strings.Trim(digits[cut:], "0") != "" {
		return 0, false
	}
	n, err := strconv.ParseInt(sign+digits[:cut]+strings.Repeat("0", point-cut), 10, 64)
	if err != nil {
		return 0, false
	}
	return n, true
}

// toInt converts n to int; a value int cannot hold (on 32-bit platforms)
// becomes math.MinInt, which every range check rejects.
func toInt(n int64) int {
	if int64(int(n)) != n {
		return math.MinInt
	}
	return int(n)
}

func typeIssue(p, want string, got *node) Issue { return typeIssueAs(p, want, got, InvalidType) }

func typeIssueAs(p, want string, got *node, code Code) Issue {
	return newIssue(p, code, "must be %s, not %s", want, kindNames[got.kind])
}

// ---- a generic JSON value that keeps key order and repeated keys ----

type nodeKind uint8

const (
	kindNull nodeKind = iota
	kindBool
	kindNumber
	kindString
	kindArray
	kindObject
)

var kindNames = [...]string{"null", "a boolean", "a number", "a string", "an array", "an object"}

type node struct {
	kind    nodeKind
	str     string // string value, or the number's literal
	elems   []node
	members []member
}

type member struct {
	key string
	val node
}

var errTooDeep = errors.New("too deep")

// maxKeptElems bounds the elements parseJSON keeps of an array: one past
// the longest array any document may hold (a reset's sessions), so that
// the length rules still see "too long", while a hostile array of half a
// million elements costs no more memory than a full reset. The elements
// past it are parsed (the JSON must be well-formed) but not kept, nor
// checked.
const maxKeptElems = MaxResetSessions + 1

// parseJSON reads exactly one JSON value from raw. Malformed JSON is one
// invalid_type issue at "$".
func parseJSON(raw []byte) (*node, []Issue) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	n, err := parseValue(dec, 0)
	if err == nil {
		if _, err2 := dec.Token(); err2 != io.EOF {
			err = errors.New("trailing data after the JSON value")
		}
	}
	if err != nil {
		return nil, []Issue{newIssue("$", InvalidType, "%s", malformedMessage(raw, err))}
	}
	return &n, nil
}

func malformedMessage(raw []byte, err error) string {
	var syn *json.SyntaxError
	switch {
	case len(bytes.TrimSpace(raw)) == 0:
		return "malformed JSON: the body is empty"
	case errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF):
		return "malformed JSON: unexpected end of input"
	case errors.Is(err, errTooDeep):
		return "malformed JSON: nested deeper than " + strconv.Itoa(MaxJSONDepth) + " levels"
	case errors.As(err, &syn):
		return "malformed JSON at byte offset " + strconv.FormatInt(syn.Offset, 10) + ": " + syn.Error()
	}
	return "malformed JSON: " + err.Error()
}

func parseValue(dec *json.Decoder, depth int) (node, error) {
	tok, err := dec.Token()
	if err != nil {
		if err == io.EOF {
			err = io.ErrUnexpectedEOF
		}
		return node{}, err
	}
	switch t := tok.(type) {
	case nil:
		return node{kind: kindNull}, nil
	case bool:
		return node{kind: kindBool}, nil
	case json.Number:
		return node{kind: kindNumber, str: string(t)}, nil
	case string:
		return node{kind: kindString, str: t}, nil
	case json.Delim:
		if depth >= MaxJSONDepth {
			return node{}, errTooDeep
		}
		switch t {
		case '[':
			n := node{kind: kindArray}
			for dec.More() {
				v, err := parseValue(dec, depth+1)
				if err != nil {
					return node{}, err
				}
				if len(n.elems) < maxKeptElems {
					n.elems = append(n.elems, v)
				}
			}
			_, err := dec.Token() // ']'
			return n, err
		case '{':
			n := node{kind: kindObject}
			for dec.More() {
				kt, err := dec.Token()
				if err != nil {
					return node{}, err
				}
				key, _ := kt.(string)
				v, err := parseValue(dec, depth+1)
				if err != nil {
					return node{}, err
				}
				n.members = append(n.members, member{key, v})
			}
			_, err := dec.Token() // '}'
			return n, err
		}
	}
	return node{}, errors.New("unexpected token")
}

// Kinds maps each kind of document ("snapshot", "reset", "diagnostic",
// "event") to the check that decodes it under a profile and returns every
// issue. Harnesses matter only to snapshots and resets; nil skips the
// harness check. Events are the bridge's own vocabulary: the profile does
// not change their rules. POST /v1/validate/{kind}?profile= and
// `agentbridge validate [--host] KIND` both use it.
var Kinds = map[string]func(raw json.RawMessage, enabled Harnesses, prof Profile) []Issue{
	"snapshot": func(raw json.RawMessage, h Harnesses, prof Profile) []Issue {
		_, is := DecodeSnapshotAs(raw, h, prof)
		return is
	},
	"reset": func(raw json.RawMessage, h Harnesses, prof Profile) []Issue {
		_, is := DecodeResetAs(raw, h, prof)
		return is
	},
	"diagnostic": func(raw json.RawMessage, _ Harnesses, prof Profile) []Issue {
		_, is := DecodeDiagnosticAs(raw, prof)
		return is
	},
	"event": func(raw json.RawMessage, _ Harnesses, _ Profile) []Issue {
		_, is := DecodeEvent(raw)
		return is
	},
}
