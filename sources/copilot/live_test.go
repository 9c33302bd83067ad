package copilot

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"syscall"
	"testing"
	"time"

	"github.com/agentbridge/agentbridge"
	"github.com/agentbridge/agentbridge/internal/testenv"
	"github.com/agentbridge/agentbridge/proc/proctest"
	"github.com/agentbridge/agentbridge/sources"
	"github.com/agentbridge/agentbridge/sources/sourcestest"
)

// run starts the source on opt with a fake hub until the test ends and
// waits for its first reset.
func run(t testing.TB, opt sources.Options) *sourcestest.Hub {
	t.Helper()
	return sourcestest.Start(t, New(opt), nil)
}

// line is one journal record of type typ with data, stamped now.
func line(typ string, data any) string {
	b, err := json.Marshal(map[string]any{
		"type": typ, "data": data, "id": fmt.Sprintf("rec-%d", time.Now().UnixNano()),
		"timestamp": time.Now().UTC().Format(time.RFC3339Nano), "parentId": nil,
	})
	if err != nil {
		panic(err)
	}
	return string(b) + "\n"
}

// appendRead appends s and waits until a journal was read after it (so a
// cut line has been seen cut).
func appendRead(t testing.TB, path, s string) {
	t.Helper()
	before := sources.ReadActivity().Reads
	sourcestest.Append(t, path, s)
	for deadline := time.Now().Add(time.Minute); sources.ReadActivity().Reads == before; time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the source did not read the journal")
		}
	}
}

func status(h *sourcestest.Hub, id string, want agentbridge.Status) func(*sourcestest.Hub) bool {
	return func(*sourcestest.Hub) bool { s, ok := h.Shown(id); return ok && s.Status == want }
}

func startRecord(cwd string) string {
	return line(typeSessionStart, map[string]any{"sessionId": "s", "copilotVersion": "1.0.78", "context": map[string]any{"cwd": cwd}})
}

const sid = "0b8c6d2e-5f41-4c3a-9e7d-2a1b3c4d5e6f"

// TestLivePartialLines writes a session the way Copilot's appends may
// reach the disk, lines cut anywhere: nothing changes until a line is
// whole, and the waiting the permission request means shows when its last
// byte lands.
func TestLivePartialLines(t *testing.T) {
	home := t.TempDir()
	h := run(t, sources.Options{Home: home, Processes: proctest.Running(t, "/usr/bin/copilot", "/work/app")}) // Copilot runs in /work/app
	p := filepath.Join(SessionsDir(home), sid, journalName)

	start := startRecord("/work/app")
	appendRead(t, p, start[:17]) // cut inside the first record
	if _, ok := h.Shown(sid); ok {
		t.Fatal("a cut first line made a session")
	}
	appendRead(t, p, start[17:]+line(typeUserMessage, map[string]any{"content": "Deploy it"}))
	h.WaitFor(t, "running", status(h, sid, agentbridge.StatusRunning))

	perm := line(typePermRequested, map[string]any{"requestId": "r1", "permissionRequest": map[string]any{"kind": "shell", "fullCommandText": "make deploy"}})
	appendRead(t, p, perm[:len(perm)-2]) // all but the last byte and the newline
	if s, _ := h.Shown(sid); s.Status != agentbridge.StatusRunning {
		t.Fatalf("status %s before the request's line was whole, want running", s.Status)
	}
	appendRead(t, p, perm[len(perm)-2:])
	h.WaitFor(t, "waiting", status(h, sid, agentbridge.StatusWaiting))
	if s, _ := h.Shown(sid); s.WaitingFor != "approve shell: make deploy" {
		t.Errorf("waitingFor = %q", s.WaitingFor)
	}

	rest := line(typePermCompleted, map[string]any{"requestId": "r1", "result": map[string]any{"kind": "approved"}}) +
		line(typeAssistantMessage, map[string]any{"content": "Deployed.", "model": "gpt-5"}) +
		line(typeTurnEnd, map[string]any{"turnId": "0"})
	for i := 0; i < len(rest); i += 41 { // 41-byte writes: lines cut everywhere
		appendRead(t, p, rest[i:min(i+41, len(rest))])
	}
	h.WaitFor(t, "done", status(h, sid, sourcestest.StatusDone))
	s, _ := h.Shown(sid)
	if s.Title != "Deploy it" || s.Model != "gpt-5" || s.Cwd != "/work/app" || s.LastTurn != agentbridge.LastTurnCompleted {
		t.Errorf("snapshot %+v", s)
	}
	var seen []agentbridge.Status
	for _, tr := range h.Transitions() {
		seen = append(seen, tr.Shown)
	}
	want := []agentbridge.Status{agentbridge.StatusIdle, agentbridge.StatusRunning, agentbridge.StatusWaiting, agentbridge.StatusRunning, sourcestest.StatusDone}
	if !slices.Equal(seen, want) {
		t.Errorf("statuses %v, want %v", seen, want)
	}
	if d := h.Diagnostics(); len(d) > 0 {
		t.Errorf("diagnostics %+v", d)
	}
}

