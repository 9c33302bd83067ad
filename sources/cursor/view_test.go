package cursor

import (
	"testing"

	"github.com/agentbridge/agentbridge"
	"github.com/agentbridge/agentbridge/fold"
)

// TestLinesAfterTheExit: the bridge folds agent.exited when the agent's
// process ends, which may be seen before the transcript's last lines are
// read. Those lines map to what the fold accepts (no tool.finished for
// the tools the exit closed), and the turn_ended among them still tells
// how the turn ended.
func TestLinesAfterTheExit(t *testing.T) {
	s := fold.NewSession("s1", Harness)
	m := &mapper{cwd: "/w"}
	lines := []string{
		`{"role":"user","message":{"content":[{"type":"text","text":"<user_query>list</user_query>"}]}}`,
		`{"role":"assistant","message":{"content":[{"type":"tool_use","id":"t1","name":"Shell"}]}}`,
		"exit",
		`{"role":"assistant","message":{"content":[{"type":"text","text":"done"}]}}`,
		`{"type":"turn_ended","status":"success"}`,
	}
	for i, l := range lines {
		evs := []agentbridge.Event{{Kind: agentbridge.KindAgentExited}}
		if l != "exit" {
			evs, _ = m.Map(s, i+1, []byte(l), nil)
		}
		for _, e := range evs {
			if is := s.Apply(e); len(is) > 0 {
				t.Errorf("line %d: the fold refused %s: %+v", i+1, e.Kind, is)
			}
		}
	}
	if snap := s.Snapshot(); snap.LastTurn != agentbridge.LastTurnCompleted || snap.Tool != "" {
		t.Errorf("last turn %q, tool %q; want completed, none", snap.LastTurn, snap.Tool)
	}
}
