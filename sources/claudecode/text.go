package claudecode

import (
	"crypto/sha256"
	"encoding/hex"
	"path"
	"regexp"
	"strings"
	"time"

	"github.com/agentbridge/agentbridge/validate"
)

// validID reports whether s is an identity value of the contract:
// 1–128 bytes of [A-Za-z0-9._:@-].
func validID(s string) bool {
	if len(s) == 0 || len(s) > validate.MaxIDBytes {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9':
		case c == '.', c == '_', c == ':', c == '@', c == '-':
		default:
			return false
		}
	}
	return true
}

// safeID returns s when it is a valid identity value, else a stable id
// derived from it: "x-" and the first 24 hex digits of its SHA-256. The same
// record always yields the same id, so a re-read journal maps to the same
// events. Empty s yields "".
func safeID(s string) string {
	if s == "" || validID(s) {
		return s
	}
	sum := sha256.Sum256([]byte(s))
	return "x-" + hex.EncodeToString(sum[:12])
}

// absPath matches an absolute path of two or more segments in free text,
// after a start of text or a delimiter. The path is replaced by "…/" and its
// last segment, so that text never carries a user's directories.
var absPath = regexp.MustCompile(`(^|[\s"'` + "`" + `(\[{=,:;<>])/[^\s"'` + "`" + `()\[\]{}<>,;/]+(?:/[^\s"'` + "`" + `()\[\]{}<>,;/]*)+`)

// scrubPaths replaces absolute multi-segment paths in s by "…/<last segment>".
func scrubPaths(s string) string {
	if !strings.Contains(s, "/") {
		return s
	}
	return absPath.ReplaceAllStringFunc(s, func(m string) string {
		lead := ""
		if m != "" && m[0] != '/' {
			lead, m = m[:1], m[1:]
		}
		base := path.Base(strings.TrimRight(m, "/"))
		if base == "/" || base == "." {
			base = ""
		}
		return lead + "…/" + base
	})
}

// display turns agent text into display text of at most max characters:
// paths scrubbed, credentials redacted, control characters folded, bounded.
func display(s string, max int) string {
	if s == "" {
		return ""
	}
	return strings.TrimSpace(validate.Bound(validate.Redact(scrubPaths(s)), max))
}

// cleanCwd returns cwd when it is a clean absolute path the contract accepts,
// else "". Paths of other systems (C:\…) are dropped, not guessed at.
func cleanCwd(cwd string) string {
	if cwd == "" || cwd[0] != '/' || len(cwd) > validate.MaxCwdBytes || strings.IndexByte(cwd, 0) >= 0 {
		return ""
	}
	c := path.Clean(cwd)
	if c != cwd && c+"/" != cwd {
		return ""
	}
	return c
}

// parseTime returns the epoch milliseconds of an ISO-8601 record timestamp,
// or 0 when it is missing or not a time.
func parseTime(ts string) int64 {
	if ts == "" {
		return 0
	}
	t, err := time.Parse(time.RFC3339Nano, ts)
	if err != nil || t.Year() < 2000 {
		return 0
	}
	return t.UnixMilli()
}
