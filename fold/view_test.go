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

// TestHooksLeaveTheView: what a mapper reads is the journal's alone; no
// hook (a prompt opened, answered, the turn's end) changes the turn, the
// open tools or the running subagents, while the status does show them.
func TestHooksLeaveTheView(t *testing.T) {
	s := NewSession("s1", "claude-code")
	for _, e := range []agentbridge.Event{
		{Kind: agentbridge.KindTurnStarted, TurnID: "u1", OccurredAt: 10},
		{Kind: agentbridge.KindToolStarted, ToolID: "t1", Name: "Bash", OccurredAt: 11},
		{Kind: agentbridge.KindToolStarted, ToolID: "t2", Name: "Task", OccurredAt: 12},
		{Kind: agentbridge.KindSubagentStarted, SubagentID: "t2", ParentAgentID: "s1", OccurredAt: 12},
	} {
		if is := s.Apply(e); len(is) > 0 {
			t.Fatalf("%s: %+v", e.Kind, is)
		}
	}
	v := ViewOf(s)
	want := func(step string) {
		t.Helper()
		if !v.InTurn() || !slices.Equal(v.OpenTools(nil), []string{"t1", "t2"}) || !v.ToolOpen("t1") ||
			!v.SubagentRunning("t2") || !slices.Equal(v.RunningSubagents(nil), []string{"t2"}) {
			t.Fatalf("after %s: InTurn %v, tools %v, subagents %v", step, v.InTurn(), v.OpenTools(nil), v.RunningSubagents(nil))
		}
	}
	want("the journal's events")
	s.Hook(Hook{Kind: HookTool, Key: "k1", ToolID: "t1", At: 13})
	want("a tool's hook")
	s.Hook(Hook{Kind: HookAsk, Key: "k1", Reason: "Approve Bash: git push", At: 14})
	if s.Status() != agentbridge.StatusWaiting {
		t.Fatalf("the prompt is not shown: %s", s.Status())
	}
	want("a prompt")
	s.Hook(Hook{Kind: HookAnswered, Key: "k1", ToolID: "t1", At: 15})
	want("its answer")
	s.Hook(Hook{Kind: HookAsk, Key: "k2", Reason: "Approve Bash: rm", At: 16})
	s.Hook(Hook{Kind: HookTurnEnd, At: 17})
	if s.Status() != agentbridge.StatusRunning {
		t.Fatalf("the turn's end left the prompt shown: %s", s.Status())
	}
	want("the turn's end")
}
