package sources

import (
	"context"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agentbridge/agentbridge/internal/testenv"
	"github.com/agentbridge/agentbridge/sources/sourcestest"
)

// heapInUse returns the live heap after a collection.
func heapInUse() uint64 {
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapAlloc
}

// TestTailerHeldBoundAcrossFiles: many journals each ending in a long line
// without end hold at most MaxHeld together (the old cap was per file: 24
// journals with an 8 MiB fragment each held 192 MiB). The fragments that
// do not fit are dropped with a diagnostic; every file is still followed.
// Not parallel: it measures the process's heap.
func TestTailerHeldBoundAcrossFiles(t *testing.T) {
	const (
		files   = 24
		maxLine = 1 << 20
		maxHeld = 4 << 20
	)
	dir := t.TempDir()
	frag := strings.Repeat("x", maxLine-100)
	for i := range files {
		sourcestest.Append(t, filepath.Join(dir, string(rune('a'+i))+".jsonl"), "first\n"+frag)
	}
	base := heapInUse()
	tl, rec := startTailer(t, TailConfig{Roots: []string{dir}, MaxLine: maxLine, MaxHeld: maxHeld})
	rec.waitFor(t, "the held-limit diagnostic", func() bool { return rec.hasDiag(CodeHeldLimit) })
	held := make(chan int, 1)
	tl.Post(func() { held <- tl.held })
	if h := <-held; h > maxHeld {
		t.Errorf("the tailer holds %d bytes of fragments, over MaxHeld %d", h, maxHeld)
	}
	if grew := int64(heapInUse()) - int64(base); grew > 2*maxHeld {
		t.Errorf("the heap grew by %d MiB following %d journals with %d MiB fragments; want under %d MiB", grew>>20, files, maxLine>>20, 2*maxHeld>>20)
	}
	// Every journal is still followed: a line after the fragment's end is
	// delivered whether its fragment was kept or dropped.
	for i := range files {
		sourcestest.Append(t, filepath.Join(dir, string(rune('a'+i))+".jsonl"), "end\nnext\n")
	}
	for i := range files {
		p := filepath.Join(dir, string(rune('a'+i))+".jsonl")
		rec.waitFor(t, "next in "+p, func() bool {
			got := rec.files[p]
			return len(got) > 0 && got[len(got)-1] == "next"
		})
	}
	rec.mu.Lock()
	defer rec.mu.Unlock()
	kept := 0
	for _, lines := range rec.files {
		if len(lines) == 3 && strings.HasPrefix(lines[1], "xxxx") {
			kept++
		}
	}
	if kept == 0 || kept == files {
		t.Errorf("%d of %d fragments were kept whole; want some (they fit MaxHeld) but not all", kept, files)
	}
	for _, d := range rec.diags {
		if strings.Contains(d.Message, dir) {
			t.Errorf("diagnostic %q names a path", d.Message)
		}
	}
}

