package sources_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/agentbridge/agentbridge"
	"github.com/agentbridge/agentbridge/hub"
	"github.com/agentbridge/agentbridge/internal/testenv"
	"github.com/agentbridge/agentbridge/sources"
	"github.com/agentbridge/agentbridge/sources/claudecode"
	"github.com/agentbridge/agentbridge/sources/example"
	"github.com/agentbridge/agentbridge/sources/sourcestest"
)

// The fault tests run the reference example source (one journal directory,
// <home>/sessions/<id>.jsonl) over the shared tailer and check, for each
// fault, the diagnostic, the recovery and the snapshots at the end.

// journalLines is a short live session: started, then a turn running.
func journalLines(title string) string {
	ts := time.Now().UTC().Format("2006-01-02T15:04:05.000Z")
	return fmt.Sprintf(`{"type":"session","ts":%q,"title":%q,"model":"example-large-2","cwd":"/work/shop"}`+"\n"+
		`{"type":"prompt","ts":%q,"turnId":"turn-1","text":"go on"}`+"\n", ts, title, ts)
}

func writeJournal(t *testing.T, home, id, title string) {
	t.Helper()
	dir := example.SessionsDir(home)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, id+".jsonl"), []byte(journalLines(title)), 0o600); err != nil {
		t.Fatal(err)
	}
}

// runExample runs the example source on home until the test ends.
func runExample(t *testing.T, home string) *sourcestest.Hub {
	t.Helper()
	return runExampleWith(t, example.Config{Home: home, Window: -1})
}

// runExampleWith runs the example source with cfg until the test ends.
func runExampleWith(t *testing.T, cfg example.Config) *sourcestest.Hub {
	t.Helper()
	h := sourcestest.New()
	ctx, cancel := context.WithCancel(context.Background())
	src := example.New(cfg)
	done := make(chan error, 1)
	go func() {
		done <- src.Run(ctx, hub.Start{Enabled: []string{example.Harness}, Publisher: h})
	}()
	t.Cleanup(func() {
		cancel()
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("source Run: %v", err)
			}
		case <-time.After(10 * time.Second):
			t.Errorf("source did not stop within 10s")
		}
	})
	h.WaitFor(t, "the first reset", func(h *sourcestest.Hub) bool { return h.Resets() >= 1 })
	return h
}

func sessionIDs(h *sourcestest.Hub) []string {
	var out []string
	for _, s := range h.Snapshots() {
		out = append(out, s.ID)
	}
	return out
}

func hasIDs(want ...string) func(h *sourcestest.Hub) bool {
	return func(h *sourcestest.Hub) bool { return slices.Equal(sessionIDs(h), want) }
}

func diagCodes(h *sourcestest.Hub) []string {
	var out []string
	for _, d := range h.Diagnostics() {
		out = append(out, d.Code)
	}
	return out
}

func hasCode(code string) func(h *sourcestest.Hub) bool {
	return func(h *sourcestest.Hub) bool { return slices.Contains(diagCodes(h), code) }
}

// noPaths checks that no diagnostic message names a path under root.
func noPaths(t *testing.T, h *sourcestest.Hub, root string) {
	t.Helper()
	for _, d := range h.Diagnostics() {
		if strings.Contains(d.Message, root) || strings.Contains(d.Message, "/") && strings.Contains(d.Message, ".jsonl") {
			t.Errorf("diagnostic %s reveals a path: %q", d.Code, d.Message)
		}
	}
}

func TestHomeMissingAtStartCreatedLater(t *testing.T) {
	t.Parallel()
	home := filepath.Join(t.TempDir(), "a", "b", "home") // three levels missing
	h := runExample(t, home)
	if got := sessionIDs(h); len(got) != 0 {
		t.Fatalf("sessions %v before the home exists", got)
	}
	writeJournal(t, home, "late-1", "created later")
	h.WaitFor(t, "the running session of the home created later", func(h *sourcestest.Hub) bool {
		s, ok := h.Snapshot("late-1")
		return ok && len(sessionIDs(h)) == 1 && s.Title == "created later" && s.Status == agentbridge.StatusRunning
	})
	if c := diagCodes(h); len(c) != 0 {
		t.Errorf("diagnostics %v for a home that simply did not exist yet, want none", c)
	}
	if h.Refused() != 0 {
		t.Errorf("the hub refused %d calls", h.Refused())
	}
}

