package notify

import (
	"testing"
)

// FuzzTracker feeds stream records of any shape to a Tracker: it never
// panics, and what it tells carries the record's source and a status of
// the transition vocabulary.
func FuzzTracker(f *testing.F) {
	f.Add("reset", []byte(`{"source":"c","sessions":[{"id":"s","harness":"h","status":"running"}]}`), []byte(`{"source":"c","snapshot":{"id":"s","harness":"h","status":"waiting","waitingFor":"approve"}}`))
	f.Add("upsert", []byte(`{"source":"c","snapshot":{"id":"s","status":"done","lastTurn":"failed"}}`), []byte(`{"source":"c","sessionId":"s"}`))
	f.Add("remove", []byte(`{`), []byte(`null`))
	f.Fuzz(func(t *testing.T, name string, a, b []byte) {
		var tr Tracker
		for _, rec := range []struct {
			name string
			data []byte
		}{{"reset", a}, {name, a}, {"upsert", b}, {"remove", b}, {name, b}} {
			for _, x := range tr.Apply(rec.name, rec.data) {
				ok := false
				for _, e := range Events {
					ok = ok || x.Status == e
				}
				if !ok || x.Source == "" {
					t.Fatalf("told %+v", x)
				}
			}
		}
	})
}
