package pi

import (
	"bytes"
	"testing"

	"github.com/agentbridge/agentbridge/sources"
	"github.com/agentbridge/agentbridge/validate"
)

// FuzzJournal maps a whole journal, line by line with one session's
// state, and folds every event: the mapping must never panic, never yield
// an event the validator or the fold refuses, and skip a line only with a
// known code. Seeds: testdata/fuzz/FuzzJournal (the golden journals and
// hostile shapes).
func FuzzJournal(f *testing.F) {
	f.Add([]byte(`{"type":"session","id":"u","timestamp":"2026-01-01T00:00:00Z","cwd":"/w"}` + "\n" +
		`{"type":"message","id":"a1","message":{"role":"assistant","content":[{"type":"toolCall","id":"t1","name":"bash"}],"stopReason":"toolUse"}}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		st := newSession()
		s := validate.NewSession("fuzz", Harness)
		for _, line := range bytes.Split(data, []byte("\n")) {
			evs, code := st.mapRecord(line, nil)
			switch code {
			case "", sources.CodeInvalidJSON, sources.CodeInvalidRecord:
			default:
				t.Fatalf("unknown code %q", code)
			}
			for _, e := range evs {
				if issues := validate.Event(e); len(issues) > 0 {
					t.Fatalf("invalid %s from %q: %+v", e.Kind, line, issues)
				}
				if issues := s.Apply(e); len(issues) > 0 {
					t.Fatalf("fold refused %s from %q: %+v", e.Kind, line, issues)
				}
			}
		}
	})
}
