package fold

import (
	"slices"
	"testing"

	"github.com/agentbridge/agentbridge"
)

// TestView: the view tells what the journal's events opened and did not
// close; agent.exited closes the tools but not the turn, agent.done both.
func TestView(t *testing.T) {
	if v := ViewOf(nil); v.InTurn() || v.OpenTools(nil) != nil || v.ToolOpen("t1") || v.SubagentRunning("a1") || v.RunningSubagents(nil) != nil {
		t.Fatal("the view of an unknown session is not empty")
	}
	s := NewSession("s1", "cursor")
	apply := func(e agentbridge.Event) {
		t.Helper()
		if is := s.Apply(e); len(is) > 0 {
			t.Fatalf("%s: %+v", e.Kind, is)
		}
	}
	v := ViewOf(s)
	apply(agentbridge.Event{Kind: agentbridge.KindTurnStarted, TurnID: "u1"})
	apply(agentbridge.Event{Kind: agentbridge.KindToolStarted, ToolID: "t1", Name: "Read"})
	apply(agentbridge.Event{Kind: agentbridge.KindToolStarted, ToolID: "t2", Name: "Task"})
	apply(agentbridge.Event{Kind: agentbridge.KindSubagentStarted, SubagentID: "t2", ParentAgentID: "s1"})
	if !v.InTurn() || !slices.Equal(v.OpenTools(nil), []string{"t1", "t2"}) || !v.ToolOpen("t2") || !v.SubagentRunning("t2") ||
		!slices.Equal(v.RunningSubagents(nil), []string{"t2"}) {
		t.Fatalf("in a turn: InTurn %v, tools %v", v.InTurn(), v.OpenTools(nil))
	}
	apply(agentbridge.Event{Kind: agentbridge.KindToolFinished, ToolID: "t1", Outcome: agentbridge.OutcomeSuccess})
	if v.ToolOpen("t1") || !slices.Equal(v.OpenTools(nil), []string{"t2"}) {
		t.Fatalf("tool t1 still open: %v", v.OpenTools(nil))
	}
	apply(agentbridge.Event{Kind: agentbridge.KindAgentExited})
	if !v.InTurn() || v.OpenTools(nil) != nil || v.SubagentRunning("t2") || v.RunningSubagents(nil) != nil {
		t.Fatalf("after exit: InTurn %v (want true), tools %v, subagent running %v", v.InTurn(), v.OpenTools(nil), v.SubagentRunning("t2"))
	}
	apply(agentbridge.Event{Kind: agentbridge.KindAgentDone, Outcome: agentbridge.OutcomeSuccess})
	if v.InTurn() {
		t.Fatal("agent.done left the turn open")
	}
}
