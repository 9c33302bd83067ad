package qwen

import (
	"testing"

	"github.com/agentbridge/agentbridge"
	"github.com/agentbridge/agentbridge/fold"
)

// TestLinesAfterTheExit: the bridge folds agent.exited when the agent's
// process ends, which may be seen before the chat's last lines are read;
// it closes the tools and waits. Those lines map to what the fold accepts
// (no wait.finished or tool.finished for what the exit closed), and the
// answer among them still ends the turn.
func TestLinesAfterTheExit(t *testing.T) {
	s := fold.NewSession("s1", Harness)
	var st State
	st.SetApprovalMode(ModeDefault)
	lines := []string{
		`{"uuid":"u1","sessionId":"s1","type":"user","message":{"parts":[{"text":"touch a file"}]}}`,
		`{"uuid":"a1","sessionId":"s1","type":"assistant","message":{"parts":[{"functionCall":{"id":"c1","name":"run_shell_command","args":{"command":"touch x"}}}]}}`,
		"exit",
		`{"uuid":"r1","sessionId":"s1","type":"tool_result","toolCallResult":{"callId":"c1","status":"success"}}`,
		`{"uuid":"a2","sessionId":"s1","type":"assistant","message":{"parts":[{"text":"done"}]}}`,
	}
	for i, l := range lines {
		evs := []agentbridge.Event{{Kind: agentbridge.KindAgentExited}}
		if l != "exit" {
			evs, _ = Map("s1", s, []byte(l), &st)
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
