package main

import (
	"bytes"
	"strings"
	"testing"

	"github.com/agentbridge/agentbridge"
	"github.com/agentbridge/agentbridge/sources/claudecode"
	"github.com/agentbridge/agentbridge/sources/codex"
)

// mapJournal decodes a journal of kind with the real source's mapper and
// returns its records and events.
func mapJournal(t *testing.T, kind, session string, data []byte) (records int, events []agentbridge.Event) {
	t.Helper()
	lines := bytes.Split(bytes.TrimSuffix(data, []byte("\n")), []byte("\n"))
	switch kind {
	case kindClaude:
		m := claudecode.NewMapper(session, claudecode.MapperOptions{})
		for _, l := range lines {
			evs, err := m.Line(l)
			if err != nil {
				t.Fatalf("%s: %v", kind, err)
			}
			events = append(events, evs...)
		}
	case kindCodex:
		r := codex.NewRollout(0)
		for _, l := range lines {
			events = r.Line(events, l)
		}
	}
	return len(lines), events
}

func count(evs []agentbridge.Event, k agentbridge.EventKind) int {
	n := 0
	for _, e := range evs {
		if e.Kind == k {
			n++
		}
	}
	return n
}

// TestTurnJournalsMakeATurnPerTwoRecords decodes turn-heavy journals with
// the real mappers: every two records start a turn and end it.
func TestTurnJournalsMakeATurnPerTwoRecords(t *testing.T) {
	const turns = 25
	for _, kind := range []string{kindClaude, kindCodex} {
		ts, err := loadTurnSource(kind)
		if err != nil {
			t.Fatal(err)
		}
		session := sessionUUID(kind, 3)
		data := ts.journal(nil, session, turns)
		records, evs := mapJournal(t, kind, session, data)
		head := 0
		if kind == kindCodex {
			head = 1 // session_meta
		}
		if records-head != 2*turns {
			t.Errorf("%s: %d records after the head, want %d", kind, records-head, 2*turns)
		}
		if got := count(evs, agentbridge.KindTurnStarted); got != turns {
			t.Errorf("%s: %d turn.started in %d records, want %d", kind, got, records, turns)
		}
		if got := count(evs, agentbridge.KindAgentDone); got != turns {
			t.Errorf("%s: %d agent.done in %d records, want %d", kind, got, records, turns)
		}
		ids := map[string]bool{}
		for _, e := range evs {
			if e.Kind == agentbridge.KindTurnStarted {
				ids[e.TurnID] = true
			}
		}
		if len(ids) != turns {
			t.Errorf("%s: %d distinct turn ids, want %d", kind, len(ids), turns)
		}
	}
}

// TestPromptTurnCarriesTheMarker: a latency turn is one more turn whose
// prompt is the marker, as turn.started shows it.
func TestPromptTurnCarriesTheMarker(t *testing.T) {
	ts, err := loadTurnSource(kindClaude)
	if err != nil {
		t.Fatal(err)
	}
	session := sessionUUID(kindClaude, 0)
	data := append(ts.journal(nil, session, 2), ts.promptTurn(session, 3, latencyMarker(7))...)
	_, evs := mapJournal(t, kindClaude, session, data)
	var prompts []string
	for _, e := range evs {
		if e.Kind == agentbridge.KindTurnStarted {
			prompts = append(prompts, e.PromptText)
		}
	}
	if len(prompts) != 3 || prompts[2] != "bench-latency-7" || count(evs, agentbridge.KindAgentDone) != 3 {
		t.Fatalf("prompts %q, %d agent.done; want the third turn's prompt bench-latency-7 and 3 ended", prompts, count(evs, agentbridge.KindAgentDone))
	}
}

func TestCompareRows(t *testing.T) {
	got := []row{{Measure: "a", Figure: 130, Unit: "ms", Slack: 1.25}, {Measure: "b"}, {Measure: "c", Figure: 3, Unit: "ms", Slack: 1.5, Floor: 1}}
	was := []row{{Measure: "a", Figure: 100}, {Measure: "b"}, {Measure: "c", Figure: 1}}
	out := compareRows(got, was, revisionComparison("abc"))
	if len(out) != 2 {
		t.Fatalf("%d rows, want 2: %+v", len(out), out)
	}
	if !strings.HasPrefix(out[0].Verdict, "missed") || out[0].Ratio != "1.30×" {
		t.Errorf("a 1.3× slower figure with a slack of 1.25: %+v", out[0])
	}
	if !strings.HasPrefix(out[1].Verdict, "missed") {
		t.Errorf("3× and 2 ms over a floor of 1 ms: %+v", out[1])
	}
	out = compareRows([]row{{Figure: 1.9, Slack: 1.5, Floor: 1}}, []row{{Figure: 1}}, historyComparison)
	if out[0].Verdict != "met" {
		t.Errorf("within the floor: %+v", out[0])
	}
}

// TestBaselineBuilds builds this bench against HEAD's packages.
func TestBaselineBuilds(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the bridge")
	}
	b, err := buildBaseline("HEAD", t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(b.exe, b.rev[:10]) {
		t.Errorf("binary %s for %s", b.exe, b.rev)
	}
}
