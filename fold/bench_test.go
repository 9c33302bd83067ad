package fold

import "testing"

// The hot path: every event a source publishes is checked and folded.

func BenchmarkApply(b *testing.B) {
	events := []E{
		{Kind: "turn.started", TurnID: "t1", PromptText: "Fix the flaky test"},
		{Kind: "tool.started", ToolID: "tool1", Name: "Bash"},
		{Kind: "wait.started", WaitID: "w1", State: "waiting", Reason: "Approve shell command"},
		{Kind: "wait.finished", WaitID: "w1"},
		{Kind: "tool.finished", ToolID: "tool1", Outcome: "success"},
		{Kind: "agent.done", Outcome: "success", OccurredAt: 1764489600000},
	}
	s := NewSession("sess-1", "example-agent")
	b.ReportAllocs()
	for b.Loop() {
		for _, e := range events {
			if is := s.Apply(e); len(is) != 0 {
				b.Fatal(is)
			}
		}
	}
}
