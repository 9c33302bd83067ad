package hub

import (
	"strconv"
	"sync"
	"unicode/utf8"

	"github.com/agentbridge/agentbridge"
)

// The records a busy session produces are a lifecycle record and an
// upsert of its whole snapshot per event. fastEncode renders those two
// shapes without reflection, byte for byte as encoding/json does (HTML
// characters, U+2028/U+2029 and invalid UTF-8 escaped alike; FuzzEncode
// checks it), into a pooled buffer, so each record costs one allocation of
// its exact size. Every other shape goes through encoding/json.

var encPool = sync.Pool{New: func() any { b := make([]byte, 0, 1024); return &b }}

// fastEncode encodes upsert and lifecycle data; ok is false for any other
// value.
func fastEncode(v any) (out []byte, ok bool) {
	bp := encPool.Get().(*[]byte)
	b := (*bp)[:0]
	switch d := v.(type) {
	case upsertData:
		b = append(b, `{"source":`...)
		b = appendString(b, d.Source)
		b = optString(b, `,"host":`, d.Host)
		b = append(b, `,"snapshot":`...)
		b = appendSnapshot(b, &d.Snapshot)
		if d.Activity != nil {
			b = append(b, `,"activity":`...)
			b = appendActivity(b, d.Activity)
		}
		if d.Ended != nil {
			b = append(b, `,"ended":`...)
			b = appendEnded(b, d.Ended)
		}
		b = append(b, '}')
	case lifecycleData:
		b = append(b, `{"source":`...)
		b = appendString(b, d.Source)
		b = optString(b, `,"host":`, d.Host)
		b = append(b, `,"sessionId":`...)
		b = appendString(b, d.SessionID)
		b = append(b, `,"event":`...)
		b = appendEvent(b, &d.Event)
		b = append(b, '}')
	default:
		encPool.Put(bp)
		return nil, false
	}
	out = append([]byte(nil), b...)
	if cap(b) <= 64<<10 { // don't keep a rare huge buffer
		*bp = b
		encPool.Put(bp)
	}
	return out, true
}

// snapshotFields and eventFields are the JSON names the appenders write,
// in order; a test compares them with the types' tags, so that a field
// added to the vocabulary cannot be silently left out.
var (
	snapshotFields = []string{"id", "harness", "pid", "cwd", "title", "model", "status", "waitingFor", "tool", "lastTurn", "lastTurnEndedAt", "error", "subagents"}
	subagentFields = []string{"id", "parentId", "type", "title", "status"}
	endedFields    = []string{"at", "exitCode", "signal", "reason"}
	activityFields = []string{"statusSince", "tool", "turnStartedAt", "usage"}
	toolFields     = []string{"name", "since"}
	usageFields    = []string{"inputTokens", "outputTokens", "cacheReadTokens", "cacheWriteTokens"}
	eventFields    = []string{"kind", "occurredAt", "title", "model", "cwd", "pid", "promptText", "agentId", "turnId", "toolId", "name",
		"outcome", "waitId", "state", "reason", "summary", "exitCode", "signal", "subagentId", "parentAgentId", "type"}
)

func appendSnapshot(b []byte, s *agentbridge.Snapshot) []byte {
	b = append(b, `{"id":`...)
	b = appendString(b, s.ID)
	b = append(b, `,"harness":`...)
	b = appendString(b, s.Harness)
	b = optInt(b, `,"pid":`, int64(s.PID))
	b = optString(b, `,"cwd":`, s.Cwd)
	b = optString(b, `,"title":`, s.Title)
	b = optString(b, `,"model":`, s.Model)
	b = optString(b, `,"status":`, string(s.Status))
	b = optString(b, `,"waitingFor":`, s.WaitingFor)
	b = optString(b, `,"tool":`, s.Tool)
	b = optString(b, `,"lastTurn":`, string(s.LastTurn))
	b = optInt(b, `,"lastTurnEndedAt":`, s.LastTurnEndedAt)
	b = optString(b, `,"error":`, s.Error)
	if len(s.Subagents) > 0 {
		b = append(b, `,"subagents":[`...)
		for i := range s.Subagents {
			sa := &s.Subagents[i]
			if i > 0 {
				b = append(b, ',')
			}
			b = append(b, `{"id":`...)
			b = appendString(b, sa.ID)
			b = optString(b, `,"parentId":`, sa.ParentID)
			b = append(b, `,"type":`...)
			b = appendString(b, sa.Type)
			b = optString(b, `,"title":`, sa.Title)
			b = append(b, `,"status":`...)
			b = appendString(b, string(sa.Status))
			b = append(b, '}')
		}
		b = append(b, ']')
	}
	return append(b, '}')
}

