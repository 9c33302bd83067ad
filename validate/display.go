package validate

import (
	"path/filepath"
	"strings"
)

// maxTitleScan bounds how much of a prompt is looked at to make a title:
// a title is at most MaxTitle characters, so the rest of a long
// pasted prompt is never needed (4 bytes per character, plus slack for
// the whitespace that Bound folds and the paths that shorten).
const maxTitleScan = 4096

// Title turns conversation text (a prompt, a thread name) into display
// text that may be published: credentials redacted, absolute paths cut to
// their last element, bounded to MaxTitle characters. It returns ""
// when nothing printable is left.
func Title(s string) string {
	if len(s) > maxTitleScan {
		s = s[:maxTitleScan] // Bound repairs a cut character
	}
	// redact the whole text (a credential must be seen whole), bound it
	// (which folds every kind of space to ' '), then cut the paths, which
	// never makes text longer
	return strings.TrimSpace(ShortenPaths(Bound(Redact(s), MaxTitle)))
}

// Label bounds a short label from a record (a tool name, an agent
// role or nickname) for publishing.
func Label(s string) string {
	if len(s) > maxTitleScan {
		s = s[:maxTitleScan]
	}
	return strings.TrimSpace(ShortenPaths(Bound(Redact(s), MaxText)))
}

// ShortenPaths replaces every absolute (or home-relative) path in s with "…/"
// and its last element, so that display text never carries a file-system
// path: "fix /home/u/repo/main.go" becomes "fix …/main.go".
func ShortenPaths(s string) string {
	if !strings.ContainsRune(s, '/') {
		return s
	}
	var b strings.Builder
	b.Grow(len(s))
	i := 0
	for i < len(s) {
		start := i
		// a path starts at "/" or "~/" at the start of s or after a
		// separator (space, quote, bracket, '=' or ':')
		// ("//" is a URL's authority or a comment, not a path)
		if (s[i] == '/' || (s[i] == '~' && i+1 < len(s) && s[i+1] == '/')) && (i == 0 || isPathStart(s[i-1])) &&
			!(s[i] == '/' && i+1 < len(s) && s[i+1] == '/') {
			j := i
			for j < len(s) && !endsPath(s, j) {
				j++
			}
			p := s[start:j]
			if strings.Count(p, "/") >= 2 || (len(p) > 1 && p[0] == '~') {
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
			continue
		}
		b.WriteByte(s[i])
		i++
	}
	return b.String()
}

func isPathStart(c byte) bool {
	switch c {
	case ' ', '\t', '\n', '\r', '"', '\'', '`', '(', '[', '{', '<', '=', ':', ',':
		return true
	}
	return false
}

// endsPath reports whether s[j] ends a path. Space always does; a quote,
// bracket or separator only when what follows cannot continue the path
// ("'/a/b' and", "(/a/b).", "/a/b,"): inside a name ("/home/o'brien/x",
// "/srv/app(2)/x") it is part of the path.
func endsPath(s string, j int) bool {
	switch c := s[j]; {
	case c == ' ' || c == '\t' || c == '\n' || c == '\r':
		return true
	case isPathEnd(c):
		return j+1 == len(s) || isPathEnd(s[j+1]) || strings.IndexByte(".:!?", s[j+1]) >= 0
	}
	return false
}

func isPathEnd(c byte) bool {
	switch c {
	case ' ', '\t', '\n', '\r', '"', '\'', '`', ')', ']', '}', '>', ',', ';':
		return true
	}
	return false
}

// Model bounds a model name from a record for publishing.
func Model(s string) string {
	if len(s) > maxTitleScan {
		s = s[:maxTitleScan]
	}
	return strings.TrimSpace(Bound(Redact(s), MaxModel))
}

// CleanCwd returns a working directory from a record when it is what a
// snapshot allows (absolute, at most MaxCwdBytes, no NUL), cleaned of a
// trailing "/"; else "". A path that is not already clean ("/a/../b",
// "/a//b") is refused rather than guessed at.
func CleanCwd(cwd string) string {
	if cwd == "" || cwd[0] != '/' || len(cwd) > MaxCwdBytes || strings.IndexByte(cwd, 0) >= 0 {
		return ""
	}
	c := filepath.Clean(cwd)
	if c != cwd && c+"/" != cwd {
		return ""
	}
	return c
}
