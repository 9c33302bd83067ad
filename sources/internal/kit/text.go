// Package kit holds what the Pi, Kiro CLI and Mistral Vibe sources share:
// one Handler for an agent that Agent describes (its journals, its side
// file read whole once per wake, its pure mapping), finding the agent's
// process by its working directory (none of these agents holds its
// journal open between writes), and the record rules: display text made
// safe to publish, the cwd rule, derived ids, decoding a line.
package kit

import (
	"crypto/sha256"
	"encoding/hex"
	"path"
	"strings"

	json "github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"

	"github.com/agentbridge/agentbridge/sources"
	"github.com/agentbridge/agentbridge/validate"
)

// maxScan bounds how much of a text is looked at: display text is at most
// a few hundred characters, so the rest of a long pasted prompt is never
// needed (as validate.Title).
const maxScan = 4096

// Text turns agent text (a prompt, a title, an error message, a tool or
// model name) into display text of at most max characters by the rules of
// validate.Title: credentials redacted, control characters folded,
// bounded, absolute paths cut to their last element. It returns "" when
// nothing printable is left.
func Text(s string, max int) string {
	if s == "" {
		return ""
	}
	if len(s) > maxScan {
		s = s[:maxScan] // Bound repairs a cut character
	}
	return strings.TrimSpace(validate.ShortenPaths(validate.Bound(validate.Redact(s), max)))
}

// Cwd returns p when it is a working directory the contract accepts (clean,
// absolute, no NUL, at most validate.MaxCwdBytes), with one trailing "/"
// dropped; else "". Paths of other systems (C:\…) are dropped, not guessed.
func Cwd(p string) string {
	if p == "" || p[0] != '/' || len(p) > validate.MaxCwdBytes || strings.IndexByte(p, 0) >= 0 {
		return ""
	}
	c := path.Clean(p)
	if c != p && c+"/" != p {
		return ""
	}
	return c
}

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

// ID returns s when it is an identity value (sources.ValidID), "" when s
// is empty, and otherwise a stable derived id: "x-" and the first 32 hex
// digits of SHA-256(s) (the rule of the Codex source). Agents' ids are not
// all identity values (Pi joins an OpenAI call id and item id with "|");
// the same record id always maps to the same derived id, so a tool call
// and its result still match, and the original is never published.
func ID(s string) string {
	if s == "" || sources.ValidID(s) {
		return s
	}
	sum := sha256.Sum256([]byte(s))
	return "x-" + hex.EncodeToString(sum[:16])
}
