package sources

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/agentbridge/agentbridge/sources/sourcestest"
)

// stepTailer drives Tailer.read by hand, one change at a time, as Run does
// when a file event arrives: deterministic, so that a test can put the
// tailer exactly where a rewrite hurts (between the offsets it read).
type stepTailer struct {
	tl  *Tailer
	rec *recorder
	p   string
}

func newStepTailer(t *testing.T, cfg TailConfig) *stepTailer {
	t.Helper()
	dir := t.TempDir()
	cfg.Roots = []string{dir}
	rec := newRecorder()
	p := filepath.Join(dir, "s.jsonl")
	tl, _ := byHand(cfg, rec, p)
	return &stepTailer{tl: tl, rec: rec, p: p}
}

// byHand returns a Tailer that is not Run, set up to read the file at p
// when told (tl.read(p, f)), as Run would on a file event.
func byHand(cfg TailConfig, h Handler, p string) (*Tailer, *file) {
	tl := NewTailer(cfg, h)
	tl.buf = make([]byte, readChunk)
	tl.files = map[string]*file{}
	tl.more = map[string]struct{}{}
	f := &file{}
	tl.files[p] = f
	return tl, f
}

// change is one file event: the tailer reads what is new.
func (s *stepTailer) change() {
	for {
		if f := s.tl.files[s.p]; f != nil {
			s.tl.read(s.p, f)
		}
		if len(s.tl.more) == 0 {
			return
		}
		clear(s.tl.more)
	}
}

// lines is what a Handler holds of the file: its lines since the last
// Truncated.
func (s *stepTailer) lines() []string {
	s.rec.mu.Lock()
	defer s.rec.mu.Unlock()
	return slices.Clone(s.rec.files[s.p])
}

func (s *stepTailer) truncations() int {
	s.rec.mu.Lock()
	defer s.rec.mu.Unlock()
	n := 0
	for _, c := range s.rec.calls {
		if strings.HasPrefix(c, "truncated ") {
			n++
		}
	}
	return n
}

// rewrite writes data over the file in place: the same inode, truncated
// to the length of data (as a writer that opens it "r+", truncates and
// writes back does).
func rewrite(t *testing.T, p, data string) {
	t.Helper()
	f, err := os.OpenFile(p, os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if err := f.Truncate(int64(len(data))); err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteAt([]byte(data), 0); err != nil {
		t.Fatal(err)
	}
}

// records returns n JSONL records of about 300 bytes (agent journal
// lines), numbered from first.
func records(first, n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = fmt.Sprintf(`{"type":"assistant","uuid":"u%04d","text":"%s"}`, first+i, strings.Repeat("x", 250))
	}
	return out
}

func joinLines(ls ...string) string { return strings.Join(ls, "\n") + "\n" }

func TestTailerRewrittenInPlace(t *testing.T) {
	t.Parallel()
	rs := records(0, 40) // 12 KiB: more than the hashed tail
	tests := []struct {
		name string
		// after the tailer read before, the file becomes after (same inode)
		before, after []string
	}{
		{"same size, other bytes", rs[:20], append(records(100, 19), rs[19])},
		{"larger", rs[:20], records(200, 30)},
		{"a record removed and the rest written back, grown since (Claude Code)", rs[:20],
			append(slices.Concat(rs[:5], rs[6:20]), records(300, 5)...)},
		{"records reordered, same size", rs[:20], slices.Concat(rs[:10], rs[15:20], rs[10:15])},
		{"the last records reordered, then appended to", rs[:20],
			append(slices.Concat(rs[:18], []string{rs[19], rs[18]}), rs[20:25]...)},
		{"a short file rewritten (less than the hashed tail)", []string{"a", "b"}, []string{"c", "d", "e"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			s := newStepTailer(t, TailConfig{})
			sourcestest.Append(t, s.p, joinLines(tt.before...))
			s.change()
			if got := s.lines(); !slices.Equal(got, tt.before) {
				t.Fatalf("first read: %d lines, want %d", len(got), len(tt.before))
			}
			rewrite(t, s.p, joinLines(tt.after...))
			s.change()
			if got := s.lines(); !slices.Equal(got, tt.after) {
				t.Errorf("after the rewrite the handler holds %d lines (%.40q…), want the file's %d", len(got), got, len(tt.after))
			}
			if n := s.truncations(); n != 1 {
				t.Errorf("Truncated %d times, want 1", n)
			}
			if n := s.tl.rewrites.Load(); n != 1 {
				t.Errorf("rewrites counted %d, want 1", n)
			}
			// Followed on as before: an append after the re-read is read once.
			sourcestest.Append(t, s.p, "tail\n")
			s.change()
			if got := s.lines(); !slices.Equal(got, append(slices.Clone(tt.after), "tail")) {
				t.Errorf("append after the re-read: %d lines", len(got))
			}
			if n := s.truncations(); n != 1 {
				t.Errorf("Truncated %d times after the append, want 1", n)
			}
		})
	}
}

