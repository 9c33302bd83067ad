package codex

import (
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/agentbridge/agentbridge"
	"github.com/agentbridge/agentbridge/sources/sourcestest"
	"github.com/agentbridge/agentbridge/validate"
)

const (
	metaLine   = `{"timestamp":"2026-05-01T10:00:00.000Z","type":"session_meta","payload":{"id":"019e0000-0000-7000-8000-000000000001","cwd":"/work/repo","cli_version":"0.130.0","source":"cli"}}`
	ctxLine    = `{"timestamp":"2026-05-01T10:00:01.000Z","type":"turn_context","payload":{"turn_id":"t1","cwd":"/work/repo","approval_policy":"never","model":"gpt-5.5"}}`
	startLine  = `{"timestamp":"2026-05-01T10:00:01.000Z","type":"event_msg","payload":{"type":"task_started","turn_id":"t1"}}`
	userLine   = `{"timestamp":"2026-05-01T10:00:01.000Z","type":"event_msg","payload":{"type":"user_message","message":"Fix the flaky test"}}`
	callLine   = `{"timestamp":"2026-05-01T10:00:02.000Z","type":"response_item","payload":{"type":"function_call","name":"exec_command","arguments":"{}","call_id":"call_1"}}`
	outOKLine  = `{"timestamp":"2026-05-01T10:00:03.000Z","type":"response_item","payload":{"type":"function_call_output","call_id":"call_1","output":"Chunk ID: 1\nWall time: 0.1 seconds\nProcess exited with code 0\nOutput:\nok\n"}}`
	outErrLine = `{"timestamp":"2026-05-01T10:00:03.000Z","type":"response_item","payload":{"type":"function_call_output","call_id":"call_1","output":"Process exited with code 2\nOutput:\nboom\n"}}`
	doneLine   = `{"timestamp":"2026-05-01T10:00:04.000Z","type":"event_msg","payload":{"type":"task_complete","turn_id":"t1","last_agent_message":"done"}}`
)

// run maps lines through a fresh engine (with a flush at the end) and
// folds them, failing on any event the hub would reject.
func run(t *testing.T, lines ...string) ([]Pub, agentbridge.Snapshot) {
	t.Helper()
	e := NewEngine()
	var pubs []Pub
	for _, l := range lines {
		pubs = append(pubs, e.Line("k", []byte(l))...)
	}
	pubs = append(pubs, e.Flush("k")...)
	checkPublishable(t, pubs)
	snaps := foldAll(t, pubs)
	if len(snaps) != 1 {
		t.Fatalf("got %d sessions, want 1: %+v", len(snaps), pubs)
	}
	snap := snaps[0]
	snap.Status = sourcestest.ShownStatus(&snap, nil) // what a user sees: done after a turn
	return pubs, snap
}

func kinds(pubs []Pub) string {
	var b strings.Builder
	for i, p := range pubs {
		if i > 0 {
			b.WriteByte(' ')
		}
		b.WriteString(string(p.Event.Kind))
	}
	return b.String()
}

