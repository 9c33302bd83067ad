package validate

import "unicode/utf8"

// Bounds of an issue list as the bridge answers it (Cap).
const (
	// MaxIssues is how many issues an answer lists; the rest are counted.
	MaxIssues = 100
	// MaxIssuePath and MaxIssueMessage bound one issue's path and message
	// in bytes (a path repeats the keys of the document, which may be long).
	MaxIssuePath    = 256
	MaxIssueMessage = 512
)

// Cap returns the first max issues of is, each with its path and message
// cut to MaxIssuePath and MaxIssueMessage bytes (at a character boundary,
// marked with "…"), and how many issues it left out. is is not changed. A
// negative max keeps them all.
func Cap(is []Issue, max int) (kept []Issue, omitted int) {
	if max >= 0 && len(is) > max {
		omitted = len(is) - max
		is = is[:max]
	}
	kept = make([]Issue, len(is))
	for i, x := range is {
		x.Path = cut(x.Path, MaxIssuePath)
		x.Message = cut(x.Message, MaxIssueMessage)
		kept[i] = x
	}
	return kept, omitted
}

// cut shortens s to at most n bytes, ending in "…", on a rune boundary.
func cut(s string, n int) string {
	if len(s) <= n {
		return s
	}
	const ell = "…"
	end := n - len(ell)
	for end > 0 && !utf8.RuneStart(s[end]) {
		end--
	}
	return s[:end] + ell
}

// Counter keeps the first MaxIssues issues appended to it and counts the
// others, so that a hostile document with a million mistakes costs a
// hundred issues of memory.
type Counter struct {
	Issues  []Issue // the first MaxIssues
	Omitted int     // how many more there were
}

// Add appends is, keeping at most MaxIssues in c.Issues.
func (c *Counter) Add(is ...Issue) {
	room := MaxIssues - len(c.Issues)
	if room >= len(is) {
		c.Issues = append(c.Issues, is...)
		return
	}
	room = max(room, 0)
	c.Issues = append(c.Issues, is[:room]...)
	c.Omitted += len(is) - room
}

// Len is how many issues were added in all.
func (c *Counter) Len() int { return len(c.Issues) + c.Omitted }
