package validate

import (
	"path"
	"strings"
	"unicode/utf8"
)

// maxTitleScan bounds how much of a text is looked at to make display
// text: that is at most MaxError (1,024) characters, so the rest of a long
// pasted prompt is never needed (4 bytes per character, plus slack for
// the whitespace that Bound folds and the paths that shorten).
const maxTitleScan = 8192

// Display turns text from an agent's records (a prompt, a thread name, a
// reason) into display text of at most max characters that may be
// published: credentials redacted, absolute paths cut to their last
// element, spaces folded, bounded, trimmed. It returns "" when nothing
// printable is left. Every source makes its display text with it.
func Display(s string, limit int) string {
	if s == "" {
		return ""
	}
	if len(s) > maxTitleScan {
		s = s[:maxTitleScan] // Bound repairs a cut character
	}
	// redact the whole text (a credential must be seen whole), bound it
	// (which folds every kind of space to ' '), then cut the paths, which
	// never makes text longer
	return strings.TrimSpace(ShortenPaths(Bound(Redact(s), limit)))
}

// Title is Display bounded to MaxTitle: a session's or subagent's title.
func Title(s string) string { return Display(s, MaxTitle) }

// ErrorText is Display bounded to MaxError: why a turn failed, from an
// agent's record of an API, quota or auth error.
func ErrorText(s string) string { return Display(s, MaxError) }

// Label is Display bounded to MaxText: a short label from a record (a
// tool name, an agent role or nickname).
func Label(s string) string { return Display(s, MaxText) }

// Model bounds a model name from a record for publishing.
func Model(s string) string {
	if len(s) > maxTitleScan {
		s = s[:maxTitleScan]
	}
	return strings.TrimSpace(Bound(Redact(s), MaxModel))
}

// CleanCwd returns a working directory from a record as a snapshot
// carries it (ValidCwd), or "" when it cannot be one. It makes only the
// lexical repairs that name the same directory: a trailing "/", empty and
// "." segments ("/a/./b/" is "/a/b"). A path with a ".." segment is refused
// rather than resolved, since ".." after a symbolic link leaves it
// elsewhere; so is one that is relative, of another system ("C:\x"), too
// long, or holds NUL or invalid UTF-8. Every source cleans its cwds with it.
func CleanCwd(cwd string) string {
	if cwd == "" || cwd[0] != '/' || len(cwd) > MaxCwdBytes || strings.IndexByte(cwd, 0) >= 0 || !utf8.ValidString(cwd) {
		return ""
	}
	for seg := range strings.SplitSeq(cwd, "/") {
		if seg == ".." {
			return ""
		}
	}
	return path.Clean(cwd)
}
