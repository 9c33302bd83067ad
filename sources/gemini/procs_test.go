package gemini

import (
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/agentbridge/agentbridge"
	"github.com/agentbridge/agentbridge/internal/testenv"
	"github.com/agentbridge/agentbridge/proc"
	"github.com/agentbridge/agentbridge/proc/proctest"
	"github.com/agentbridge/agentbridge/sources/internal/kittest"
	"github.com/agentbridge/agentbridge/sources/sourcestest"
)

// geminiProcess starts what Gemini CLI runs as: a "gemini" wrapper (here
// a shell) that waits for its "gemini" child (here sleep), both in cwd.
// It returns the child, the writer.
func geminiProcess(t *testing.T, cwd string) (wrapper, child int) {
	t.Helper()
	sh, err := exec.LookPath("sh")
	if err != nil {
		testenv.Missing(t, "needs sh")
	}
	data, err := os.ReadFile(sh)
	if err != nil {
		testenv.Missing(t, "cannot copy sh")
	}
	wrap := filepath.Join(t.TempDir(), "gemini")
	if err := os.WriteFile(wrap, data, 0o755); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(wrap, "-c", proctest.Named(t, "gemini")+" 600; true")
	cmd.Dir = cwd
	proctest.Start(t, cmd)
	wrapper = cmd.Process.Pid
	deadline := time.Now().Add(10 * time.Second)
	for child == 0 {
		ents, _ := os.ReadDir(proc.Root)
		for _, e := range ents {
			pid, err := strconv.Atoi(e.Name())
			if err != nil {
				continue
			}
			if st, err := proc.ReadStat(proc.Root, pid); err == nil && st.PPID == wrapper {
				if exe, _ := os.Readlink(filepath.Join(proc.Root, e.Name(), "exe")); filepath.Base(exe) == "gemini" {
					child = pid
				}
			}
		}
		if time.Now().After(deadline) {
			t.Fatal("the gemini child did not start")
		}
		time.Sleep(10 * time.Millisecond)
	}
	return wrapper, child
}

// Gemini CLI closes its chat after every record: the session is bound to
// the Gemini CLI process running in the chat's project (its relaunched
// child, the writer, not the wrapper), and shows exited when it is killed.
// A chat of the project last written before that process started is not
// its; a chat of another project is not either.
func TestChatBoundToItsWriter(t *testing.T) {
	home := t.TempDir()
	cwd, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	chats := filepath.Join(home, "tmp", "proj", "chats")
	meta := func(id, hash string) string {
		return `{"sessionId":"` + id + `","projectHash":"` + hash + `","startTime":"2026-12-01T10:00:00.000Z","lastUpdated":"2026-12-01T10:00:00.000Z","kind":"main"}` + "\n"
	}
	const old, other = "00000000-2222-4333-8444-555555555555", "99999999-2222-4333-8444-555555555555"
	oldChat := filepath.Join(chats, "session-2026-12-01T09-00-00000000.jsonl")
	sourcestest.Append(t, oldChat, meta(old, projectHash(cwd)))
	hourAgo := time.Now().Add(-time.Hour)
	if err := os.Chtimes(oldChat, hourAgo, hourAgo); err != nil {
		t.Fatal(err)
	}
	wrapper, child := geminiProcess(t, cwd)
	h, _ := run(t, home, HarnessGemini)
	h.WaitFor(t, "the old chat", kittest.Status(old, agentbridge.StatusIdle))

	sourcestest.Append(t, filepath.Join(chats, "session-2026-12-01T10-00-11111111.jsonl"), meta(sid, projectHash(cwd)))
	sourcestest.Append(t, filepath.Join(chats, "session-2026-12-01T10-00-99999999.jsonl"), meta(other, projectHash("/elsewhere")))
	h.WaitFor(t, "the session bound to the writer", func(h *sourcestest.Hub) bool {
		s, ok := h.Shown(sid)
		return ok && s.PID == child
	})
	for _, id := range []string{old, other} {
		if s, _ := h.Shown(id); s.PID != 0 {
			t.Errorf("session %s bound to %d (wrapper %d, child %d)", id, s.PID, wrapper, child)
		}
	}
	p, err := os.FindProcess(child)
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Kill(); err != nil {
		t.Fatal(err)
	}
	h.WaitFor(t, "exited", kittest.Status(sid, sourcestest.StatusExited))

	// gemini --resume: a new process takes the chat up and writes it; the
	// session is bound to it, no longer exited.
	_, child2 := geminiProcess(t, cwd)
	sourcestest.Append(t, filepath.Join(chats, "session-2026-12-01T10-00-11111111.jsonl"),
		meta(sid, projectHash(cwd))) // what the resumed CLI writes first
	h.WaitFor(t, "the resumed session bound to the new writer", func(h *sourcestest.Hub) bool {
		s, ok := h.Shown(sid)
		return ok && s.PID == child2 && s.Status != sourcestest.StatusExited
	})
}

