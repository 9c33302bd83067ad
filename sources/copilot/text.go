package copilot

import (
	"crypto/sha256"
	"encoding/hex"
	"net/url"
	"path"
	"regexp"
	"strings"
	"time"

	"github.com/agentbridge/agentbridge/sources"
	"github.com/agentbridge/agentbridge/validate"
)

// safeID returns s when it is an identity value, else a stable id derived
// from it ("x-" and 24 hex digits of its SHA-256), so that a journal read
// again maps to the same ids. Empty s gives "".
func safeID(s string) string {
	if s == "" || sources.ValidID(s) {
		return s
	}
	sum := sha256.Sum256([]byte(s))
	return "x-" + hex.EncodeToString(sum[:12])
}

// absPath matches an absolute path of two or more segments in free text.
var absPath = regexp.MustCompile(`(^|[\s"'` + "`" + `(\[{=,:;<>])/[^\s"'` + "`" + `()\[\]{}<>,;/]+(?:/[^\s"'` + "`" + `()\[\]{}<>,;/]*)+`)

// display turns agent text into display text of at most max characters:
// absolute paths shortened to "…/<last segment>" (a user's directories
// never show), credentials redacted, control characters folded, bounded.
func display(s string, max int) string {
	if s == "" {
		return ""
	}
	if strings.Contains(s, "/") {
		s = absPath.ReplaceAllStringFunc(s, func(m string) string {
			lead := ""
			if m[0] != '/' {
				lead, m = m[:1], m[1:]
			}
			return lead + "…/" + path.Base(strings.TrimRight(m, "/"))
		})
	}
	return strings.TrimSpace(validate.Bound(validate.Redact(s), max))
}

// cleanCwd returns cwd when it is a clean absolute path, else "" (paths of
// other systems are dropped, not guessed at).
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

// parseTime returns the epoch milliseconds of a record's ISO-8601
// timestamp, or 0 when it is missing or not a plausible time.
func parseTime(ts string) int64 {
	if ts == "" {
		return 0
	}
	t, err := time.Parse(time.RFC3339Nano, ts)
	if err != nil || t.Year() < 2000 || t.Year() > 9999 {
		return 0
	}
	return t.UnixMilli()
}

// host returns the host of a URL (never its path or query, which may carry
// tokens), or "" when raw is not one.
func host(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return ""
	}
	return u.Hostname()
}
