package pi

import (
	"testing"

	"github.com/agentbridge/agentbridge/sources/sourcestest"
)

// FuzzJournal maps a whole journal, line by line with one session's
// state, and folds every event: the mapping must never panic, never yield
// an event the validator or the fold refuses, and skip a line only with a
// known code. Seeds: testdata/fuzz/FuzzJournal (the golden journals and
// hostile shapes).
func FuzzJournal(f *testing.F) {
	f.Add([]byte(`{"type":"session","id":"u","timestamp":"2026-01-01T00:00:00Z","cwd":"/w"}` + "\n" +
		`{"type":"message","id":"a1","message":{"role":"assistant","content":[{"type":"toolCall","id":"t1","name":"bash"}],"stopReason":"toolUse"}}`))
	f.Fuzz(func(t *testing.T, journal []byte) {
		sourcestest.MapLines(t, mapper("fuzz"), "fuzz", Harness, journal, nil)
	})
}
