package pi

import (
	"path/filepath"
	"testing"
	"time"

	"github.com/agentbridge/agentbridge"
	"github.com/agentbridge/agentbridge/proc/proctest"
	"github.com/agentbridge/agentbridge/sources"
	"github.com/agentbridge/agentbridge/sources/internal/kittest"
	"github.com/agentbridge/agentbridge/sources/sourcestest"
)

// TestLive follows a Pi home that does not exist yet through one session:
// the first batch Pi writes (header to the first tool call), the tool's
// result, the reply, a failed turn; the session is bound to the pi
// process in its cwd and exits with it.
func TestLive(t *testing.T) {
	home := filepath.Join(t.TempDir(), "agent")
	cwd := t.TempDir()
	agent := kittest.StartAgent(t, "pi", cwd)
	h := kittest.Run(t, New(sources.Options{Home: home}), Harness)

	const id = "019f0000-aaaa-7bbb-8ccc-000000000001"
	j := filepath.Join(SessionsDir(home), "--work--", "2026-06-01T10-00-00-000Z_"+id+".jsonl")
	sourcestest.Append(t, j, `{"type":"session","version":3,"id":"`+id+`","timestamp":"2026-06-01T10:00:00.000Z","cwd":"`+cwd+`"}
{"type":"model_change","id":"m1","parentId":null,"timestamp":"2026-06-01T10:00:00.100Z","provider":"p","modelId":"model-a"}
{"type":"message","id":"u1","parentId":"m1","timestamp":"2026-06-01T10:00:01.000Z","message":{"role":"user","content":[{"type":"text","text":"list the files"}]}}
{"type":"message","id":"a1","parentId":"u1","timestamp":"2026-06-01T10:00:02.000Z","message":{"role":"assistant","content":[{"type":"toolCall","id":"call_1","name":"bash"}],"model":"model-a","stopReason":"toolUse"}}
`)
	h.WaitFor(t, "running with its title, model, cwd and process", kittest.Is(id, func(s agentbridge.Snapshot) bool {
		return s.Status == agentbridge.StatusRunning && s.Title == "list the files" &&
			s.Model == "model-a" && s.Cwd == cwd && s.PID == agent.Process.Pid
	}))
	sourcestest.Append(t, j, `{"type":"message","id":"r1","parentId":"a1","timestamp":"2026-06-01T10:00:03.000Z","message":{"role":"toolResult","toolCallId":"call_1","isError":false}}
{"type":"message","id":"a2","parentId":"r1","timestamp":"2026-06-01T10:00:04.000Z","message":{"role":"assistant","content":[{"type":"text","text":"done"}],"model":"model-a","stopReason":"stop"}}
`)
	h.WaitFor(t, "done", kittest.Is(id, func(s agentbridge.Snapshot) bool {
		return s.Status == sourcestest.StatusDone && s.LastTurn == agentbridge.LastTurnCompleted
	}))
	sourcestest.Append(t, j, `{"type":"message","id":"u2","parentId":"a2","timestamp":"2026-06-01T10:01:00.000Z","message":{"role":"user","content":"again"}}
`)
	h.WaitFor(t, "running again", kittest.Status(id, agentbridge.StatusRunning))
	sourcestest.Append(t, j, `{"type":"message","id":"a3","parentId":"u2","timestamp":"2026-06-01T10:01:01.000Z","message":{"role":"assistant","content":[],"stopReason":"error","errorMessage":"overloaded"}}
`)
	h.WaitFor(t, "failed", kittest.Is(id, func(s agentbridge.Snapshot) bool {
		return s.Status == sourcestest.StatusDone && s.LastTurn == agentbridge.LastTurnFailed && s.Error == "overloaded"
	}))
	_ = agent.Process.Kill()
	h.WaitFor(t, "exited with its process", kittest.Status(id, sourcestest.StatusExited))
}

