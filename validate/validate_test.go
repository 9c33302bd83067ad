package validate

import (
	"strconv"
	"strings"
	"testing"

	"github.com/agentbridge/agentbridge"
	"github.com/google/go-cmp/cmp"
)

func validSnapshot() agentbridge.Snapshot {
	return agentbridge.Snapshot{
		ID:              "sess-1",
		Harness:         "example-agent",
		PID:             101,
		Cwd:             "/work/app",
		Title:           "Fix tests",
		Model:           "example-large",
		Status:          agentbridge.StatusWaiting,
		WaitingFor:      "Approve shell command",
		LastTurn:        agentbridge.LastTurnCompleted,
		LastTurnEndedAt: 1764489600000,
		Subagents:       []agentbridge.Subagent{{ID: "sub-1", Type: "explore", Status: agentbridge.SubagentRunning}},
	}
}

var enabled = Harnesses{"example-agent": true}

// many returns n completed subagents with distinct ids.
func many(n int) []agentbridge.Subagent {
	out := make([]agentbridge.Subagent, n)
	for i := range out {
		out[i] = agentbridge.Subagent{ID: "sub-" + strconv.Itoa(i), Type: "explore", Status: agentbridge.SubagentCompleted}
	}
	return out
}

// sessions returns n idle snapshots with distinct ids.
func sessions(n int) []agentbridge.Snapshot {
	out := make([]agentbridge.Snapshot, n)
	for i := range out {
		out[i] = agentbridge.Snapshot{ID: "s" + strconv.Itoa(i), Harness: "example-agent", Status: "idle"}
	}
	return out
}

type snapshotCase struct {
	name    string
	mod     func(s *agentbridge.Snapshot)
	enabled Harnesses
	want    []pc
}