func TestRolloutTurns(t *testing.T) {
	tests := []struct {
		name      string
		lines     []string
		status    agentbridge.Status
		lastTurn  agentbridge.LastTurn
		wantKinds string // "" skips the check
	}{
		{
			name:      "known, no turn yet",
			lines:     []string{metaLine},
			status:    agentbridge.StatusIdle,
			wantKinds: "session.started",
		},
		{
			name:      "turn running with a tool",
			lines:     []string{metaLine, startLine, ctxLine, userLine, callLine},
			status:    agentbridge.StatusRunning,
			wantKinds: "session.started turn.started agent.metadata agent.metadata tool.started",
		},
		{
			name:      "turn completed",
			lines:     []string{metaLine, startLine, ctxLine, userLine, callLine, outOKLine, doneLine},
			status:    sourcestest.StatusDone,
			lastTurn:  agentbridge.LastTurnCompleted,
			wantKinds: "session.started turn.started agent.metadata agent.metadata tool.started tool.finished agent.done",
		},
		{
			name: "task_complete with an error is failed",
			lines: []string{metaLine, startLine,
				`{"timestamp":"2026-05-01T10:00:04.000Z","type":"event_msg","payload":{"type":"task_complete","turn_id":"t1","last_agent_message":null,"error":{"message":"usage limit","codex_error_info":"usage_limit_exceeded"}}}`},
			status:   sourcestest.StatusDone,
			lastTurn: agentbridge.LastTurnFailed,
		},
		{
			name: "an error record before the turn end makes it failed",
			lines: []string{metaLine, startLine,
				`{"timestamp":"2026-05-01T10:00:03.000Z","type":"event_msg","payload":{"type":"error","message":"stream disconnected"}}`,
				doneLine},
			status:   sourcestest.StatusDone,
			lastTurn: agentbridge.LastTurnFailed,
		},
		{
			name: "interrupted turn is cancelled and closes its open tool",
			lines: []string{metaLine, startLine, callLine,
				`{"timestamp":"2026-05-01T10:00:04.000Z","type":"event_msg","payload":{"type":"turn_aborted","turn_id":"t1","reason":"interrupted"}}`,
				outOKLine, // the output after the abort is not a second finish
			},
			status:    sourcestest.StatusDone,
			lastTurn:  agentbridge.LastTurnInterrupted,
			wantKinds: "session.started turn.started tool.started tool.finished agent.done",
		},
		{
			name: "a repeated turn end is ignored",
			lines: []string{metaLine, startLine, doneLine,
				`{"timestamp":"2026-05-01T10:00:05.000Z","type":"event_msg","payload":{"type":"turn_aborted","turn_id":"t1","reason":"interrupted"}}`},
			status:    sourcestest.StatusDone,
			lastTurn:  agentbridge.LastTurnCompleted,
			wantKinds: "session.started turn.started agent.done",
		},
		{
			name: "inferred: a prompt without task events runs",
			lines: []string{metaLine,
				`{"timestamp":"2026-05-01T10:00:01.000Z","type":"event_msg","payload":{"type":"user_message","message":"hi"}}`,
				callLine},
			status: agentbridge.StatusRunning,
		},
		{
			name: "inferred: the final answer ends the turn",
			lines: []string{metaLine,
				`{"timestamp":"2026-05-01T10:00:01.000Z","type":"event_msg","payload":{"type":"user_message","message":"hi"}}`,
				`{"timestamp":"2026-05-01T10:00:02.000Z","type":"event_msg","payload":{"type":"agent_message","message":"hello","phase":"final_answer"}}`},
			status:    sourcestest.StatusDone,
			lastTurn:  agentbridge.LastTurnCompleted,
			wantKinds: "session.started turn.started agent.done",
		},
		{
			name: "inferred: an answer with nothing after it ends the turn at the flush",
			lines: []string{metaLine,
				`{"timestamp":"2026-05-01T10:00:01.000Z","type":"event_msg","payload":{"type":"user_message","message":"hi"}}`,
				`{"timestamp":"2026-05-01T10:00:02.000Z","type":"event_msg","payload":{"type":"agent_message","message":"hello"}}`},
			status:   sourcestest.StatusDone,
			lastTurn: agentbridge.LastTurnCompleted,
		},
		{
			name: "inferred: an answer followed by a tool call is not the end",
			lines: []string{metaLine,
				`{"timestamp":"2026-05-01T10:00:01.000Z","type":"event_msg","payload":{"type":"user_message","message":"hi"}}`,
				`{"timestamp":"2026-05-01T10:00:02.000Z","type":"event_msg","payload":{"type":"agent_message","message":"let me look"}}`,
				callLine},
			status: agentbridge.StatusRunning,
		},
		{
			name:      "records before session_meta publish nothing",
			lines:     []string{startLine, callLine, metaLine},
			status:    agentbridge.StatusIdle,
			wantKinds: "session.started",
		},
		{
			name: "garbage lines are skipped",
			lines: []string{metaLine, `not json`, `{"type":`, `[]`, `{"timestamp":"x","type":"event_msg","payload":{"type":"task_started","turn_id":7}}`,
				`{"timestamp":"2026-05-01T10:00:01.000Z","type":"event_msg","payload":"oops"}`, `{}`, `null`, startLine},
			status:    agentbridge.StatusRunning,
			wantKinds: "session.started turn.started",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			pubs, snap := run(t, tt.lines...)
			if snap.Status != tt.status || snap.LastTurn != tt.lastTurn {
				t.Errorf("status %s lastTurn %q, want %s %q (events: %s)", snap.Status, snap.LastTurn, tt.status, tt.lastTurn, kinds(pubs))
			}
			if tt.wantKinds != "" && kinds(pubs) != tt.wantKinds {
				t.Errorf("events = %s\nwant     %s", kinds(pubs), tt.wantKinds)
			}
		})
	}
}

