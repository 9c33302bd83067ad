package api

import (
	"bytes"
	"encoding/json"
	"slices"
	"strconv"
	"strings"

	"github.com/agentbridge/agentbridge"
	"github.com/agentbridge/agentbridge/validate"
)

// opFields lists the fields each publish operation takes besides "op", and
// which of them are required.
var opFields = map[agentbridge.OpKind]struct{ allowed, required []string }{
	agentbridge.OpReset:      {[]string{"sessions"}, []string{"sessions"}},
	agentbridge.OpUpsert:     {[]string{"session"}, []string{"session"}},
	agentbridge.OpRemove:     {[]string{"sessionId"}, []string{"sessionId"}},
	agentbridge.OpDiagnostic: {[]string{"diagnostic"}, []string{"diagnostic"}},
	agentbridge.OpEvent:      {[]string{"sessionId", "harness", "event"}, []string{"sessionId", "event"}},
}

// DecodeOps decodes the body of POST /v1/sources/{source}/publish: one op
// object, or an array of them. It reports the issues, with paths from the
// body's root ("$.session.id" for one op, "$[2].session.id" in an array):
// the first validate.MaxIssues of them. ops are the operations before the
// first one with issues (all of them when there is none). single says the
// body was one object. Harness switches are not checked here (the hub
// knows them).
func DecodeOps(body []byte) (ops []agentbridge.Op, single bool, issues []validate.Issue) {
	ops, single, c := decodeOps(body, nil)
	return ops, single, c.Issues
}

// decodeOps is DecodeOps that also checks the harness of every snapshot
// against hs (nil: no check), and counts the issues past the first
// validate.MaxIssues instead of keeping them, so that an array of half a
// million bad operations costs a hundred issues of memory.
func decodeOps(body []byte, hs validate.Harnesses) (ops []agentbridge.Op, single bool, issues validate.Counter) {
	body = bytes.TrimSpace(body)
	switch {
	case len(body) > 0 && body[0] == '{':
		op, is := decodeOp(body, "$", hs)
		issues.Add(is...)
		if len(is) > 0 {
			return nil, true, issues
		}
		return []agentbridge.Op{op}, true, issues
	case len(body) > 0 && body[0] == '[':
		// One element at a time, and ops kept only up to the first one
		// with issues (after it they are never applied nor checked): a
		// 1 MiB array may hold half a million elements, and agentbridge.Op is over
		// 500 bytes.
		dec := json.NewDecoder(bytes.NewReader(body))
		if _, err := dec.Token(); err != nil {
			issues.Add(validate.Issue{Path: "$", Code: validate.InvalidType, Message: "malformed JSON"})
			return nil, false, issues
		}
		for i := 0; dec.More(); i++ {
			var el json.RawMessage
			if err := dec.Decode(&el); err != nil {
				issues.Add(validate.Issue{Path: "$", Code: validate.InvalidType, Message: "malformed JSON"})
				return nil, false, issues
			}
			op, is := decodeOp(el, "$["+strconv.Itoa(i)+"]", hs)
			if issues.Len() == 0 && len(is) == 0 {
				ops = append(ops, op)
			}
			issues.Add(is...)
		}
		return ops, false, issues
	}
	issues.Add(validate.Issue{Path: "$", Code: validate.InvalidType, Message: "must be an operation object or an array of them"})
	return nil, false, issues
}

type member struct {
	key string
	val json.RawMessage
}

// objectMembers reads a JSON object's members in order, keeping
// duplicates; ok is false when raw is not an object.
func objectMembers(raw []byte) ([]member, bool) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	if t, err := dec.Token(); err != nil || t != json.Delim('{') {
		return nil, false
	}
	var ms []member
	for dec.More() {
		t, err := dec.Token()
		if err != nil {
			return nil, false
		}
		k, _ := t.(string)
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil {
			return nil, false
		}
		ms = append(ms, member{k, v})
	}
	return ms, true
}

func issue(path string, code validate.Code, msg string) validate.Issue {
	return validate.Issue{Path: path, Code: code, Message: msg}
}

func fieldPath(p, key string) string { return p + "." + key }

