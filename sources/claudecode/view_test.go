package claudecode

import (
	"fmt"
	"testing"

	"github.com/agentbridge/agentbridge"
	"github.com/agentbridge/agentbridge/fold"
)

// TestToolsAreTheFolds: which tools are open is the fold's. The fold
// holds at most fold.MaxOpenTools open tools and refuses the start of one
// more; the mapper does not count that tool as open, so its result maps
// to no tool.finished the fold would refuse too (a diagnostic the user
// would see), and the turn still ends with the reply.
func TestToolsAreTheFolds(t *testing.T) {
	s := fold.NewSession("s-1", Harness)
	m := NewMapper("s-1", MapperOptions{View: func() fold.View { return s }})
	n := 0
	line := func(l string) {
		t.Helper()
		n++
		evs, err := m.Line([]byte(l))
		if err != nil {
			t.Fatalf("line %d: %v", n, err)
		}
		for _, e := range evs {
			if is := s.Apply(e); len(is) > 0 && (e.Kind != agentbridge.KindToolStarted || e.ToolID != toolN(fold.MaxOpenTools+1)) {
				t.Errorf("line %d: the fold refused %s %s: %+v", n, e.Kind, e.ToolID, is)
			}
		}
	}
	const ts = `"timestamp":"2026-05-01T10:00:00Z","cwd":"/w","sessionId":"s-1"`
	line(`{"type":"user","uuid":"u0",` + ts + `,"message":{"role":"user","content":"go"}}`)
	for i := 1; i <= fold.MaxOpenTools+1; i++ {
		line(fmt.Sprintf(`{"type":"assistant","uuid":"a%d",%s,"message":{"id":"m%d","model":"claude-opus-4-1","role":"assistant","stop_reason":"tool_use","content":[{"type":"tool_use","id":%q,"name":"Bash","input":{"command":"true"}}]}}`, i, ts, i, toolN(i)))
	}
	for i := 1; i <= fold.MaxOpenTools+1; i++ {
		line(fmt.Sprintf(`{"type":"user","uuid":"r%d",%s,"message":{"role":"user","content":[{"type":"tool_result","tool_use_id":%q,"content":"ok"}]}}`, i, ts, toolN(i)))
	}
	line(`{"type":"assistant","uuid":"z",` + ts + `,"message":{"id":"mz","model":"claude-opus-4-1","role":"assistant","stop_reason":"end_turn","content":[{"type":"text","text":"done"}]}}`)
	if snap := s.Snapshot(); snap.LastTurn != agentbridge.LastTurnCompleted || snap.Status != agentbridge.StatusIdle {
		t.Errorf("status %q, last turn %q; want idle, completed", snap.Status, snap.LastTurn)
	}
}

func toolN(i int) string { return fmt.Sprintf("toolu_%04d", i) }