var snapshotCases = []snapshotCase{
	{"valid", func(s *agentbridge.Snapshot) {}, enabled, nil},
	{"minimal", func(s *agentbridge.Snapshot) {
		*s = agentbridge.Snapshot{ID: "a", Harness: "h", Status: agentbridge.StatusIdle}
	}, nil, nil},
	{"id every allowed char", func(s *agentbridge.Snapshot) { s.ID = "Az09._:@-" }, enabled, nil},
	{"id 128 bytes", func(s *agentbridge.Snapshot) { s.ID = strings.Repeat("a", 128) }, enabled, nil},
	{"id 129 bytes", func(s *agentbridge.Snapshot) { s.ID = strings.Repeat("a", 129) }, enabled, iss("$.id", "invalid_id")},
	{"id with slash", func(s *agentbridge.Snapshot) { s.ID = "a/b" }, enabled, iss("$.id", "invalid_id")},
	{"id with space", func(s *agentbridge.Snapshot) { s.ID = "a b" }, enabled, iss("$.id", "invalid_id")},
	{"id non-ascii", func(s *agentbridge.Snapshot) { s.ID = "séance" }, enabled, iss("$.id", "invalid_id")},
	{"id missing", func(s *agentbridge.Snapshot) { s.ID = "" }, enabled, iss("$.id", "invalid_string")},
	{"harness missing", func(s *agentbridge.Snapshot) { s.Harness = "" }, enabled, iss("$.harness", "invalid_string")},
	{"harness upper case", func(s *agentbridge.Snapshot) { s.Harness = "Example" }, nil, iss("$.harness", "invalid_id")},
	{"harness leading digit", func(s *agentbridge.Snapshot) { s.Harness = "1x" }, nil, iss("$.harness", "invalid_id")},
	{"harness 65 bytes", func(s *agentbridge.Snapshot) { s.Harness = "a" + strings.Repeat("b", 64) }, nil, iss("$.harness", "invalid_string")},
	{"harness 64 bytes", func(s *agentbridge.Snapshot) { s.Harness = "a" + strings.Repeat("b", 63) }, nil, nil},
	{"harness not enabled", func(s *agentbridge.Snapshot) { s.Harness = "codex" }, enabled, iss("$.harness", "harness_not_enabled")},
	{"harness switched off", func(s *agentbridge.Snapshot) {}, Harnesses{"example-agent": false}, iss("$.harness", "harness_not_enabled")},
	{"harness nothing enabled", func(s *agentbridge.Snapshot) {}, Harnesses{}, iss("$.harness", "harness_not_enabled")},
	{"harness unchecked when nil", func(s *agentbridge.Snapshot) { s.Harness = "codex" }, nil, nil},
	{"pid negative", func(s *agentbridge.Snapshot) { s.PID = -1 }, enabled, iss("$.pid", "invalid_integer")},
	{"pid max", func(s *agentbridge.Snapshot) { s.PID = MaxPID }, enabled, nil},
	{"pid over max", func(s *agentbridge.Snapshot) { s.PID = MaxPID + 1 }, enabled, iss("$.pid", "invalid_integer")},
	{"cwd root", func(s *agentbridge.Snapshot) { s.Cwd = "/" }, enabled, nil},
	{"cwd relative", func(s *agentbridge.Snapshot) { s.Cwd = "work/app" }, enabled, iss("$.cwd", "invalid_path")},
	{"cwd dot segment", func(s *agentbridge.Snapshot) { s.Cwd = "/work/./app" }, enabled, iss("$.cwd", "invalid_path")},
	{"cwd dotdot segment", func(s *agentbridge.Snapshot) { s.Cwd = "/work/../app" }, enabled, iss("$.cwd", "invalid_path")},
	{"cwd empty segment", func(s *agentbridge.Snapshot) { s.Cwd = "/work//app" }, enabled, iss("$.cwd", "invalid_path")},
	{"cwd trailing slash", func(s *agentbridge.Snapshot) { s.Cwd = "/work/app/" }, enabled, iss("$.cwd", "invalid_path")},
	{"cwd NUL", func(s *agentbridge.Snapshot) { s.Cwd = "/work/a\x00pp" }, enabled, iss("$.cwd", "invalid_path")},
	{"cwd 4096 bytes", func(s *agentbridge.Snapshot) { s.Cwd = "/" + strings.Repeat("a", 4095) }, enabled, nil},
	{"cwd 4097 bytes", func(s *agentbridge.Snapshot) { s.Cwd = "/" + strings.Repeat("a", 4096) }, enabled, iss("$.cwd", "invalid_string")},
	{"cwd 4096 bytes of 2048 characters", func(s *agentbridge.Snapshot) { s.Cwd = "/" + strings.Repeat("é", 2047) + "a" }, enabled, nil},
	{"cwd over 4096 bytes under 4096 characters", func(s *agentbridge.Snapshot) { s.Cwd = "/" + strings.Repeat("é", 2048) }, enabled, iss("$.cwd", "invalid_path")},
	{"cwd windows", func(s *agentbridge.Snapshot) { s.Cwd = `C:\work` }, enabled, iss("$.cwd", "invalid_path")},
	{"title 512 chars multibyte", func(s *agentbridge.Snapshot) { s.Title = strings.Repeat("é", 512) }, enabled, nil},
	{"title 256 emoji is 512 units", func(s *agentbridge.Snapshot) { s.Title = strings.Repeat("🚀", 256) }, enabled, nil},
	{"title 257 emoji is 514 units", func(s *agentbridge.Snapshot) { s.Title = strings.Repeat("🚀", 257) }, enabled, iss("$.title", "invalid_string")},
	{"title 513 chars", func(s *agentbridge.Snapshot) { s.Title = strings.Repeat("a", 513) }, enabled, iss("$.title", "invalid_string")},
	{"title newline", func(s *agentbridge.Snapshot) { s.Title = "fix\ntests" }, enabled, iss("$.title", "invalid_string")},
	{"title tab", func(s *agentbridge.Snapshot) { s.Title = "fix\ttests" }, enabled, iss("$.title", "invalid_string")},
	{"title C1 control", func(s *agentbridge.Snapshot) { s.Title = "fix\u0085tests" }, enabled, iss("$.title", "invalid_string")},
	{"title invalid utf8", func(s *agentbridge.Snapshot) { s.Title = "fix\xfftests" }, enabled, iss("$.title", "invalid_string")},
	{"title emoji ok", func(s *agentbridge.Snapshot) { s.Title = "ship it 🚀 👩‍💻" }, enabled, nil},
	{"model 257 chars", func(s *agentbridge.Snapshot) { s.Model = strings.Repeat("m", 257) }, enabled, iss("$.model", "invalid_string")},
	{"model 256 chars", func(s *agentbridge.Snapshot) { s.Model = strings.Repeat("m", 256) }, enabled, nil},
	{"status missing is allowed", func(s *agentbridge.Snapshot) { s.Status = ""; s.WaitingFor = "" }, enabled, nil},
	{"status done is gone", func(s *agentbridge.Snapshot) { s.Status = "done"; s.WaitingFor = "" }, enabled, iss("$.status", "invalid_enum")},
	{"status exited is gone", func(s *agentbridge.Snapshot) { s.Status = "exited"; s.WaitingFor = "" }, enabled, iss("$.status", "invalid_enum")},
	{"status unknown", func(s *agentbridge.Snapshot) { s.Status = "paused" }, enabled, iss("$.status", "invalid_enum")},
	{"status wrong case", func(s *agentbridge.Snapshot) { s.Status = "Waiting" }, enabled, iss("$.status", "invalid_enum")},
	{"waitingFor with blocked", func(s *agentbridge.Snapshot) { s.Status = agentbridge.StatusBlocked }, enabled, nil},
	{"waitingFor with running", func(s *agentbridge.Snapshot) { s.Status = agentbridge.StatusRunning }, enabled, iss("$.waitingFor", "invalid_string")},
	{"waitingFor with idle", func(s *agentbridge.Snapshot) { s.Status = agentbridge.StatusIdle }, enabled, iss("$.waitingFor", "invalid_string")},
	{"waitingFor 1024 chars", func(s *agentbridge.Snapshot) { s.WaitingFor = strings.Repeat("w", 1024) }, enabled, nil},
	{"waitingFor too long", func(s *agentbridge.Snapshot) { s.WaitingFor = strings.Repeat("w", 1025) }, enabled, iss("$.waitingFor", "invalid_string")},
	{"lastTurn unknown", func(s *agentbridge.Snapshot) { s.LastTurn = "success" }, enabled, iss("$.lastTurn", "invalid_enum")},
	{"lastTurn cancelled is interrupted now", func(s *agentbridge.Snapshot) { s.LastTurn = "cancelled" }, enabled, iss("$.lastTurn", "invalid_enum")},
	{"lastTurn interrupted", func(s *agentbridge.Snapshot) { s.LastTurn = agentbridge.LastTurnInterrupted }, enabled, nil},
	{"tool 256 chars", func(s *agentbridge.Snapshot) { s.Tool = strings.Repeat("t", 256) }, enabled, nil},
	{"tool 257 chars", func(s *agentbridge.Snapshot) { s.Tool = strings.Repeat("t", 257) }, enabled, iss("$.tool", "invalid_string")},
	{"tool control character", func(s *agentbridge.Snapshot) { s.Tool = "Bash\n" }, enabled, iss("$.tool", "invalid_string")},
	{"error 1024 chars", func(s *agentbridge.Snapshot) { s.Error = strings.Repeat("e", 1024) }, enabled, nil},
	{"error 1025 chars", func(s *agentbridge.Snapshot) { s.Error = strings.Repeat("e", 1025) }, enabled, iss("$.error", "invalid_string")},
	{"lastTurnEndedAt negative", func(s *agentbridge.Snapshot) { s.LastTurnEndedAt = -1 }, enabled, iss("$.lastTurnEndedAt", "invalid_integer")},
	{"lastTurnEndedAt beyond 2^53", func(s *agentbridge.Snapshot) { s.LastTurnEndedAt = 1 << 53 }, enabled, iss("$.lastTurnEndedAt", "invalid_integer")},
	{"subagents 64", func(s *agentbridge.Snapshot) { s.Subagents = many(64) }, enabled, nil},
	{"subagents 65", func(s *agentbridge.Snapshot) { s.Subagents = many(65) }, enabled, iss("$.subagents", "invalid_array")},
	{"subagent duplicate id", func(s *agentbridge.Snapshot) {
		s.Subagents = append(s.Subagents, agentbridge.Subagent{ID: "x", Type: "t", Status: "failed"}, agentbridge.Subagent{ID: "sub-1", Type: "t", Status: "completed"})
	}, enabled, iss("$.subagents[2]", "duplicate")},
	{"subagent fields", func(s *agentbridge.Snapshot) {
		s.Subagents = []agentbridge.Subagent{
			{ID: "ok", Status: "running"},
			{ID: "", Type: strings.Repeat("t", 129), Title: "a\x07", Status: ""},
			{ID: "bad id", Status: "done"},
		}
	}, enabled, iss("$.subagents[0].type", "invalid_string",
		"$.subagents[1].id", "invalid_string", "$.subagents[1].type", "invalid_string",
		"$.subagents[1].title", "invalid_string", "$.subagents[1].status", "invalid_enum",
		"$.subagents[2].id", "invalid_id", "$.subagents[2].type", "invalid_string", "$.subagents[2].status", "invalid_enum")},
	{"subagent parentId", func(s *agentbridge.Snapshot) {
		s.Subagents = append(s.Subagents, agentbridge.Subagent{ID: "sub-2", ParentID: "sub-1", Type: "t", Status: "running"},
			agentbridge.Subagent{ID: "sub-3", ParentID: "not an id", Type: "t", Status: "running"})
	}, enabled, iss("$.subagents[2].parentId", "invalid_id")},
	{"everything wrong at once", func(s *agentbridge.Snapshot) {
		*s = agentbridge.Snapshot{ID: "x y", Harness: "nope", PID: -5, Cwd: "rel", Title: "\n", Model: "\x00",
			Status: "zzz", WaitingFor: "x", LastTurn: "ok", LastTurnEndedAt: -1}
	}, enabled, iss("$.id", "invalid_id", "$.harness", "harness_not_enabled", "$.pid", "invalid_integer",
		"$.cwd", "invalid_path", "$.title", "invalid_string", "$.model", "invalid_string", "$.status", "invalid_enum",
		"$.lastTurn", "invalid_enum", "$.lastTurnEndedAt", "invalid_integer")},
}

