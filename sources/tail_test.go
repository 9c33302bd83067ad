package sources

import (
	"bytes"
	"context"
	"fmt"
	"io/fs"
	"math/rand/v2"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/agentbridge/agentbridge"
	"github.com/agentbridge/agentbridge/internal/testenv"
	"github.com/agentbridge/agentbridge/sources/sourcestest"
)

// waitTimeout bounds every wait for the tailer: generous, so that a loaded
// 2-core machine does not flake; a passing test never waits this long.
const waitTimeout = time.Minute // a hang bound: waits return as soon as they can

// recorder is a Handler that keeps what a source would: per file the lines
// since its last truncation, plus every call in order.
type recorder struct {
	mu      sync.Mutex
	changed chan struct{}
	files   map[string][]string
	calls   []string
	diags   []agentbridge.Diagnostic
	scans   int // ScanDone calls
	rescans int
	onLine  func(path string, line []byte)
}

func newRecorder() *recorder {
	return &recorder{changed: make(chan struct{}, 1), files: map[string][]string{}}
}

func (r *recorder) note(call string, f func()) {
	r.mu.Lock()
	if call != "" {
		r.calls = append(r.calls, call)
	}
	if f != nil {
		f()
	}
	r.mu.Unlock()
	select {
	case r.changed <- struct{}{}:
	default:
	}
}

func (r *recorder) Line(path string, line []byte) {
	if r.onLine != nil {
		r.onLine(path, line)
	}
	s := string(line)
	r.note("", func() { r.files[path] = append(r.files[path], s) })
}
func (r *recorder) Truncated(path string) {
	r.note("truncated "+filepath.Base(path), func() { r.files[path] = nil })
}
func (r *recorder) Removed(path string) {
	r.note("removed "+filepath.Base(path), func() { delete(r.files, path) })
}
func (r *recorder) Rescan() {
	r.note("rescan", func() { r.rescans++; r.files = map[string][]string{} })
}
func (r *recorder) ScanDone() { r.note("scandone", func() { r.scans++ }) }
func (r *recorder) Idle()     {}
func (r *recorder) Diagnostic(d agentbridge.Diagnostic) {
	r.note("diagnostic "+d.Code, func() { r.diags = append(r.diags, d) })
}

// waitFor waits until cond holds on the recorder (under its lock).
func (r *recorder) waitFor(t testing.TB, what string, cond func() bool) {
	t.Helper()
	deadline := time.After(waitTimeout)
	for {
		r.mu.Lock()
		ok := cond()
		r.mu.Unlock()
		if ok {
			return
		}
		select {
		case <-r.changed:
		case <-deadline:
			r.mu.Lock()
			defer r.mu.Unlock()
			t.Fatalf("timed out waiting for %s; calls %q, files %q", what, r.calls, r.files)
		}
	}
}

func (r *recorder) waitLines(t testing.TB, path string, want ...string) {
	t.Helper()
	r.waitFor(t, fmt.Sprintf("lines %q of %s", want, filepath.Base(path)), func() bool {
		got, ok := r.files[path]
		return ok && slices.Equal(got, want)
	})
}

func (r *recorder) hasCall(c string) bool { return slices.Contains(r.calls, c) }

func (r *recorder) hasDiag(code string) bool {
	return slices.ContainsFunc(r.diags, func(d agentbridge.Diagnostic) bool { return d.Code == code })
}

// startTailer runs a Tailer over cfg until the test ends and waits for its
// first ScanDone.
func startTailer(t testing.TB, cfg TailConfig) (*Tailer, *recorder) {
	t.Helper()
	rec := newRecorder()
	tl := NewTailer(cfg, rec)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- tl.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("Run = %v", err)
			}
		case <-time.After(waitTimeout):
			t.Errorf("Run did not return after cancel")
		}
	})
	rec.waitFor(t, "the first scan", func() bool { return rec.scans >= 1 })
	return tl, rec
}

