package example

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/agentbridge/agentbridge"
	"github.com/agentbridge/agentbridge/sources"
	"github.com/agentbridge/agentbridge/validate"
)

func intp(i int) *int { return &i }

func TestMapRecord(t *testing.T) {
	t.Parallel()
	const ts = 1796029200000 // 2026-11-30T09:00:00Z
	tests := []struct {
		name string
		line string
		want agentbridge.Event
		ok   bool
		code string
	}{
		{"session", `{"type":"session","ts":"2026-11-30T09:00:00Z","title":"T","model":"m","cwd":"/w","pid":42}`,
			agentbridge.Event{Kind: agentbridge.KindSessionStarted, OccurredAt: ts, Title: "T", Model: "m", Cwd: "/w", PID: 42}, true, ""},
		{"session without anything", `{"type":"session"}`, agentbridge.Event{Kind: agentbridge.KindSessionStarted}, true, ""},
		{"a relative or unclean cwd is dropped", `{"type":"session","cwd":"work/../x"}`, agentbridge.Event{Kind: agentbridge.KindSessionStarted}, true, ""},
		{"an impossible pid is dropped", `{"type":"session","pid":2147483648}`, agentbridge.Event{Kind: agentbridge.KindSessionStarted}, true, ""},
		{"prompt", `{"type":"prompt","turnId":"t1","text":"line one\nline two"}`,
			agentbridge.Event{Kind: agentbridge.KindTurnStarted, TurnID: "t1", PromptText: "line one line two"}, true, ""},
		{"prompt without a turn id", `{"type":"prompt","text":"x"}`, agentbridge.Event{}, false, sources.CodeInvalidRecord},
		{"prompt with a malformed turn id", `{"type":"prompt","turnId":"has space"}`, agentbridge.Event{}, false, sources.CodeInvalidRecord},
		{"tool_started without a name", `{"type":"tool_started","toolId":"c1"}`,
			agentbridge.Event{Kind: agentbridge.KindToolStarted, ToolID: "c1", Name: "Tool"}, true, ""},
		{"tool_finished ok", `{"type":"tool_finished","toolId":"c1","ok":true}`,
			agentbridge.Event{Kind: agentbridge.KindToolFinished, ToolID: "c1", Outcome: agentbridge.OutcomeSuccess}, true, ""},
		{"tool_finished failed", `{"type":"tool_finished","toolId":"c1","ok":false}`,
			agentbridge.Event{Kind: agentbridge.KindToolFinished, ToolID: "c1", Outcome: agentbridge.OutcomeError}, true, ""},
		{"tool_finished cancelled", `{"type":"tool_finished","toolId":"c1","cancelled":true}`,
			agentbridge.Event{Kind: agentbridge.KindToolFinished, ToolID: "c1", Outcome: agentbridge.OutcomeCancelled}, true, ""},
		{"tool_finished without outcome", `{"type":"tool_finished","toolId":"c1"}`,
			agentbridge.Event{Kind: agentbridge.KindToolFinished, ToolID: "c1"}, true, ""},
		{"approval_needed as the host example", `{"type":"approval_needed","requestId":"r1"}`,
			agentbridge.Event{Kind: agentbridge.KindWaitStarted, WaitID: "r1", State: agentbridge.StatusWaiting, Reason: "Approval requested"}, true, ""},
		{"approval_needed with a reason", `{"type":"approval_needed","requestId":"r1","reason":"Delete files?"}`,
			agentbridge.Event{Kind: agentbridge.KindWaitStarted, WaitID: "r1", State: agentbridge.StatusWaiting, Reason: "Delete files?"}, true, ""},
		{"approval_resolved", `{"type":"approval_resolved","requestId":"r1"}`,
			agentbridge.Event{Kind: agentbridge.KindWaitFinished, WaitID: "r1"}, true, ""},
		{"complete without ok is success, as in the host example", `{"type":"complete","summary":"s"}`,
			agentbridge.Event{Kind: agentbridge.KindAgentDone, Outcome: agentbridge.OutcomeSuccess, Summary: "s"}, true, ""},
		{"complete ok false", `{"type":"complete","ok":false}`,
			agentbridge.Event{Kind: agentbridge.KindAgentDone, Outcome: agentbridge.OutcomeError}, true, ""},
		{"subagent_started defaults its parent to the session", `{"type":"subagent_started","subagentId":"a1","agentType":"r","title":"x"}`,
			agentbridge.Event{Kind: agentbridge.KindSubagentStarted, SubagentID: "a1", ParentAgentID: "sess", Type: "r", Title: "x"}, true, ""},
		{"subagent_started with a parent", `{"type":"subagent_started","subagentId":"a2","parentId":"a1"}`,
			agentbridge.Event{Kind: agentbridge.KindSubagentStarted, SubagentID: "a2", ParentAgentID: "a1"}, true, ""},
		{"subagent_done failed", `{"type":"subagent_done","subagentId":"a1","ok":false,"summary":"no"}`,
			agentbridge.Event{Kind: agentbridge.KindSubagentDone, SubagentID: "a1", Outcome: agentbridge.OutcomeError, Summary: "no"}, true, ""},
		{"exit", `{"type":"exit","code":130,"signal":"SIGINT"}`,
			agentbridge.Event{Kind: agentbridge.KindAgentExited, ExitCode: intp(130), Signal: "SIGINT"}, true, ""},
		{"exit with nonsense", `{"type":"exit","code":-4,"signal":"kill me"}`, agentbridge.Event{Kind: agentbridge.KindAgentExited}, true, ""},
		{"a bad timestamp is left out", `{"type":"complete","ts":"yesterday"}`,
			agentbridge.Event{Kind: agentbridge.KindAgentDone, Outcome: agentbridge.OutcomeSuccess}, true, ""},
		{"long text is bounded", `{"type":"session","title":"` + strings.Repeat("x", 600) + `"}`,
			agentbridge.Event{Kind: agentbridge.KindSessionStarted, Title: strings.Repeat("x", 511) + "…"}, true, ""},
		{"unknown type", `{"type":"usage","inputTokens":3}`, agentbridge.Event{}, false, ""},
		{"not an object", `["type","session"]`, agentbridge.Event{}, false, sources.CodeInvalidJSON},
		{"broken JSON", `{"type":"session"`, agentbridge.Event{}, false, sources.CodeInvalidJSON},
		{"wrong field type", `{"type":"prompt","turnId":7}`, agentbridge.Event{}, false, sources.CodeInvalidJSON},
	}
	var scratch record
	for _, tt := range tests {
		got, ok, code := mapRecord("sess", []byte(tt.line), &scratch)
		if ok != tt.ok || code != tt.code {
			t.Errorf("mapRecord(%s) ok, code = %v, %q, want %v, %q", tt.name, ok, code, tt.ok, tt.code)
			continue
		}
		if diff := cmp.Diff(tt.want, got); ok && diff != "" {
			t.Errorf("mapRecord(%s) mismatch (-want +got):\n%s", tt.name, diff)
		}
	}
}

// FuzzMapRecord: any line maps to nothing, or to an event the contract's
// validator accepts on its own (ids, bounds, enums), and never panics.
func FuzzMapRecord(f *testing.F) {
	for _, s := range []string{
		`{"type":"session","ts":"2026-11-30T09:00:00Z","title":"T","cwd":"/w","pid":42}`,
		`{"type":"prompt","turnId":"t1","text":"x"}`,
		`{"type":"tool_finished","toolId":"c1","ok":false}`,
		`{"type":"approval_needed","requestId":"r1"}`,
		`{"type":"subagent_started","subagentId":"a1","parentId":"p"}`,
		`{"type":"exit","code":1,"signal":"SIGTERM"}`,
		"\xff\xfe", `{}`, `null`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, line []byte) {
		e, ok, code := mapRecord("sess", line, nil)
		if ok == (code != "") && ok {
			t.Fatalf("ok with code %q", code)
		}
		if !ok {
			return
		}
		if issues := validateEvent(e); len(issues) > 0 {
			t.Fatalf("mapped %q to an invalid event %+v: %+v", line, e, issues)
		}
	})
}

func validateEvent(e agentbridge.Event) []validate.Issue { return validate.Event(e) }