// TestSessionDirVariable: with PI_CODING_AGENT_SESSION_DIR the journals
// sit directly in the directory it names, and a partial line waits for its
// end.
func TestSessionDirVariable(t *testing.T) {
	dir := t.TempDir()
	getenv := func(k string) string {
		if k == EnvSessions {
			return dir
		}
		return ""
	}
	if got := sessionsDir("/home/u/.pi/agent", getenv); got != dir {
		t.Fatalf("sessionsDir = %q, want %q", got, dir)
	}
	if got := sessionsDir("/home/u/.pi/agent", func(string) string { return "relative" }); got != "/home/u/.pi/agent/sessions" {
		t.Fatalf("a relative %s is honoured: %q", EnvSessions, got)
	}
	procs := proctest.Running(t, "/usr/bin/pi", "/w") // Pi runs in the session's cwd
	h := kittest.Run(t, New(sources.Options{Home: "/nowhere", Getenv: getenv, Processes: procs}), Harness)
	const id = "019f0000-aaaa-7bbb-8ccc-000000000002"
	j := filepath.Join(dir, "2026-06-01T10-00-00-000Z_"+id+".jsonl")
	sourcestest.Append(t, j, `{"type":"session","version":3,"id":"`+id+`","timestamp":"2026-06-01T10:00:00.000Z","cwd":"/w"}
{"type":"message","id":"u1","message":{"role":"user","content":"hi"}}
{"type":"message","id":"a1","message":{"role":"assistant","content":[],"stopRea`)
	h.WaitFor(t, "running", kittest.Status(id, agentbridge.StatusRunning))
	sourcestest.Append(t, j, `son":"aborted"}}
`)
	h.WaitFor(t, "cancelled", kittest.Is(id, func(s agentbridge.Snapshot) bool {
		return s.Status == sourcestest.StatusDone && s.LastTurn == agentbridge.LastTurnInterrupted
	}))
}

// TestResumedByAnotherProcess: a session whose process exited is taken up
// again by the pi process that resumes it (pi --continue appends to the
// same journal), and exits with that one.
func TestResumedByAnotherProcess(t *testing.T) {
	home := filepath.Join(t.TempDir(), "agent")
	cwd := t.TempDir()
	first := kittest.StartAgent(t, "pi", cwd)
	h := kittest.Run(t, New(sources.Options{Home: home}), Harness)
	const id = "019f0000-aaaa-7bbb-8ccc-000000000003"
	j := filepath.Join(SessionsDir(home), "--work--", "2026-06-01T10-00-00-000Z_"+id+".jsonl")
	sourcestest.Append(t, j, `{"type":"session","version":3,"id":"`+id+`","timestamp":"2026-06-01T10:00:00.000Z","cwd":"`+cwd+`"}
{"type":"message","id":"u1","message":{"role":"user","content":"one"}}
{"type":"message","id":"a1","message":{"role":"assistant","content":[],"stopReason":"stop"}}
`)
	h.WaitFor(t, "bound to the first process", kittest.Is(id, func(s agentbridge.Snapshot) bool { return s.PID == first.Process.Pid }))
	_ = first.Process.Kill()
	h.WaitFor(t, "exited", kittest.Status(id, sourcestest.StatusExited))

	second := kittest.StartAgent(t, "pi", cwd)
	sourcestest.Append(t, j, `{"type":"message","id":"u2","message":{"role":"user","content":"two"}}
`)
	h.WaitFor(t, "running in the second process", kittest.Is(id, func(s agentbridge.Snapshot) bool {
		return s.Status == agentbridge.StatusRunning && s.PID == second.Process.Pid
	}))
	_ = second.Process.Kill()
	h.WaitFor(t, "exited again", kittest.Status(id, sourcestest.StatusExited))
}