// sparse makes p a sparse file of size bytes (after what it holds).
func sparse(t testing.TB, p string, size int64) {
	t.Helper()
	f, err := os.OpenFile(p, os.O_WRONLY|os.O_CREATE, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if err := f.Truncate(size); err != nil {
		t.Fatal(err)
	}
}

// TestTailerSparseJournal: a journal made 16 GiB by truncate -s costs no
// reading, at the scan or when it grows: the source hears every other
// journal at once (the old tailer read the 16 GiB of zeros first, for half
// a minute). Both are far over MaxJournal and followed from their end; a
// hole below MaxJournal but longer than a line is skipped unread (the
// zeros are one line too long); what follows the next newline is
// delivered.
// hangBound is how long a step of a hostile test may take before it counts
// as hanging: generous, so that a loaded machine under -race never trips
// it (how fast the step really is, is for the benchmarks).
const hangBound = time.Minute

func TestTailerSparseJournal(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	atScan := filepath.Join(dir, "at-scan.jsonl")
	sourcestest.Append(t, atScan, "before\n")
	sparse(t, atScan, 16<<30)
	other := filepath.Join(dir, "other.jsonl")
	sourcestest.Append(t, other, "one\n")
	start := time.Now()
	_, rec := startTailer(t, TailConfig{Roots: []string{dir}})
	if took := time.Since(start); took > hangBound {
		t.Errorf("the scan took %v with a 16 GiB sparse journal", took)
	}
	rec.waitLines(t, other, "one")

	later := filepath.Join(dir, "later.jsonl")
	sourcestest.Append(t, later, "first\n")
	rec.waitLines(t, later, "first")
	sparse(t, later, 16<<30)
	sourcestest.Append(t, other, "two\n")
	start = time.Now()
	rec.waitLines(t, other, "one", "two")
	if took := time.Since(start); took > hangBound {
		t.Errorf("another journal's line took %v to arrive while a 16 GiB sparse one grew", took)
	}
	for _, p := range []string{atScan, later} {
		sourcestest.Append(t, p, "rest of the zeros line\nafter\n")
	}
	rec.waitLines(t, atScan, "after")
	rec.waitLines(t, later, "first", "after")
	rec.waitFor(t, "journal-too-large diagnostics", func() bool { return rec.hasDiag(CodeJournalTooLarge) })

	// A hole longer than a line, shorter than MaxJournal: skipped unread.
	small := filepath.Join(dir, "small-hole.jsonl")
	sourcestest.Append(t, small, "first\n")
	rec.waitLines(t, small, "first")
	sparse(t, small, 6+(512<<20))
	sourcestest.Append(t, small, "zeros end\nafter\n")
	start = time.Now()
	rec.waitLines(t, small, "first", "after")
	if took := time.Since(start); took > hangBound {
		t.Errorf("a 512 MiB hole took %v", took)
	}
	rec.waitFor(t, "a line-too-long diagnostic for the hole", func() bool { return rec.hasDiag(CodeLineTooLong) })
}

// TestTailerHugeJournalFollowedFromEnd: more unread bytes than MaxJournal
// (at the scan, or written at once later) are not read; the journal is
// followed from its end, with a diagnostic.
func TestTailerHugeJournalFollowedFromEnd(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	lines := strings.Repeat(`{"filler":"`+strings.Repeat("y", 1000)+`"}`+"\n", 3<<10) // 3 MiB of real lines
	huge := filepath.Join(dir, "huge.jsonl")
	sourcestest.Append(t, huge, lines)
	grows := filepath.Join(dir, "grows.jsonl")
	sourcestest.Append(t, grows, "one\n")
	_, rec := startTailer(t, TailConfig{Roots: []string{dir}, MaxJournal: 1 << 20})
	rec.waitLines(t, grows, "one")
	rec.waitFor(t, "the journal-too-large diagnostic", func() bool { return rec.hasDiag(CodeJournalTooLarge) })
	sourcestest.Append(t, huge, "new\n")
	rec.waitLines(t, huge, "new")

	sourcestest.Append(t, grows, lines+"partial") // one write of 3 MiB
	rec.waitFor(t, "a second journal-too-large diagnostic", func() bool { return rec.countDiag(CodeJournalTooLarge) == 2 })
	sourcestest.Append(t, grows, " end\nlater\n")
	rec.waitLines(t, grows, "one", "later")
}

func (r *recorder) countDiag(code string) int {
	n := 0
	for _, d := range r.diags {
		if d.Code == code {
			n++
		}
	}
	return n
}

// TestTailerSlicesLetOthersThrough: a long read (a big append) is done in
// slices; between them the tailer hears other journals, runs posted
// functions and sees cancellation (the old tailer read to EOF first).
func TestTailerSlicesLetOthersThrough(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	big, other := filepath.Join(dir, "big.jsonl"), filepath.Join(dir, "other.jsonl")
	sourcestest.Append(t, big, "start\n")
	sourcestest.Append(t, other, "one\n")
	const total = 8 << 10
	line := strings.Repeat("z", 1023)

	rec := newRecorder()
	var bigLines atomic.Int64
	var otherAt, postedAt atomic.Int64
	otherAt.Store(-1)
	postedAt.Store(-1)
	var tl *Tailer
	var once sync.Once
	rec.onLine = func(path string, l []byte) {
		switch path {
		case big:
			if n := bigLines.Add(1); n == 2 { // the first line of the big append
				once.Do(func() {
					sourcestest.Append(t, other, "two\n")
					tl.Post(func() { postedAt.Store(bigLines.Load()) })
					// Wait (on the Run goroutine, inside this slice) until
					// the watcher has queued the other file's event, so that
					// the next slice boundary must see it however loaded
					// the machine is.
					for deadline := time.Now().Add(waitTimeout); time.Now().Before(deadline); time.Sleep(time.Millisecond) {
						tl.mu.Lock()
						_, queued := tl.in.paths[other]
						tl.mu.Unlock()
						if queued {
							break
						}
					}
				})
			}
		case other:
			if string(l) == "two" {
				otherAt.Store(bigLines.Load())
			}
		}
	}
	tl = NewTailer(TailConfig{Roots: []string{dir}}, rec)
	tl.slice = 64 << 10
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- tl.Run(ctx) }()
	defer func() { cancel(); <-done }()
	rec.waitFor(t, "the first scan", func() bool { return rec.scans >= 1 })
	rec.waitLines(t, other, "one")

	sourcestest.Append(t, big, strings.Repeat(line+"\n", total))
	rec.waitFor(t, "the big append", func() bool { return len(rec.files[big]) == total+1 })
	rec.waitLines(t, other, "one", "two")
	if n := otherAt.Load(); n < 0 || n > total/2 {
		t.Errorf("another journal's line came after %d of the %d lines of a big append, want early", n, total)
	}
	if n := postedAt.Load(); n < 0 || n > total/2 {
		t.Errorf("a posted function ran after %d of the %d lines of a big append, want early", n, total)
	}
}