func TestHomeDeletedAndRecreated(t *testing.T) {
	t.Parallel()
	home := filepath.Join(t.TempDir(), "home")
	writeJournal(t, home, "first-1", "first")
	h := runExample(t, home)
	h.WaitFor(t, "the first session", hasIDs("first-1"))
	for round := range 3 {
		if err := os.RemoveAll(home); err != nil {
			t.Fatal(err)
		}
		h.WaitFor(t, fmt.Sprintf("round %d: no session once the home is deleted", round), hasIDs())
		id := "again-" + strconv.Itoa(round)
		writeJournal(t, home, id, "again")
		h.WaitFor(t, fmt.Sprintf("round %d: the session of the recreated home", round), hasIDs(id))
	}
	if h.Refused() != 0 {
		t.Errorf("the hub refused %d calls", h.Refused())
	}
	noPaths(t, h, home)
}

// TestJournalDirUnreadable: the journal directory becomes
// unreadable. Root ignores permission bits, so as root the directory is
// replaced by a regular file of the same name (open(2) of it as a directory
// fails the way an unreadable one does); as another user it is chmod 000.
func TestJournalDirUnreadable(t *testing.T) {
	t.Parallel()
	home := filepath.Join(t.TempDir(), "home")
	dir := example.SessionsDir(home)
	writeJournal(t, home, "ok-1", "readable")
	h := runExample(t, home)
	h.WaitFor(t, "the session", hasIDs("ok-1"))

	want := sources.CodeRootNotDir
	if os.Geteuid() == 0 {
		if err := os.RemoveAll(dir); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(dir, []byte("not a directory"), 0o600); err != nil {
			t.Fatal(err)
		}
	} else {
		want = sources.CodePermission
		if err := os.Chmod(dir, 0); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { os.Chmod(dir, 0o700) })
		// chmod alone raises no inotify event the tailer acts on; a new
		// journal's creation is refused, so force a rescan by moving it.
		if err := os.Rename(dir, dir+".x"); err != nil {
			t.Fatal(err)
		}
		if err := os.Rename(dir+".x", dir); err != nil {
			t.Fatal(err)
		}
	}
	h.WaitFor(t, "the diagnostic "+want, hasCode(want))
	h.WaitFor(t, "no session from the unreadable directory", hasIDs())
	noPaths(t, h, home)

	// Readable again: recovered without a restart.
	if os.Geteuid() == 0 {
		if err := os.Remove(dir); err != nil {
			t.Fatal(err)
		}
	} else {
		os.Chmod(dir, 0o700)
		os.Rename(dir, dir+".x")
		os.Rename(dir+".x", dir)
	}
	writeJournal(t, home, "back-1", "readable again")
	back := []string{"back-1", "ok-1"}
	if os.Geteuid() == 0 {
		back = back[:1] // the old journal went with the directory
	}
	h.WaitFor(t, "the session once the directory is readable again", hasIDs(back...))
}

// TestFIFOJournal: a FIFO named like a journal must not block the
// source (open(2) of a FIFO blocks until a writer appears); the other
// journals keep updating.
func TestFIFOJournal(t *testing.T) {
	t.Parallel()
	home := filepath.Join(t.TempDir(), "home")
	writeJournal(t, home, "ok-1", "regular")
	if err := syscall.Mkfifo(filepath.Join(example.SessionsDir(home), "fifo-1.jsonl"), 0o600); err != nil {
		testenv.Missing(t, "mkfifo: %v", err)
	}
	h := runExample(t, home)
	h.WaitFor(t, "the regular session", hasIDs("ok-1"))
	writeJournal(t, home, "ok-2", "written after the FIFO")
	h.WaitFor(t, "the session written after the FIFO", hasIDs("ok-1", "ok-2"))
}