func appendActivity(b []byte, a *agentbridge.Activity) []byte {
	b = append(b, '{')
	n := len(b)
	b = optInt(b, `,"statusSince":`, a.StatusSince)
	if a.Tool != nil {
		b = append(b, `,"tool":{"name":`...)
		b = appendString(b, a.Tool.Name)
		b = optInt(b, `,"since":`, a.Tool.Since)
		b = append(b, '}')
	}
	b = optInt(b, `,"turnStartedAt":`, a.TurnStartedAt)
	if u := a.Usage; u != nil {
		b = append(b, `,"usage":{"inputTokens":`...)
		b = strconv.AppendInt(b, u.InputTokens, 10)
		b = append(b, `,"outputTokens":`...)
		b = strconv.AppendInt(b, u.OutputTokens, 10)
		b = append(b, `,"cacheReadTokens":`...)
		b = strconv.AppendInt(b, u.CacheReadTokens, 10)
		b = append(b, `,"cacheWriteTokens":`...)
		b = strconv.AppendInt(b, u.CacheWriteTokens, 10)
		b = append(b, '}')
	}
	if len(b) > n { // drop the first field's comma
		b = append(b[:n], b[n+1:]...)
	}
	return append(b, '}')
}

func appendEnded(b []byte, e *agentbridge.Ended) []byte {
	b = append(b, `{"at":`...)
	b = strconv.AppendInt(b, e.At, 10)
	if e.ExitCode != nil {
		b = append(b, `,"exitCode":`...)
		b = strconv.AppendInt(b, int64(*e.ExitCode), 10)
	}
	b = optString(b, `,"signal":`, e.Signal)
	b = optString(b, `,"reason":`, e.Reason)
	return append(b, '}')
}

func appendEvent(b []byte, e *agentbridge.Event) []byte {
	b = append(b, `{"kind":`...)
	b = appendString(b, string(e.Kind))
	b = optInt(b, `,"occurredAt":`, e.OccurredAt)
	b = optString(b, `,"title":`, e.Title)
	b = optString(b, `,"model":`, e.Model)
	b = optString(b, `,"cwd":`, e.Cwd)
	b = optInt(b, `,"pid":`, int64(e.PID))
	b = optString(b, `,"promptText":`, e.PromptText)
	b = optString(b, `,"agentId":`, e.AgentID)
	b = optString(b, `,"turnId":`, e.TurnID)
	b = optString(b, `,"toolId":`, e.ToolID)
	b = optString(b, `,"name":`, e.Name)
	b = optString(b, `,"outcome":`, string(e.Outcome))
	b = optString(b, `,"waitId":`, e.WaitID)
	b = optString(b, `,"state":`, string(e.State))
	b = optString(b, `,"reason":`, e.Reason)
	b = optString(b, `,"summary":`, e.Summary)
	if e.ExitCode != nil {
		b = append(b, `,"exitCode":`...)
		b = strconv.AppendInt(b, int64(*e.ExitCode), 10)
	}
	b = optString(b, `,"signal":`, e.Signal)
	b = optString(b, `,"subagentId":`, e.SubagentID)
	b = optString(b, `,"parentAgentId":`, e.ParentAgentID)
	b = optString(b, `,"type":`, e.Type)
	return append(b, '}')
}

// optString appends key and s unless s is empty (omitempty).
func optString(b []byte, key, s string) []byte {
	if s == "" {
		return b
	}
	return appendString(append(b, key...), s)
}

// optInt appends key and n unless n is 0 (omitempty).
func optInt(b []byte, key string, n int64) []byte {
	if n == 0 {
		return b
	}
	return strconv.AppendInt(append(b, key...), n, 10)
}

const hexDigits = "0123456789abcdef"

// htmlSafe holds true for the ASCII bytes encoding/json writes as they are.
var htmlSafe = func() (t [utf8.RuneSelf]bool) {
	for c := 0x20; c < utf8.RuneSelf; c++ {
		t[c] = c != '"' && c != '\\' && c != '<' && c != '>' && c != '&'
	}
	return t
}()

// appendString appends s as a JSON string exactly as encoding/json does
// with HTML escaping on (its default for Marshal).
func appendString(b []byte, s string) []byte {
	b = append(b, '"')
	start := 0
	for i := 0; i < len(s); {
		if c := s[i]; c < utf8.RuneSelf {
			if htmlSafe[c] {
				i++
				continue
			}
			b = append(b, s[start:i]...)
			switch c {
			case '\\', '"':
				b = append(b, '\\', c)
			case '\b':
				b = append(b, '\\', 'b')
			case '\f':
				b = append(b, '\\', 'f')
			case '\n':
				b = append(b, '\\', 'n')
			case '\r':
				b = append(b, '\\', 'r')
			case '\t':
				b = append(b, '\\', 't')
			default:
				b = append(b, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xF])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			b = append(b, s[start:i]...)
			b = append(b, `\ufffd`...)
			i += size
			start = i
			continue
		}
		if r == '\u2028' || r == '\u2029' {
			b = append(b, s[start:i]...)
			b = append(b, '\\', 'u', '2', '0', '2', hexDigits[r&0xF])
			i += size
			start = i
			continue
		}
		i += size
	}
	b = append(b, s[start:]...)
	return append(b, '"')
}
