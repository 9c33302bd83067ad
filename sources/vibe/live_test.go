package vibe

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/agentbridge/agentbridge"
	"github.com/agentbridge/agentbridge/sources"
	"github.com/agentbridge/agentbridge/sources/internal/kittest"
	"github.com/agentbridge/agentbridge/sources/sourcestest"
)

// TestLive follows a Vibe home that does not exist yet through a session
// that runs a subagent: the prompt (running), meta.json (cwd, model, and
// the vibe process in that cwd), the task call and its subagent, the
// subagent's own messages under agents/ (never a session of their own),
// the answer, the process's exit.
func TestLive(t *testing.T) {
	home := filepath.Join(t.TempDir(), "vibe")
	cwd := t.TempDir()
	agent := kittest.StartAgent(t, "vibe", cwd)
	h := kittest.Run(t, New(sources.Options{Home: home}), Harness)

	const id = "session_20260707_162829_447cd2b0"
	dir := filepath.Join(SessionsDir(home), id)
	msgs := filepath.Join(dir, messagesFile)
	sourcestest.Append(t, msgs, `{"role": "user", "content": "summarise the repo", "injected": false, "message_id": "u1"}
`)
	h.WaitFor(t, "running", kittest.Status(id, agentbridge.StatusRunning))
	kittest.Replace(t, filepath.Join(dir, metaFile), `{
  "session_id": "447cd2b0-0000-4000-8000-000000000001",
  "environment": {"working_directory": "`+cwd+`"},
  "title": "summarise the repo",
  "title_source": "auto",
  "config": {"active_model": "mistral-medium-3.5"}
}
`)
	h.WaitFor(t, "cwd, model and process from meta.json", kittest.Is(id, func(s agentbridge.Snapshot) bool {
		return s.Cwd == cwd && s.Model == "mistral-medium-3.5" && s.PID == agent.Process.Pid && s.Title == "summarise the repo"
	}))
	sourcestest.Append(t, msgs, `{"role": "assistant", "injected": false, "tool_calls": [{"id": "task1", "index": 0, "function": {"name": "task", "arguments": "{\"task\": \"Read the README\", \"agent\": \"explore\"}"}, "type": "function"}], "message_id": "a1"}
`)
	h.WaitFor(t, "a running subagent", kittest.Is(id, func(s agentbridge.Snapshot) bool {
		return len(s.Subagents) == 1 && s.Subagents[0].Status == agentbridge.SubagentRunning && s.Subagents[0].Type == "explore"
	}))
	sourcestest.Append(t, filepath.Join(dir, "agents", "explore_20260707_162830_2b37328f", messagesFile),
		`{"role": "user", "content": "Read the README", "injected": false, "message_id": "c1"}
`)
	sourcestest.Append(t, msgs, `{"role": "tool", "content": "response: A tool.\nturns_used: 1\ncompleted: True", "injected": false, "name": "task", "tool_call_id": "task1"}
{"role": "assistant", "content": "done", "injected": false, "message_id": "a2"}
`)
	h.WaitFor(t, "done, its subagent completed", kittest.Is(id, func(s agentbridge.Snapshot) bool {
		return s.Status == sourcestest.StatusDone && len(s.Subagents) == 1 && s.Subagents[0].Status == agentbridge.SubagentCompleted
	}))
	if n := len(h.Snapshots()); n != 1 {
		t.Fatalf("%d sessions, want 1: a subagent's messages are not a session", n)
	}
	_ = agent.Process.Kill()
	h.WaitFor(t, "exited with its process", kittest.Status(id, sourcestest.StatusExited))
}

// A meta.json that is a FIFO (or a link to a device) is skipped with a
// typed diagnostic, and the session is followed all the same.
func TestHostileMetaFile(t *testing.T) {
	home := filepath.Join(t.TempDir(), "vibe")
	h := kittest.Run(t, New(sources.Options{Home: home}), Harness)
	const id = "session_20260707_162829_447cd2b1"
	dir := filepath.Join(SessionsDir(home), id)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mkfifo(filepath.Join(dir, metaFile), 0o644); err != nil {
		t.Fatal(err)
	}
	sourcestest.Append(t, filepath.Join(dir, messagesFile), `{"role": "user", "content": "hi", "injected": false, "message_id": "u1"}
`)
	h.WaitFor(t, "running", kittest.Status(id, agentbridge.StatusRunning))
	h.WaitFor(t, "the side file's diagnostic", func(h *sourcestest.Hub) bool {
		for _, d := range h.Diagnostics() {
			if d.Code == sources.CodeSideNotRegular && !strings.Contains(d.Message, dir) {
				return true
			}
		}
		return false
	})
}