// pickWriter: a process that started after the chat's last write did
// not write it; a process bound to another live session gives way to a
// free one, and is taken when it is the only one (a /clear in the same
// process); two free ones cannot be told apart.
func TestPickWriter(t *testing.T) {
	t0 := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	w := func(pid int, started time.Time) writer { return writer{pid: pid, started: started} }
	none := func(int) bool { return false }
	only := func(p int) func(int) bool { return func(pid int) bool { return pid == p } }
	for _, c := range []struct {
		name  string
		cands []writer
		mtime time.Time
		bound func(int) bool
		want  int
	}{
		{"no process", nil, t0, none, 0},
		{"one", []writer{w(10, t0.Add(-time.Minute))}, t0, none, 10},
		{"started after the last write", []writer{w(10, t0.Add(time.Minute))}, t0, none, 0},
		{"within the clock's slack", []writer{w(10, t0.Add(500*time.Millisecond))}, t0, none, 10},
		{"the free one", []writer{w(10, t0.Add(-time.Minute)), w(11, t0.Add(-time.Second))}, t0, only(10), 11},
		{"the only one, bound elsewhere", []writer{w(10, t0.Add(-time.Minute))}, t0, only(10), 10},
		{"two free", []writer{w(10, t0.Add(-time.Minute)), w(11, t0.Add(-time.Second))}, t0, none, 0},
		{"two, both bound elsewhere", []writer{w(10, t0.Add(-time.Minute)), w(11, t0.Add(-time.Second))}, t0, func(int) bool { return true }, 0},
	} {
		if got := pickWriter(c.cands, c.mtime, c.bound); got != c.want {
			t.Errorf("%s: pickWriter = %d, want %d", c.name, got, c.want)
		}
	}
}

// relaunched: of each Gemini CLI, its relaunched child writes (or the one
// process when it did not relaunch); the child's own children that still
// carry its command line (a command between fork and exec) are not
// writers, nor is the waiting wrapper.
func TestRelaunched(t *testing.T) {
	t0 := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	p := func(pid, ppid int, d time.Duration) proc.Process {
		return proc.Process{PID: pid, PPID: ppid, Started: t0.Add(d)}
	}
	for _, c := range []struct {
		name string
		all  []proc.Process
		want []int
	}{
		{"none", nil, nil},
		{"not relaunched", []proc.Process{p(10, 1, 0)}, []int{10}},
		{"relaunched", []proc.Process{p(10, 1, 0), p(11, 10, time.Second)}, []int{11}},
		{"the child forking git", []proc.Process{p(10, 1, 0), p(11, 10, time.Second), p(12, 11, time.Minute)}, []int{11}},
		{"listed child first", []proc.Process{p(12, 11, time.Minute), p(11, 10, time.Second), p(10, 1, 0)}, []int{11}},
		{"two CLIs", []proc.Process{p(10, 1, 0), p(11, 10, time.Second), p(20, 1, 0), p(21, 20, time.Second), p(22, 21, time.Minute)}, []int{11, 21}},
	} {
		var got []int
		for _, w := range relaunched(c.all) {
			got = append(got, w.PID)
		}
		slices.Sort(got)
		if !slices.Equal(got, c.want) {
			t.Errorf("%s: relaunched = %v, want %v", c.name, got, c.want)
		}
	}
}
