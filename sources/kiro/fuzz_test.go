package kiro

import (
	"bytes"
	"testing"

	"github.com/agentbridge/agentbridge"
	"github.com/agentbridge/agentbridge/sources"
	"github.com/agentbridge/agentbridge/validate"
)

// FuzzSession maps a whole journal line by line, then a sidecar, with one
// session's state, and folds every event: the mapping must never panic,
// never yield an event the validator or the fold refuses, and skip input
// only with a known code. Seeds: testdata/fuzz/FuzzSession (the golden
// sessions and hostile shapes).
func FuzzSession(f *testing.F) {
	f.Add([]byte(`{"version":"v1","kind":"Prompt","data":{"message_id":"p1","content":[{"kind":"text","data":"hi"}]}}`),
		[]byte(`{"cwd":"/w","session_state":{"conversation_metadata":{"user_turn_metadatas":[{"message_ids":["p1"],"end_reason":"Cancelled"}]}}}`))
	f.Fuzz(func(t *testing.T, journal, side []byte) {
		st := newSession()
		s := validate.NewSession("fuzz", Harness)
		check := func(where []byte, evs []agentbridge.Event, code string) {
			switch code {
			case "", sources.CodeInvalidJSON, sources.CodeInvalidRecord:
			default:
				t.Fatalf("unknown code %q", code)
			}
			for _, e := range evs {
				if issues := validate.Event(e); len(issues) > 0 {
					t.Fatalf("invalid %s from %q: %+v", e.Kind, where, issues)
				}
				if issues := s.Apply(e); len(issues) > 0 {
					t.Fatalf("fold refused %s from %q: %+v", e.Kind, where, issues)
				}
			}
		}
		for _, line := range bytes.Split(journal, []byte("\n")) {
			evs, code := st.mapRecord(line, nil)
			check(line, evs, code)
		}
		evs, code := st.mapSidecar(side, nil)
		check(side, evs, code)
	})
}
