package vibe

import (
	"testing"

	"github.com/agentbridge/agentbridge/sources/sourcestest"
)

// FuzzSession maps a whole messages.jsonl line by line, then a meta.json,
// with one session's state, and folds every event: the mapping must never
// panic, never yield an event the validator or the fold refuses, and skip
// input only with a known code. Seeds: testdata/fuzz/FuzzSession (the
// golden sessions and hostile shapes).
func FuzzSession(f *testing.F) {
	f.Add([]byte(`{"role":"user","content":"hi","message_id":"u1"}`+"\n"+`{"role":"assistant","tool_calls":[{"id":"t1","function":{"name":"task","arguments":"{\"agent\":\"explore\"}"}}]}`),
		[]byte(`{"environment":{"working_directory":"/w"},"config":{"active_model":"m"}}`))
	f.Fuzz(func(t *testing.T, journal, side []byte) {
		sourcestest.MapLines(t, mapper("fuzz"), "fuzz", Harness, journal, side)
	})
}
