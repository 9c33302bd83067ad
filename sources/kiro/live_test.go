package kiro

import (
	"fmt"
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/agentbridge/agentbridge"
	"github.com/agentbridge/agentbridge/internal/testenv"
	"github.com/agentbridge/agentbridge/sources"
	"github.com/agentbridge/agentbridge/sources/internal/kittest"
	"github.com/agentbridge/agentbridge/sources/sourcestest"
)

const sidecarJSON = `{
  "session_id": "%s",
  "cwd": "%s",
  "title": "deploy it",
  "session_state": {
    "conversation_metadata": {"user_turn_metadatas": [%s]},
    "rts_model_state": {"model_info": {"model_id": "claude-sonnet-4.5"}}
  }
}
`

// TestLive follows a Kiro home that does not exist yet through a session
// whose second turn is interrupted: the journal never shows the turn's
// last message, the rewritten sidecar ends it. The sidecar's cwd binds the
// kiro-cli process in it, which exits.
func TestLive(t *testing.T) {
	home := filepath.Join(t.TempDir(), "kiro")
	cwd := t.TempDir()
	agent := kittest.StartAgent(t, "kiro-cli", cwd)
	h := kittest.Run(t, New(sources.Options{Home: home}), Harness)

	const id = "3f0c2d1e-0000-4000-8000-00000000c1c1"
	j := filepath.Join(SessionsDir(home), id+".jsonl")
	sourcestest.Append(t, j, `{"version":"v1","kind":"Prompt","data":{"message_id":"p1","content":[{"kind":"text","data":"deploy it"}],"meta":{"timestamp":1780617364}}}
`)
	h.WaitFor(t, "running", kittest.Status(id, agentbridge.StatusRunning))
	sourcestest.Append(t, j, `{"version":"v1","kind":"AssistantMessage","data":{"message_id":"m1","content":[{"kind":"text","data":"ok"}]}}
`)
	h.WaitFor(t, "done", kittest.Status(id, sourcestest.StatusDone))
	side := filepath.Join(SessionsDir(home), id+".json")
	kittest.Replace(t, side, fmt.Sprintf(sidecarJSON, id, cwd, `{"message_ids":["p1","m1"],"end_reason":"UserTurnEnd"}`))
	h.WaitFor(t, "the sidecar's cwd and model, and the process", kittest.Is(id, func(s agentbridge.Snapshot) bool {
		return s.Cwd == cwd && s.Model == "claude-sonnet-4.5" && s.PID == agent.Process.Pid && s.Status == sourcestest.StatusDone
	}))
	sourcestest.Append(t, j, `{"version":"v1","kind":"Prompt","data":{"message_id":"p2","content":[{"kind":"text","data":"again"}]}}
{"version":"v1","kind":"AssistantMessage","data":{"message_id":"m2","content":[{"kind":"toolUse","data":{"toolUseId":"t1","name":"shell"}}]}}
`)
	h.WaitFor(t, "running a tool", kittest.Status(id, agentbridge.StatusRunning))
	kittest.Replace(t, side, fmt.Sprintf(sidecarJSON, id, cwd,
		`{"message_ids":["p1","m1"],"end_reason":"UserTurnEnd"},{"message_ids":["p2","m2"],"end_reason":"Interrupted","end_timestamp":"2026-06-05T01:57:30Z"}`))
	h.WaitFor(t, "cancelled by the sidecar", kittest.Is(id, func(s agentbridge.Snapshot) bool {
		return s.Status == sourcestest.StatusDone && s.LastTurn == agentbridge.LastTurnInterrupted
	}))
	_ = agent.Process.Kill()
	h.WaitFor(t, "exited with its process", kittest.Status(id, sourcestest.StatusExited))
}

// TestHostileSidecar: a sidecar that is a FIFO, or a sparse file far over
// the sidecar bound, is skipped (never opened for a blocking read, never
// read whole); the journal still speaks.
func TestHostileSidecar(t *testing.T) {
	home := filepath.Join(t.TempDir(), "kiro")
	dir := SessionsDir(home)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	const fifo, sparse = "3f0c2d1e-0000-4000-8000-0000000000f1", "3f0c2d1e-0000-4000-8000-0000000000f2"
	if err := syscall.Mkfifo(filepath.Join(dir, fifo+".json"), 0o644); err != nil {
		testenv.Missing(t, "no FIFOs here: %v", err)
	}
	f, err := os.Create(filepath.Join(dir, sparse+".json"))
	if err != nil {
		t.Fatal(err)
	}
	if err := f.Truncate(16 * maxSidecar); err != nil {
		t.Fatal(err)
	}
	f.Close()
	h := kittest.Run(t, New(sources.Options{Home: home}), Harness)
	for _, id := range []string{fifo, sparse} {
		sourcestest.Append(t, filepath.Join(dir, id+".jsonl"), `{"version":"v1","kind":"Prompt","data":{"message_id":"p1","content":[{"kind":"text","data":"hi"}]}}
{"version":"v1","kind":"AssistantMessage","data":{"content":[{"kind":"text","data":"ok"}]}}
`)
		h.WaitFor(t, "done beside a hostile sidecar", kittest.Status(id, sourcestest.StatusDone))
	}
}
