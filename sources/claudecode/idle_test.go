package claudecode

import (
	"path/filepath"
	"testing"
	"time"

	"github.com/agentbridge/agentbridge"
	"github.com/agentbridge/agentbridge/sources/sourcestest"
)

// TestIdleEndsTurn: an Escape before the model's first output writes no
// end to the transcript; the registry going busy → idle ends the turn,
// cancelled, after the grace. A turn_duration written just after the
// registry went idle (the order Claude Code writes them in) wins: the turn
// completed.
func TestIdleEndsTurn(t *testing.T) {
	e := startLive(t, nil)
	proc := helper(t)
	pid := proc.Process.Pid
	const sid = "6e7f0c1a-2b3c-4d5e-8f90-a1b2c3d4e5f6"
	tr := filepath.Join("projects", "-work-proj", sid+".jsonl")
	v := e.view

	e.registry(pid, sid, "idle", "", 1000)
	v.waitFor(t, "fresh session", sid, status(agentbridge.StatusIdle))

	// Escape before any output: no marker, the registry goes idle.
	e.append(tr, prompt(sid, 1, "p-1", "wait for it"))
	v.waitFor(t, "prompt", sid, status(agentbridge.StatusRunning))
	e.registry(pid, sid, "busy", "", 1100)
	// A title written after the busy registry is the barrier that shows
	// busy was read (an idle written at once could replace it unread).
	e.append(tr, rec(sid, 2, "custom-title", `"customTitle":"Waiting"`))
	v.waitFor(t, "busy read", sid, func(s agentbridge.Snapshot, ok bool) bool { return ok && s.Title == "Waiting" })
	e.registry(pid, sid, "idle", "", 1200)
	start := time.Now()
	s := v.waitFor(t, "idle past the grace", sid, status(sourcestest.StatusDone))
	if s.LastTurn != agentbridge.LastTurnInterrupted {
		t.Errorf("lastTurn %q, want cancelled (no reply came)", s.LastTurn)
	}
	if d := time.Since(start); d < idleGrace/2 {
		t.Errorf("ended after %v, before the grace", d)
	}

	// The registry goes idle a moment before turn_duration: completed.
	e.append(tr, prompt(sid, 3, "p-3", "answer this"))
	v.waitFor(t, "second prompt", sid, status(agentbridge.StatusRunning))
	e.registry(pid, sid, "busy", "", 1300)
	e.append(tr, rec(sid, 3, "custom-title", `"customTitle":"Answering"`))
	v.waitFor(t, "busy read", sid, func(s agentbridge.Snapshot, ok bool) bool { return ok && s.Title == "Answering" })
	e.append(tr, reply(sid, 4, "partial", ""))
	e.registry(pid, sid, "idle", "", 1400)
	e.append(tr, rec(sid, 5, "system", `"subtype":"turn_duration","durationMs":10`))
	s = v.waitFor(t, "turn_duration", sid, status(sourcestest.StatusDone))
	if s.LastTurn != agentbridge.LastTurnCompleted {
		t.Errorf("lastTurn %q, want completed", s.LastTurn)
	}
	// Past the grace nothing changes: the turn is not ended twice, and the
	// next prompt still opens a turn that only its own end closes.
	time.Sleep(idleGrace + 500*time.Millisecond)
	e.append(tr, prompt(sid, 6, "p-6", "third"))
	e.registry(pid, sid, "busy", "", 1500)
	v.waitFor(t, "third prompt", sid, status(agentbridge.StatusRunning))
	v.mu.Lock()
	done := 0
	for _, k := range v.kinds {
		if k == agentbridge.KindAgentDone {
			done++
		}
	}
	v.mu.Unlock()
	if done != 2 {
		t.Errorf("%d agent.done events, want 2 (one per ended turn)", done)
	}
}
