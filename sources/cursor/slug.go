package cursor

import (
	"os"
	"strings"

	"github.com/agentbridge/agentbridge/validate"
)

// Cursor names a project's directory after its path with every "/" turned
// into "-" and the leading one dropped: /home/ana/my-app becomes
// home-ana-my-app. The name alone is ambiguous (was home-ana-my-app
// /home/ana/my-app or /home/ana/my/app?), so it is decoded against the file
// system: every reading of each "-" as "/" or as itself is tried, and the
// cwd is the one reading that is an existing directory. When none is, or
// more than one is, the cwd is left out rather than guessed.

// Bounds of DecodeSlug's search, so that a hostile name costs little.
const (
	maxSlugSegments = 64  // "-"-separated parts looked at
	maxSlugProbes   = 256 // directories stat'ed per name
)

// DecodeSlug returns the directory a project slug names when exactly one
// reading of it is an existing directory (isDir reports that), else "".
// Special names ("empty-window": a chat without a folder) and names that
// cannot be a path give "".
func DecodeSlug(slug string, isDir func(string) bool) string {
	if slug == "" || slug == "empty-window" || strings.HasPrefix(slug, "-") || strings.HasSuffix(slug, "-") ||
		strings.Contains(slug, "--") || strings.ContainsAny(slug, "/\x00") {
		return ""
	}
	segs := strings.Split(slug, "-")
	if len(segs) > maxSlugSegments {
		return ""
	}
	var found []string
	probes := 0
	// walk extends prefix (a directory that exists) with segs[i:], where
	// cur is the component being built.
	var walk func(prefix, cur string, i int)
	walk = func(prefix, cur string, i int) {
		if len(found) > 1 || probes >= maxSlugProbes {
			return
		}
		if i == len(segs) {
			p := prefix + "/" + cur
			probes++
			if isDir(p) {
				found = append(found, p)
			}
			return
		}
		// "-" as a separator: the component so far must be a directory.
		probes++
		if dir := prefix + "/" + cur; isDir(dir) {
			walk(dir, segs[i], i+1)
		}
		// "-" as itself: the component goes on.
		walk(prefix, cur+"-"+segs[i], i+1)
	}
	walk("", segs[0], 1)
	if len(found) != 1 || probes >= maxSlugProbes {
		return ""
	}
	return validate.CleanCwd(found[0])
}

// dirExists reports whether p is a directory (following symbolic links,
// as the agent's cwd may be one).
func dirExists(p string) bool {
	fi, err := os.Stat(p)
	return err == nil && fi.IsDir()
}