func TestTailerFollowsFiles(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		// run acts on dir (the root) and asserts; p is dir/s.jsonl, which
		// holds "one\ntwo\n" and has been read when run starts.
		run func(t *testing.T, tl *Tailer, rec *recorder, dir, p string)
	}{
		{"append in pieces, a line split across writes is delivered once, whole", func(t *testing.T, tl *Tailer, rec *recorder, dir, p string) {
			opens := tl.Opens()
			sourcestest.Append(t, p, `{"half":`)
			waitOpens(t, tl, opens+1) // the fragment has been read and kept
			sourcestest.Append(t, p, `"way"}`)
			waitOpens(t, tl, opens+2)
			sourcestest.Append(t, p, "\nthree\n")
			rec.waitLines(t, p, "one", "two", `{"half":"way"}`, "three")
		}},
		{"truncate re-reads from the start", func(t *testing.T, tl *Tailer, rec *recorder, dir, p string) {
			if err := os.Truncate(p, 0); err != nil {
				t.Fatal(err)
			}
			sourcestest.Append(t, p, "fresh\n")
			rec.waitLines(t, p, "fresh")
			rec.waitFor(t, "truncated", func() bool { return rec.hasCall("truncated s.jsonl") })
		}},
		{"replace by rename re-reads from the start", func(t *testing.T, tl *Tailer, rec *recorder, dir, p string) {
			tmp := filepath.Join(dir, "s.jsonl.tmp")
			if err := os.WriteFile(tmp, []byte("new one\nnew two\nnew three\n"), 0o644); err != nil {
				t.Fatal(err)
			}
			if err := os.Rename(tmp, p); err != nil {
				t.Fatal(err)
			}
			rec.waitLines(t, p, "new one", "new two", "new three")
			rec.waitFor(t, "truncated", func() bool { return rec.hasCall("truncated s.jsonl") })
		}},
		{"delete ends the file", func(t *testing.T, tl *Tailer, rec *recorder, dir, p string) {
			if err := os.Remove(p); err != nil {
				t.Fatal(err)
			}
			rec.waitFor(t, "removed", func() bool { _, ok := rec.files[p]; return !ok && rec.hasCall("removed s.jsonl") })
		}},
		{"rename away and back", func(t *testing.T, tl *Tailer, rec *recorder, dir, p string) {
			q := filepath.Join(dir, "t.jsonl")
			if err := os.Rename(p, q); err != nil {
				t.Fatal(err)
			}
			rec.waitLines(t, q, "one", "two")
			rec.waitFor(t, "removed", func() bool { _, ok := rec.files[p]; return !ok })
			sourcestest.Append(t, q, "more\n")
			rec.waitLines(t, q, "one", "two", "more")
		}},
		{"nested directories created quickly", func(t *testing.T, tl *Tailer, rec *recorder, dir, p string) {
			deep := filepath.Join(dir, "a", "b", "c")
			if err := os.MkdirAll(deep, 0o755); err != nil {
				t.Fatal(err)
			}
			q := filepath.Join(deep, "n.jsonl")
			sourcestest.Append(t, q, "nested\n")
			rec.waitLines(t, q, "nested")
			sourcestest.Append(t, q, "later\n")
			rec.waitLines(t, q, "nested", "later")
		}},
		{"a directory removed ends its files", func(t *testing.T, tl *Tailer, rec *recorder, dir, p string) {
			sub := filepath.Join(dir, "sub")
			if err := os.Mkdir(sub, 0o755); err != nil {
				t.Fatal(err)
			}
			q := filepath.Join(sub, "x.jsonl")
			sourcestest.Append(t, q, "x\n")
			rec.waitLines(t, q, "x")
			if err := os.Rename(sub, filepath.Join(t.TempDir(), "away")); err != nil {
				t.Fatal(err)
			}
			rec.waitFor(t, "removed x", func() bool { _, ok := rec.files[q]; return !ok })
			rec.waitLines(t, p, "one", "two") // the rest is still followed
		}},
		{"a 10 MiB line is skipped with a diagnostic, the file still followed", func(t *testing.T, tl *Tailer, rec *recorder, dir, p string) {
			big := bytes.Repeat([]byte("x"), 10<<20)
			sourcestest.Append(t, p, string(big)+"\nafter\n")
			rec.waitLines(t, p, "one", "two", "after")
			rec.waitFor(t, "line-too-long", func() bool { return rec.hasDiag(CodeLineTooLong) })
		}},
		{"a 10 MiB line written in pieces is skipped too", func(t *testing.T, tl *Tailer, rec *recorder, dir, p string) {
			chunk := strings.Repeat("y", 1<<20)
			for range 10 {
				sourcestest.Append(t, p, chunk)
			}
			sourcestest.Append(t, p, "\nafter\n")
			rec.waitLines(t, p, "one", "two", "after")
			rec.waitFor(t, "line-too-long", func() bool { return rec.hasDiag(CodeLineTooLong) })
		}},
		{"binary junk is skipped with a diagnostic", func(t *testing.T, tl *Tailer, rec *recorder, dir, p string) {
			junk := make([]byte, 4096)
			rng := rand.New(rand.NewPCG(1, 2))
			for i := range junk {
				junk[i] = byte(rng.UintN(256))
			}
			junk = bytes.ReplaceAll(junk, []byte("\n"), nil)
			junk[0] = 0xff // certainly not UTF-8
			sourcestest.Append(t, p, string(junk)+"\nok\n")
			rec.waitLines(t, p, "one", "two", "ok")
			rec.waitFor(t, "invalid-utf8", func() bool { return rec.hasDiag(CodeInvalidUTF8) })
		}},
		{"a new file, and files the filter does not match", func(t *testing.T, tl *Tailer, rec *recorder, dir, p string) {
			sourcestest.Append(t, filepath.Join(dir, "notes.txt"), "ignored\n")
			q := filepath.Join(dir, "new.jsonl")
			sourcestest.Append(t, q, "hello\n")
			rec.waitLines(t, q, "hello")
			if _, ok := rec.files[filepath.Join(dir, "notes.txt")]; ok {
				t.Errorf("notes.txt was followed")
			}
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			if strings.Contains(tt.name, "10 MiB") {
				dir = memDir(t)
			}
			p := filepath.Join(dir, "s.jsonl")
			sourcestest.Append(t, p, "one\ntwo\n")
			tl, rec := startTailer(t, TailConfig{Roots: []string{dir}})
			rec.waitLines(t, p, "one", "two")
			tt.run(t, tl, rec, dir, p)
			rec.mu.Lock()
			defer rec.mu.Unlock()
			for _, d := range rec.diags {
				if strings.Contains(d.Message, dir) {
					t.Errorf("diagnostic %q carries a path", d.Message)
				}
			}
		})
	}
}

