package text

import "strings"

// One grammar finds file-system paths in text, for the two rules that need
// them: ShortenPaths cuts them out of display text, ContainsPath refuses a
// diagnostic message that carries one. A path token starts at the start of
// the text or after a boundary (space, quote, bracket, '=', ':', ',' or
// ';') with
//
//   - "/" and a character that can continue a path ("//" is a URL's
//     authority or a comment, "/ " a slash in prose),
//   - "~/" or "~user/" (a home directory),
//   - a drive letter ("C:\", "C:/", not "C://"), a UNC prefix ("\\host"), or
//     "file:/",
//
// and runs to a space, or to a quote, bracket or separator that is not
// inside a name (see endsPath). URLs ("https://host/a/b") are not paths.

// pathAt reports whether a path token starts at s[i], which follows a
// boundary, and where it ends.
func pathAt(s string, i int) (end int, ok bool) {
	rest := s[i:]
	switch c := rest[0]; {
	case c == '/':
		ok = len(rest) > 1 && rest[1] != '/' && !isPathEnd(rest[1])
	case c == '~':
		j := 1
		for j < len(rest) && isUserChar(rest[j]) {
			j++
		}
		ok = j < len(rest) && (rest[j] == '/' || rest[j] == '\\')
	case c == '\\':
		ok = len(rest) > 2 && rest[1] == '\\' && isPathChar(rest[2])
	case c >= 'A' && c <= 'Z' || c >= 'a' && c <= 'z':
		ok = len(rest) > 2 && rest[1] == ':' && (rest[2] == '\\' || rest[2] == '/' && (len(rest) < 4 || rest[3] != '/')) ||
			len(rest) > 5 && strings.EqualFold(rest[:6], "file:/")
	}
	if !ok {
		return 0, false
	}
	j := i + 1
	for j < len(s) && !endsPath(s, j) {
		j++
	}
	return j, true
}

// ContainsPath reports whether s holds a path token (see pathAt).
func ContainsPath(s string) bool {
	for i := 0; i < len(s); i++ {
		if i == 0 || isPathBoundary(s[i-1]) {
			if _, ok := pathAt(s, i); ok {
				return true
			}
		}
	}
	return false
}

// ShortenPaths replaces every path token in s that names a directory
// with "…/" and its last element, so that display text never carries a
// file-system path: "fix /home/u/repo/main.go" becomes "fix …/main.go". A
// single-segment "/word" (a slash command, "/tmp") stays.
func ShortenPaths(s string) string {
	if !strings.ContainsAny(s, `/\`) {
		return s
	}
	var b strings.Builder
	b.Grow(len(s))
	for i := 0; i < len(s); {
		if i == 0 || isPathBoundary(s[i-1]) {
			if j, ok := pathAt(s, i); ok {
				p := s[i:j]
				if p[0] != '/' || strings.Count(p, "/") >= 2 {
					b.WriteString("…/")
					b.WriteString(lastElement(p))
				} else {
					b.WriteString(p)
				}
				i = j
				continue
			}
		}
		b.WriteByte(s[i])
		i++
	}
	return b.String()
}

// lastElement is the last element of path token p, or "" when it names a
// root ("/", "~/", "C:\").
func lastElement(p string) string {
	p = strings.TrimRight(p, `/\`)
	base := p[strings.LastIndexAny(p, `/\`)+1:]
	if base == "." || base == "~" || strings.HasPrefix(p, "~") && !strings.ContainsAny(p, `/\`) ||
		len(p) == 2 && p[1] == ':' || strings.EqualFold(p, "file:") {
		return ""
	}
	return base
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

func isPathBoundary(c byte) bool {
	switch c {
	case ' ', '\t', '\n', '\r', '"', '\'', '`', '(', '[', '{', '<', '=', ':', ',', ';':
		return true
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

func isPathChar(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' ||
		c == '.' || c == '_' || c == '-' || c == '~' || c == '@' || c == '+' || c >= 0x80
}

func isUserChar(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '-' || c == '.'
}