// setSysctl writes v to a /proc/sys file and returns the old value and a
// restore function; it skips the test when the file cannot be written.
func setSysctl(t *testing.T, path string, v int) (restore func()) {
	t.Helper()
	old, err := os.ReadFile(path)
	if err != nil {
		testenv.Missing(t, "cannot read %s: %v", path, err)
	}
	if err := os.WriteFile(path, []byte(strconv.Itoa(v)), 0o644); err != nil {
		testenv.Missing(t, "cannot lower %s (needs root outside a locked-down container): %v", path, err)
	}
	var done bool
	restore = func() {
		if !done {
			done = true
			if err := os.WriteFile(path, old, 0o644); err != nil {
				t.Errorf("restore %s: %v", path, err)
			}
		}
	}
	t.Cleanup(restore)
	return restore
}

// inotifyFDs counts this process's inotify instances.
func inotifyFDs() int {
	ents, _ := os.ReadDir("/proc/self/fd")
	n := 0
	for _, e := range ents {
		if l, err := os.Readlink("/proc/self/fd/" + e.Name()); err == nil && l == "anon_inode:inotify" {
			n++
		}
	}
	return n
}

// TestInotifyOverflow drives a real IN_Q_OVERFLOW. The kernel
// fixes an inotify instance's queue size when the instance is made, so
// fs.inotify.max_queued_events (machine-wide) is lowered to 8 only until
// the tailer's instance exists — about a millisecond, watched through
// /proc/self/fd — and restored at once (and in t.Cleanup). Another process
// that makes an instance in that window would merely rescan after an
// overflow. Then journals are written in bursts of 400 until the tailer
// reports file-events-lost; it must rescan and end with every session.
func TestInotifyOverflow(t *testing.T) {
	// Not parallel: no other tailer of this process may start meanwhile.
	const path = "/proc/sys/fs/inotify/max_queued_events"
	home := filepath.Join(t.TempDir(), "home")
	if err := os.MkdirAll(example.SessionsDir(home), 0o700); err != nil {
		t.Fatal(err)
	}
	before := inotifyFDs()
	restore := setSysctl(t, path, 8)
	restored := make(chan struct{})
	go func() {
		defer close(restored)
		deadline := time.Now().Add(10 * time.Second)
		for inotifyFDs() <= before && time.Now().Before(deadline) {
			time.Sleep(100 * time.Microsecond)
		}
		restore()
	}()
	h := runExample(t, home)
	<-restored

	var want []string
	for round := 0; round < 10 && !hasCode(sources.CodeEventsLost)(h); round++ {
		for i := range 400 {
			id := fmt.Sprintf("burst-%d-%03d", round, i)
			want = append(want, id)
			writeJournal(t, home, id, "burst")
		}
	}
	h.WaitFor(t, "the diagnostic "+sources.CodeEventsLost, hasCode(sources.CodeEventsLost))
	h.WaitFor(t, "every session after the rescan", func(h *sourcestest.Hub) bool { return slices.Equal(sessionIDs(h), want) })
	if h.Resets() < 2 {
		t.Errorf("%d resets, want a new one after the overflow", h.Resets())
	}
	// Following goes on after the rebuild.
	writeJournal(t, home, "zz-after", "after the overflow")
	h.WaitFor(t, "a session written after the overflow", func(h *sourcestest.Hub) bool { return len(sessionIDs(h)) == len(want)+1 })
	noPaths(t, h, home)
	t.Logf("%d journals written; %d resets", len(want), h.Resets())
}

const watchLimitChildEnv = "TEST_WATCH_LIMIT_CHILD"

