// Package kit holds the small helpers that the Pi, Kiro CLI and Mistral
// Vibe sources share: display text made safe to publish, the cwd rule,
// record timestamps, and finding an agent's process by its working
// directory (none of these agents holds its journal open between writes).
package kit

import (
	"path"
	"path/filepath"
	"strings"
	"time"

	"github.com/agentbridge/agentbridge/validate"
)

// maxScan bounds how much of a text is looked at: display text is at most
// a few hundred characters, so the rest of a long pasted prompt is never
// needed (4 bytes per character, with slack for folded space and paths).
const maxScan = 4096

// Text turns agent text (a prompt, a title, an error message, a tool name)
// into display text of at most max characters: credentials redacted,
// absolute paths cut to their last element, control characters folded,
// bounded. It returns "" when nothing printable is left.
func Text(s string, max int) string {
	if s == "" {
		return ""
	}
	if len(s) > maxScan {
		s = s[:maxScan] // Bound repairs a cut character
	}
	return strings.TrimSpace(scrubPaths(validate.Bound(validate.Redact(s), max)))
}

// scrubPaths replaces every absolute or home-relative path in s with "…/"
// and its last element: "fix /home/u/repo/main.go" becomes "fix …/main.go".
// A path starts at "/" or "~/" at the start of s or after a space, quote,
// bracket, '=', ':' or ','; "//" (a URL's authority) is not one.
func scrubPaths(s string) string {
	if !strings.ContainsRune(s, '/') {
		return s
	}
	var b strings.Builder
	b.Grow(len(s))
	for i := 0; i < len(s); {
		starts := (s[i] == '/' || s[i] == '~' && i+1 < len(s) && s[i+1] == '/') &&
			(i == 0 || strings.IndexByte(" \"'`([{<=:,", s[i-1]) >= 0) &&
			!(s[i] == '/' && i+1 < len(s) && s[i+1] == '/')
		if !starts {
			b.WriteByte(s[i])
			i++
			continue
		}
		j := i
		for j < len(s) && strings.IndexByte(" \"'`)]}>,;", s[j]) < 0 {
			j++
		}
		p := s[i:j]
		if strings.Count(p, "/") >= 2 || p[0] == '~' {
			base := filepath.Base(strings.TrimRight(p, "/"))
			if base == "/" || base == "." || base == "~" {
				base = ""
			}
			b.WriteString("…/")
			b.WriteString(base)
		} else {
			b.WriteString(p)
		}
		i = j
	}
	return b.String()
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

// ISOTime returns the epoch milliseconds of an RFC 3339 timestamp written
// by the agent, or 0 when it is missing, malformed or before 2000.
func ISOTime(ts string) int64 {
	if ts == "" {
		return 0
	}
	t, err := time.Parse(time.RFC3339Nano, ts)
	if err != nil || t.Year() < 2000 {
		return 0
	}
	return t.UnixMilli()
}

// UnixSeconds returns the epoch milliseconds of an epoch-seconds timestamp,
// or 0 when it is before 2000 or after 9999.
func UnixSeconds(s float64) int64 {
	if s < 946684800 || s > 253402300799 {
		return 0
	}
	return int64(s * 1000)
}
