package sources

import (
	"path/filepath"
	"strings"
)

// Stem returns a journal's file name without its directory and without
// ext (e.g. ".jsonl"); the session id of sources that name journals by id.
func Stem(path, ext string) string {
	return strings.TrimSuffix(filepath.Base(path), ext)
}