// TestWatchLimit runs TestWatchLimitChild in a child user
// namespace whose inotify watch limit (/proc/sys/user/max_inotify_watches,
// per user namespace) is 0, so nothing else on the machine is affected.
func TestWatchLimit(t *testing.T) {
	t.Parallel()
	if os.Getenv(watchLimitChildEnv) != "" {
		t.Skip("running as the child")
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestWatchLimitChild$", "-test.v", "-test.count=1")
	cmd.Env = append(os.Environ(), watchLimitChildEnv+"=1")
	cmd.SysProcAttr = newUserNamespace(t)
	out, err := cmd.CombinedOutput()
	var ee *exec.ExitError
	if err != nil && !errors.As(err, &ee) {
		testenv.Missing(t, "cannot start a process in a new user namespace (%v): the watch limit cannot be lowered for this test alone", err)
	}
	if strings.Contains(string(out), "SKIP-WATCH-LIMIT") {
		testenv.Missing(t, "child could not lower its watch limit:\n%s", out)
	}
	if err != nil || !strings.Contains(string(out), "--- PASS: TestWatchLimitChild") {
		t.Fatalf("child: %v\n%s", err, out)
	}
	t.Logf("child:\n%s", out)
}

// TestWatchLimitChild is the child of TestWatchLimit.
func TestWatchLimitChild(t *testing.T) {
	if os.Getenv(watchLimitChildEnv) == "" {
		t.Skip("runs only as the child of TestWatchLimit")
	}
	if err := os.WriteFile("/proc/sys/user/max_inotify_watches", []byte("0"), 0o644); err != nil {
		fmt.Println("SKIP-WATCH-LIMIT", err)
		t.Skip(err)
	}
	home := filepath.Join(t.TempDir(), "home")
	writeJournal(t, home, "seen-1", "scanned without a watch")
	h := runExample(t, home)
	h.WaitFor(t, "the diagnostic "+sources.CodeWatchLimit, hasCode(sources.CodeWatchLimit))
	for _, d := range h.Diagnostics() {
		if d.Code == sources.CodeWatchLimit && !strings.Contains(d.Message, "max_user_watches") {
			t.Errorf("watch-limit message %q does not say which sysctl to raise", d.Message)
		}
	}
	noPaths(t, h, home)
	t.Logf("sessions with no watch: %v; diagnostics %v", sessionIDs(h), diagCodes(h))
}

// copyTree copies the directory tree src to dst (which must not exist)
// in one go, like an agent's first start making several levels at once.
func copyTree(t *testing.T, src, dst string) {
	t.Helper()
	err := filepath.WalkDir(src, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, p)
		out := filepath.Join(dst, rel)
		if d.IsDir() {
			return os.MkdirAll(out, 0o700)
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		return os.WriteFile(out, b, 0o600)
	})
	if err != nil {
		t.Fatal(err)
	}
}

// TestClaudeHomeLifecycle runs the Claude Code source on a
// configuration directory that does not exist at start, is then created
// with a nested projects tree at once (the mkdir -p race of inotify),
// deleted and created again: each time the session of the fixture
// (claudecode/testdata/home, see its SOURCES.md) comes back complete, with
// its subagent.
func TestClaudeHomeLifecycle(t *testing.T) {
	t.Parallel()
	fixture := filepath.Join("claudecode", "testdata", "home")
	const id = "0a1b2c3d-4e5f-4061-8071-2a3b4c5d6e7f"
	home := filepath.Join(t.TempDir(), "claude")
	h := sourcestest.New()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- claudecode.New(claudecode.Options{Home: home, Window: -1}).
			Run(ctx, hub.Start{Enabled: []string{claudecode.Harness}, Publisher: h})
	}()
	t.Cleanup(func() {
		cancel()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			t.Errorf("source did not stop within 10s")
		}
	})
	h.WaitFor(t, "the first reset", func(h *sourcestest.Hub) bool { return h.Resets() >= 1 })
	complete := func(h *sourcestest.Hub) bool {
		s, ok := h.Snapshot(id)
		return ok && len(sessionIDs(h)) == 1 && s.Title == "Delegate a repo search to a subagent" &&
			s.Status == agentbridge.StatusRunning && len(s.Subagents) == 1
	}
	for round := range 3 {
		copyTree(t, fixture, home)
		h.WaitFor(t, fmt.Sprintf("round %d: the fixture's session with its subagent", round), complete)
		if err := os.RemoveAll(home); err != nil {
			t.Fatal(err)
		}
		h.WaitFor(t, fmt.Sprintf("round %d: no session once the home is deleted", round), hasIDs())
	}
	if h.Refused() != 0 {
		t.Errorf("the hub refused %d calls", h.Refused())
	}
	noPaths(t, h, home)
}