func TestSnapshot(t *testing.T) {
	t.Parallel()
	tests := snapshotCases
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			s := validSnapshot()
			tt.mod(&s)
			checkIssues(t, "Snapshot", Snapshot(s, tt.enabled), tt.want, s.Cwd, s.Title)
		})
	}
}

func TestSnapshotDoesNotChangeInput(t *testing.T) {
	t.Parallel()
	s := validSnapshot()
	s.Subagents = append(s.Subagents, agentbridge.Subagent{ID: "sub-1", Status: "x"})
	before := s.Clone()
	Snapshot(s, enabled)
	if diff := cmp.Diff(before, s); diff != "" {
		t.Errorf("Snapshot changed its input (-before +after):\n%s", diff)
	}
}

type resetCase struct {
	name     string
	sessions []agentbridge.Snapshot
	enabled  Harnesses
	want     []pc
}

var resetCases = []resetCase{
	{"empty", nil, enabled, nil},
	{"one", []agentbridge.Snapshot{validSnapshot()}, enabled, nil},
	{"1024", sessions(1024), enabled, nil},
	{"1025", sessions(1025), enabled, iss("$", "invalid_array")},
	{"duplicate id", []agentbridge.Snapshot{validSnapshot(), {ID: "other", Harness: "example-agent", Status: "idle"}, validSnapshot()},
		enabled, iss("$[2]", "duplicate")},
	{"every field of every session", []agentbridge.Snapshot{{ID: "a", Harness: "example-agent", Status: "idle", PID: -1, Cwd: "x", Title: "\n"}, {}},
		enabled, iss("$[0].pid", "invalid_integer", "$[0].cwd", "invalid_path", "$[0].title", "invalid_string",
			"$[1].id", "invalid_string", "$[1].harness", "invalid_string")},
	{"nested issues", []agentbridge.Snapshot{validSnapshot(), {ID: "b", Harness: "codex", Status: "gone",
		Subagents: []agentbridge.Subagent{{ID: "?", Status: "running"}}}},
		enabled, iss("$[1].harness", "harness_not_enabled", "$[1].status", "invalid_enum", "$[1].subagents[0].id", "invalid_id",
			"$[1].subagents[0].type", "invalid_string")},
}