// TestSidecarsIgnored: the session directory's other files, hostile ones
// included (a FIFO, a symlink to a device, a deeper events.jsonl), are not
// journals: they are never opened, make no session and no diagnostic, and
// do not hold the real journal up.
func TestSidecarsIgnored(t *testing.T) {
	home := t.TempDir()
	root := SessionsDir(home)
	dir := filepath.Join(root, sid)
	for _, d := range []string{filepath.Join(dir, "checkpoints"), filepath.Join(root, "other")} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	sourcestest.Append(t, filepath.Join(dir, "workspace.yaml"), "id: x\ncwd: /work/app\n")
	if err := syscall.Mkfifo(filepath.Join(dir, "session.db"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mkfifo(filepath.Join(root, "other", "fifo"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join(root, "other", "fifo"), filepath.Join(root, "other", journalName)); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("/dev/zero", filepath.Join(dir, "checkpoints", journalName)); err != nil {
		t.Fatal(err)
	}
	sourcestest.Append(t, filepath.Join(root, journalName), startRecord("/x")) // not in a session directory
	sourcestest.Append(t, filepath.Join(dir, "checkpoints", "index.md"), "# checkpoints\n")

	h := run(t, sources.Options{Home: home, Processes: proctest.Running(t, "/usr/bin/copilot", "/work/app")}) // Copilot runs in /work/app
	sourcestest.Append(t, filepath.Join(dir, journalName), startRecord("/work/app")+line(typeUserMessage, map[string]any{"content": "hi"}))
	h.WaitFor(t, "the real session", status(h, sid, agentbridge.StatusRunning))
	sourcestest.Append(t, filepath.Join(dir, "workspace.yaml"), "updated_at: now\n")
	sourcestest.Append(t, filepath.Join(dir, "inuse.1.lock"), "")
	sourcestest.Append(t, filepath.Join(dir, journalName), line(typeAssistantMessage, map[string]any{"content": "hello"})+line(typeTurnEnd, map[string]any{}))
	h.WaitFor(t, "the turn over", func(*sourcestest.Hub) bool {
		s, ok := h.Shown(sid)
		return ok && s.LastTurn == agentbridge.LastTurnCompleted
	})
	if got := h.Snapshots(); len(got) != 1 {
		t.Errorf("sessions %+v, want the one", got)
	}
	if d := h.Diagnostics(); len(d) > 0 {
		t.Errorf("diagnostics %+v", d)
	}
}

// startProcess starts a long sleep, as the named command (a copy of
// sleep, so that its comm is name) in dir, and kills it when the test
// ends.
func startProcess(t *testing.T, name, dir string) *exec.Cmd {
	t.Helper()
	bin := "sleep"
	if name != "" {
		src, err := exec.LookPath("sleep")
		if err != nil {
			testenv.Missing(t, "no sleep binary")
		}
		b, err := os.ReadFile(src)
		if err != nil {
			t.Fatal(err)
		}
		bin = filepath.Join(t.TempDir(), name)
		if err := os.WriteFile(bin, b, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	cmd := exec.Command(bin, "600")
	cmd.Dir = dir
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan struct{})
	go func() { _ = cmd.Wait(); close(exited) }()
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		<-exited
	})
	return cmd
}

// TestProcessByLockFile: the inuse.<pid>.lock file names the process that
// has the session; it is bound, and its end is the session's exit (a
// pidfd, no polling).
func TestProcessByLockFile(t *testing.T) {
	home := t.TempDir()
	dir := filepath.Join(SessionsDir(home), sid)
	child := startProcess(t, "", t.TempDir())
	sourcestest.Append(t, filepath.Join(dir, fmt.Sprintf("inuse.%d.lock", child.Process.Pid)), "")
	sourcestest.Append(t, filepath.Join(dir, "inuse.4194303.lock"), "") // stale: no such process
	h := run(t, sources.Options{Home: home, Linger: -1})
	sourcestest.Append(t, filepath.Join(dir, journalName), startRecord("/work/app")+line(typeUserMessage, map[string]any{"content": "hi"}))
	h.WaitFor(t, "the process bound", func(*sourcestest.Hub) bool {
		s, ok := h.Shown(sid)
		return ok && s.PID == child.Process.Pid && s.Status == agentbridge.StatusRunning
	})
	if err := child.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	h.WaitFor(t, "exited", status(h, sid, sourcestest.StatusExited))
}

// TestProcessByCwd: without a lock file, the process is the copilot
// process whose cwd is the session's and which started before it.
func TestProcessByCwd(t *testing.T) {
	home := t.TempDir()
	cwd := t.TempDir()
	other := startProcess(t, "copilot", t.TempDir()) // another directory: not this session's
	child := startProcess(t, "copilot", cwd)
	h := run(t, sources.Options{Home: home, Linger: -1})
	time.Sleep(20 * time.Millisecond) // the session starts after its process (10 ms clock)
	p := filepath.Join(SessionsDir(home), sid, journalName)
	sourcestest.Append(t, p, startRecord(cwd)+line(typeUserMessage, map[string]any{"content": "hi"}))
	h.WaitFor(t, "the process bound", func(*sourcestest.Hub) bool {
		s, ok := h.Shown(sid)
		return ok && s.PID == child.Process.Pid
	})
	if err := child.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	h.WaitFor(t, "exited", status(h, sid, sourcestest.StatusExited))
	if s, _ := h.Shown(sid); s.PID == other.Process.Pid {
		t.Error("bound the process of another directory")
	}
}

// TestShutdownExits: session.shutdown ends the session without a process;
// session.resume (copilot --resume, a Copilot process in /work/app) brings
// it back, idle, and its next prompt runs.
func TestShutdownExits(t *testing.T) {
	home := t.TempDir()
	h := run(t, sources.Options{Home: home, Linger: -1, Processes: proctest.Running(t, "/usr/bin/copilot", "/work/app")})
	p := filepath.Join(SessionsDir(home), sid, journalName)
	sourcestest.Append(t, p, startRecord("/work/app")+line(typeUserMessage, map[string]any{"content": "hi"})+
		line(typeAssistantMessage, map[string]any{"content": "hello"})+line(typeTurnEnd, map[string]any{})+
		line(typeSessionShutdown, map[string]any{"shutdownType": "routine"}))
	h.WaitFor(t, "exited", status(h, sid, sourcestest.StatusExited))
	sourcestest.Append(t, p, line(typeSessionResume, map[string]any{"context": map[string]any{"cwd": "/work/app"}}))
	h.WaitFor(t, "idle again (its last turn kept)", status(h, sid, sourcestest.StatusDone))
	sourcestest.Append(t, p, line(typeUserMessage, map[string]any{"content": "again"}))
	h.WaitFor(t, "running", status(h, sid, agentbridge.StatusRunning))
}

// TestOldJournalOfLiveProcess: a journal last written before the window
// is read at start when the process its lock names is alive (a session
// idle for hours), and not when the lock is stale.
func TestOldJournalOfLiveProcess(t *testing.T) {
	home := t.TempDir()
	child := startProcess(t, "", t.TempDir())
	old := time.Now().Add(-3 * time.Hour)
	for id, pid := range map[string]int{sid: child.Process.Pid, "stale-session": 4194303} {
		dir := filepath.Join(SessionsDir(home), id)
		sourcestest.Append(t, filepath.Join(dir, fmt.Sprintf("inuse.%d.lock", pid)), "")
		p := filepath.Join(dir, journalName)
		sourcestest.Append(t, p, startRecord("/work/app")+line(typeUserMessage, map[string]any{"content": "hi"})+
			line(typeAssistantMessage, map[string]any{"content": "hello"})+line(typeTurnEnd, map[string]any{}))
		if err := os.Chtimes(p, old, old); err != nil {
			t.Fatal(err)
		}
	}
	h := run(t, sources.Options{Home: home, Window: time.Hour})
	h.WaitFor(t, "the live process's session", func(*sourcestest.Hub) bool {
		s, ok := h.Shown(sid)
		return ok && s.Status == sourcestest.StatusDone && s.PID == child.Process.Pid
	})
	if _, ok := h.Shown("stale-session"); ok {
		t.Error("an old journal with a stale lock was read")
	}
}

// TestProcessByCwdSkipsLockedProcess: two Copilot processes in one
// directory; the session with a lock gets its own, the one without gets
// the other, never the locked one.
func TestProcessByCwdSkipsLockedProcess(t *testing.T) {
	home := t.TempDir()
	cwd := t.TempDir()
	other := startProcess(t, "copilot", cwd)
	time.Sleep(20 * time.Millisecond) // the locked one is the newest: cwd matching alone would pick it
	locked := startProcess(t, "copilot", cwd)
	time.Sleep(20 * time.Millisecond)
	a, b := sid, "0000aaaa-0000-4000-8000-00000000000b" // b sorts first: bound before a's lock is looked at, it must still not take a's process
	sourcestest.Append(t, filepath.Join(SessionsDir(home), a, fmt.Sprintf("inuse.%d.lock", locked.Process.Pid)), "")
	for _, id := range []string{a, b} {
		sourcestest.Append(t, filepath.Join(SessionsDir(home), id, journalName), startRecord(cwd)+line(typeUserMessage, map[string]any{"content": "hi"}))
	}
	h := run(t, sources.Options{Home: home, Linger: -1}) // one scan reads both
	pidOf := func(id string) int { s, _ := h.Shown(id); return s.PID }
	h.WaitFor(t, "both bound", func(*sourcestest.Hub) bool { return pidOf(a) > 0 && pidOf(b) > 0 })
	if pidOf(a) != locked.Process.Pid || pidOf(b) != other.Process.Pid {
		t.Errorf("a bound to %d (want its lock's %d), b to %d (want %d)", pidOf(a), locked.Process.Pid, pidOf(b), other.Process.Pid)
	}
}

// TestRewrittenAndRemoved: /undo rewrites the journal (a new file renamed
// over it): the session is rebuilt from it, the undone turn gone; the
// journal removed, the session leaves the hub.
func TestRewrittenAndRemoved(t *testing.T) {
	home := t.TempDir()
	h := run(t, sources.Options{Home: home, Processes: proctest.Running(t, "/usr/bin/copilot", "/work/app")}) // Copilot runs in /work/app
	p := filepath.Join(SessionsDir(home), sid, journalName)
	first := startRecord("/work/app") + line(typeUserMessage, map[string]any{"content": "one"}) +
		line(typeAssistantMessage, map[string]any{"content": "1"}) + line(typeTurnEnd, map[string]any{})
	sourcestest.Append(t, p, first+line(typeUserMessage, map[string]any{"content": "two"}))
	h.WaitFor(t, "the second turn running", status(h, sid, agentbridge.StatusRunning))
	tmp := p + ".new"
	sourcestest.Append(t, tmp, first)
	if err := os.Rename(tmp, p); err != nil {
		t.Fatal(err)
	}
	h.WaitFor(t, "rebuilt: the first turn done", status(h, sid, sourcestest.StatusDone))
	if err := os.Remove(p); err != nil {
		t.Fatal(err)
	}
	h.WaitFor(t, "the session gone", func(*sourcestest.Hub) bool { _, ok := h.Shown(sid); return !ok })
	if d := h.Diagnostics(); len(d) > 0 {
		t.Errorf("diagnostics %+v", d)
	}
}

// TestRewriteKeepsProcess: Copilot 1.0.102 rewinds the journal of a
// running session when Escape twice withdraws a prompt that had no answer
// yet (the journal is rewritten without that turn): the rebuilt session
// is idle again and still shows its process, whose exit still counts.
func TestRewriteKeepsProcess(t *testing.T) {
	home := t.TempDir()
	dir := filepath.Join(SessionsDir(home), sid)
	child := startProcess(t, "", t.TempDir())
	sourcestest.Append(t, filepath.Join(dir, fmt.Sprintf("inuse.%d.lock", child.Process.Pid)), "")
	h := run(t, sources.Options{Home: home, Linger: -1})
	p := filepath.Join(dir, journalName)
	start := startRecord("/work/app")
	sourcestest.Append(t, p, start+line(typeUserMessage, map[string]any{"content": "wait"})+
		line(typeTurnStart, map[string]any{"turnId": "0"})+line(typeTurnEnd, map[string]any{"turnId": "0"})+
		line(typeAbort, map[string]any{"reason": "user_initiated"}))
	h.WaitFor(t, "the withdrawn turn cancelled", func(*sourcestest.Hub) bool {
		s, ok := h.Shown(sid)
		return ok && s.PID == child.Process.Pid && s.Status == sourcestest.StatusDone && s.LastTurn == agentbridge.LastTurnInterrupted
	})
	tmp := p + ".new"
	sourcestest.Append(t, tmp, start)
	if err := os.Rename(tmp, p); err != nil {
		t.Fatal(err)
	}
	h.WaitFor(t, "rebuilt without the turn, the process kept", func(*sourcestest.Hub) bool {
		s, ok := h.Shown(sid)
		return ok && s.PID == child.Process.Pid && s.Status == agentbridge.StatusIdle && s.LastTurn == ""
	})
	if err := child.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	h.WaitFor(t, "exited", status(h, sid, sourcestest.StatusExited))
}
