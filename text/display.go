package text

import "strings"

// maxTitleScan bounds how much of a text is looked at to make display
// text: that is at most the contract's longest field (an error, 1,024
// characters), so the rest of a long pasted prompt is never needed (4
// bytes per character, plus slack for the whitespace that Bound folds and
// the paths that shorten).
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

// Name is Display for a name that is not prose, such as a model id:
// credentials redacted, spaces folded, bounded and trimmed, but its
// slashes left as they are.
func Name(s string, limit int) string {
	if len(s) > maxTitleScan {
		s = s[:maxTitleScan]
	}
	return strings.TrimSpace(Bound(Redact(s), limit))
}
