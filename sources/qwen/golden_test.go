package qwen

import (
	"bytes"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentbridge/agentbridge"
	"github.com/agentbridge/agentbridge/fold"
	"github.com/agentbridge/agentbridge/sources/sourcestest"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata/golden")

// replayed is a chat mapped and folded: the golden, and what a user is
// shown (sourcestest.ShownStatus), which the golden file does not hold.
type replayed struct {
	sourcestest.LineGolden
	Shown agentbridge.Status
}

// mapper maps a chat the way the source does, in the approval mode the
// chats were recorded in.
func mapper(id string) sourcestest.Mapper {
	var st State
	st.SetApprovalMode(ModeDefault)
	return sourcestest.Mapper{Viewed: func(v fold.View, line []byte, out []agentbridge.Event) ([]agentbridge.Event, string) {
		evs, code := Map(id, v, line, &st)
		return append(out, evs...), code
	}}
}

// chatID is the session id of a chat: its first record's sessionId.
func chatID(data []byte) string {
	var r struct {
		SessionID string `json:"sessionId"`
	}
	line, _, _ := bytes.Cut(data, []byte("\n"))
	_ = json.Unmarshal(line, &r)
	return r.SessionID
}

// replay maps a chat line by line (sourcestest.MapSession) as its session
// does and folds the events, failing on an event the fold rejects.
func replay(t *testing.T, data []byte) replayed {
	t.Helper()
	id := chatID(data)
	g, s := sourcestest.MapSession(t, mapper(id), id, Harness, data, nil)
	return replayed{LineGolden: g, Shown: sourcestest.ShownStatus(&g.Snapshot, s.Ended())}
}

// TestGolden maps each recorded chat, line by line, and compares the
// events of every line and the final snapshot with
// testdata/golden/<chat>.json (-update rewrites them).
func TestGolden(t *testing.T) {
	chats, _ := filepath.Glob("testdata/journals/*.jsonl")
	if len(chats) < 3 {
		t.Fatalf("only %d chats under testdata/journals", len(chats))
	}
	for _, p := range chats {
		name := strings.TrimSuffix(filepath.Base(p), ".jsonl")
		t.Run(name, func(t *testing.T) {
			data, err := os.ReadFile(p)
			if err != nil {
				t.Fatal(err)
			}
			sourcestest.Golden(t, filepath.Join("testdata", "golden", name+".json"), replay(t, data).LineGolden, *update)
		})
	}
}

// The real Qwen Code 0.24.4 session, recorded in its TUI against a
// scripted model: a turn answered, a tool approved, a tool denied (which
// ends the turn, cancelled), and an Escape before any reply (which writes
// nothing: the turn stays running, a documented limit).
func TestRecordedTUISession(t *testing.T) {
	data := recorded(t, "v0.24.4-tui-approve-deny-esc")
	g := replay(t, data)
	var kinds []string
	outcomes := map[agentbridge.Outcome]int{}
	for _, e := range g.AllEvents() {
		kinds = append(kinds, string(e.Kind))
		if e.Kind == agentbridge.KindAgentDone {
			outcomes[e.Outcome]++
		}
	}
	if strings.Count(strings.Join(kinds, " "), "turn.started") != 3 {
		t.Errorf("turns: %v", kinds)
	}
	if outcomes[agentbridge.OutcomeSuccess] != 1 || outcomes[agentbridge.OutcomeCancelled] != 1 {
		t.Errorf("outcomes %v, want one completed and one cancelled turn", outcomes)
	}
	s := g.Snapshot
	if s.Status != agentbridge.StatusRunning || s.Title != "write a marker" || s.Model != "mock-model" || s.Cwd != "/tmp/qhome/proj" {
		t.Errorf("snapshot %+v", s)
	}
}

// TestUsageMatchesJournals: the session's tokens are the sums of the
// chats' own usageMetadata (prompt less cached, candidates plus thoughts,
// cached), worked out from the files apart from the mapping.
func TestUsageMatchesJournals(t *testing.T) {
	for name, want := range map[string]*agentbridge.Usage{
		"v0.21-agent-sessions-fixture": nil,
		"v0.24.4-headless-prompt":      {InputTokens: 10, OutputTokens: 5},
		"v0.24.4-tui-approve-deny-esc": {InputTokens: 30, OutputTokens: 15},
	} {
		data, err := os.ReadFile(filepath.Join("testdata", "journals", name+".jsonl"))
		if err != nil {
			t.Fatal(err)
		}
		var got *agentbridge.Usage
		if a := replay(t, data).Activity; a != nil {
			got = a.Usage
		}
		if (got == nil) != (want == nil) || (got != nil && *got != *want) {
			t.Errorf("%s: usage = %+v, want the chat's own %+v", name, got, want)
		}
	}
}

// The recorded approvals: while the shell command waits for the user, the
// session is waiting and says what for; the decision (the ui_telemetry
// tool_call record) ends the wait, approved or denied.
func TestRecordedApprovalWaits(t *testing.T) {
	data := recorded(t, "v0.24.4-tui-approve-deny-esc")
	lines := bytes.SplitAfter(data, []byte("\n"))
	at := func(n int) agentbridge.Snapshot {
		g := replay(t, bytes.Join(lines[:n], nil))
		g.Snapshot.Status = g.Shown
		return g.Snapshot
	}
	for _, c := range []struct {
		lines      int // the chat up to this line
		status     agentbridge.Status
		waitingFor string
	}{
		{4, agentbridge.StatusRunning, ""},                                                 // the model is asked
		{5, agentbridge.StatusWaiting, "Approve run_shell_command: echo hi > marker.txt"},  // its functionCall, not answered
		{6, agentbridge.StatusRunning, ""},                                                 // approved: the decision
		{9, sourcestest.StatusDone, ""},                                                    // the answer
		{14, agentbridge.StatusWaiting, "Approve run_shell_command: echo no > denied.txt"}, // the second command
		{15, agentbridge.StatusRunning, ""},                                                // denied
		{16, sourcestest.StatusDone, ""},                                                   // the cancelled tool_result
	} {
		if s := at(c.lines); s.Status != c.status || s.WaitingFor != c.waitingFor {
			t.Errorf("after line %d: %s %q, want %s %q", c.lines, s.Status, s.WaitingFor, c.status, c.waitingFor)
		}
	}
}

// The real 0.24.4 TUI, Escape while the model held its reply, then another
// prompt: the Escape wrote nothing; the next prompt ends the unanswered
// turn, cancelled, and its own turn completes.
func TestRecordedEscThenPrompt(t *testing.T) {
	data := recorded(t, "v0.24.4-tui-esc-then-prompt")
	g := replay(t, data)
	var turns []string
	for _, e := range g.AllEvents() {
		switch e.Kind {
		case agentbridge.KindTurnStarted:
			turns = append(turns, "started")
		case agentbridge.KindAgentDone:
			turns = append(turns, string(e.Outcome))
		}
	}
	if strings.Join(turns, " ") != "started cancelled started success" {
		t.Errorf("turns: %v", turns)
	}
	if s := g.Snapshot; g.Shown != sourcestest.StatusDone || s.LastTurn != agentbridge.LastTurnCompleted {
		t.Errorf("snapshot %+v", s)
	}
}

// The real 0.24.4 TUI, a background subagent (the agent tool's default):
// its launch result does not end it; the task notification does, and
// starts the parent's next turn.
func TestRecordedBackgroundSubagent(t *testing.T) {
	data := recorded(t, "v0.24.4-tui-subagent-background")
	lines := bytes.SplitAfter(data, []byte("\n"))
	before := replay(t, bytes.Join(lines[:10], nil)) // up to the parent's reply to the launch
	if s := before.Snapshot; before.Shown != sourcestest.StatusDone || len(s.Subagents) != 1 || s.Subagents[0].Status != agentbridge.SubagentRunning {
		t.Errorf("after the launch: %+v", s)
	}
	after := replay(t, data)
	if s := after.Snapshot; after.Shown != sourcestest.StatusDone || len(s.Subagents) != 1 || s.Subagents[0].Status != agentbridge.SubagentCompleted ||
		s.Subagents[0].Title != "Count the files" || s.Subagents[0].Type != "general-purpose" {
		t.Errorf("after the notification: %+v", s)
	}
	turns := 0
	for _, e := range after.AllEvents() {
		if e.Kind == agentbridge.KindTurnStarted {
			turns++
		}
	}
	if turns != 2 {
		t.Errorf("%d turns, want the prompt's and the notification's", turns)
	}
}

// recorded reads testdata/journals/<name>.jsonl.
func recorded(t *testing.T, name string) []byte {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("testdata", "journals", name+".jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	return data
}