func TestReset(t *testing.T) {
	t.Parallel()
	tests := resetCases
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			checkIssues(t, "Reset", Reset(tt.sessions, tt.enabled), tt.want)
		})
	}
}

type diagnosticCase struct {
	name string
	d    agentbridge.Diagnostic
	want []pc
}

var diagnosticCases = []diagnosticCase{
	{"valid", agentbridge.Diagnostic{Code: "watch-failed", Message: "could not watch the sessions directory: permission denied"}, nil},
	{"code with digits", agentbridge.Diagnostic{Code: "v2-schema", Message: "unknown record type"}, nil},
	{"url is not a path", agentbridge.Diagnostic{Code: "fetch-failed", Message: "see https://example.com/docs/x for details"}, nil},
	{"ratio is not a path", agentbridge.Diagnostic{Code: "skipped", Message: "skipped 3/4 lines and/or records"}, nil},
	{"missing both", agentbridge.Diagnostic{}, iss("$.code", "invalid_string", "$.message", "invalid_string")},
	{"code upper", agentbridge.Diagnostic{Code: "Watch-Failed", Message: "m"}, iss("$.code", "invalid_id")},
	{"code underscore", agentbridge.Diagnostic{Code: "watch_failed", Message: "m"}, iss("$.code", "invalid_id")},
	{"code double dash", agentbridge.Diagnostic{Code: "watch--failed", Message: "m"}, iss("$.code", "invalid_id")},
	{"code trailing dash", agentbridge.Diagnostic{Code: "watch-", Message: "m"}, iss("$.code", "invalid_id")},
	{"code leading digit", agentbridge.Diagnostic{Code: "1-x", Message: "m"}, iss("$.code", "invalid_id")},
	{"code 64", agentbridge.Diagnostic{Code: strings.Repeat("a", 64), Message: "m"}, nil},
	{"code 65", agentbridge.Diagnostic{Code: strings.Repeat("a", 65), Message: "m"}, iss("$.code", "invalid_string")},
	{"message 512", agentbridge.Diagnostic{Code: "x", Message: strings.Repeat("é", 512)}, nil},
	{"message 513", agentbridge.Diagnostic{Code: "x", Message: strings.Repeat("é", 513)}, iss("$.message", "invalid_string")},
	{"message newline", agentbridge.Diagnostic{Code: "x", Message: "a\nb"}, iss("$.message", "invalid_string")},
	{"message home path", agentbridge.Diagnostic{Code: "x", Message: "cannot read /home/alice/.claude/projects/x.jsonl"}, iss("$.message", "invalid_string")},
	{"message tilde path", agentbridge.Diagnostic{Code: "x", Message: "cannot read ~/.codex/sessions"}, iss("$.message", "invalid_string")},
	{"message quoted path", agentbridge.Diagnostic{Code: "x", Message: `open "/etc/passwd": denied`}, iss("$.message", "invalid_string")},
	{"message windows path", agentbridge.Diagnostic{Code: "x", Message: `cannot read C:\Users\bob\x`}, iss("$.message", "invalid_string")},
	{"message file url", agentbridge.Diagnostic{Code: "x", Message: "bad file:///tmp/x"}, iss("$.message", "invalid_string")},
}

