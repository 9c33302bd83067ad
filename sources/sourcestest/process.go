package sourcestest

import (
	"testing"

	"github.com/agentbridge/agentbridge"
	"github.com/agentbridge/agentbridge/fold"
)

// Lines FoldLines does not map: what the bridge itself folds into a
// session between two of its journal's lines.
const (
	// Exit is the session's process ending (agent.exited, at ExitAt).
	Exit = "exit"
	// Resume is a new process taking the session up (session.started
	// with its pid, as Sessions folds when it binds one after an exit).
	Resume = "resume"
)

// ExitAt is the occurredAt of the agent.exited an Exit line folds.
const ExitAt = 100

// FoldLines maps lines one by one with mapLine (given the line's number,
// 1-based, and the line) and folds the events into s, each read at its
// line's number (epoch ms: an activity time tells which line set it);
// Exit and Resume lines fold the bridge's own events instead. A refused
// event is an error. It returns the events of the last line.
func FoldLines(t testing.TB, s *fold.Session, lines []string, mapLine func(n int, line []byte) []agentbridge.Event) []agentbridge.Event {
	t.Helper()
	var evs []agentbridge.Event
	for i, l := range lines {
		switch l {
		case Exit:
			evs = []agentbridge.Event{{Kind: agentbridge.KindAgentExited, OccurredAt: ExitAt}}
		case Resume:
			evs = []agentbridge.Event{{Kind: agentbridge.KindSessionStarted, PID: 42}}
		default:
			evs = mapLine(i+1, []byte(l))
		}
		for _, e := range evs {
			if is := s.ApplyRead(e, int64(i+1), 0); len(is) > 0 {
				t.Errorf("line %d: the fold refused %s: %+v", i+1, e.Kind, is)
			}
		}
	}
	return evs
}
