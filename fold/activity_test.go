package fold

import (
	"testing"

	"github.com/agentbridge/agentbridge"
	"github.com/google/go-cmp/cmp"
)

type A = agentbridge.Activity

func usage(in, out, cr, cw int64) *agentbridge.Usage {
	return &agentbridge.Usage{InputTokens: in, OutputTokens: out, CacheReadTokens: cr, CacheWriteTokens: cw}
}

func report(id string, total bool, in, out, cr, cw int64) *agentbridge.UsageReport {
	return &agentbridge.UsageReport{Usage: *usage(in, out, cr, cw), MessageID: id, Total: total}
}

func TestActivity(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		name  string
		steps []step
		want  *A
	}{
		{"nothing known", []step{ok(E{Kind: "session.started"})}, nil},
		{"idle since the session started", []step{ok(E{Kind: "session.started", OccurredAt: 10})}, &A{StatusSince: 10}},
		{"a turn and its running tool", []step{
			ok(E{Kind: "session.started", OccurredAt: 10}),
			ok(E{Kind: "turn.started", OccurredAt: 20, TurnID: "t"}),
			ok(E{Kind: "tool.started", OccurredAt: 30, ToolID: "a", Name: "Bash"}),
		}, &A{StatusSince: 20, TurnStartedAt: 20, Tool: &agentbridge.ToolActivity{Name: "Bash", Since: 30}}},
		{"the latest open tool is shown; when it ends, the one before", []step{
			ok(E{Kind: "turn.started", OccurredAt: 20, TurnID: "t"}),
			ok(E{Kind: "tool.started", OccurredAt: 30, ToolID: "a", Name: "Task"}),
			ok(E{Kind: "tool.started", OccurredAt: 40, ToolID: "b", Name: "Read"}),
			ok(E{Kind: "tool.finished", OccurredAt: 50, ToolID: "b"}),
		}, &A{StatusSince: 20, TurnStartedAt: 20, Tool: &agentbridge.ToolActivity{Name: "Task", Since: 30}}},
		{"waiting since the wait began, tool still shown", []step{
			ok(E{Kind: "turn.started", OccurredAt: 20, TurnID: "t"}),
			ok(E{Kind: "tool.started", OccurredAt: 30, ToolID: "a", Name: "Bash"}),
			ok(E{Kind: "wait.started", OccurredAt: 35, WaitID: "w", State: "waiting", Reason: "approve Bash"}),
		}, &A{StatusSince: 35, TurnStartedAt: 20, Tool: &agentbridge.ToolActivity{Name: "Bash", Since: 30}}},
		{"a status kept keeps its start", []step{
			ok(E{Kind: "turn.started", OccurredAt: 20, TurnID: "t"}),
			ok(E{Kind: "tool.started", OccurredAt: 30, ToolID: "a", Name: "Bash"}),
			ok(E{Kind: "tool.finished", OccurredAt: 40, ToolID: "a"}),
			ok(E{Kind: "tool.started", OccurredAt: 50, ToolID: "b", Name: "Edit"}),
		}, &A{StatusSince: 20, TurnStartedAt: 20, Tool: &agentbridge.ToolActivity{Name: "Edit", Since: 50}}},
		{"done: no turn, no tool", []step{
			ok(E{Kind: "turn.started", OccurredAt: 20, TurnID: "t"}),
			ok(E{Kind: "tool.started", OccurredAt: 30, ToolID: "a", Name: "Bash"}),
			ok(E{Kind: "agent.done", OccurredAt: 60, Outcome: "success"}),
		}, &A{StatusSince: 60}},
		{"an unknown time is absent", []step{
			ok(E{Kind: "turn.started", OccurredAt: 20, TurnID: "t"}),
			ok(E{Kind: "agent.done", Outcome: "error"}),
		}, nil},
		{"usage: added, a repeated message replaced, kept across turns and exit", []step{
			ok(E{Kind: "agent.metadata", Usage: report("m1", false, 10, 5, 100, 7)}),
			ok(E{Kind: "agent.metadata", Usage: report("m1", false, 10, 6, 100, 7)}), // same message, streamed again
			ok(E{Kind: "agent.metadata", Usage: report("m2", false, 1, 2, 3, 4)}),
			ok(E{Kind: "agent.metadata", Usage: report("", false, 1, 1, 1, 1)}),
			ok(E{Kind: "agent.exited"}),
		}, &A{Usage: usage(12, 9, 104, 12)}},
		{"usage: totals replace the sum", []step{
			ok(E{Kind: "agent.metadata", Usage: report("", true, 100, 10, 50, 0)}),
			ok(E{Kind: "agent.metadata", Usage: report("", true, 100, 10, 50, 0)}), // a repeated total
			ok(E{Kind: "agent.metadata", Usage: report("", true, 180, 20, 90, 0)}),
		}, &A{Usage: usage(180, 20, 90, 0)}},
		{"usage: zero counts still say usage is known", []step{
			ok(E{Kind: "agent.metadata", Usage: report("m", false, 0, 0, 0, 0)}),
		}, &A{Usage: usage(0, 0, 0, 0)}},
		{"usage: only on agent.metadata, never negative", []step{
			rejected(E{Kind: "turn.started", TurnID: "t", Usage: report("", false, 1, 1, 1, 1)}, "$.usage", "unknown_field"),
			rejected(E{Kind: "agent.metadata", Usage: report("", false, -1, 1, 1, 1)}, "$.usage", "invalid_integer"),
		}, nil},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			s := NewSession("s", "h")
			run(t, s, tt.steps)
			if diff := cmp.Diff(tt.want, s.Activity()); diff != "" {
				t.Errorf("activity (-want +got):\n%s", diff)
			}
			// A fold built again from the same events gives the same.
			again := NewSession("s", "h")
			for _, st := range tt.steps {
				again.Apply(st.e)
			}
			if diff := cmp.Diff(s.Activity(), again.Activity()); diff != "" {
				t.Errorf("a second fold differs (-first +second):\n%s", diff)
			}
		})
	}
}

func TestActivityCountsEachMessageOnce(t *testing.T) {
	t.Parallel()
	s := NewSession("s", "h")
	// Two messages interleaved (a sidechain), each written as three records.
	for range 3 {
		for _, id := range []string{"a", "b"} {
			if is := s.Apply(E{Kind: "agent.metadata", Usage: report(id, false, 10, 1, 0, 0)}); len(is) > 0 {
				t.Fatal(is)
			}
		}
	}
	if got := s.Activity().Usage; *got != *usage(20, 2, 0, 0) {
		t.Errorf("usage = %+v, want each message counted once", got)
	}
	c := s.Clone()
	c.Apply(E{Kind: "agent.metadata", Usage: report("c", false, 1, 1, 1, 1)})
	if got := s.Activity().Usage; *got != *usage(20, 2, 0, 0) {
		t.Errorf("a clone's fold changed the original: %+v", got)
	}
}
