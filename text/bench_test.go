package text_test

import (
	"strings"
	"testing"

	"github.com/agentbridge/agentbridge/text"
	"github.com/agentbridge/agentbridge/validate"
)

// Each benchmark has a baseline in the same run to read ratios from.

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
			_ = text.Redact(clean)
		}
	})
	b.Run("secret", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			_ = text.Redact(dirty)
		}
	})
}

func BenchmarkBound(b *testing.B) {
	short := "Fix the flaky test"
	long := strings.Repeat("Please fix the failing test\n", 40)
	b.Run("short", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			_ = text.Bound(short, validate.MaxTitle)
		}
	})
	b.Run("long", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			_ = text.Bound(long, validate.MaxTitle)
		}
	})
}
