package text_test

import (
	"testing"
	"unicode/utf8"

	"github.com/agentbridge/agentbridge"
	"github.com/agentbridge/agentbridge/text"
	"github.com/agentbridge/agentbridge/validate"
)

func FuzzRedact(f *testing.F) {
	f.Fuzz(func(t *testing.T, s string) {
		r := text.Redact(s)
		if utf8.ValidString(s) && !utf8.ValidString(r) {
			t.Fatalf("Redact(%q) = %q: not valid UTF-8", s, r)
		}
		if !text.MayHoldSecret(s) && r != s {
			t.Fatalf("Redact changed %q without a trigger word", s)
		}
		if again := text.Redact(r); again != r {
			t.Fatalf("Redact is not idempotent: %q -> %q -> %q", s, r, again)
		}
		var ev agentbridge.Event
		ev.Kind, ev.Summary = agentbridge.KindAgentDone, text.Bound(s, validate.MaxText)
		validate.RedactEvent(&ev)
		if ev.Summary != "" && !text.Valid(ev.Summary, validate.MaxText) {
			t.Fatalf("RedactEvent made the summary invalid: %q", ev.Summary)
		}
	})
}
