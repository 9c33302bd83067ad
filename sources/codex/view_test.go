package codex

import (
	"testing"

	"github.com/agentbridge/agentbridge"
	foldpkg "github.com/agentbridge/agentbridge/fold"
)

// TestResumeAfterTheProcessDied: the process died with a tool open (the
// bridge folds agent.exited, which closes it; the rollout never ends it),
// then codex resume appends a new turn to the rollout. Its end finishes
// no tool the exit closed (a tool.finished the fold would refuse: a
// diagnostic), and the resumed session's turn completes.
func TestResumeAfterTheProcessDied(t *testing.T) {
	e := NewEngine()
	var s *foldpkg.Session
	e.SetViews(func(string) foldpkg.View { return foldpkg.ViewOf(s) })
	apply := func(pubs []Pub) {
		t.Helper()
		for _, p := range pubs {
			if s == nil {
				s = foldpkg.NewSession(p.Session, Harness)
			}
			if is := s.Apply(p.Event); len(is) > 0 {
				t.Errorf("the fold refused %s %s: %+v", p.Event.Kind, p.Event.ToolID, is)
			}
		}
	}
	for _, l := range []string{metaLine, startLine, callLine} {
		apply(e.Line("k", []byte(l)))
	}
	apply([]Pub{{s.Snapshot().ID, agentbridge.Event{Kind: agentbridge.KindAgentExited}}})
	apply(e.Restate("k", 4242))
	for _, l := range []string{
		`{"timestamp":"2026-05-02T10:00:01.000Z","type":"event_msg","payload":{"type":"task_started","turn_id":"t2"}}`,
		`{"timestamp":"2026-05-02T10:00:04.000Z","type":"event_msg","payload":{"type":"task_complete","turn_id":"t2","last_agent_message":"done"}}`,
	} {
		apply(e.Line("k", []byte(l)))
	}
	if snap := s.Snapshot(); snap.LastTurn != agentbridge.LastTurnCompleted || snap.Status != agentbridge.StatusIdle || snap.PID != 4242 {
		t.Errorf("after the resumed turn: %+v; want idle, completed, pid 4242", snap)
	}
}
