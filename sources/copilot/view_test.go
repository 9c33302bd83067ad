package copilot

import (
	"strings"
	"testing"

	"github.com/agentbridge/agentbridge"
	"github.com/agentbridge/agentbridge/sources/sourcestest"
)

// TestShutdownEndsTurn: session.shutdown ends the process and the turn it
// left open, although the fold keeps a turn open across agent.exited
// (fold.View.InTurn): the resume after it starts the session again and
// ends no turn a second time.
func TestShutdownEndsTurn(t *testing.T) {
	journal := strings.Join([]string{
		`{"type":"session.start","data":{"context":{"cwd":"/w"}},"id":"e1","timestamp":"2026-08-05T15:38:08.000Z"}`,
		`{"type":"user.message","data":{"content":"Say one","interactionId":"iid-1"},"id":"e2","timestamp":"2026-08-05T15:38:09.000Z"}`,
		`{"type":"assistant.turn_start","data":{"turnId":"0"},"id":"e3","timestamp":"2026-08-05T15:38:10.000Z"}`,
		`{"type":"session.shutdown","data":{"shutdownType":"routine"},"id":"e4","timestamp":"2026-08-05T15:38:11.000Z"}`,
		`{"type":"session.resume","data":{"context":{"cwd":"/w"}},"id":"e5","timestamp":"2026-08-05T15:38:12.000Z"}`,
	}, "\n")
	g := sourcestest.MapLines(t, sourcestest.Mapper{Viewed: (&mapper{session: "s1"}).Map}, "s1", Harness, []byte(journal), nil)
	last := g.Lines[len(g.Lines)-1]
	if last.Line != 5 || len(last.Events) != 1 || last.Events[0].Kind != agentbridge.KindSessionStarted {
		t.Fatalf("the resume maps to %+v, want session.started alone", last)
	}
	if g.Snapshot.LastTurn != "" {
		t.Errorf("lastTurn = %q, want none: the shutdown ended the turn, nothing reported how", g.Snapshot.LastTurn)
	}
}