// TestTwoProcessesOneCwd: two Pi TUIs in one directory, the second started
// after the first session was written. The first is bound to the only Pi
// process there; the second session, begun after the second process
// started, to that one (the first process runs the first session); each
// exits with its own process. A session begun long after both processes
// started (a /new inside a running TUI) binds neither.
func TestTwoProcessesOneCwd(t *testing.T) {
	home := filepath.Join(t.TempDir(), "agent")
	cwd := t.TempDir()
	dir := filepath.Join(SessionsDir(home), "--work--")
	journal := func(id string, born time.Time) string {
		t.Helper()
		j := filepath.Join(dir, "2026-06-01T10-00-00-000Z_"+id+".jsonl")
		at := born.UTC().Format("2006-01-02T15:04:05.000Z")
		sourcestest.Append(t, j, `{"type":"session","version":3,"id":"`+id+`","timestamp":"`+at+`","cwd":"`+cwd+`"}
{"type":"message","id":"u1","timestamp":"`+at+`","message":{"role":"user","content":"hi"}}
{"type":"message","id":"a1","timestamp":"`+at+`","message":{"role":"assistant","content":[],"stopReason":"stop"}}
`)
		return j
	}
	first := kittest.StartAgent(t, "pi", cwd)
	h := kittest.Run(t, New(sources.Options{Home: home}), Harness)
	const a, b, c = "019f0000-aaaa-7bbb-8ccc-00000000000a", "019f0000-aaaa-7bbb-8ccc-00000000000b", "019f0000-aaaa-7bbb-8ccc-00000000000c"
	journal(a, time.Now())
	h.WaitFor(t, "the first session bound to the first process", kittest.Is(a, func(s agentbridge.Snapshot) bool {
		return s.Status == sourcestest.StatusDone && s.PID == first.Process.Pid
	}))
	second := kittest.StartAgent(t, "pi", cwd)
	journal(b, time.Now())
	h.WaitFor(t, "the second session bound to the second process", kittest.Is(b, func(s agentbridge.Snapshot) bool {
		return s.Status == sourcestest.StatusDone && s.PID == second.Process.Pid
	}))
	// A minute after both processes began: neither is known to be its writer.
	journal(c, time.Now().Add(time.Minute))
	h.WaitFor(t, "the late session, unbound", kittest.Is(c, func(s agentbridge.Snapshot) bool {
		return s.Status == sourcestest.StatusDone && s.PID == 0
	}))
	_ = first.Process.Kill()
	h.WaitFor(t, "the first session exited", kittest.Status(a, sourcestest.StatusExited))
	for _, id := range []string{b, c} {
		if s, _ := h.Shown(id); s.Status != sourcestest.StatusDone {
			t.Fatalf("%s: %+v, want done", id, s)
		}
	}
	_ = second.Process.Kill()
	h.WaitFor(t, "the second session exited", kittest.Status(b, sourcestest.StatusExited))
}

// TestTwoNewProcessesOneCwd: two Pi processes that both started just
// before a session began are both its possible writers: it binds neither.
func TestTwoNewProcessesOneCwd(t *testing.T) {
	home := filepath.Join(t.TempDir(), "agent")
	cwd := t.TempDir()
	kittest.StartAgent(t, "pi", cwd)
	kittest.StartAgent(t, "pi", cwd)
	h := kittest.Run(t, New(sources.Options{Home: home}), Harness)
	const id = "019f0000-aaaa-7bbb-8ccc-00000000000d"
	at := time.Now().UTC().Format("2006-01-02T15:04:05.000Z")
	sourcestest.Append(t, filepath.Join(SessionsDir(home), "--work--", "2026-06-01T10-00-00-000Z_"+id+".jsonl"),
		`{"type":"session","version":3,"id":"`+id+`","timestamp":"`+at+`","cwd":"`+cwd+`"}
{"type":"message","id":"u1","timestamp":"`+at+`","message":{"role":"user","content":"hi"}}
`)
	h.WaitFor(t, "running, unbound", kittest.Is(id, func(s agentbridge.Snapshot) bool {
		return s.Status == agentbridge.StatusRunning && s.PID == 0
	}))
}