// An append-only journal is never read again: each change reads the new
// bytes and the hashed tail before them (one read(2), no more), and no
// change counts as a rewrite, partial lines included.
func TestTailerAppendOnlyIsNotARewrite(t *testing.T) {
	t.Parallel()
	s := newStepTailer(t, TailConfig{})
	var want []string
	appended := 0
	rs := records(0, 300)
	for i, r := range rs {
		// Every third record comes in two writes, split mid-line, each
		// a change of its own.
		if i%3 == 0 {
			half := len(r) / 2
			sourcestest.Append(t, s.p, r[:half])
			s.change()
			sourcestest.Append(t, s.p, r[half:]+"\n")
		} else {
			sourcestest.Append(t, s.p, r+"\n")
		}
		s.change()
		appended += len(r) + 1
		want = append(want, r)
	}
	// A change that brings nothing new (a chmod, a coalesced event).
	s.change()
	if got := s.lines(); !slices.Equal(got, want) {
		t.Fatalf("handler holds %d lines, want %d, each once", len(got), len(want))
	}
	if n := s.truncations(); n != 0 {
		t.Errorf("Truncated %d times for an append-only file", n)
	}
	if n := s.tl.rewrites.Load(); n != 0 {
		t.Errorf("rewrites counted %d for an append-only file", n)
	}
	changes := uint64(len(rs) + len(rs)/3 + 1)
	if opens := s.tl.Opens(); opens != changes {
		t.Errorf("opened %d times for %d changes", opens, changes)
	}
	// What was read: the appended bytes once, plus at most the hashed
	// tail per change; a re-read of the file would be far more.
	if in, most := s.tl.bytesIn.Load(), uint64(appended)+changes*tailSum; in > most {
		t.Errorf("read %d bytes for %d appended in %d changes (at most %d)", in, appended, changes, most)
	}
}

// An unfinished last line is held across changes and delivered once,
// whole; a writer that rewrites the unfinished part in place (the bytes
// before the offset change) makes the tailer read the file again.
func TestTailerRewriteOfHeldPart(t *testing.T) {
	t.Parallel()
	s := newStepTailer(t, TailConfig{})
	sourcestest.Append(t, s.p, "one\n"+`{"half":`)
	s.change()
	sourcestest.Append(t, s.p, `"way"}`)
	s.change()
	if got := s.lines(); !slices.Equal(got, []string{"one"}) {
		t.Fatalf("held: %q", got)
	}
	sourcestest.Append(t, s.p, "\n")
	s.change()
	if got := s.lines(); !slices.Equal(got, []string{"one", `{"half":"way"}`}) || s.truncations() != 0 {
		t.Fatalf("completed: %q, truncated %d", got, s.truncations())
	}
	sourcestest.Append(t, s.p, `{"other":`)
	s.change()
	rewrite(t, s.p, "one\n"+`{"half":"way"}`+"\n"+`{"again":1}`+"\n")
	s.change()
	if got := s.lines(); !slices.Equal(got, []string{"one", `{"half":"way"}`, `{"again":1}`}) || s.truncations() != 1 {
		t.Errorf("unfinished part rewritten: %q, truncated %d", got, s.truncations())
	}
}

// A journal followed from its end (too large) has no hashed tail yet: the
// next change hashes it and is no rewrite.
func TestTailerFromEndThenAppend(t *testing.T) {
	t.Parallel()
	s := newStepTailer(t, TailConfig{MaxJournal: 1 << 10})
	sourcestest.Append(t, s.p, joinLines(records(0, 10)...))
	s.change()
	if got := s.lines(); len(got) != 0 {
		t.Fatalf("a too-large journal delivered %d lines", len(got))
	}
	sourcestest.Append(t, s.p, "next\n")
	s.change()
	sourcestest.Append(t, s.p, "last\n")
	s.change()
	if got := s.lines(); !slices.Equal(got, []string{"next", "last"}) || s.truncations() != 0 {
		t.Errorf("after from-end: %q, truncated %d", got, s.truncations())
	}
}

// With a running tailer (inotify, not driven by hand): a same-size
// rewrite is seen and read again.
func TestTailerRunSeesRewrite(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	p := filepath.Join(dir, "s.jsonl")
	sourcestest.Append(t, p, "aaaa\nbbbb\n")
	_, rec := startTailer(t, TailConfig{Roots: []string{dir}})
	rec.waitLines(t, p, "aaaa", "bbbb")
	rewrite(t, p, "bbbb\naaaa\n")
	rec.waitLines(t, p, "bbbb", "aaaa")
	rec.waitFor(t, "truncated", func() bool { return rec.hasCall("truncated s.jsonl") })
}