func TestRolloutToolOutcome(t *testing.T) {
	tests := []struct {
		name string
		out  string
		want agentbridge.Outcome
	}{
		{"exit 0", outOKLine, agentbridge.OutcomeSuccess},
		{"exit 2", outErrLine, agentbridge.OutcomeError},
		{"older JSON output", `{"type":"response_item","payload":{"type":"function_call_output","call_id":"call_1","output":"{\"output\":\"x\\n\",\"metadata\":{\"exit_code\":1,\"duration_seconds\":0.1}}"}}`, agentbridge.OutcomeError},
		{"no exit code", `{"type":"response_item","payload":{"type":"function_call_output","call_id":"call_1","output":"Plan updated"}}`, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			pubs, _ := run(t, metaLine, startLine, callLine, tt.out)
			last := pubs[len(pubs)-1].Event
			if last.Kind != agentbridge.KindToolFinished || last.Outcome != tt.want {
				t.Errorf("last event %+v, want tool.finished with outcome %q", last, tt.want)
			}
		})
	}
	t.Run("exec_command_end decides", func(t *testing.T) {
		end := `{"type":"event_msg","payload":{"type":"exec_command_end","call_id":"call_1","exit_code":3}}`
		pubs, _ := run(t, metaLine, startLine, callLine, end, `{"type":"response_item","payload":{"type":"function_call_output","call_id":"call_1","output":"Process exited with code 0"}}`)
		if got := pubs[len(pubs)-1].Event.Outcome; got != agentbridge.OutcomeError {
			t.Errorf("outcome %q, want error (from exec_command_end)", got)
		}
	})
}

func TestRolloutTitle(t *testing.T) {
	long := strings.Repeat("word ", 500)
	tests := []struct {
		name  string
		lines []string
		want  string
	}{
		{"first prompt", []string{metaLine, startLine, userLine, `{"type":"event_msg","payload":{"type":"user_message","message":"second"}}`}, "Fix the flaky test"},
		{"thread name beats the prompt", []string{metaLine, startLine, userLine, `{"type":"event_msg","payload":{"type":"thread_name_updated","thread_id":"x","thread_name":"Flaky test hunt"}}`}, "Flaky test hunt"},
		{"prompt never replaces a thread name", []string{metaLine, `{"type":"event_msg","payload":{"type":"thread_name_updated","thread_name":"Named"}}`, startLine, userLine}, "Named"},
		{"credentials redacted", []string{metaLine, startLine, `{"type":"event_msg","payload":{"type":"user_message","message":"use key sk-abcdefghijklmnopqrstuvwxyz123456 now"}}`}, "use key [redacted] now"},
		{"paths cut to their last element", []string{metaLine, startLine, `{"type":"event_msg","payload":{"type":"user_message","message":"fix /home/alice/src/app/main.go and ~/notes/todo.md, see https://example.com/a/b"}}`}, "fix …/main.go and …/todo.md, see https://example.com/a/b"},
		{"newlines folded", []string{metaLine, startLine, `{"type":"event_msg","payload":{"type":"user_message","message":"line one\n\tline two"}}`}, "line one line two"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, snap := run(t, tt.lines...)
			if snap.Title != tt.want {
				t.Errorf("title %q, want %q", snap.Title, tt.want)
			}
		})
	}
	t.Run("long prompt bounded", func(t *testing.T) {
		_, snap := run(t, metaLine, startLine, `{"type":"event_msg","payload":{"type":"user_message","message":"`+long+`"}}`)
		if n := utf8.RuneCountInString(snap.Title); n > validate.MaxTitle || !strings.HasSuffix(snap.Title, "…") {
			t.Errorf("title of %d characters %q, want ≤ %d ending in …", n, snap.Title, validate.MaxTitle)
		}
	})
}

