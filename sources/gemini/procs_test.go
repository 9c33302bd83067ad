package gemini

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"
	"time"

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
	// The wrapper's end (its cleanup) would leave the child running.
	t.Cleanup(func() {
		if p, err := os.FindProcess(child); err == nil {
			_ = p.Kill()
		}
	})
	return wrapper, child
}

// Gemini CLI closes its chat after every record: the session is bound to
// the Gemini CLI process running in the chat's project (its relaunched
// child, the writer, not the wrapper), and shows exited when it is killed.
// A chat of the project last written before that process started is not
// its, and a chat of a project where no Gemini CLI runs is not either:
// their processes are gone, so they have ended.
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
	h, _ := runOn(t, home, nil, HarnessGemini)
	h.WaitFor(t, "the first reset", func(h *sourcestest.Hub) bool { return h.Resets() > 0 })

	sourcestest.Append(t, filepath.Join(chats, "session-2026-12-01T10-00-11111111.jsonl"), meta(sid, projectHash(cwd)))
	sourcestest.Append(t, filepath.Join(chats, "session-2026-12-01T10-00-99999999.jsonl"), meta(other, projectHash("/elsewhere")))
	h.WaitFor(t, "the session bound to the writer", func(h *sourcestest.Hub) bool {
		s, ok := h.Shown(sid)
		return ok && s.PID == child
	})
	h.WaitFor(t, "the chat of another project ended", kittest.Status(other, sourcestest.StatusExited))
	if s, ok := h.Shown(other); s.PID != 0 {
		t.Errorf("session %s bound to %d (wrapper %d, child %d)", other, s.PID, wrapper, child)
	} else if _, ok = h.Shown(old); ok {
		t.Errorf("the old chat, ended an hour ago, is listed")
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
