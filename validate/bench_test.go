package validate

import (
	"encoding/json"
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