func TestDiagnostic(t *testing.T) {
	t.Parallel()
	tests := diagnosticCases
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			checkIssues(t, "Diagnostic", Diagnostic(tt.d), tt.want, tt.d.Message)
		})
	}
}

func exit(n int) *int { return &n }

type eventCase struct {
	name string
	e    E
	want []pc
}

var eventCases = []eventCase{
	// Valid events, one per kind, with every field the kind takes.
	{"session.started", E{Kind: "session.started", OccurredAt: 1, Title: "t", Model: "m", Cwd: "/w", PID: 7}, nil},
	{"session.started bare", E{Kind: "session.started"}, nil},
	{"agent.metadata", E{Kind: "agent.metadata", Title: "t", PromptText: "p", AgentID: "a1", Model: "m"}, nil},
	{"turn.started", E{Kind: "turn.started", TurnID: "t1", PromptText: "fix it"}, nil},
	{"tool.started", E{Kind: "tool.started", ToolID: "toolu_01", Name: "Bash"}, nil},
	{"tool.finished", E{Kind: "tool.finished", ToolID: "toolu_01", Outcome: "error"}, nil},
	{"wait.started", E{Kind: "wait.started", WaitID: "w1", State: "blocked", Reason: "rate limited"}, nil},
	{"wait.finished", E{Kind: "wait.finished", WaitID: "w1"}, nil},
	{"agent.done", E{Kind: "agent.done", Outcome: "cancelled", Summary: "s"}, nil},
	{"agent.exited", E{Kind: "agent.exited", ExitCode: exit(0), Signal: "SIGKILL"}, nil},
	{"agent.exited negative code", E{Kind: "agent.exited", ExitCode: exit(-1)}, nil},
	{"subagent.started", E{Kind: "subagent.started", SubagentID: "c1", ParentAgentID: "root", Title: "t", Type: "explore"}, nil},
	{"subagent.done", E{Kind: "subagent.done", SubagentID: "c1", Outcome: "success", Summary: "s"}, nil},
	{"session.stopped", E{Kind: "session.stopped", Reason: "terminal closed"}, nil},

	{"kind missing", E{}, iss("$.kind", "missing_field")},
	{"kind unknown", E{Kind: "turn.ended"}, iss("$.kind", "invalid_enum")},
	{"kind unknown still checks values", E{Kind: "x", TurnID: "a b"}, iss("$.kind", "invalid_enum", "$.turnId", "invalid_id")},
	{"turn.started missing turnId", E{Kind: "turn.started"}, iss("$.turnId", "missing_field")},
	{"tool.started missing both", E{Kind: "tool.started"}, iss("$.toolId", "missing_field", "$.name", "missing_field")},
	{"tool.finished missing", E{Kind: "tool.finished"}, iss("$.toolId", "missing_field")},
	{"wait.started missing", E{Kind: "wait.started"}, iss("$.waitId", "missing_field", "$.state", "missing_field")},
	{"wait.finished missing", E{Kind: "wait.finished"}, iss("$.waitId", "missing_field")},
	{"agent.done missing outcome", E{Kind: "agent.done"}, iss("$.outcome", "missing_field")},
	{"subagent.started missing", E{Kind: "subagent.started"}, iss("$.subagentId", "missing_field", "$.parentAgentId", "missing_field")},
	{"subagent.done missing", E{Kind: "subagent.done"}, iss("$.subagentId", "missing_field", "$.outcome", "missing_field")},

	{"field of another kind", E{Kind: "turn.started", TurnID: "t", ToolID: "x", ExitCode: exit(1), Cwd: "/x"},
		iss("$.toolId", "unknown_field", "$.exitCode", "unknown_field", "$.cwd", "unknown_field")},
	{"session.stopped takes only reason", E{Kind: "session.stopped", Title: "t", Summary: "s", PID: 3},
		iss("$.title", "unknown_field", "$.summary", "unknown_field", "$.pid", "unknown_field")},
	{"wait.finished takes no reason", E{Kind: "wait.finished", WaitID: "w", Reason: "r"}, iss("$.reason", "unknown_field")},

	{"ids malformed", E{Kind: "subagent.started", SubagentID: strings.Repeat("s", 129), ParentAgentID: "p/q"},
		iss("$.subagentId", "invalid_id", "$.parentAgentId", "invalid_id")},
	{"agentId malformed", E{Kind: "agent.metadata", AgentID: "a b"}, iss("$.agentId", "invalid_id")},
	{"toolId malformed", E{Kind: "tool.started", ToolID: "é", Name: "x"}, iss("$.toolId", "invalid_id")},
	{"waitId malformed", E{Kind: "wait.finished", WaitID: "w\n"}, iss("$.waitId", "invalid_id")},
	{"outcome enum", E{Kind: "agent.done", Outcome: "completed"}, iss("$.outcome", "invalid_enum")},
	{"tool outcome enum", E{Kind: "tool.finished", ToolID: "t", Outcome: "ok"}, iss("$.outcome", "invalid_enum")},
	{"wait state done", E{Kind: "wait.started", WaitID: "w", State: "done"}, iss("$.state", "invalid_enum")},
	{"wait state running", E{Kind: "wait.started", WaitID: "w", State: "running"}, iss("$.state", "invalid_enum")},
	{"promptText too long", E{Kind: "turn.started", TurnID: "t", PromptText: strings.Repeat("p", MaxTitle+1)}, iss("$.promptText", "invalid_string")},
	{"promptText at bound", E{Kind: "turn.started", TurnID: "t", PromptText: strings.Repeat("p", MaxText)}, nil},
	{"name newline", E{Kind: "tool.started", ToolID: "t", Name: "a\nb"}, iss("$.name", "invalid_string")},
	{"reason too long", E{Kind: "wait.started", WaitID: "w", State: "waiting", Reason: strings.Repeat("r", MaxWaitingFor+1)}, iss("$.reason", "invalid_string")},
	{"summary control", E{Kind: "agent.done", Outcome: "success", Summary: "\x1b[31m"}, iss("$.summary", "invalid_string")},
	{"title too long", E{Kind: "session.started", Title: strings.Repeat("t", MaxTitle+1)}, iss("$.title", "invalid_string")},
	{"model too long", E{Kind: "agent.metadata", Model: strings.Repeat("m", MaxModel+1)}, iss("$.model", "invalid_string")},
	{"type too long", E{Kind: "subagent.started", SubagentID: "s", ParentAgentID: "p", Type: strings.Repeat("t", 129)}, iss("$.type", "invalid_string")},
	{"signal too long", E{Kind: "agent.exited", Signal: strings.Repeat("S", 33)}, iss("$.signal", "invalid_string")},
	{"cwd relative", E{Kind: "session.started", Cwd: "./x"}, iss("$.cwd", "invalid_path")},
	{"pid range", E{Kind: "session.started", PID: MaxPID + 1}, iss("$.pid", "invalid_integer")},
	{"occurredAt negative", E{Kind: "session.stopped", OccurredAt: -1}, iss("$.occurredAt", "invalid_integer")},
	{"exitCode range", E{Kind: "agent.exited", ExitCode: exit(MaxExitCode + 1)}, iss("$.exitCode", "invalid_integer")},
}

