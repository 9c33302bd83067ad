package cursor

import (
	"testing"

	"github.com/agentbridge/agentbridge"
	"github.com/agentbridge/agentbridge/fold"
	"github.com/agentbridge/agentbridge/sources/sourcestest"
)

// deadTurn is a transcript's prompt and the tool its reply runs, then the
// process's end.
func deadTurn() []string {
	return []string{
		`{"role":"user","message":{"content":[{"type":"text","text":"<user_query>list</user_query>"}]}}`,
		`{"role":"assistant","message":{"content":[{"type":"tool_use","id":"t1","name":"Shell"}]}}`,
		sourcestest.Exit,
	}
}

// foldLines maps lines with a mapper of its own and folds them into s
// (sourcestest.FoldLines).
func foldLines(t *testing.T, s *fold.Session, lines []string) []agentbridge.Event {
	t.Helper()
	m := &mapper{cwd: "/w"}
	return sourcestest.FoldLines(t, s, lines, func(n int, l []byte) []agentbridge.Event {
		evs, _ := m.Map(s, n, l, nil)
		return evs
	})
}

// TestLinesAfterTheExit: the bridge folds agent.exited when the agent's
// process ends, which may be seen before the transcript's last lines are
// read. Those lines map to what the fold accepts (no tool.finished for
// the tools the exit closed), and the turn_ended among them still tells
// how the turn ended.
func TestLinesAfterTheExit(t *testing.T) {
	s := fold.NewSession("s1", Harness)
	lines := append(deadTurn(),
		`{"role":"assistant","message":{"content":[{"type":"text","text":"done"}]}}`,
		`{"type":"turn_ended","status":"success"}`,
	)
	foldLines(t, s, lines)
	if snap := s.Snapshot(); snap.LastTurn != agentbridge.LastTurnCompleted || snap.Tool != "" {
		t.Errorf("last turn %q, tool %q; want completed, none", snap.LastTurn, snap.Tool)
	}
}

// TestResumedSessionStartsItsOwnTurn: a session whose process ended in the
// middle of a turn and that a new process took up (cursor-agent --resume;
// the bridge folds session.started with the new pid) is idle; a reply the
// new process writes with no prompt before it opens a turn of its own,
// with its own start, instead of going on with the dead process's turn.
func TestResumedSessionStartsItsOwnTurn(t *testing.T) {
	s := fold.NewSession("s1", Harness)
	lines := append(deadTurn(),
		sourcestest.Resume,
		`{"role":"assistant","message":{"content":[{"type":"tool_use","id":"t2","name":"Read"}]}}`,
	)
	last := foldLines(t, s, lines)
	if len(last) == 0 || last[0].Kind != agentbridge.KindTurnStarted {
		t.Fatalf("the resumed process's reply maps to %+v; want a turn.started first", last)
	}
	if a := s.Activity(); a == nil || a.TurnStartedAt != 5 {
		t.Errorf("activity %+v; want the turn started when the reply was read (line 5)", a)
	}
}