// decodeOp decodes one operation object found at path p.
func decodeOp(raw []byte, p string, hs validate.Harnesses) (agentbridge.Op, []validate.Issue) {
	var op agentbridge.Op
	if t := bytes.TrimSpace(raw); len(t) == 0 || t[0] != '{' {
		// Not an object: said without a decoder (an array may hold half a
		// million such elements).
		return op, []validate.Issue{issue(p, validate.InvalidType, "must be an operation object")}
	}
	ms, ok := objectMembers(raw)
	if !ok {
		return op, []validate.Issue{issue(p, validate.InvalidType, "must be an operation object")}
	}
	fields := map[string]json.RawMessage{}
	var is []validate.Issue
	for _, m := range ms {
		if _, dup := fields[m.key]; dup {
			is = append(is, issue(fieldPath(p, m.key), validate.Duplicate, "is given twice"))
			continue
		}
		fields[m.key] = m.val
	}
	kindRaw, ok := fields["op"]
	if !ok {
		return op, append(is, issue(fieldPath(p, "op"), validate.MissingField, "is required"))
	}
	var kind string
	if err := json.Unmarshal(kindRaw, &kind); err != nil || bytes.Equal(bytes.TrimSpace(kindRaw), []byte("null")) {
		return op, append(is, issue(fieldPath(p, "op"), validate.InvalidType, "must be a string"))
	}
	spec, ok := opFields[agentbridge.OpKind(kind)]
	if !ok {
		return op, append(is, issue(fieldPath(p, "op"), validate.InvalidEnum, "must be one of reset, upsert, remove, diagnostic, event"))
	}
	op.Op = agentbridge.OpKind(kind)
	for _, m := range ms {
		if m.key != "op" && !slices.Contains(spec.allowed, m.key) {
			is = append(is, issue(fieldPath(p, m.key), validate.UnknownField, "is not a field of "+article(kind)+" operation"))
		}
	}
	for _, f := range spec.required {
		if _, ok := fields[f]; !ok {
			is = append(is, issue(fieldPath(p, f), validate.MissingField, "is required"))
		}
	}
	if v, ok := fields["sessions"]; ok && op.Op == agentbridge.OpReset {
		if t := bytes.TrimSpace(v); len(t) == 0 || t[0] != '[' {
			is = append(is, issue(fieldPath(p, "sessions"), validate.InvalidType, "must be an array of session snapshots"))
		} else {
			var more []validate.Issue
			op.Sessions, more = validate.DecodeReset(v, hs)
			is = append(is, validate.Nest(more, fieldPath(p, "sessions"))...)
		}
	}
	if v, ok := fields["session"]; ok && op.Op == agentbridge.OpUpsert {
		var more []validate.Issue
		op.Session, more = validate.DecodeSnapshot(v, hs)
		is = append(is, validate.Nest(more, fieldPath(p, "session"))...)
	}
	if v, ok := fields["diagnostic"]; ok && op.Op == agentbridge.OpDiagnostic {
		var more []validate.Issue
		op.Diagnostic, more = validate.DecodeDiagnostic(v)
		is = append(is, validate.Nest(more, fieldPath(p, "diagnostic"))...)
	}
	if v, ok := fields["event"]; ok && op.Op == agentbridge.OpEvent {
		var more []validate.Issue
		op.Event, more = validate.DecodeEvent(v)
		is = append(is, validate.Nest(more, fieldPath(p, "event"))...)
	}
	if v, ok := fields["sessionId"]; ok && slices.Contains(spec.allowed, "sessionId") {
		op.SessionID, is = decodeID(is, fieldPath(p, "sessionId"), v, validate.ValidID,
			"must be 1 to 128 bytes of A-Z a-z 0-9 . _ : @ -")
	}
	if v, ok := fields["harness"]; ok && slices.Contains(spec.allowed, "harness") {
		op.Harness, is = decodeID(is, fieldPath(p, "harness"), v, validate.ValidHarnessID,
			"must be a harness id: [a-z][a-z0-9-]{0,63}")
	}
	return op, is
}

func decodeID(is []validate.Issue, p string, raw json.RawMessage, ok func(string) bool, rule string) (string, []validate.Issue) {
	var s string
	if t := bytes.TrimSpace(raw); len(t) == 0 || t[0] != '"' || json.Unmarshal(t, &s) != nil {
		return "", append(is, issue(p, validate.InvalidType, "must be a string"))
	}
	if !ok(s) {
		return "", append(is, issue(p, validate.InvalidID, rule))
	}
	return s, is
}

// article is kind with its indefinite article ("an upsert", "a reset").
func article(kind string) string {
	if strings.ContainsRune("aeiou", rune(kind[0])) {
		return "an " + kind
	}
	return "a " + kind
}
