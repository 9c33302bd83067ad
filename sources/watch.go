package sources

import (
	"errors"
	"fmt"
	"io/fs"
	"slices"
	"strings"
)

// Diagnostic codes of whole files (WholeFiles). Messages never carry a
// path or content.
const (
	CodeSideNotRegular = "side-file-not-regular" // a FIFO, socket, device (or a link to one) where a small file was expected
	CodeSideTooLarge   = "side-file-too-large"   // a side file over LimitSidecar (a sparse 4 GiB one included) was not read
)

// WholeFiles is an optional capability of a Handler: small files under the
// roots that are read whole each time they change, instead of followed line
// by line — an agent's process registry (Claude Code's sessions/<pid>.json),
// a subagent's metadata, other sidecar files. The Tailer finds it by type
// assertion on its Handler.
//
// A whole file is read with ReadSmall: without blocking, regular files
// only (a FIFO, a device or a symbolic link to one is skipped with
// CodeSideNotRegular), at most LimitSidecar bytes (a larger file, a sparse
// one included, is skipped unread with CodeSideTooLarge). Reading one never
// holds up the journals or a cancellation.
//
// At a scan, a whole file is read like a journal: when it was modified
// within the window, or TailConfig.Recent says yes. The roots are set up
// in their order, so the whole files of an earlier root reach the Handler
// before the journals of a later one (e.g. the registry before the
// transcripts it binds).
type WholeFiles interface {
	// MatchWhole picks the files to read whole, by path. It is asked
	// before TailConfig.Match; a file it picks is never followed as a
	// journal.
	MatchWhole(path string) bool
	// WholeFile delivers the content of a whole file, at a scan and after
	// every change. nil data means the file went away (removed, renamed
	// away, its directory gone) or is no longer one that can be read (it
	// became a FIFO, a device, too large); it is only delivered for a file
	// whose content was delivered before. A file that cannot be read for
	// another reason (permission) keeps its last content. The Handler may
	// keep data.
	WholeFile(path string, data []byte)
}

// WholeLimits is an optional addition to WholeFiles: a Handler whose
// whole files may be larger than LimitSidecar (a chat that its agent
// rewrites in full on every change, e.g. Gemini CLI's legacy .json chats)
// says each one's bound. The file is still read without blocking, regular
// files only; one over its bound is skipped with CodeSideTooLarge.
type WholeLimits interface {
	WholeLimit(path string) int64
}

// wholeLimit is the bound of whole file p.
func (t *Tailer) wholeLimit(p string) int64 {
	if l, ok := t.whole.(WholeLimits); ok {
		if n := l.WholeLimit(p); n > 0 {
			return n
		}
	}
	return LimitSidecar
}

// wholeFiles returns the Handler's WholeFiles capability, or nil.
func wholeFiles(h Handler) WholeFiles {
	w, _ := h.(WholeFiles)
	return w
}

// isWhole reports whether p is a whole file of the Handler (never a
// directory).
func (t *Tailer) isWhole(p string, dir bool) bool {
	return t.whole != nil && !dir && t.whole.MatchWhole(p)
}

// readWhole reads the whole file p and delivers its content, or its loss.
func (t *Tailer) readWhole(p string) {
	data, err := ReadSmall(p, t.wholeLimit(p))
	switch {
	case err == nil:
		if t.wholeSeen == nil {
			t.wholeSeen = map[string]bool{}
		}
		t.wholeSeen[p] = true
		if data == nil {
			data = []byte{} // empty, not gone
		}
		t.whole.WholeFile(p, data)
		return
	case errors.Is(err, fs.ErrNotExist):
	case errors.Is(err, ErrNotRegular):
		t.log.Debug("side file is not a regular file: skipped", "path", p)
		t.count(CodeSideNotRegular)
	case errors.Is(err, ErrTooLarge):
		t.log.Debug("side file too large: skipped", "path", p)
		t.count(CodeSideTooLarge)
	default:
		t.fsErr(err, "a side file cannot be read")
		return // keep what it said last
	}
	t.wholeGone(p)
}

// wholeGone tells the Handler that whole file p went away, when it was
// told of the file before.
func (t *Tailer) wholeGone(p string) {
	if t.wholeSeen[p] {
		delete(t.wholeSeen, p)
		t.whole.WholeFile(p, nil)
	}
}

// wholeGoneUnder tells the Handler that every whole file below dir went
// away.
func (t *Tailer) wholeGoneUnder(dir string) {
	for _, p := range below(t.wholeSeen, dir) {
		t.wholeGone(p)
	}
}

// below returns the paths of m that lie below dir, sorted.
func below[V any](m map[string]V, dir string) []string {
	prefix := dir + "/"
	var out []string
	for p := range m {
		if strings.HasPrefix(p, prefix) {
			out = append(out, p)
		}
	}
	slices.Sort(out)
	return out
}

// wholeOld reports whether a whole file met at a scan is skipped: it was
// last modified before the window and Recent does not want it.
func (t *Tailer) wholeOld(p string, e fs.DirEntry) bool {
	if t.cfg.Window <= 0 || !e.Type().IsRegular() {
		return false // anything else is read (and refused) at once
	}
	info, err := e.Info()
	if err != nil {
		return true // gone meanwhile
	}
	return info.ModTime().Before(t.now.Add(-t.cfg.Window)) && (t.cfg.Recent == nil || !t.cfg.Recent(p, info))
}

// sideMessage is the diagnostic of n skipped side files.
func sideMessage(code string, n int) string {
	files := "1 side file"
	if n != 1 {
		files = fmt.Sprintf("%d side files", n)
	}
	switch code {
	case CodeSideNotRegular:
		return fmt.Sprintf("skipped %s (registry or metadata) that %s not a regular file (a FIFO, a device or a link to one)", files, are(n))
	case CodeSideTooLarge:
		return fmt.Sprintf("skipped %s (registry or metadata) over %d KiB, unread", files, LimitSidecar>>10)
	}
	return "skipped " + files
}