func TestEvent(t *testing.T) {
	t.Parallel()
	tests := eventCases
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			checkIssues(t, "Event", Event(tt.e), tt.want, tt.e.PromptText, tt.e.Cwd)
		})
	}
}

// TestEventFieldTable guards the kind table against drift from the
// contract's section 2.
func TestEventFieldTable(t *testing.T) {
	t.Parallel()
	want := map[agentbridge.EventKind]map[string]bool{
		"session.started":  {"title": false, "model": false, "cwd": false, "pid": false},
		"agent.metadata":   {"title": false, "promptText": false, "agentId": false, "model": false},
		"turn.started":     {"turnId": true, "promptText": false},
		"tool.started":     {"toolId": true, "name": true},
		"tool.finished":    {"toolId": true, "outcome": false},
		"wait.started":     {"waitId": true, "state": true, "reason": false},
		"wait.finished":    {"waitId": true},
		"agent.done":       {"outcome": true, "summary": false},
		"agent.exited":     {"exitCode": false, "signal": false},
		"subagent.started": {"subagentId": true, "parentAgentId": true, "title": false, "type": false},
		"subagent.done":    {"subagentId": true, "outcome": true, "summary": false},
		"session.stopped":  {"reason": false},
	}
	got := map[agentbridge.EventKind]map[string]bool{}
	for _, k := range agentbridge.EventKinds {
		got[k] = EventFields(k)
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("EventFields mismatch (-want +got):\n%s", diff)
	}
	if EventFields("nope") != nil {
		t.Errorf("EventFields(nope) = non-nil, want nil")
	}
}