// memDir is a temporary directory in memory (tmpfs /dev/shm) when there is
// one, else t.TempDir(): writing 10 MiB lines to a slow disk on a loaded
// machine takes seconds. inotify works the same on both.
func memDir(t *testing.T) string {
	t.Helper()
	dir, err := os.MkdirTemp("/dev/shm", "agentbridge-test-")
	if err != nil {
		return t.TempDir()
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	return dir
}

func waitOpens(t *testing.T, tl *Tailer, n uint64) {
	t.Helper()
	deadline := time.Now().Add(waitTimeout)
	for tl.Opens() < n {
		if time.Now().After(deadline) {
			t.Fatalf("the tailer did not read the file (opens %d, want %d)", tl.Opens(), n)
		}
		time.Sleep(time.Millisecond)
	}
}

func TestTailerOldFilesAreOnlyStatted(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	old := time.Now().Add(-3 * time.Hour)
	for i := range 50 {
		p := filepath.Join(dir, fmt.Sprintf("old%02d.jsonl", i))
		sourcestest.Append(t, p, "past\n")
		if err := os.Chtimes(p, old, old); err != nil {
			t.Fatal(err)
		}
	}
	recent := filepath.Join(dir, "recent.jsonl")
	sourcestest.Append(t, recent, "now\n")
	keep := filepath.Join(dir, "old49.jsonl")
	tl, rec := startTailer(t, TailConfig{Roots: []string{dir}, Recent: func(p string, _ os.FileInfo) bool { return p == keep }})
	rec.waitLines(t, recent, "now")
	rec.waitLines(t, keep, "past")
	if got := tl.Opens(); got != 2 {
		t.Errorf("opened %d files at the scan, want 2 (the recent one and the one Recent kept)", got)
	}
	p := filepath.Join(dir, "old07.jsonl")
	sourcestest.Append(t, p, "again\n")
	rec.waitLines(t, p, "past", "again") // written again: read from the start
}

func TestTailerRootAppearsLaterAndVanishes(t *testing.T) {
	t.Parallel()
	base := t.TempDir()
	root := filepath.Join(base, "home", "sessions")
	_, rec := startTailer(t, TailConfig{Roots: []string{root}})
	if err := os.MkdirAll(root, 0o755); err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(root, "s.jsonl")
	// The root may be set up after the file is written or before: either
	// way the file is read, by the walk or by its event.
	sourcestest.Append(t, p, "first\n")
	rec.waitLines(t, p, "first")

	if err := os.RemoveAll(filepath.Join(base, "home")); err != nil {
		t.Fatal(err)
	}
	rec.waitFor(t, "a rebuild after the root vanished", func() bool { return rec.scans >= 2 && len(rec.files) == 0 })
	if err := os.MkdirAll(root, 0o755); err != nil {
		t.Fatal(err)
	}
	sourcestest.Append(t, p, "second\n")
	rec.waitLines(t, p, "second")
}

func TestTailerOverflowRebuilds(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	p := filepath.Join(dir, "s.jsonl")
	sourcestest.Append(t, p, "one\n")
	tl, rec := startTailer(t, TailConfig{Roots: []string{dir}})
	rec.waitLines(t, p, "one")
	// Lose an event the way inotify does on overflow: the kernel queue
	// drops it and fsnotify reports ErrEventOverflow.
	tl.mu.Lock()
	tl.in.lost = true
	tl.mu.Unlock()
	tl.signal()
	rec.waitFor(t, "a rebuild", func() bool { return rec.rescans >= 2 && rec.scans >= 2 && rec.hasDiag(CodeEventsLost) })
	rec.waitLines(t, p, "one")
	sourcestest.Append(t, p, "two\n")
	rec.waitLines(t, p, "one", "two")
}

func TestTailerSetRootsReleasesAndRescans(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	p := filepath.Join(dir, "s.jsonl")
	sourcestest.Append(t, p, "one\n")
	tl, rec := startTailer(t, TailConfig{Roots: []string{dir}})
	rec.waitLines(t, p, "one")
	tl.Post(func() { tl.SetRoots(nil) })
	rec.waitFor(t, "an empty rescan", func() bool { return rec.scans >= 2 && len(rec.files) == 0 })
	tl.Post(func() {
		if tl.w != nil {
			t.Errorf("a watcher is still open with no roots")
		}
	})
	sourcestest.Append(t, p, "two\n")
	tl.Post(func() { tl.SetRoots([]string{dir}) })
	rec.waitLines(t, p, "one", "two")
}

// TestTailerIdleMakesNoWakeups is the witness that nothing polls: once
// the scan is done and nothing changes, the tailer neither wakes nor reads.
func TestTailerIdleMakesNoWakeups(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	for i := range 20 {
		sub := filepath.Join(dir, fmt.Sprintf("d%d", i))
		if err := os.Mkdir(sub, 0o755); err != nil {
			t.Fatal(err)
		}
		sourcestest.Append(t, filepath.Join(sub, "s.jsonl"), "line\n")
	}
	tl, rec := startTailer(t, TailConfig{Roots: []string{dir}})
	rec.waitFor(t, "every file", func() bool { return len(rec.files) == 20 })
	wakes, opens := tl.Wakes(), tl.Opens()
	// Absence can only be shown over some time; half a second is many
	// periods of any plausible poll or debounce timer.
	time.Sleep(500 * time.Millisecond)
	if got := tl.Wakes(); got != wakes {
		t.Errorf("idle tailer woke %d times", got-wakes)
	}
	if got := tl.Opens(); got != opens {
		t.Errorf("idle tailer opened %d files", got-opens)
	}
	// And it is not asleep for good: a write still wakes it.
	sourcestest.Append(t, filepath.Join(dir, "d3", "s.jsonl"), "more\n")
	rec.waitLines(t, filepath.Join(dir, "d3", "s.jsonl"), "line", "more")
	if got := tl.Wakes(); got == wakes {
		t.Errorf("a write did not wake the tailer")
	}
}

// countHandler counts lines and ignores the rest.
type countHandler struct{ lines, bytes int }

func (c *countHandler) Line(_ string, l []byte)             { c.lines++; c.bytes += len(l) }
func (c *countHandler) Truncated(string)                    {}
func (c *countHandler) Removed(string)                      {}
func (c *countHandler) Rescan()                             {}
func (c *countHandler) ScanDone()                           {}
func (c *countHandler) Idle()                               {}
func (c *countHandler) Diagnostic(d agentbridge.Diagnostic) {}

func TestTailerDeliversLinesWithoutCopying(t *testing.T) {
	data := []byte(strings.Repeat("abcdefgh\n", 1000))
	h := &countHandler{}
	tl := NewTailer(TailConfig{}, h)
	f := &file{}
	allocs := testing.AllocsPerRun(10, func() { tl.split("p", f, data) })
	if allocs > 0 {
		t.Errorf("splitting 1000 lines allocated %.1f times, want 0", allocs)
	}
	if h.lines != 11*1000 {
		t.Errorf("delivered %d lines, want %d", h.lines, 11*1000)
	}
}

// TestTailerPermissionDenied needs permission bits that deny. As root they
// don't (CAP_DAC_OVERRIDE), so the test binary runs itself again as the
// unprivileged user "nobody" and checks the outcome there.
func TestTailerPermissionDenied(t *testing.T) {
	if os.Geteuid() == 0 {
		runUnprivileged(t, "TestTailerPermissionDenied")
		return
	}
	dir := t.TempDir()
	open := filepath.Join(dir, "open")
	locked := filepath.Join(dir, "locked")
	for _, d := range []string{open, locked} {
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	sourcestest.Append(t, filepath.Join(locked, "hidden.jsonl"), "secret\n")
	if err := os.Chmod(locked, 0); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.Chmod(locked, 0o755) })
	if _, err := os.ReadDir(locked); err == nil {
		testenv.Missing(t, "permission bits do not deny here although not root")
	}
	p := filepath.Join(open, "s.jsonl")
	sourcestest.Append(t, p, "visible\n")
	_, rec := startTailer(t, TailConfig{Roots: []string{dir}})
	rec.waitLines(t, p, "visible")
	rec.waitFor(t, "permission-denied", func() bool { return rec.hasDiag(CodePermission) })
	sourcestest.Append(t, p, "still followed\n")
	rec.waitLines(t, p, "visible", "still followed")
	rec.mu.Lock()
	defer rec.mu.Unlock()
	for _, d := range rec.diags {
		if strings.Contains(d.Message, dir) || strings.Contains(d.Message, "locked") {
			t.Errorf("diagnostic %q carries a path", d.Message)
		}
	}
}

