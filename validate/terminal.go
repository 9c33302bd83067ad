package validate

import (
	"strings"
	"unicode/utf8"
)

// Text from the agents' journals reaches people's terminals (the sessions
// table, stream and watch): a character there must not act instead of
// show. Printable is the rule for text printed for people, EscapeJSON for
// JSON printed to a terminal.

// Hidden reports whether r reorders or hides the text around it: the
// bidirectional embeddings and overrides (U+202A–U+202E) and isolates
// (U+2066–U+2069), and the zero-width and invisible marks (U+200B–U+200F,
// U+2060, U+FEFF). "abc\u202Etxt.exe" prints as "abcexe.txt"; a zero-width
// space makes two different ids look the same.
func Hidden(r rune) bool {
	return r >= 0x202A && r <= 0x202E || r >= 0x2066 && r <= 0x2069 ||
		r >= 0x200B && r <= 0x200F || r == 0x2060 || r == 0xFEFF
}

// isControl reports whether r is a C0 or C1 control or DEL (U+009B, the
// one-byte CSI, starts a terminal escape sequence like ESC [).
func isControl(r rune) bool { return r < 0x20 || r >= 0x7F && r <= 0x9F }

// Printable makes s safe to print for a person: control characters (C0,
// DEL and C1, line breaks and tabs included) become a space, and Hidden
// characters and bytes that are not UTF-8 become U+FFFD, so that they show
// instead of acting. Text without any is returned as it is.
func Printable(s string) string {
	clean := true
	for _, r := range s {
		if isControl(r) || Hidden(r) || r == utf8.RuneError {
			clean = false
			break
		}
	}
	if clean {
		return s
	}
	var b strings.Builder
	b.Grow(len(s))
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		i += size
		switch {
		case isControl(r):
			b.WriteByte(' ')
		case Hidden(r) || r == utf8.RuneError && size == 1:
			b.WriteRune(utf8.RuneError)
		default:
			b.WriteRune(r)
		}
	}
	return b.String()
}

// EscapeJSON returns JSON text b with every C1 control and Hidden
// character written as a \u escape: the same JSON value, exactly, but
// nothing in it that a terminal acts on (encoders already escape C0
// controls). Such characters can only stand inside strings, where the
// escape means the same. b is returned as is when it holds none.
func EscapeJSON(b []byte) []byte {
	at := -1
	for i := 0; i < len(b); {
		r, size := utf8.DecodeRune(b[i:])
		if r >= 0x80 && r <= 0x9F || Hidden(r) {
			at = i
			break
		}
		i += size
	}
	if at < 0 {
		return b
	}
	out := make([]byte, 0, len(b)+16)
	out = append(out, b[:at]...)
	const hex = "0123456789abcdef"
	for i := at; i < len(b); {
		r, size := utf8.DecodeRune(b[i:])
		if r >= 0x80 && r <= 0x9F || Hidden(r) {
			out = append(out, '\\', 'u', hex[r>>12&0xF], hex[r>>8&0xF], hex[r>>4&0xF], hex[r&0xF])
		} else {
			out = append(out, b[i:i+size]...)
		}
		i += size
	}
	return out
}
