package gemini

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/agentbridge/agentbridge"
	"github.com/agentbridge/agentbridge/sources/sourcestest"
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

// A generalist subagent Gemini CLI 0.61.0 ran through invoke_agent (the
// live suite's chats, laid out as the CLI does): the parent lists it, and
// it is completed once its chat shows the complete_task call that hands
// its result back (a subagent writes no text reply).
func TestRealSubagent(t *testing.T) {
	home := t.TempDir()
	const parent, child = "63789f95-d9d5-4164-8712-60c18551792c", "2b775487-d08d-4fc7-81e7-37fd28587bfb"
	chats := filepath.Join(home, "tmp", "proj", "chats")
	copyTo := func(src, dst string) {
		data, err := os.ReadFile(src)
		if err != nil {
			t.Fatal(err)
		}
		sourcestest.Append(t, dst, string(data))
	}
	h, _ := run(t, home, HarnessGemini)
	copyTo("testdata/chats/v0.61-subagent/parent.jsonl", filepath.Join(chats, "session-2026-12-01T12-38-63789f95.jsonl"))
	copyTo("testdata/chats/v0.61-subagent/child.jsonl", filepath.Join(chats, parent, child+".jsonl"))
	h.WaitFor(t, "the subagent completed", func(h *sourcestest.Hub) bool {
		s, ok := h.Snapshot(parent)
		return ok && len(s.Subagents) == 1 && s.Subagents[0].ID == child && s.Subagents[0].Status == agentbridge.SubagentCompleted
	})
	if s, _ := h.Snapshot(parent); s.Status != agentbridge.StatusDone || s.LastTurn != agentbridge.LastTurnCompleted || len(h.Snapshots()) != 1 {
		t.Errorf("parent %+v; %d sessions", s, len(h.Snapshots()))
	}
}