// runUnprivileged runs one test of this binary as the user nobody, from a
// copy of the binary that nobody may execute, and fails when it fails. It
// skips, saying why, only when no unprivileged run is possible.
func runUnprivileged(t *testing.T, name string) {
	t.Helper()
	u, err := user.Lookup("nobody")
	if err != nil {
		testenv.Missing(t, "running as root, where permission bits do not deny, and there is no user nobody to run as: %v", err)
	}
	uid, _ := strconv.Atoi(u.Uid)
	gid, _ := strconv.Atoi(u.Gid)
	bin, err := os.Executable()
	if err != nil {
		testenv.Missing(t, "running as root, where permission bits do not deny, and the test binary is unknown: %v", err)
	}
	dir, err := os.MkdirTemp("", "agentbridge-unpriv-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	copyBin := filepath.Join(dir, "sources.test")
	data, err := os.ReadFile(bin)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(copyBin, data, 0o755); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(copyBin, "-test.run=^"+name+"$", "-test.v", "-test.count=1")
	cmd.Dir = dir
	cmd.Env = []string{"PATH=/usr/bin:/bin", "TMPDIR=" + os.TempDir(), "HOME=/"}
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)}}
	out, err := cmd.CombinedOutput()
	if err != nil {
		if strings.Contains(string(out), "--- FAIL") {
			t.Fatalf("unprivileged run failed:\n%s", out)
		}
		testenv.Missing(t, "running as root, where permission bits do not deny, and the unprivileged re-run could not start: %v\n%s", err, out)
	}
	if !strings.Contains(string(out), "--- PASS: "+name) {
		t.Fatalf("unprivileged run did not pass:\n%s", out)
	}
	t.Logf("passed as user nobody")
}