func TestNest(t *testing.T) {
	t.Parallel()
	in := []Issue{{Path: "$", Code: InvalidType, Message: "m"}, {Path: "$.id", Code: InvalidID, Message: "m"}, {Path: "$[0].x", Code: MissingField, Message: "m"}}
	got := Nest(in, "$[2].session")
	want := []Issue{{Path: "$[2].session", Code: InvalidType, Message: "m"}, {Path: "$[2].session.id", Code: InvalidID, Message: "m"}, {Path: "$[2].session[0].x", Code: MissingField, Message: "m"}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("Nest mismatch (-want +got):\n%s", diff)
	}
	if in[1].Path != "$.id" {
		t.Errorf("Nest changed its input: %q", in[1].Path)
	}
	if Nest(nil, "$.x") != nil {
		t.Errorf("Nest(nil) != nil")
	}
}

func TestSafeID(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ in, want string }{
		{"toolu_01FUU3kHfh1aksNtQQSYSuse", "toolu_01FUU3kHfh1aksNtQQSYSuse"},
		{"5d7e0c1a-2b3c-4d5e-8f90-a1b2c3d4e5f6", "5d7e0c1a-2b3c-4d5e-8f90-a1b2c3d4e5f6"},
		{"", ""},
		{"thread id?", "x-f2d13c4ec5d7d1b0bbd2d0c1c1e6a6b5"},
	} {
		got := SafeID(tc.in)
		if tc.in == "thread id?" {
			if len(got) != 34 || !strings.HasPrefix(got, "x-") {
				t.Errorf("SafeID(%q) = %q, want x- and 32 hex digits", tc.in, got)
			}
			continue
		}
		if got != tc.want {
			t.Errorf("SafeID(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
	for _, bad := range []string{"[trimmed for fixture]", strings.Repeat("a", 129), "a b", "ü", "a/b"} {
		got := SafeID(bad)
		if !ValidID(got) || got == bad || SafeID(bad) != got || SafeID(bad+"x") == got {
			t.Errorf("SafeID(%q) = %q: want a valid, stable, distinct derived id", bad, got)
		}
	}
}