func TestRolloutDerivedIDs(t *testing.T) {
	bad := `bad id with spaces/and/slashes`
	call := `{"type":"response_item","payload":{"type":"custom_tool_call","name":"apply_patch","call_id":"` + bad + `","input":"x"}}`
	out := `{"type":"response_item","payload":{"type":"custom_tool_call_output","call_id":"` + bad + `","output":"ok"}}`
	pubs, snap := run(t, metaLine, startLine, call, out)
	var started, finished string
	for _, p := range pubs {
		switch p.Event.Kind {
		case agentbridge.KindToolStarted:
			started = p.Event.ToolID
		case agentbridge.KindToolFinished:
			finished = p.Event.ToolID
		}
	}
	if started == "" || started != finished || !strings.HasPrefix(started, "x-") {
		t.Errorf("tool ids started %q finished %q, want the same derived x- id", started, finished)
	}
	if validate.SafeID(bad) != started {
		t.Errorf("derived id is not stable: %q vs %q", validate.SafeID(bad), started)
	}
	if snap.Status != agentbridge.StatusRunning {
		t.Errorf("status %s, want running", snap.Status)
	}
	// a session id that is not an identity value is derived the same way
	e := NewEngine()
	pubs = e.Line("k", []byte(`{"type":"session_meta","payload":{"id":"thread id?","cwd":"/x"}}`))
	pubs = append(pubs, e.Flush("k")...)
	if len(pubs) != 1 || pubs[0].Session != validate.SafeID("thread id?") {
		t.Errorf("got %+v, want one session.started for the derived id", pubs)
	}
}

func TestRolloutMeta(t *testing.T) {
	r := NewRollout(0)
	r.Line(nil, []byte(`{"timestamp":"2026-07-14T18:21:37.000Z","type":"session_meta","payload":{"id":"019f624a-cc95-7c50-b9fa-1db381270b73","cwd":"/a/./b/","source":{"subagent":{"thread_spawn":{"parent_thread_id":"019f6249-055d-76d3-b381-cd9d3eb99189","depth":1,"agent_nickname":"Euclid","agent_role":"explorer"}}}}}`))
	r.Line(nil, []byte(ctxLine))
	m, ok := r.Meta()
	want := Meta{ID: "019f624a-cc95-7c50-b9fa-1db381270b73", Parent: "019f6249-055d-76d3-b381-cd9d3eb99189", Subagent: true,
		Cwd: "/a/b", Source: "subagent", Nickname: "Euclid", Role: "explorer", ApprovalPolicy: "never"}
	if !ok || m != want {
		t.Errorf("Meta() = %+v, %v\nwant      %+v", m, ok, want)
	}
}

func TestEngineSessionIndex(t *testing.T) {
	e := NewEngine()
	// the index is read before the rollout: the name joins session.started
	e.SetName("019e0000-0000-7000-8000-000000000001", "old name")
	e.SetName("019e0000-0000-7000-8000-000000000001", "latest name")
	var pubs []Pub
	for _, l := range []string{metaLine, startLine, userLine} {
		pubs = append(pubs, e.Line("k", []byte(l))...)
	}
	// a later entry renames it
	pubs = append(pubs, e.SetName("019e0000-0000-7000-8000-000000000001", "renamed")...)
	checkPublishable(t, pubs)
	snaps := foldAll(t, pubs)
	if len(snaps) != 1 || snaps[0].Title != "renamed" {
		t.Fatalf("snapshots %+v, want one titled renamed", snaps)
	}
	before := foldAll(t, pubs[:len(pubs)-1])
	if before[0].Title != "latest name" {
		t.Errorf("title before the rename %q, want the latest index entry", before[0].Title)
	}
	id, name, ok := parseIndexLine([]byte(`{"id":"019e0000-0000-7000-8000-000000000001","thread_name":"x","updated_at":"2026-05-01T10:00:00Z"}`))
	if !ok || id == "" || name != "x" {
		t.Errorf("parseIndexLine = %q %q %v", id, name, ok)
	}
	if _, _, ok := parseIndexLine([]byte(`{"id":"a"}`)); ok {
		t.Error("parseIndexLine accepted an entry without a name")
	}
}