// TestTailerWatchLimitNamesTheSysctl: inotify's limits surface as errnos
// from inotify_add_watch / inotify_init; the diagnostic names the sysctl to
// raise and carries no path.
func TestTailerWatchLimitNamesTheSysctl(t *testing.T) {
	t.Parallel()
	tests := []struct {
		err      error
		code     string
		mentions string
	}{
		{&os.PathError{Op: "inotify_add_watch", Path: "/home/u/.claude/projects/x", Err: syscall.ENOSPC}, CodeWatchLimit, "fs.inotify.max_user_watches"},
		{fmt.Errorf("fsnotify: %w", syscall.EMFILE), CodeInstanceLimit, "fs.inotify.max_user_instances"},
		{&os.PathError{Op: "inotify_add_watch", Path: "/home/u/x", Err: syscall.EACCES}, CodePermission, "permission denied"},
		{&os.PathError{Op: "inotify_add_watch", Path: "/home/u/x", Err: syscall.EIO}, CodeWatchError, "input/output error"},
	}
	for _, tt := range tests {
		rec := newRecorder()
		tl := NewTailer(TailConfig{}, rec)
		tl.said = map[string]bool{}
		tl.watchErr(tt.err)
		tl.watchErr(tt.err) // once per scan, not once per directory
		if len(rec.diags) != 1 {
			t.Errorf("watchErr(%v) gave %d diagnostics, want 1", tt.err, len(rec.diags))
			continue
		}
		d := rec.diags[0]
		if d.Code != tt.code || !strings.Contains(d.Message, tt.mentions) || strings.Contains(d.Message, "/home") {
			t.Errorf("watchErr(%v) = %+v, want code %s mentioning %q and no path", tt.err, d, tt.code, tt.mentions)
		}
	}
}

