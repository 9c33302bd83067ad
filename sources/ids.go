package sources

import (
	"path/filepath"
	"strings"
)

// ValidID reports whether s is an identity value of the contract: 1–128
// bytes of [A-Za-z0-9._:@-]. Sources check ids from records with it and
// skip a record whose id is not one (never shortening it).
func ValidID(s string) bool {
	if len(s) == 0 || len(s) > 128 {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9':
		case c == '.' || c == '_' || c == ':' || c == '@' || c == '-':
		default:
			return false
		}
	}
	return true
}

// Stem returns a journal's file name without its directory and without
// ext (e.g. ".jsonl"); the session id of sources that name journals by id.
func Stem(path, ext string) string {
	return strings.TrimSuffix(filepath.Base(path), ext)
}
