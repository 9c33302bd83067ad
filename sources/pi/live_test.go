package pi

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/agentbridge/agentbridge"
	"github.com/agentbridge/agentbridge/hub"
	"github.com/agentbridge/agentbridge/sources/sourcestest"
)

// run starts the source with a fake hub until the test ends.
func run(t *testing.T, cfg Config) *sourcestest.Hub {
	t.Helper()
	h := sourcestest.New()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- New(cfg).Run(ctx, hub.Start{Enabled: []string{Harness}, Publisher: h}) }()
	t.Cleanup(func() {
		cancel()
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("Run = %v", err)
			}
		case <-time.After(10 * time.Second):
			t.Errorf("Run did not return after cancel")
		}
		if n := h.Refused(); n > 0 {
			t.Errorf("the hub refused %d calls", n)
		}
	})
	return h
}

func appendTo(t *testing.T, path, s string) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.WriteString(s); err != nil {
		t.Fatal(err)
	}
}

func status(h *sourcestest.Hub, id string, want agentbridge.Status) func(*sourcestest.Hub) bool {
	return func(*sourcestest.Hub) bool {
		s, ok := h.Snapshot(id)
		return ok && s.Status == want
	}
}

// startAgent runs a process whose command name is name (a symbolic link
// to sleep) in dir, as the agent's own process would be; it is killed when
// the test ends.
func startAgent(t *testing.T, name, dir string) *exec.Cmd {
	t.Helper()
	sleep, err := exec.LookPath("sleep")
	if err != nil {
		t.Skip("no sleep binary")
	}
	bin := filepath.Join(t.TempDir(), name)
	if err := os.Symlink(sleep, bin); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, "60")
	cmd.Dir = dir
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	return cmd
}

// TestLive follows a Pi home that does not exist yet through one session:
// the first batch Pi writes (header to the first tool call), the tool's
// result, the reply, a failed turn; the session is bound to the pi
// process in its cwd and exits with it.
func TestLive(t *testing.T) {
	home := filepath.Join(t.TempDir(), "agent")
	cwd := t.TempDir()
	agent := startAgent(t, "pi", cwd)
	h := run(t, Config{SessionsDir: SessionsDir(home)})

	dir := filepath.Join(SessionsDir(home), "--work--")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	const id = "019f0000-aaaa-7bbb-8ccc-000000000001"
	j := filepath.Join(dir, "2026-06-01T10-00-00-000Z_"+id+".jsonl")
	appendTo(t, j, `{"type":"session","version":3,"id":"`+id+`","timestamp":"2026-06-01T10:00:00.000Z","cwd":"`+cwd+`"}
{"type":"model_change","id":"m1","parentId":null,"timestamp":"2026-06-01T10:00:00.100Z","provider":"p","modelId":"model-a"}
{"type":"message","id":"u1","parentId":"m1","timestamp":"2026-06-01T10:00:01.000Z","message":{"role":"user","content":[{"type":"text","text":"list the files"}]}}
{"type":"message","id":"a1","parentId":"u1","timestamp":"2026-06-01T10:00:02.000Z","message":{"role":"assistant","content":[{"type":"toolCall","id":"call_1","name":"bash"}],"model":"model-a","stopReason":"toolUse"}}
`)
	h.WaitFor(t, "running with its title, model, cwd and process", func(h *sourcestest.Hub) bool {
		s, ok := h.Snapshot(id)
		return ok && s.Status == agentbridge.StatusRunning && s.Title == "list the files" &&
			s.Model == "model-a" && s.Cwd == cwd && s.PID == agent.Process.Pid
	})
	appendTo(t, j, `{"type":"message","id":"r1","parentId":"a1","timestamp":"2026-06-01T10:00:03.000Z","message":{"role":"toolResult","toolCallId":"call_1","isError":false}}
{"type":"message","id":"a2","parentId":"r1","timestamp":"2026-06-01T10:00:04.000Z","message":{"role":"assistant","content":[{"type":"text","text":"done"}],"model":"model-a","stopReason":"stop"}}
`)
	h.WaitFor(t, "done", func(h *sourcestest.Hub) bool {
		s, ok := h.Snapshot(id)
		return ok && s.Status == agentbridge.StatusDone && s.LastTurn == agentbridge.LastTurnCompleted
	})
	appendTo(t, j, `{"type":"message","id":"u2","parentId":"a2","timestamp":"2026-06-01T10:01:00.000Z","message":{"role":"user","content":"again"}}
`)
	h.WaitFor(t, "running again", status(h, id, agentbridge.StatusRunning))
	appendTo(t, j, `{"type":"message","id":"a3","parentId":"u2","timestamp":"2026-06-01T10:01:01.000Z","message":{"role":"assistant","content":[],"stopReason":"error","errorMessage":"overloaded"}}
`)
	h.WaitFor(t, "failed", func(h *sourcestest.Hub) bool {
		s, ok := h.Snapshot(id)
		return ok && s.Status == agentbridge.StatusDone && s.LastTurn == agentbridge.LastTurnFailed
	})
	_ = agent.Process.Kill()
	h.WaitFor(t, "exited with its process", status(h, id, agentbridge.StatusExited))
}

// TestSessionDirVariable: with PI_CODING_AGENT_SESSION_DIR the journals
// sit directly in the directory it names, and a partial line waits for its
// end.
func TestSessionDirVariable(t *testing.T) {
	dir := t.TempDir()
	h := run(t, Config{SessionsDir: dir})
	const id = "019f0000-aaaa-7bbb-8ccc-000000000002"
	j := filepath.Join(dir, "2026-06-01T10-00-00-000Z_"+id+".jsonl")
	appendTo(t, j, `{"type":"session","version":3,"id":"`+id+`","timestamp":"2026-06-01T10:00:00.000Z","cwd":"/w"}
{"type":"message","id":"u1","message":{"role":"user","content":"hi"}}
{"type":"message","id":"a1","message":{"role":"assistant","content":[],"stopRea`)
	h.WaitFor(t, "running", status(h, id, agentbridge.StatusRunning))
	appendTo(t, j, `son":"aborted"}}
`)
	h.WaitFor(t, "cancelled", func(h *sourcestest.Hub) bool {
		s, ok := h.Snapshot(id)
		return ok && s.Status == agentbridge.StatusDone && s.LastTurn == agentbridge.LastTurnCancelled
	})
}
