package validate

import (
	"encoding/json"
	"strings"
	"testing"
)

// The hot path: every event a source publishes is redacted, checked and
// folded. Each benchmark has a baseline in the same run (an empty loop over
// the same input, or json.Unmarshal for the decoders) to read ratios from.

func BenchmarkSnapshot(b *testing.B) {
	s := validSnapshot()
	b.ReportAllocs()
	for b.Loop() {
		if is := Snapshot(s, enabled); len(is) != 0 {
			b.Fatal(is)
		}
	}
}

func BenchmarkEvent(b *testing.B) {
	e := E{Kind: "wait.started", WaitID: "toolu_01ABCdef", State: "waiting", Reason: "Approve shell command", OccurredAt: 1764489600000}
	b.ReportAllocs()
	for b.Loop() {
		if is := Event(e); len(is) != 0 {
			b.Fatal(is)
		}
	}
}

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

// BenchmarkDecodeSnapshot runs DecodeSnapshot against json.Unmarshal into
// the same struct, the baseline.
func BenchmarkDecodeSnapshot(b *testing.B) {
	raw := json.RawMessage(okSnap)
	b.Run("baseline=json.Unmarshal", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			var s struct {
				ID        string `json:"id"`
				Subagents []struct {
					ID string `json:"id"`
				} `json:"subagents"`
			}
			if err := json.Unmarshal(raw, &s); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("DecodeSnapshot", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, is := DecodeSnapshot(raw, enabled); len(is) != 0 {
				b.Fatal(is)
			}
		}
	})
}

// BenchmarkRedact compares Redact with a strings.Contains scan of the same
// text (the baseline) on clean text, and shows the cost when there is a
// secret to replace.
func BenchmarkRedact(b *testing.B) {
	clean := "Fix the flaky test in the parser, then run the whole suite again and summarise what changed"
	dirty := "run with ANTHROPIC_API_KEY=sk-ant-api03-" + strings.Repeat("Ab1", 30) + " and retry"
	b.Run("baseline=strings.Contains", func(b *testing.B) {
		for b.Loop() {
			_ = strings.Contains(clean, "sk-")
		}
	})
	b.Run("clean", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			_ = Redact(clean)
		}
	})
	b.Run("secret", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			_ = Redact(dirty)
		}
	})
}

func BenchmarkBound(b *testing.B) {
	short := "Fix the flaky test"
	long := strings.Repeat("Please fix the failing test\n", 40)
	b.Run("short", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			_ = Bound(short, MaxTitle)
		}
	})
	b.Run("long", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			_ = Bound(long, MaxTitle)
		}
	})
}