func TestEngineSubagentNeverRoot(t *testing.T) {
	e := NewEngine()
	child := `{"type":"session_meta","payload":{"id":"019f624a-cc95-7c50-b9fa-1db381270b73","source":{"subagent":{"thread_spawn":{"parent_thread_id":"019f6249-055d-76d3-b381-cd9d3eb99189","depth":1}}}}}`
	orphan := `{"type":"session_meta","payload":{"id":"019f624b-cc95-7c50-b9fa-1db381270b74","source":{"subagent":"review"}}}`
	var pubs []Pub
	pubs = append(pubs, e.Line("c", []byte(child))...)
	pubs = append(pubs, e.Line("c", []byte(startLine))...)
	pubs = append(pubs, e.Flush("c")...)
	pubs = append(pubs, e.Line("o", []byte(orphan))...)
	pubs = append(pubs, e.Flush("o")...)
	if len(pubs) != 0 {
		t.Fatalf("a subagent without its parent published %+v", pubs)
	}
	if _, root, ok := e.Thread("c"); !ok || root {
		t.Errorf("Thread(child) root=%v ok=%v, want a known non-root thread", root, ok)
	}
	// the parent appears: the child is listed under it
	pubs = append(pubs, e.Line("p", []byte(`{"type":"session_meta","payload":{"id":"019f6249-055d-76d3-b381-cd9d3eb99189","source":"cli"}}`))...)
	pubs = append(pubs, e.Flush("p")...)
	snaps := foldAll(t, pubs)
	if len(snaps) != 1 || len(snaps[0].Subagents) != 1 || snaps[0].Subagents[0].Status != agentbridge.SubagentRunning {
		t.Fatalf("snapshots %+v, want the parent with one running subagent", snaps)
	}
	// the child's turn ends: completed
	pubs = append(pubs, e.Line("c", []byte(doneLine))...)
	snaps = foldAll(t, pubs)
	if snaps[0].Subagents[0].Status != agentbridge.SubagentCompleted {
		t.Errorf("subagent %+v, want completed", snaps[0].Subagents[0])
	}
	// removing the parent's rollout stops the session
	pubs = append(pubs, e.Close("p")...)
	if snaps = foldAll(t, pubs); len(snaps) != 0 {
		t.Errorf("after the parent's rollout went away: %+v, want no session", snaps)
	}
}

func TestEngineBadLines(t *testing.T) {
	e := NewEngine()
	for _, tt := range []struct {
		line string
		bad  bool
	}{
		{metaLine, false},
		{`not json`, true},
		{`{"type": broken`, true},
		{`[1,2]`, true},
		{`{"record_type":"state"}`, false},
	} {
		e.Line("k", []byte(tt.line))
		if e.Bad() != tt.bad {
			t.Errorf("Line(%q): Bad() = %v, want %v", tt.line, e.Bad(), tt.bad)
		}
	}
}

func TestKeyOf(t *testing.T) {
	for _, p := range []string{
		"/h/sessions/2026/11/30/rollout-2026-11-30T08-00-00-019f6249-055d-76d3-b381-cd9d3eb99189.jsonl",
		"/h/sessions/2026/11/30/rollout-2026-11-30T08-00-00-019f6249-055d-76d3-b381-cd9d3eb99189.jsonl.zst",
	} {
		if got := keyOf(p); got != "rollout-2026-11-30T08-00-00-019f6249-055d-76d3-b381-cd9d3eb99189" {
			t.Errorf("keyOf(%q) = %q: a compressed rollout must keep its key", p, got)
		}
	}
}

// TestRolloutTurnError: a failed turn shows why, from task_complete's
// error or an error record before the turn's end.
func TestRolloutTurnError(t *testing.T) {
	for _, tc := range []struct {
		name  string
		lines []string
		want  string
	}{
		{"task_complete's error", []string{metaLine, startLine,
			`{"timestamp":"2026-05-01T10:00:04.000Z","type":"event_msg","payload":{"type":"task_complete","turn_id":"t1","last_agent_message":null,"error":{"message":"You've hit your usage limit.","codex_error_info":"usage_limit_exceeded"}}}`},
			"You've hit your usage limit."},
		{"an error record", []string{metaLine, startLine,
			`{"timestamp":"2026-05-01T10:00:03.000Z","type":"event_msg","payload":{"type":"error","message":"stream disconnected before completion: Authorization: Bearer abcdefgh12345678"}}`, doneLine},
			"stream disconnected before completion: Authorization: [redacted]"},
		{"a success has none", []string{metaLine, startLine, doneLine}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, snap := run(t, tc.lines...)
			if snap.Error != tc.want {
				t.Errorf("error %q, want %q", snap.Error, tc.want)
			}
		})
	}
}
