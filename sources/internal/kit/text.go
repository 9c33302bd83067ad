// Package kit holds the record rules the Pi, Kiro CLI and Mistral Vibe
// sources share (and Meta, which Gemini and Qwen use too): epoch-seconds
// times, decoding a line, and the title and model a session reported.
// Their shape (files, process, per-session state, mapper, side file) is
// package sources' Agent and Journals. Display text, cwds and ids follow
// the toolkit of package validate (Display, CleanCwd, SafeID), as every
// source's do.
package kit

import (
	json "github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"

	"github.com/agentbridge/agentbridge/sources"
)

// UnixSeconds returns the epoch milliseconds of an epoch-seconds timestamp,
// or 0 when it is before 2000 or after 9999.
func UnixSeconds(s float64) int64 {
	if s < 946684800 || s > 253402300799 {
		return 0
	}
	return int64(s * 1000)
}

// Decode decodes a journal line that must be a JSON object into v (reset
// to its zero value first, so that scratch space can be reused) and
// returns "" on success, sources.CodeInvalidJSON for a line that is not a
// JSON object, and sources.CodeInvalidRecord for a valid JSON object of
// the wrong shape.
func Decode[T any](line []byte, v *T) string {
	*v = *new(T)
	if len(line) == 0 || line[0] != '{' {
		return sources.CodeInvalidJSON
	}
	if err := json.Unmarshal(line, v); err != nil {
		if jsontext.Value(line).IsValid() {
			return sources.CodeInvalidRecord
		}
		return sources.CodeInvalidJSON
	}
	return ""
}