// TestTailerCancelDuringLongRead: Run returns soon after cancellation
// even in the middle of a long read.
func TestTailerCancelDuringLongRead(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	big := filepath.Join(dir, "big.jsonl")
	sourcestest.Append(t, big, "start\n")
	rec := newRecorder()
	ctx, cancel := context.WithCancel(context.Background())
	var n atomic.Int64
	rec.onLine = func(path string, _ []byte) {
		if n.Add(1) == 2 {
			cancel()
		}
	}
	tl := NewTailer(TailConfig{Roots: []string{dir}}, rec)
	tl.slice = 64 << 10
	done := make(chan error, 1)
	go func() { done <- tl.Run(ctx) }()
	rec.waitFor(t, "the first scan", func() bool { return rec.scans >= 1 })
	const total = 16 << 10
	sourcestest.Append(t, big, strings.Repeat(strings.Repeat("q", 1023)+"\n", total))
	select {
	case <-done:
	case <-time.After(waitTimeout):
		t.Fatal("Run did not return after cancel")
	}
	if got := n.Load(); got >= total {
		t.Errorf("Run delivered all %d lines after it was cancelled at the first", got)
	}
}

// TestTailerChmodBack: a journal that could not be read (mode 0200 while
// it was written) is read as soon as it is readable again, on the mode
// change alone, without waiting for another write.
func TestTailerChmodBack(t *testing.T) {
	if os.Geteuid() == 0 {
		runUnprivileged(t, "TestTailerChmodBack")
		return
	}
	dir := t.TempDir()
	p := filepath.Join(dir, "s.jsonl")
	sourcestest.Append(t, p, "one\n")
	_, rec := startTailer(t, TailConfig{Roots: []string{dir}})
	rec.waitLines(t, p, "one")
	if err := os.Chmod(p, 0o200); err != nil {
		t.Fatal(err)
	}
	if f, err := os.Open(p); err == nil {
		f.Close()
		testenv.Missing(t, "permission bits do not deny here although not root")
	}
	sourcestest.Append(t, p, "two\n")
	rec.waitFor(t, "permission-denied", func() bool { return rec.hasDiag(CodePermission) })
	if err := os.Chmod(p, 0o644); err != nil {
		t.Fatal(err)
	}
	rec.waitLines(t, p, "one", "two")
}

// TestTailerHeldFreedWithFiles: the memory held for the fragments of
// journals that are gone (removed, or their directory) is available again:
// new fragments that fit are kept, not dropped.
func TestTailerHeldFreedWithFiles(t *testing.T) {
	t.Parallel()
	const maxLine, maxHeld = 1 << 20, 2 << 20
	dir := t.TempDir()
	sub := filepath.Join(dir, "sub")
	if err := os.Mkdir(sub, 0o755); err != nil {
		t.Fatal(err)
	}
	frag := strings.Repeat("x", maxLine-100)
	for _, p := range []string{filepath.Join(dir, "a.jsonl"), filepath.Join(sub, "b.jsonl")} {
		sourcestest.Append(t, p, "first\n"+frag)
	}
	_, rec := startTailer(t, TailConfig{Roots: []string{dir}, MaxLine: maxLine, MaxHeld: maxHeld})
	if err := os.Remove(filepath.Join(dir, "a.jsonl")); err != nil {
		t.Fatal(err)
	}
	if err := os.RemoveAll(sub); err != nil {
		t.Fatal(err)
	}
	rec.waitFor(t, "both removed", func() bool { return rec.hasCall("removed a.jsonl") && rec.hasCall("removed b.jsonl") })
	for _, n := range []string{"c", "d"} {
		p := filepath.Join(dir, n+".jsonl")
		sourcestest.Append(t, p, "first\n"+frag)
		rec.waitLines(t, p, "first")
	}
	for _, n := range []string{"c", "d"} {
		sourcestest.Append(t, filepath.Join(dir, n+".jsonl"), "\nnext\n")
	}
	for _, n := range []string{"c", "d"} {
		p := filepath.Join(dir, n+".jsonl")
		rec.waitFor(t, "next in "+n, func() bool {
			got := rec.files[p]
			return len(got) > 0 && got[len(got)-1] == "next"
		})
	}
	rec.mu.Lock()
	defer rec.mu.Unlock()
	for _, n := range []string{"c", "d"} {
		if got := rec.files[filepath.Join(dir, n+".jsonl")]; len(got) != 3 || got[1] != frag {
			t.Errorf("%s: %d lines, want first, the fragment's line whole, next", n, len(got))
		}
	}
	if rec.hasDiag(CodeHeldLimit) {
		t.Errorf("fragments were dropped although the journals holding the others are gone")
	}
}
