package qwen

import (
	"bytes"
	"errors"
	json "github.com/go-json-experiment/json"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"

	"github.com/agentbridge/agentbridge/proc"
	"github.com/agentbridge/agentbridge/sources"
	"github.com/agentbridge/agentbridge/validate"
)

// The live registry (Qwen Code 0.24 and later): every running Qwen Code
// process writes sessions/<pid>.json under QWEN_HOME (a process hosting
// several sessions: <pid>-<8 hex>.json, one per session) while it runs and
// removes it when it ends; `qwen sessions ps --json` lists them. A record
// names the process exactly: its pid, and procStart, "<boot id>:<start
// time in clock ticks>" from /proc/<pid>/stat, which tells a live record
// from a stale one whose pid was reused.
//
// The record also holds the process's IPC socket path and token for peer
// messaging: they are never decoded.

// registryFile matches a record's file name, as Qwen Code's own reader does.
var registryFile = regexp.MustCompile(`^(\d+)(-[0-9a-f]{8})?\.json$`)

// registryRecord is the part of a registry record the source reads.
type registryRecord struct {
	SchemaVersion int     `json:"schemaVersion"`
	PID           int     `json:"pid"`
	ProcStart     *string `json:"procStart"`
	SessionID     string  `json:"sessionId"`
	QwenVersion   *string `json:"qwenVersion"`
	Kind          string  `json:"kind"`
}

// registrySchema is the record schema this source reads.
const registrySchema = 1

// isRegistry reports whether p is a record of the registry directory reg.
func isRegistry(reg, p string) bool {
	return filepath.Dir(p) == reg && registryFile.MatchString(filepath.Base(p))
}

// parseRegistry checks a record read from the file named name: a schema
// this source knows, a pid that is the file's, a valid session id.
func parseRegistry(name string, data []byte) (registryRecord, error) {
	var r registryRecord
	if err := json.Unmarshal(data, &r); err != nil {
		return r, err
	}
	m := registryFile.FindStringSubmatch(name)
	switch {
	case r.SchemaVersion != registrySchema:
		return r, errors.New("registry record of another schema")
	case m == nil || m[1] != strconv.Itoa(r.PID) || r.PID <= 0 || r.PID > validate.MaxPID:
		return r, errors.New("registry record's pid is not its file's")
	case !validate.ValidID(r.SessionID):
		return r, errors.New("registry record without a valid session id")
	}
	return r, nil
}

// sameProcess reports whether the record's procStart names the process
// running as its pid now (under root, normally /proc). A record without a
// procStart (a platform without /proc) is taken at its word.
func sameProcess(root string, r registryRecord) bool {
	st, err := proc.ReadStat(root, r.PID)
	if err != nil {
		return false
	}
	if r.ProcStart == nil {
		return true
	}
	boot, ticks, ok := strings.Cut(*r.ProcStart, ":")
	if !ok {
		return false
	}
	b, err := os.ReadFile(filepath.Join(root, "sys", "kernel", "random", "boot_id"))
	if err != nil || string(bytes.TrimSpace(b)) != boot {
		return false
	}
	return ticks == strconv.FormatUint(st.StartTime, 10)
}

// readRegistry takes a registry record (nil data: it went away) and binds
// its session to its process when the record is that process's.
func (h *handler) readRegistry(p string, data []byte) {
	if data == nil {
		for id, rp := range h.registry {
			if rp.path == p {
				delete(h.registry, id)
			}
		}
		return
	}
	r, err := parseRegistry(filepath.Base(p), data)
	if err != nil {
		h.BadLine(sources.CodeInvalidRecord)
		return
	}
	if r.QwenVersion != nil {
		h.Version(Harness, *r.QwenVersion)
	}
	if !sameProcess(h.ProcRoot(), r) {
		return // stale: the process is gone, or its pid was reused
	}
	h.registry[r.SessionID] = registered{path: p, pid: r.PID}
	delete(h.gone, r.SessionID) // a live process has it
	if h.Get(r.SessionID) != nil {
		h.BindPID(r.SessionID, r.PID)
	}
}

// registered is a session's live registry record.
type registered struct {
	path string
	pid  int
}
