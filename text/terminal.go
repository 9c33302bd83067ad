package text

import (
	"strings"
	"unicode"
	"unicode/utf16"
	"unicode/utf8"
)

// Text from the agents' journals reaches people's terminals (the sessions
// table, stream and watch): a character there must not act instead of
// show. Printable is the rule for text printed for people, EscapeJSON for
// JSON printed to a terminal.

// Hidden reports whether r reorders or hides the text around it: every
// format character (Unicode category Cf: the bidirectional marks,
// embeddings, overrides and isolates such as U+061C, U+200E, U+202E and
// U+2066; the zero-width and invisible marks U+200B–U+200D, U+2060–U+2064,
// U+FEFF; the soft hyphen; the tag characters U+E0000–U+E007F, which can
// carry a whole hidden text), and the characters that show as nothing
// without being format characters (the Hangul fillers, the combining
// grapheme joiner U+034F, the Khmer inherent vowels U+17B4–U+17B5, the
// Mongolian variation selectors). "abc\u202Etxt.exe" prints as
// "abcexe.txt"; a zero-width space makes two different ids look the same.
func Hidden(r rune) bool {
	switch r {
	case 0x034F, 0x115F, 0x1160, 0x17B4, 0x17B5, 0x3164, 0xFFA0:
		return true
	}
	return r >= 0x180B && r <= 0x180F || r > 0x7F && unicode.Is(unicode.Cf, r)
}

// isControl reports whether r is a C0 or C1 control or DEL (U+009B, the
// one-byte CSI, starts a terminal escape sequence like ESC [), or the
// Unicode line and paragraph separators (U+2028, U+2029), which break a
// line where a terminal or a viewer takes them as line ends.
func isControl(r rune) bool { return r < 0x20 || r >= 0x7F && r <= 0x9F || r == 0x2028 || r == 0x2029 }

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
		if escaped(r) {
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
		if escaped(r) {
			units := []rune{r}
			if r > 0xFFFF { // a tag character: a surrogate pair, as JSON escapes it
				a, b := utf16.EncodeRune(r)
				units = []rune{a, b}
			}
			for _, u := range units {
				out = append(out, '\\', 'u', hex[u>>12&0xF], hex[u>>8&0xF], hex[u>>4&0xF], hex[u&0xF])
			}
		} else {
			out = append(out, b[i:i+size]...)
		}
		i += size
	}
	return out
}

// escaped reports whether EscapeJSON writes r as an escape: a C1 control,
// a line or paragraph separator, or a Hidden character.
func escaped(r rune) bool { return r >= 0x80 && isControl(r) || Hidden(r) }
