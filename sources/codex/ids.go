package codex

import (
	"crypto/sha256"
	"encoding/hex"
	"strconv"

	"github.com/agentbridge/agentbridge/validate"
)

// safeID returns s when it is a valid identity value, "" when s is empty,
// and otherwise a stable derived id: "x-" followed by the first 32 hex digits
// of SHA-256(s). The same record id always maps to the same derived id, so a
// tool call and its output still match, and the original (which may carry
// anything, even conversation text) is never published.
func safeID(s string) string {
	if s == "" || validate.ValidID(s) {
		return s
	}
	sum := sha256.Sum256([]byte(s))
	return "x-" + hex.EncodeToString(sum[:16])
}

// lineID is the id of a record that names none: a prefix and the record's
// 1-based line number in its rollout, which stays the same on every read of
// the same file.
func lineID(prefix string, line int) string {
	return prefix + "-" + strconv.Itoa(line)
}
