package qwen

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/agentbridge/agentbridge"
	"github.com/agentbridge/agentbridge/proc"
	"github.com/agentbridge/agentbridge/proc/proctest"
	"github.com/agentbridge/agentbridge/sources"
	"github.com/agentbridge/agentbridge/sources/internal/kittest"
	"github.com/agentbridge/agentbridge/sources/sourcestest"
)

// startAgent starts a process that stands for the agent's, ended with the
// test, and returns it with its start time as /proc tells it.
func startAgent(t *testing.T, argv ...string) (*exec.Cmd, time.Time) {
	t.Helper()
	agent := exec.Command(argv[0], argv[1:]...)
	if err := agent.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { agent.Process.Kill(); agent.Wait() })
	st, err := proc.ReadStat(proc.Root, agent.Process.Pid)
	if err != nil {
		t.Fatal(err)
	}
	started, err := proc.StartedAt(st)
	if err != nil {
		t.Fatal(err)
	}
	return agent, started
}

func run(t *testing.T, home string) *sourcestest.Hub {
	t.Helper()
	return sourcestest.Run(t, New(sources.Options{Home: home}), []string{Harness})
}

// A chat written live with cut lines goes idle → running → done; the
// runtime file binds the TUI's process, whose end makes the session
// exited.
func TestLiveChatAndProcess(t *testing.T) {
	home := t.TempDir()
	const id = "f09aa972-4319-42fc-ae72-923eb867e18f"
	chats := filepath.Join(home, "projects", "-work-proj", "chats")
	if err := os.MkdirAll(chats, 0o755); err != nil {
		t.Fatal(err)
	}
	agent, started := startAgent(t, "sleep", "60")
	h := run(t, home)

	sourcestest.Append(t, filepath.Join(chats, id+".runtime.json"), fmt.Sprintf("{\n  \"schema_version\": 1,\n  \"pid\": %d,\n  \"session_id\": %q,\n  \"work_dir\": \"/work/proj\",\n  \"started_at\": %.3f\n}", agent.Process.Pid, id, float64(started.UnixMilli())/1000))
	chat := filepath.Join(chats, id+".jsonl")
	prompt := `{"uuid":"u1","parentUuid":null,"sessionId":"` + id + `","timestamp":"` + time.Now().UTC().Format(time.RFC3339Nano) + `","type":"user","cwd":"/work/proj","version":"0.24.4","message":{"role":"user","parts":[{"text":"write a marker"}]}}` + "\n"
	sourcestest.Append(t, chat, prompt[:40])
	sourcestest.Append(t, chat, prompt[40:])
	h.WaitFor(t, "running", kittest.Status(id, agentbridge.StatusRunning))
	h.WaitFor(t, "the process bound", func(h *sourcestest.Hub) bool { s, _ := h.Shown(id); return s.PID == agent.Process.Pid })
	sourcestest.Append(t, chat, `{"uuid":"a1","sessionId":"`+id+`","type":"assistant","model":"qwen3-coder","message":{"role":"model","parts":[{"text":"done"}]}}`+"\n")
	h.WaitFor(t, "done", kittest.Status(id, sourcestest.StatusDone))
	if s, _ := h.Shown(id); s.Cwd != "/work/proj" || s.Model != "qwen3-coder" || s.Title != "write a marker" {
		t.Errorf("snapshot %+v", s)
	}
	agent.Process.Kill()
	h.WaitFor(t, "exited", kittest.Status(id, sourcestest.StatusExited))
}

// A runtime file left behind by a TUI that exited long ago names a pid
// that is now another process (or none): the session is not bound to it,
// and it has ended.
func TestStaleRuntimeFileEndsTheSession(t *testing.T) {
	home := t.TempDir()
	const id = "11111111-4319-42fc-ae72-923eb867e18f"
	chats := filepath.Join(home, "projects", "-work-proj", "chats")
	other := exec.Command("sleep", "60")
	if err := other.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { other.Process.Kill(); other.Wait() })
	sourcestest.Append(t, filepath.Join(chats, id+".runtime.json"), fmt.Sprintf("{\n  \"pid\": %d,\n  \"session_id\": %q,\n  \"started_at\": 1000000000.5\n}", other.Process.Pid, id))
	sourcestest.Append(t, filepath.Join(chats, id+".jsonl"), `{"uuid":"u1","sessionId":"`+id+`","timestamp":"2026-12-01T10:00:00Z","type":"user","message":{"parts":[{"text":"hi"}]}}`+"\n")
	h := run(t, home)
	h.WaitFor(t, "ended", kittest.Status(id, sourcestest.StatusExited))
	if s, _ := h.Shown(id); s.PID == other.Process.Pid {
		t.Errorf("bound to a process that is not the agent's: %+v", s)
	}
}