// WatchDiagnostic names the limit to raise for the inotify errors a
// source can meet, and never a path.
func TestWatchDiagnostic(t *testing.T) {
	for _, tc := range []struct {
		err  error
		code string
		says string
	}{
		{fmt.Errorf("add /home/u/.x: %w", syscall.ENOSPC), CodeWatchLimit, "fs.inotify.max_user_watches"},
		{fmt.Errorf("inotify_init1: %w", syscall.EMFILE), CodeInstanceLimit, "fs.inotify.max_user_instances"},
		{fmt.Errorf("add /home/u/.x: %w", fs.ErrPermission), CodePermission, "permission denied"},
		{fmt.Errorf("add /home/u/.x: %w", syscall.EIO), CodeWatchError, "cannot be watched"},
	} {
		code, msg := WatchDiagnostic(tc.err)
		if code != tc.code || !strings.Contains(msg, tc.says) || strings.Contains(msg, "/home/u") {
			t.Errorf("WatchDiagnostic(%v) = %s %q", tc.err, code, msg)
		}
	}
}

// headRecorder is a recorder that also takes the heads of the lines
// skipped as too long (LongLines).
type headRecorder struct {
	*recorder
	heads []string
}

func (r *headRecorder) LongLine(path string, head []byte) {
	s := string(head)
	r.note("", func() { r.heads = append(r.heads, filepath.Base(path)+":"+s) })
}

// A Handler that implements LongLines gets the head of each line skipped
// as too long, once, in order with the lines around it: a line written
// whole, one whose start was held as unfinished, and one longer than
// LongLineHead (its head is at most that).
func TestTailerLongLineHead(t *testing.T) {
	const maxLine = 100
	dir := t.TempDir()
	p := filepath.Join(dir, "a.jsonl")
	rec := &headRecorder{recorder: newRecorder()}
	tl := NewTailer(TailConfig{Roots: []string{dir}, MaxLine: maxLine}, rec)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- tl.Run(ctx) }()
	defer func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Run = %v", err)
		}
	}()
	rec.waitFor(t, "the first scan", func() bool { return rec.scans >= 1 })

	whole := `{"id":"1","type":"gemini","toolCalls":[{"id":"t1","result":"` + strings.Repeat("x", 200) + `"}]}`
	sourcestest.Append(t, p, "first\n"+whole+"\nsecond\n")
	rec.waitLines(t, p, "first", "second")
	// Held unfinished, then found too long when more of it comes.
	held := `{"id":"2","type":"user","content":"` + strings.Repeat("y", 200) + `"}`
	sourcestest.Append(t, p, held[:10])
	sourcestest.Append(t, p, held[10:]+"\nthird\n")
	rec.waitLines(t, p, "first", "second", "third")
	longest := strings.Repeat("z", 3*LongLineHead)
	sourcestest.Append(t, p, longest+"\nfourth\n")
	rec.waitLines(t, p, "first", "second", "third", "fourth")

	rec.mu.Lock()
	defer rec.mu.Unlock()
	if len(rec.heads) != 3 {
		t.Fatalf("%d heads, want 3: %.200q", len(rec.heads), rec.heads)
	}
	if rec.heads[0] != "a.jsonl:"+whole {
		t.Errorf("head of the whole line %q, want the line", rec.heads[0])
	}
	for i, line := range []string{held, longest} {
		h := strings.TrimPrefix(rec.heads[i+1], "a.jsonl:")
		if len(h) <= maxLine || len(h) > LongLineHead || !strings.HasPrefix(line, h) {
			t.Errorf("head %d: %d bytes, not a prefix of the line over %d bytes and within %d", i+1, len(h), maxLine, LongLineHead)
		}
	}
	if !rec.hasDiag(CodeLineTooLong) {
		t.Errorf("no %s diagnostic: %v", CodeLineTooLong, rec.diags)
	}
}
