package sources

import (
	"errors"
	"os"
)

// Bounds against hostile journals (TailConfig.MaxHeld, MaxJournal).
const (
	// DefaultMaxHeld bounds, per Tailer, the bytes held for unfinished
	// lines of all its files together (CodeHeldLimit).
	DefaultMaxHeld = 16 << 20
	// DefaultMaxJournal: a journal with more unread bytes than this (real
	// ones stay far below) is followed from its end (CodeJournalTooLarge).
	DefaultMaxJournal = 1 << 30
	// readSlice is what Run reads of one file before it looks at other
	// files' events, posted functions and cancellation again.
	readSlice = 4 << 20
)

// Diagnostic codes of the bounds against hostile journals.
const (
	CodeHeldLimit       = "unfinished-lines-limit" // an unfinished line did not fit the memory held for all of them: skipped
	CodeJournalTooLarge = "journal-too-large"      // a journal far larger than any real one is followed from its end
)

// skipHole moves f past a hole of a sparse file at its offset when the
// hole alone is longer than MaxLine: its NUL bytes would only make the
// line they are in too long, so the line is skipped as reading them would
// (CodeLineTooLong), without reading them. Data written into the hole
// later is not seen; a journal is only ever appended to.
func (t *Tailer) skipHole(fd *os.File, f *file, size int64) {
	data, err := seekData(fd, f.off) // the offset is unused: reads are ReadAt
	switch {
	case errors.Is(err, errHoleToEnd):
		data = size
	case err != nil:
		return // no SEEK_DATA here: read the bytes
	}
	if data-f.off <= int64(t.cfg.MaxLine) {
		return
	}
	if !f.skip {
		t.tooLong(f)
	}
	f.off = data
}

// fromEnd follows a journal with too many unread bytes from its end: the
// line in progress there is skipped unless the byte before the end ends a
// line.
func (t *Tailer) fromEnd(fd *os.File, f *file, size int64) {
	t.count(CodeJournalTooLarge)
	t.dropPart(f)
	f.off = size
	f.skip = true
	f.summed = false // nothing read: the next read hashes what is there
	var last [1]byte
	if n, _ := fd.ReadAt(last[:], size-1); n == 1 && last[0] == '\n' {
		f.skip = false
	}
}

// hold appends data to the unfinished line of f when the bytes held for
// all files stay within MaxHeld (growth is accounted by capacity); false
// when they would not, and f is left as it was.
func (t *Tailer) hold(f *file, data []byte) bool {
	need := len(f.part) + len(data)
	if need <= cap(f.part) {
		f.part = append(f.part, data...)
		return true
	}
	room := t.cfg.MaxHeld - (t.held - cap(f.part))
	if need > room {
		// Files forgotten since (removed, replaced, their directory gone)
		// took their fragments with them: count again before refusing.
		t.recount()
		if room = t.cfg.MaxHeld - (t.held - cap(f.part)); need > room {
			return false
		}
	}
	c := min(max(need, 2*cap(f.part), 512), room, t.cfg.MaxLine)
	c = max(c, need)
	part := make([]byte, len(f.part), c)
	copy(part, f.part)
	t.held += c - cap(f.part)
	f.part = append(part, data...)
	return true
}

// recount sets t.held to what the followed files hold. Files are dropped
// from t.files in many places without telling t.held (their fragments go
// with them); hold calls this before it refuses.
func (t *Tailer) recount() {
	t.held = 0
	for _, f := range t.files {
		t.held += cap(f.part)
	}
}

// dropPart frees the unfinished line of f.
func (t *Tailer) dropPart(f *file) {
	t.held -= cap(f.part)
	f.part = nil
}
