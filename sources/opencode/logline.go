package opencode

import (
	"bytes"
	"encoding/json"
	"time"
)

// LogLine is what the source takes from one line of opencode's log
// (log/opencode.log, key=value pairs: timestamp=… level=INFO run=…
// message=… and the message's own fields):
//
//   - Run: the process's run id, on every line;
//   - Session: the session a line names (session.id=ses_…, or id=ses_…
//     of message=created), which the next permission request of the same
//     run is attributed to;
//   - Ask: a permission request (message=asking id=per_… permission=…
//     patterns="[…]"), the moment opencode starts waiting for the user;
//   - Start: when the run began, from its first line (message="creating
//     instance", written as the process starts up), epoch ms; 0 otherwise;
//     Dir: that line's directory= (the process's project).
type LogLine struct {
	Run     string
	Session string
	Ask     *Ask
	Start   int64
	Dir     string
}

// maxLogFields bounds the pairs looked at in one line.
const maxLogFields = 64

// ParseLog decodes one log line; ok is false for a line that carries
// nothing the source uses.
func ParseLog(line []byte) (l LogLine, ok bool) {
	var msg, id, perm, pats, sid, dir []byte
	var at int64
	for n := 0; len(line) > 0 && n < maxLogFields; n++ {
		line = bytes.TrimLeft(line, " ")
		eq := bytes.IndexByte(line, '=')
		sp := bytes.IndexByte(line, ' ')
		if eq < 0 || (sp >= 0 && sp < eq) {
			if sp < 0 {
				break
			}
			line = line[sp+1:] // a bare word
			continue
		}
		key := line[:eq]
		var val []byte
		val, line = logValue(line[eq+1:])
		switch string(key) {
		case "timestamp":
			if t, err := time.Parse(time.RFC3339Nano, string(val)); err == nil {
				at = t.UnixMilli()
			}
		case "run":
			l.Run = string(val)
		case "message":
			msg = val
		case "id":
			id = val
		case "permission":
			perm = val
		case "patterns":
			pats = val
		case "session.id", "sessionID":
			sid = val
		case "directory":
			dir = val
		}
	}
	if string(msg) == "creating instance" {
		l.Start, l.Dir = at, string(dir)
	}
	switch {
	case string(msg) == "asking" && bytes.HasPrefix(id, []byte("per_")):
		a := &Ask{ID: string(id), Permission: string(perm), At: at}
		if len(pats) > 0 && pats[0] == '[' {
			_ = json.Unmarshal(pats, &a.Patterns) // no patterns when they are not a list of strings
		}
		l.Ask = a
		return l, true
	case len(sid) > 0:
		l.Session = string(sid)
	case string(msg) == "created" && bytes.HasPrefix(id, []byte("ses_")):
		l.Session = string(id)
	}
	return l, l.Session != "" || l.Start > 0
}

// logValue splits the value at the start of s from the rest: a bare word,
// or a JSON-quoted string (unquoted; nil when it is not valid).
func logValue(s []byte) (val, rest []byte) {
	if len(s) == 0 || s[0] != '"' {
		if sp := bytes.IndexByte(s, ' '); sp >= 0 {
			return s[:sp], s[sp+1:]
		}
		return s, nil
	}
	i := 1
	for i < len(s) && s[i] != '"' {
		if s[i] == '\\' {
			i++
		}
		i++
	}
	if i >= len(s) {
		return nil, nil // unterminated
	}
	var str string
	if json.Unmarshal(s[:i+1], &str) != nil {
		return nil, s[i+1:]
	}
	return []byte(str), s[i+1:]
}