// After a bridge restart the runtime file of a TUI that quit can be read
// before its chat: the chat's turn, read after the verdict, must not make
// the ended session alive again (done, with no process).
func TestStaleRuntimeFileReadBeforeTheChat(t *testing.T) {
	home := t.TempDir()
	const id = "33333333-4319-42fc-ae72-923eb867e18f"
	chats := filepath.Join(home, "projects", "-work-proj", "chats")
	agent, started := startAgent(t, "sleep", "60")
	agent.Process.Kill()
	agent.Wait() // its pid now names no process
	sourcestest.Append(t, filepath.Join(chats, id+".runtime.json"), fmt.Sprintf("{\"pid\": %d, \"session_id\": %q, \"started_at\": %.3f}", agent.Process.Pid, id, float64(started.UnixMilli())/1000))
	h := run(t, home) // the scan reads the runtime file; no chat yet
	at := started.UTC().Format(time.RFC3339Nano)
	sourcestest.Append(t, filepath.Join(chats, id+".jsonl"),
		`{"uuid":"u1","sessionId":"`+id+`","timestamp":"`+at+`","type":"user","message":{"parts":[{"text":"hi"}]}}`+"\n"+
			`{"uuid":"a1","sessionId":"`+id+`","timestamp":"`+at+`","type":"assistant","model":"qwen3-coder","message":{"role":"model","parts":[{"text":"done"}]}}`+"\n")
	h.WaitFor(t, "the whole chat read, the session ended", func(h *sourcestest.Hub) bool {
		s, ok := h.Shown(id)
		return ok && s.Model == "qwen3-coder" && s.LastTurn == agentbridge.LastTurnCompleted
	})
	if s, _ := h.Shown(id); !kittest.Status(id, sourcestest.StatusExited)(h) {
		t.Errorf("the session of a process that is gone shows %+v, want it ended", s)
	}
}

// started_at is when the TUI wrote its runtime file, seconds after its
// process started when the machine is busy (seen with the real 0.24.4):
// the session is still bound to it.
func TestRuntimeFileWrittenLateIsBound(t *testing.T) {
	home := t.TempDir()
	const id = "22222222-4319-42fc-ae72-923eb867e18f"
	chats := filepath.Join(home, "projects", "-work-proj", "chats")
	agent, started := startAgent(t, "sleep", "60")
	written := started.Add(9 * time.Second)
	sourcestest.Append(t, filepath.Join(chats, id+".runtime.json"), fmt.Sprintf("{\"pid\": %d, \"session_id\": %q, \"started_at\": %.3f}", agent.Process.Pid, id, float64(written.UnixMilli())/1000))
	sourcestest.Append(t, filepath.Join(chats, id+".jsonl"), `{"uuid":"u1","sessionId":"`+id+`","timestamp":"`+written.UTC().Format(time.RFC3339Nano)+`","type":"user","message":{"parts":[{"text":"hi"}]}}`+"\n")
	h := run(t, home)
	h.WaitFor(t, "the process bound", func(h *sourcestest.Hub) bool { s, _ := h.Shown(id); return s.PID == agent.Process.Pid })
	agent.Process.Kill()
	h.WaitFor(t, "exited", kittest.Status(id, sourcestest.StatusExited))
}

// Two TUIs ran in one directory and one quit, its runtime file gone: the
// running one's session is bound by its runtime file, and the other one,
// with no runtime file and no other Qwen Code process there (the one
// left is named by the first one's runtime file), has ended.
func TestSessionWithoutRuntimeFile(t *testing.T) {
	home := t.TempDir()
	chats := filepath.Join(home, "projects", "-work-proj", "chats")
	const live, quit = "11111111-aaaa-42fc-ae72-923eb867e18f", "22222222-aaaa-42fc-ae72-923eb867e18f"
	started := time.Now().Add(-time.Hour)
	tree := proctest.Fake(t)
	tree.Add(proctest.Proc{PID: 50, PPID: 1, Exe: "/usr/bin/node", Comm: "node", Cwd: "/work/proj", Started: started,
		Args: []string{"node", "--expose-gc", "/usr/lib/node_modules/@qwen-code/qwen-code/cli.js"}})
	sourcestest.Append(t, filepath.Join(chats, live+".runtime.json"), fmt.Sprintf(`{"pid": 50, "session_id": %q, "started_at": %.3f}`, live, float64(started.Add(time.Second).UnixMilli())/1000))
	for _, id := range []string{live, quit} {
		sourcestest.Append(t, filepath.Join(chats, id+".jsonl"), `{"uuid":"u1","sessionId":"`+id+`","timestamp":"`+time.Now().UTC().Format(time.RFC3339Nano)+`","type":"user","cwd":"/work/proj","message":{"parts":[{"text":"hi"}]}}`+"\n")
	}
	h := kittest.Run(t, New(sources.Options{Home: home, Processes: tree}), Harness)
	h.WaitFor(t, "the live session bound by its runtime file", sourcestest.StatusPID(live, agentbridge.StatusRunning, 50))
	h.WaitFor(t, "the other ended", sourcestest.StatusPID(quit, sourcestest.StatusExited, 0))
}
