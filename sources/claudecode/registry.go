package claudecode

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/agentbridge/agentbridge/validate"
)

// ErrPartial means a registry file is empty or cut short: Claude Code
// rewrites it whole, and a reader can catch it half-written. Keep the last
// good state and wait for the next write.
var ErrPartial = errors.New("claudecode: registry file incomplete")

// RegistryEntry is one live Claude Code process as
// $CLAUDE_CONFIG_DIR/sessions/<pid>.json describes it.
type RegistryEntry struct {
	PID        int
	SessionID  string // the transcript the process writes now
	Cwd        string // clean absolute path, or ""
	Status     RegistryStatus
	WaitingFor string
	StartedAt  int64  // epoch ms, 0 if absent
	ProcStart  string // the process start time as Claude Code wrote it
	Changed    int64  // statusUpdatedAt, else updatedAt (epoch ms), 0 if absent
}

// registryFile is the JSON of a registry file; fields not listed are ignored.
type registryFile struct {
	PID             *int            `json:"pid"`
	SessionID       string          `json:"sessionId"`
	Cwd             string          `json:"cwd"`
	Status          string          `json:"status"`
	WaitingFor      string          `json:"waitingFor"`
	StartedAt       json.RawMessage `json:"startedAt"`
	ProcStart       json.RawMessage `json:"procStart"`
	UpdatedAt       json.RawMessage `json:"updatedAt"`
	StatusUpdatedAt json.RawMessage `json:"statusUpdatedAt"`
}

// RegistryPID returns the pid a registry file name ("<pid>.json") names,
// or 0 when the name is not one.
func RegistryPID(name string) int {
	stem, ok := strings.CutSuffix(name, ".json")
	if !ok || stem == "" || len(stem) > 7 {
		return 0
	}
	pid, err := strconv.Atoi(stem)
	if err != nil || pid < 1 || pid > 4194304 || strconv.Itoa(pid) != stem {
		return 0
	}
	return pid
}

// ParseRegistry decodes the registry file of pid. Empty or truncated JSON
// gives ErrPartial; other defects (not an object, a pid that contradicts
// the file name, no session id) give an error naming the defect, never the
// content.
func ParseRegistry(pid int, data []byte) (RegistryEntry, error) {
	data = bytes.TrimSpace(data)
	if len(data) == 0 {
		return RegistryEntry{}, ErrPartial
	}
	var f registryFile
	if err := json.Unmarshal(data, &f); err != nil {
		var se *json.SyntaxError
		if errors.As(err, &se) && se.Offset >= int64(len(data)) || strings.Contains(err.Error(), "unexpected end of JSON input") {
			return RegistryEntry{}, ErrPartial
		}
		return RegistryEntry{}, fmt.Errorf("claudecode: registry file: %s", jsonProblem(err))
	}
	if f.PID != nil && *f.PID != pid {
		return RegistryEntry{}, errors.New("claudecode: registry file names another pid")
	}
	if f.SessionID == "" {
		return RegistryEntry{}, errors.New("claudecode: registry file has no session id")
	}
	e := RegistryEntry{
		PID:        pid,
		SessionID:  f.SessionID,
		Cwd:        validate.CleanCwd(f.Cwd),
		WaitingFor: f.WaitingFor,
		StartedAt:  jsonInt(f.StartedAt),
		ProcStart:  jsonText(f.ProcStart),
		Changed:    jsonInt(f.StatusUpdatedAt),
	}
	if e.Changed == 0 {
		e.Changed = jsonInt(f.UpdatedAt)
	}
	switch f.Status {
	case "":
		e.Status = RegistryNone
	case "waiting":
		e.Status = RegistryWaiting
	case "idle":
		e.Status = RegistryIdle
	default: // busy, shell, and statuses of newer versions: working, not waiting
		e.Status = RegistryBusy
	}
	return e, nil
}

// jsonInt reads a JSON number (or a numeric string) as an integer; 0 if it
// is neither.
func jsonInt(raw json.RawMessage) int64 {
	s := strings.Trim(string(bytes.TrimSpace(raw)), `"`)
	if s == "" {
		return 0
	}
	if n, err := strconv.ParseInt(s, 10, 64); err == nil && n > 0 {
		return n
	}
	if f, err := strconv.ParseFloat(s, 64); err == nil && f > 0 && f < 1<<53 {
		return int64(f)
	}
	return 0
}

// jsonText reads a JSON string or number as text.
func jsonText(raw json.RawMessage) string {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || string(raw) == "null" {
		return ""
	}
	var s string
	if raw[0] == '"' {
		if json.Unmarshal(raw, &s) != nil {
			return ""
		}
		return s
	}
	return string(raw)
}

// nextWait returns the registry state for e given the previous state of
// the same process: while the process keeps waiting for the same thing the
// wait keeps its id; a new wait gets "wait-<pid>-<changed>" (or a counter
// when the file carries no time), stable for as long as that wait lasts.
func nextWait(prev RegistryState, e RegistryEntry, seq int) RegistryState {
	st := RegistryState{Status: e.Status, WaitingFor: e.WaitingFor}
	if e.Status != RegistryWaiting {
		return st
	}
	if prev.Status == RegistryWaiting && prev.WaitingFor == e.WaitingFor && prev.WaitID != "" {
		st.WaitID = prev.WaitID
		return st
	}
	if e.Changed > 0 {
		st.WaitID = "wait-" + strconv.Itoa(e.PID) + "-" + strconv.FormatInt(e.Changed, 10)
	} else {
		st.WaitID = "wait-" + strconv.Itoa(e.PID) + "-n" + strconv.Itoa(seq)
	}
	if st.WaitID == prev.WaitID { // a new wait within the same millisecond
		st.WaitID += "-" + strconv.Itoa(seq)
	}
	return st
}
