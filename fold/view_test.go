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

// TestViewAcrossTheProcess: what the view says of the open turn and of the
// process across an exit and a revival. agent.exited keeps the turn open
// (the dead process's last lines, read after its exit, may still end it)
// and tells when the process ended; session.started after an exit is a new
// process (a resumed session): the dead process's turn is over, so a line
// of the new process that no prompt opened starts a turn of its own
// instead of going on with it.
func TestViewAcrossTheProcess(t *testing.T) {
	turn := E{Kind: agentbridge.KindTurnStarted, TurnID: "u1", OccurredAt: 10}
	tool := E{Kind: agentbridge.KindToolStarted, ToolID: "t1", Name: "Read", OccurredAt: 11}
	exited := E{Kind: agentbridge.KindAgentExited, OccurredAt: 20}
	revived := E{Kind: agentbridge.KindSessionStarted, PID: 42}
	done := E{Kind: agentbridge.KindAgentDone, Outcome: agentbridge.OutcomeSuccess, OccurredAt: 30}
	for _, c := range []struct {
		name    string
		events  []E
		inTurn  bool
		exitAt  int64 // when ok
		exited  bool
		lastRun agentbridge.LastTurn
	}{
		{"no events", nil, false, 0, false, ""},
		{"a turn", []E{turn, tool}, true, 0, false, ""},
		{"a turn, the process ends", []E{turn, tool, exited}, true, 20, true, ""},
		{"an exit with no time", []E{turn, {Kind: agentbridge.KindAgentExited}}, true, 0, true, ""},
		{"the dead process's last line ends its turn", []E{turn, exited, done}, false, 20, true, agentbridge.LastTurnCompleted},
		{"a new process takes the session up", []E{turn, tool, exited, revived}, false, 0, false, ""},
		{"the new process's turn", []E{turn, exited, revived, {Kind: agentbridge.KindTurnStarted, TurnID: "u2", OccurredAt: 40}}, true, 0, false, ""},
		{"a turn after the exit is a resumed process's", []E{turn, exited, {Kind: agentbridge.KindTurnStarted, TurnID: "u2", OccurredAt: 40}}, true, 0, false, ""},
		{"session.started of a live process keeps its turn", []E{turn, revived}, true, 0, false, ""},
		{"idle, the process ends", []E{turn, done, exited}, false, 20, true, agentbridge.LastTurnCompleted},
		{"a new process of an idle session", []E{turn, done, exited, revived}, false, 0, false, agentbridge.LastTurnCompleted},
	} {
		t.Run(c.name, func(t *testing.T) {
			s := NewSession("s1", "cursor")
			for _, e := range c.events {
				if is := s.Apply(e); len(is) > 0 {
					t.Fatalf("%s: %+v", e.Kind, is)
				}
			}
			v := ViewOf(s)
			at, ok := v.Exited()
			if v.InTurn() != c.inTurn || ok != c.exited || at != c.exitAt {
				t.Errorf("InTurn %v, Exited (%d, %v); want %v, (%d, %v)", v.InTurn(), at, ok, c.inTurn, c.exitAt, c.exited)
			}
			if got := s.Snapshot().LastTurn; got != c.lastRun {
				t.Errorf("last turn %q, want %q", got, c.lastRun)
			}
		})
	}
	if at, ok := ViewOf(nil).Exited(); ok || at != 0 {
		t.Errorf("the view of an unknown session says its process ended (%d)", at)
	}
}
