package kiro

import (
	"testing"

	"github.com/agentbridge/agentbridge/sources/sourcestest"
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
		sourcestest.MapLines(t, mapper("fuzz"), "fuzz", Harness, journal, side)
	})
}
