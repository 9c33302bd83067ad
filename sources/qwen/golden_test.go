package qwen

import (
	"bytes"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/agentbridge/agentbridge"
	"github.com/agentbridge/agentbridge/fold"
	"github.com/agentbridge/agentbridge/sources/sourcestest"
	"github.com/agentbridge/agentbridge/validate"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata/golden")

type golden struct {
	Events   []agentbridge.Event       `json:"events"`
	Usage    []agentbridge.UsageReport `json:"usage,omitempty"` // the events' Event.Usage, in order
	Snapshot agentbridge.Snapshot      `json:"snapshot"`
	Shown    agentbridge.Status        `json:"-"` // what a user sees (sourcestest.ShownStatus)
	Activity *agentbridge.Activity     `json:"activity,omitempty"`
}

// replay maps a chat the way the source does and folds the events,
// failing on a skipped line or an event the fold rejects.
func replay(t *testing.T, data []byte) golden {
	t.Helper()
	g := golden{Events: []agentbridge.Event{}}
	var id string
	var st State
	st.SetApprovalMode(ModeDefault) // the mode the chats were recorded in
	var s *fold.Session
	for i, line := range bytes.Split(bytes.TrimRight(data, "\n"), []byte("\n")) {
		if id == "" {
			var r struct {
				SessionID string `json:"sessionId"`
			}
			_ = json.Unmarshal(line, &r)
			id = r.SessionID
			s = fold.NewSession(id, Harness)
		}
		events, code := Map(id, fold.ViewOf(s), line, &st)
		if code != "" {
			t.Fatalf("line %d skipped: %s", i+1, code)
		}
		for _, e := range events {
			if issues := s.Apply(e); len(issues) > 0 {
				t.Fatalf("line %d: fold rejected %s: %+v", i+1, e.Kind, issues)
			}
			if e.Usage != nil {
				g.Usage = append(g.Usage, *e.Usage)
				e.Usage = nil
			}
			g.Events = append(g.Events, e)
		}
	}
	g.Snapshot = s.Snapshot()
	g.Shown = sourcestest.ShownStatus(&g.Snapshot, s.Ended())
	g.Activity = s.Activity()
	if issues := validate.Snapshot(g.Snapshot, validate.Harnesses{Harness: true}); len(issues) > 0 {
		t.Fatalf("final snapshot invalid: %+v", issues)
	}
	return g
}

// TestGolden maps each recorded chat to its events and final snapshot and
// compares them with testdata/golden/<chat>.json.
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
			got := replay(t, data)
			path := filepath.Join("testdata", "golden", name+".json")
			if *update {
				b, _ := json.MarshalIndent(got, "", "  ")
				_ = os.MkdirAll(filepath.Dir(path), 0o755)
				if err := os.WriteFile(path, append(b, '\n'), 0o644); err != nil {
					t.Fatal(err)
				}
				return
			}
			data, err = os.ReadFile(path)
			if err != nil {
				t.Fatalf("%v (run go test -update to write it)", err)
			}
			var want golden
			if err := json.Unmarshal(data, &want); err != nil {
				t.Fatal(err)
			}
			want.Shown = got.Shown // not in the file
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("mapping changed (-golden +now):\n%s", diff)
			}
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
	for _, e := range g.Events {
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
	for _, e := range g.Events {
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
	for _, e := range after.Events {
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
