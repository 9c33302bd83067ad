package gemini

import (
	"os"
	"testing"

	"github.com/agentbridge/agentbridge"
)

// Chats the real Gemini CLI 0.61.0 wrote in the live suite (see
// testdata/SOURCES.md): a shell command approved, and one denied with
// Escape. The denial appends "Request cancelled." and then resets the
// history it sends the model ($set.messages with the session context
// alone): the turn stays cancelled, with its prompt as the title, and the
// reset starts no turn.
func TestRealShellApproval(t *testing.T) {
	for _, c := range []struct {
		file     string
		lastTurn agentbridge.LastTurn
		tool     agentbridge.Outcome
	}{
		{"testdata/chats/v0.61-shell-approved.jsonl", agentbridge.LastTurnCompleted, agentbridge.OutcomeSuccess},
		{"testdata/chats/v0.61-shell-denied.jsonl", agentbridge.LastTurnCancelled, agentbridge.OutcomeCancelled},
	} {
		data, err := os.ReadFile(c.file)
		if err != nil {
			t.Fatal(err)
		}
		s := split(HarnessGemini, data)
		if len(s) != 1 {
			t.Fatalf("%s: %d sessions", c.file, len(s))
		}
		g := replayFile(t, HarnessGemini, "sess-1", s[0].lines)
		var turns int
		var tools []string
		var outcome agentbridge.Outcome
		for _, e := range g.Events {
			switch {
			case e.Rebuild:
				t.Errorf("%s: rebuilt", c.file)
			case e.Event.Kind == agentbridge.KindTurnStarted:
				turns++
			case e.Event.Kind == agentbridge.KindToolStarted:
				tools = append(tools, e.Event.Name)
			case e.Event.Kind == agentbridge.KindToolFinished:
				outcome = e.Event.Outcome
			}
		}
		snap := g.Snapshot
		if turns != 1 || len(tools) != 1 || tools[0] != "Shell" || outcome != c.tool {
			t.Errorf("%s: %d turns, tools %v ended %q", c.file, turns, tools, outcome)
		}
		if snap.Status != agentbridge.StatusDone || snap.LastTurn != c.lastTurn || snap.Title != "make the marker" {
			t.Errorf("%s: status %s lastTurn %s title %q", c.file, snap.Status, snap.LastTurn, snap.Title)
		}
	}
}
