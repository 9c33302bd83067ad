package codex

import (
	"log/slog"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/agentbridge/agentbridge"
	"github.com/agentbridge/agentbridge/internal/testenv"
	"github.com/agentbridge/agentbridge/proc/proctest"
	"github.com/agentbridge/agentbridge/sources/sourcestest"
)

// TestReaderIsNotTheAgent: a rollout followed with tail -f (and read by a
// process named like Codex) is bound to the codex process writing it, at
// the scan and live alike; the readers' exit leaves the session as it is,
// the writer's exit ends it.
func TestReaderIsNotTheAgent(t *testing.T) {
	tail, err := exec.LookPath("tail")
	if err != nil {
		testenv.Missing(t, "needs tail(1)")
	}
	for _, atScan := range []bool{true, false} {
		name := map[bool]string{true: "at the scan", false: "live"}[atScan]
		t.Run(name, func(t *testing.T) {
			home := t.TempDir()
			const id = "019f6400-0000-7000-8000-000000000001"
			path := filepath.Join(home, "sessions", "2026", "11", "30", "rollout-2026-11-30T09-00-00-"+id+".jsonl")
			r := createRollout(t, path)
			// Readers first, so that they are the lowest pids.
			follower := proctest.Start(t, exec.Command(tail, "-f", path))
			reader := proctest.Hold(t, "codex", path, proctest.Read)
			writer := holdOpen(t, path)
			meta := []string{`"type":"session_meta","payload":{"id":"` + id + `","cwd":"/srv/x","source":"cli"}`,
				`"type":"event_msg","payload":{"type":"task_started","turn_id":"t1"}`}
			if atScan {
				r.add(meta...)
			}
			st := startStream(t, New(Options{Home: home, Logger: slog.New(slog.DiscardHandler)}))
			if !atScan {
				st.waitFor(t, "start-up", func(map[string]agentbridge.Snapshot) bool { return true })
				r.add(meta...)
			}
			st.waitFor(t, "bound to the writer", func(m map[string]agentbridge.Snapshot) bool {
				s, ok := m[id]
				return ok && s.Status == agentbridge.StatusRunning && s.PID == writer.Process.Pid
			})
			for _, c := range []*exec.Cmd{follower, reader} {
				_ = c.Process.Kill()
				_ = c.Wait()
			}
			// The readers' exit is nothing to the session: the turn's end,
			// written after it, finds it done under the writer, not exited.
			time.Sleep(100 * time.Millisecond)
			r.add(`"type":"event_msg","payload":{"type":"task_complete","turn_id":"t1","last_agent_message":"ok"}`)
			st.waitFor(t, "the turn's end after the readers' exit", func(m map[string]agentbridge.Snapshot) bool {
				s := m[id]
				return s.Status == sourcestest.StatusDone && s.PID == writer.Process.Pid
			})
			_ = writer.Process.Kill()
			_ = writer.Wait()
			st.waitFor(t, "the writer's exit", func(m map[string]agentbridge.Snapshot) bool {
				return m[id].Status == sourcestest.StatusExited
			})
		})
	}
}
