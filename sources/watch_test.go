package sources

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"
)

// wholeRecorder is a recorder with the WholeFiles capability: files named
// *.side are whole files.
type wholeRecorder struct {
	*recorder
	whole map[string]string // path → content; absent: gone
	order []string          // "whole <name>" and "line <name>" in delivery order
}

func (r *wholeRecorder) MatchWhole(p string) bool { return strings.HasSuffix(p, ".side") }
func (r *wholeRecorder) WholeFile(p string, data []byte) {
	r.note("", func() {
		r.order = append(r.order, "whole "+filepath.Base(p))
		if data == nil {
			delete(r.whole, p)
			return
		}
		r.whole[p] = string(data)
	})
}
func (r *wholeRecorder) Line(p string, line []byte) {
	r.note("", func() { r.order = append(r.order, "line "+filepath.Base(p)) })
	r.recorder.Line(p, line)
}
func (r *wholeRecorder) Rescan() {
	r.recorder.Rescan()
	r.note("", func() { clear(r.whole); r.order = nil })
}

func startWhole(t *testing.T, cfg TailConfig) *wholeRecorder {
	t.Helper()
	rec := &wholeRecorder{recorder: newRecorder(), whole: map[string]string{}}
	tl := NewTailer(cfg, rec)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- tl.Run(ctx) }()
	t.Cleanup(func() { cancel(); <-done })
	rec.waitFor(t, "the first scan", func() bool { return rec.scans >= 1 })
	return rec
}

// TestWholeFiles: a Handler with WholeFiles gets its whole files at the
// scan (those of an earlier root before the journals of a later one; old
// ones only when Recent wants them) and after each change, and nil when
// one goes away or turns into something that cannot be read; FIFOs, links
// to devices and files over the limit are skipped with a typed diagnostic,
// and never block.
func TestWholeFiles(t *testing.T) {
	t.Parallel()
	side, journals := filepath.Join(t.TempDir(), "side"), filepath.Join(t.TempDir(), "j")
	for _, d := range []string{side, journals} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	a, old, fifo := filepath.Join(side, "a.side"), filepath.Join(side, "old.side"), filepath.Join(side, "f.side")
	writeFile(t, a, "one")
	writeFile(t, old, "old")
	long := time.Now().Add(-3 * time.Hour)
	if err := os.Chtimes(old, long, long); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Fatal(err)
	}
	writeFile(t, filepath.Join(journals, "s.jsonl"), "{}\n")
	rec := startWhole(t, TailConfig{Roots: []string{side, journals}, Recent: func(p string, _ os.FileInfo) bool { return false }})

	rec.waitFor(t, "the scan's whole files", func() bool {
		return rec.whole[a] == "one" && rec.hasDiag(CodeSideNotRegular)
	})
	rec.mu.Lock()
	if _, ok := rec.whole[old]; ok {
		t.Error("an old whole file that Recent does not want was read at the scan")
	}
	if i, j := slices.Index(rec.order, "whole a.side"), slices.Index(rec.order, "line s.jsonl"); i < 0 || j < 0 || i > j {
		t.Errorf("delivery order %q: the first root's whole files come first", rec.order)
	}
	rec.mu.Unlock()

	writeFile(t, a, "two")
	rec.waitFor(t, "a change", func() bool { return rec.whole[a] == "two" })
	// Replaced by a link to /dev/zero, then by a sparse 4 GiB file: gone,
	// typed diagnostics, nothing read.
	if err := os.Remove(a); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("/dev/zero", a); err != nil {
		t.Fatal(err)
	}
	rec.waitFor(t, "a link to /dev/zero: gone", func() bool { _, ok := rec.whole[a]; return !ok })
	big := filepath.Join(side, "big.side")
	f, err := os.Create(big)
	if err != nil {
		t.Fatal(err)
	}
	if err := f.Truncate(4 << 30); err != nil {
		t.Fatal(err)
	}
	f.Close()
	rec.waitFor(t, "a sparse file: skipped", func() bool { return rec.hasDiag(CodeSideTooLarge) })
	// A later regular file is still read, and a removal is told.
	b := filepath.Join(side, "b.side")
	writeFile(t, b, "bee")
	rec.waitFor(t, "a file after the attacks", func() bool { return rec.whole[b] == "bee" })
	if err := os.Remove(b); err != nil {
		t.Fatal(err)
	}
	rec.waitFor(t, "a removal", func() bool { _, ok := rec.whole[b]; return !ok })
	rec.mu.Lock()
	defer rec.mu.Unlock()
	for _, d := range rec.diags {
		if strings.Contains(d.Message, side) {
			t.Errorf("diagnostic %q names a path", d.Message)
		}
	}
	if _, ok := rec.files[a]; ok {
		t.Error("a whole file was followed as a journal")
	}
}

func writeFile(t *testing.T, path, data string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(data), 0o644); err != nil {
		t.Fatal(err)
	}
}

// bigWholeRecorder lets its whole files be up to 1 MiB (WholeLimits).
type bigWholeRecorder struct{ *wholeRecorder }

func (r bigWholeRecorder) WholeLimit(string) int64 { return 1 << 20 }

// TestWholeLimits: a Handler that names a larger bound for its whole
// files gets files over LimitSidecar, and still not one over its bound.
func TestWholeLimits(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	rec := &wholeRecorder{recorder: newRecorder(), whole: map[string]string{}}
	tl := NewTailer(TailConfig{Roots: []string{dir}}, bigWholeRecorder{rec})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- tl.Run(ctx) }()
	t.Cleanup(func() { cancel(); <-done })
	rec.waitFor(t, "the first scan", func() bool { return rec.scans >= 1 })

	mid, huge := filepath.Join(dir, "mid.side"), filepath.Join(dir, "huge.side")
	writeFile(t, mid, strings.Repeat("x", 200<<10)) // over LimitSidecar, under the bound
	rec.waitFor(t, "the 200 KiB whole file", func() bool { return len(rec.whole[mid]) == 200<<10 })
	writeFile(t, huge, strings.Repeat("y", 2<<20))
	writeFile(t, mid, "small now")
	rec.waitFor(t, "the rewrite", func() bool { return rec.whole[mid] == "small now" })
	if _, ok := rec.whole[huge]; ok {
		t.Error("a whole file over its bound was delivered")
	}
}
