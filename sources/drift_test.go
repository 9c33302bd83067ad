package sources

import (
	"strings"
	"testing"
)

func TestDriftReport(t *testing.T) {
	type rec struct {
		id, kind string
		known    bool
	}
	many := func(n int, r rec) []rec {
		out := make([]rec, n)
		for i := range out {
			out[i] = r
		}
		return out
	}
	tests := []struct {
		name  string
		recs  []rec
		turns []string
		want  []string // substrings of each diagnostic, in order
	}{
		{"all known, with a turn", many(40, rec{"s", "msg", true}), []string{"s"}, nil},
		{"a few unknown kinds among many known", append(many(3, rec{"s", "new_kind", false}), many(40, rec{"s", "msg", true})...), []string{"s"}, nil},
		{"unknown kinds over a quarter of the read", append(many(4, rec{"s", "new_kind", false}), many(12, rec{"s", "msg", true})...), []string{"s"},
			[]string{"4 of 16", "(new_kind)"}},
		{"too few records to tell", many(3, rec{"s", "new_kind", false}), nil, nil},
		{"a session with many records and no turn", many(minNoTurn, rec{"s", "msg", true}), nil, []string{"24 journal records but no turn", "kinds: msg"}},
		{"a young session without a turn", many(minNoTurn-1, rec{"s", "msg", true}), nil, nil},
		{"records before the session is named", many(minNoTurn, rec{"", "msg", true}), nil, nil},
		{"kind names that are not names", many(8, rec{"s", "/home/ana/secret file", false}), []string{"s"}, []string{"8 of 8", "(?)"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var ss Sessions
			for _, r := range tt.recs {
				ss.Record(r.id, r.kind, r.known)
			}
			for _, id := range tt.turns {
				ss.drift.turn(id)
			}
			got := ss.drift.report()
			if len(got) != len(tt.want)/2 && !(len(tt.want) == 0 && len(got) == 0) {
				t.Fatalf("got %v, want %d diagnostics", got, len(tt.want)/2)
			}
			for i, d := range got {
				if d.Code != CodeFormatDrift {
					t.Errorf("code %q", d.Code)
				}
				for _, w := range tt.want[2*i : 2*i+2] {
					if !strings.Contains(d.Message, w) {
						t.Errorf("message %q lacks %q", d.Message, w)
					}
				}
				if strings.Contains(d.Message, "/home") {
					t.Errorf("message %q names a path", d.Message)
				}
			}
			if again := ss.drift.report(); len(again) > 0 {
				t.Errorf("reported again without new records: %v", again)
			}
		})
	}
}

func TestDriftReportsNewKindsOnce(t *testing.T) {
	var ss Sessions
	for range 8 {
		ss.Record("s", "a", false)
	}
	ss.drift.turn("s")
	if got := ss.drift.report(); len(got) != 1 {
		t.Fatalf("first read: %v, want one diagnostic", got)
	}
	for range 8 {
		ss.Record("s", "a", false)
	}
	if got := ss.drift.report(); len(got) != 0 {
		t.Errorf("the same kinds again: %v, want nothing new", got)
	}
	for range 8 {
		ss.Record("s", "b", false)
	}
	if got := ss.drift.report(); len(got) != 1 || !strings.Contains(got[0].Message, "(b)") {
		t.Errorf("a new kind: %v, want one diagnostic naming b", got)
	}
}

func TestPlainVersion(t *testing.T) {
	for v, want := range map[string]bool{
		"0.118.0": true, "2.1.332": true, "v1": true, "1.0.0-beta.2+build": true,
		"": false, "latest": false, "1.0 beta": false, "/usr/bin/codex": false, strings.Repeat("1", 65): false,
	} {
		if got := plainVersion(v); got != want {
			t.Errorf("plainVersion(%q) = %v, want %v", v, got, want)
		}
	}
}

// TestDriftTurnBeforeItsRecord: the turn's event comes before the record
// that yields it is noted; the session still has its turn.
func TestDriftTurnBeforeItsRecord(t *testing.T) {
	var ss Sessions
	ss.drift.turn("s")
	for range minNoTurn + 4 {
		ss.Record("s", "msg", true)
	}
	if got := ss.drift.report(); len(got) != 0 {
		t.Errorf("a session whose first record was its turn: %v", got)
	}
}
