package validate

import (
	"encoding/json"
	"strconv"
	"strings"
	"testing"

	"github.com/agentbridge/agentbridge"
	"github.com/google/go-cmp/cmp"
)

type decodeCase struct {
	name string
	in   string
	want []pc
}

const okSnap = `{"id":"sess-1","harness":"example-agent","pid":101,"cwd":"/work/app","title":"Fix tests","model":"example-large","status":"waiting","waitingFor":"Approve shell command","lastTurn":"completed","lastTurnEndedAt":1764489600000,"subagents":[{"id":"sub-1","type":"explore","status":"running"}]}`

var decodeSnapshotCases = []decodeCase{
	{"valid", okSnap, nil},
	{"minimal", `{"id":"a","harness":"example-agent","status":"idle"}`, nil},
	{"integral float pid", `{"id":"a","harness":"example-agent","status":"idle","pid":1.0,"lastTurnEndedAt":1e3}`, nil},
	{"zero lastTurnEndedAt", `{"id":"a","harness":"example-agent","status":"idle","lastTurnEndedAt":0}`, nil},
	{"empty subagents", `{"id":"a","harness":"example-agent","status":"idle","subagents":[]}`, nil},
	{"whitespace around", " \n" + okSnap + "\n ", nil},

	{"malformed", `{"id":`, iss("$", "invalid_type")},
	{"empty body", ``, iss("$", "invalid_type")},
	{"trailing data", okSnap + ` {}`, iss("$", "invalid_type")},
	{"trailing garbage", okSnap + `x`, iss("$", "invalid_type")},
	{"not an object", `[1]`, iss("$", "invalid_type")},
	{"null", `null`, iss("$", "invalid_type")},
	{"string", `"sess"`, iss("$", "invalid_type")},
	{"too deep", `{"x":` + strings.Repeat("[", 100) + strings.Repeat("]", 100) + `}`, iss("$", "invalid_type")},
	{"empty object", `{}`, iss("$.id", "invalid_string", "$.harness", "invalid_string")},
	{"wrong types get the host's codes", `{"id":1,"harness":true,"pid":"7","cwd":[],"title":{},"model":null,"status":2,"waitingFor":false,"tool":1,"lastTurn":0,"lastTurnEndedAt":"0","error":[],"subagents":{}}`,
		iss("$.id", "invalid_string", "$.harness", "invalid_string", "$.pid", "invalid_integer", "$.cwd", "invalid_string",
			"$.title", "invalid_string", "$.model", "invalid_string", "$.status", "invalid_enum", "$.waitingFor", "invalid_string",
			"$.tool", "invalid_string", "$.lastTurn", "invalid_enum", "$.lastTurnEndedAt", "invalid_integer", "$.error", "invalid_string",
			"$.subagents", "invalid_array")},
	{"non-integer pid", `{"id":"a","harness":"example-agent","status":"idle","pid":1.5}`, iss("$.pid", "invalid_integer")},
	{"huge pid", `{"id":"a","harness":"example-agent","status":"idle","pid":1e30}`, iss("$.pid", "invalid_integer")},
	{"pid zero", `{"id":"a","harness":"example-agent","status":"idle","pid":0}`, iss("$.pid", "invalid_integer")},
	{"pid negative", `{"id":"a","harness":"example-agent","status":"idle","pid":-3}`, iss("$.pid", "invalid_integer")},
	{"endedAt fraction", `{"id":"a","harness":"example-agent","status":"idle","lastTurnEndedAt":12.25}`, iss("$.lastTurnEndedAt", "invalid_integer")},
	{"unknown field", `{"id":"a","harness":"example-agent","status":"idle","terminal":3,"Title":"x"}`, iss("$.terminal", "unknown_field", "$.Title", "unknown_field")},
	{"key twice", `{"id":"a","harness":"example-agent","status":"idle","id":"b"}`, iss("$.id", "duplicate")},
	{"odd unknown keys", `{"id":"a","harness":"example-agent","status":"idle","a.b":1,"":2,"x\ny":3,"` + strings.Repeat("k", 70) + `":4}`,
		iss(`$["a.b"]`, "unknown_field", `$[""]`, "unknown_field", `$["x y"]`, "unknown_field", `$["`+strings.Repeat("k", 63)+`…"]`, "unknown_field")},
	{"present empty strings", `{"id":"","harness":"","status":"","cwd":"","title":"","model":"","waitingFor":"","lastTurn":""}`,
		iss("$.id", "invalid_string", "$.harness", "invalid_string", "$.harness", "harness_not_enabled", "$.status", "invalid_enum", "$.cwd", "invalid_string",
			"$.title", "invalid_string", "$.model", "invalid_string", "$.waitingFor", "invalid_string", "$.lastTurn", "invalid_enum")},
	{"harness off", `{"id":"a","harness":"codex","status":"idle"}`, iss("$.harness", "harness_not_enabled")},
	{"escaped control char", `{"id":"a","harness":"example-agent","status":"idle","title":"a\u0007b"}`, iss("$.title", "invalid_string")},
	{"escaped newline", `{"id":"a","harness":"example-agent","status":"idle","title":"a\nb"}`, iss("$.title", "invalid_string")},
	{"cwd dotdot", `{"id":"a","harness":"example-agent","status":"idle","cwd":"/a/../b"}`, iss("$.cwd", "invalid_path")},
	{"cwd NUL", `{"id":"a","harness":"example-agent","status":"idle","cwd":"/a\u0000b"}`, iss("$.cwd", "invalid_path")},
	{"waitingFor while running", `{"id":"a","harness":"example-agent","status":"running","waitingFor":"x"}`, iss("$.waitingFor", "invalid_string")},
	{"subagents", `{"id":"a","harness":"example-agent","status":"idle","subagents":[{"id":"s1","type":"t","status":"running"},3,{"id":"s1","status":"failed"},{"type":7,"status":"nope","x":1},null]}`,
		iss("$.subagents[1]", "invalid_type", "$.subagents[2]", "duplicate", "$.subagents[2].type", "invalid_string", "$.subagents[3].type", "invalid_string",
			"$.subagents[3].x", "unknown_field", "$.subagents[3].id", "invalid_string", "$.subagents[3].status", "invalid_enum",
			"$.subagents[4]", "invalid_type")},
	{"subagent parentId", `{"id":"a","harness":"example-agent","subagents":[{"id":"s1","type":"t","status":"running"},{"id":"s2","parentId":"s1","type":"t","status":"running"},{"id":"s3","parentId":7,"type":"t","status":"running"}]}`,
		iss("$.subagents[2].parentId", "invalid_string")},
	{"subagent key twice", `{"id":"a","harness":"example-agent","status":"idle","subagents":[{"id":"s1","type":"t","status":"running","status":"failed"}]}`,
		iss("$.subagents[0].status", "duplicate")},
	{"65 subagents: the elements are not checked", `{"id":"a","harness":"example-agent","status":"idle","subagents":[` + strings.TrimSuffix(strings.Repeat(`{"id":"s","status":"running"},`, 65), ",") + `]}`,
		iss("$.subagents", "invalid_array")},
	{"tool and error", `{"id":"a","harness":"example-agent","status":"idle","tool":"Bash","lastTurn":"failed","error":"API Error: 529 overloaded"}`, nil},
	{"status done", `{"id":"a","harness":"example-agent","status":"done"}`, iss("$.status", "invalid_enum")},
	{"id outside the bridge's identity rule", `{"id":"a b","harness":"example-agent"}`, iss("$.id", "invalid_id")},
}

func TestDecodeSnapshot(t *testing.T) {
	t.Parallel()
	for _, tt := range decodeSnapshotCases {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			_, got := DecodeSnapshot(json.RawMessage(tt.in), enabled)
			checkIssues(t, "DecodeSnapshot", got, tt.want, "/work/app", "Fix tests")
		})
	}
}

func TestDecodeSnapshotValue(t *testing.T) {
	t.Parallel()
	got, is := DecodeSnapshot(json.RawMessage(okSnap), enabled)
	if len(is) != 0 {
		t.Fatalf("DecodeSnapshot(valid) issues: %v", is)
	}
	if diff := cmp.Diff(validSnapshot(), got); diff != "" {
		t.Errorf("DecodeSnapshot mismatch (-want +got):\n%s", diff)
	}
}

var decodeResetCases = []decodeCase{
	{"empty", `[]`, nil},
	{"two", `[` + okSnap + `,{"id":"b","harness":"example-agent","status":"idle"}]`, nil},
	{"stream form", `{"sessions":[` + okSnap + `]}`, nil},
	{"malformed", `[`, iss("$", "invalid_type")},
	{"object without sessions", `{"source":"x"}`, iss("$.source", "unknown_field", "$.sessions", "missing_field")},
	{"sessions twice", `{"sessions":[],"sessions":[]}`, iss("$.sessions", "duplicate")},
	{"sessions not array", `{"sessions":{}}`, iss("$.sessions", "invalid_array")},
	{"not array", `"x"`, iss("$", "invalid_array")},
	{"element not object", `[` + okSnap + `,1]`, iss("$[1]", "invalid_type")},
	{"duplicate id", `[` + okSnap + `,` + okSnap + `]`, iss("$[1]", "duplicate")},
	{"duplicate id stream form", `{"sessions":[` + okSnap + `,` + okSnap + `]}`, iss("$.sessions[1]", "duplicate")},
	{"nested issues", `[{"id":"a b","harness":"codex","status":"idle","pid":2.5,"cwd":"x","title":"","lastTurn":"x","nope":1,"subagents":[]},{"harness":"example-agent","status":"idle"}]`,
		iss("$[0].id", "invalid_id", "$[0].harness", "harness_not_enabled", "$[0].pid", "invalid_integer", "$[0].cwd", "invalid_path",
			"$[0].title", "invalid_string", "$[0].lastTurn", "invalid_enum", "$[0].nope", "unknown_field", "$[1].id", "invalid_string")},
	{"subagent array too long", `[{"id":"a","harness":"example-agent","status":"idle","subagents":[` + subagentsJSON(65) + `]}]`, iss("$[0].subagents", "invalid_array")},
	{"1025 sessions", `[` + sessionsJSON(1025) + `]`, iss("$", "invalid_array")},
	{"1024 sessions", `[` + sessionsJSON(1024) + `]`, nil},
}

func subagentsJSON(n int) string {
	parts := make([]string, n)
	for i := range parts {
		parts[i] = `{"id":"s` + strconv.Itoa(i) + `","type":"t","status":"completed"}`
	}
	return strings.Join(parts, ",")
}

func sessionsJSON(n int) string {
	parts := make([]string, n)
	for i := range parts {
		parts[i] = `{"id":"s` + strconv.Itoa(i) + `","harness":"example-agent","status":"idle","pid":1,"cwd":"/"}`
	}
	return strings.Join(parts, ",")
}

func TestDecodeReset(t *testing.T) {
	t.Parallel()
	for _, tt := range decodeResetCases {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			_, got := DecodeReset(json.RawMessage(tt.in), enabled)
			checkIssues(t, "DecodeReset", got, tt.want)
		})
	}
}

var decodeDiagnosticCases = []decodeCase{
	{"valid", `{"code":"watch-failed","message":"could not watch the sessions directory"}`, nil},
	{"malformed", `{"code":}`, iss("$", "invalid_type")},
	{"array", `[]`, iss("$", "invalid_type")},
	{"missing", `{}`, iss("$.code", "invalid_string", "$.message", "invalid_string")},
	{"wrong types", `{"code":1,"message":null}`, iss("$.code", "invalid_string", "$.message", "invalid_string")},
	{"empty strings", `{"code":"","message":""}`, iss("$.code", "invalid_string", "$.message", "invalid_string")},
	{"unknown field", `{"code":"x","message":"m","path":"/x"}`, iss("$.path", "unknown_field")},
	{"key twice", `{"code":"x","message":"m","code":"y"}`, iss("$.code", "duplicate")},
	{"path in message", `{"code":"x","message":"open /home/bob/.claude: denied"}`, iss("$.message", "invalid_string")},
	{"bad code", `{"code":"Watch Failed","message":"m"}`, iss("$.code", "invalid_id")},
}

func TestDecodeDiagnostic(t *testing.T) {
	t.Parallel()
	for _, tt := range decodeDiagnosticCases {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			_, got := DecodeDiagnostic(json.RawMessage(tt.in))
			checkIssues(t, "DecodeDiagnostic", got, tt.want, "/home/bob")
		})
	}
}

var decodeEventCases = []decodeCase{
	{"session.started", `{"kind":"session.started","occurredAt":1764489600000,"title":"t","model":"m","cwd":"/w","pid":9}`, nil},
	{"agent.exited code 0", `{"kind":"agent.exited","exitCode":0}`, nil},
	{"occurredAt zero", `{"kind":"session.stopped","occurredAt":0}`, nil},
	{"tool.started", `{"kind":"tool.started","toolId":"toolu_01","name":"Bash"}`, nil},
	{"wait.started", `{"kind":"wait.started","waitId":"w1","state":"waiting","reason":"Approval requested"}`, nil},
	{"subagent.started", `{"kind":"subagent.started","subagentId":"c1","parentAgentId":"root","title":"t","type":"explore"}`, nil},

	{"malformed", `{"kind"`, iss("$", "invalid_type")},
	{"not object", `"turn.started"`, iss("$", "invalid_type")},
	{"empty object", `{}`, iss("$.kind", "missing_field")},
	{"kind wrong type", `{"kind":3}`, iss("$.kind", "invalid_type")},
	{"kind unknown", `{"kind":"turn.ended","turnId":"t"}`, iss("$.kind", "invalid_enum")},
	{"kind empty", `{"kind":""}`, iss("$.kind", "invalid_enum")},
	{"unknown key", `{"kind":"session.stopped","sessionId":"x"}`, iss("$.sessionId", "unknown_field")},
	{"field of other kind", `{"kind":"session.stopped","toolId":"x","exitCode":1}`, iss("$.toolId", "unknown_field", "$.exitCode", "unknown_field")},
	{"field of other kind even empty", `{"kind":"session.stopped","title":""}`, iss("$.title", "unknown_field")},
	{"missing required", `{"kind":"wait.started"}`, iss("$.waitId", "missing_field", "$.state", "missing_field")},
	{"required wrong type not missing", `{"kind":"wait.started","waitId":7,"state":null}`, iss("$.waitId", "invalid_type", "$.state", "invalid_type")},
	{"required empty", `{"kind":"wait.started","waitId":"","state":""}`, iss("$.waitId", "invalid_id", "$.state", "invalid_enum")},
	{"key twice", `{"kind":"wait.finished","waitId":"a","waitId":"b"}`, iss("$.waitId", "duplicate")},
	{"ints", `{"kind":"session.started","occurredAt":-1,"pid":"9"}`, iss("$.occurredAt", "invalid_integer", "$.pid", "invalid_type")},
	{"occurredAt fraction", `{"kind":"session.started","occurredAt":1.5}`, iss("$.occurredAt", "invalid_integer")},
	{"exitCode null", `{"kind":"agent.exited","exitCode":null}`, iss("$.exitCode", "invalid_type")},
	{"exitCode huge", `{"kind":"agent.exited","exitCode":99999999999}`, iss("$.exitCode", "invalid_integer")},
	{"cwd empty", `{"kind":"session.started","cwd":""}`, iss("$.cwd", "invalid_path")},
	{"prompt too long", `{"kind":"turn.started","turnId":"t","promptText":"` + strings.Repeat("x", MaxTitle+1) + `"}`, iss("$.promptText", "invalid_string")},
	{"bad ids", `{"kind":"subagent.done","subagentId":"a b","outcome":"done"}`, iss("$.subagentId", "invalid_id", "$.outcome", "invalid_enum")},
}

func TestDecodeEvent(t *testing.T) {
	t.Parallel()
	for _, tt := range decodeEventCases {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			_, got := DecodeEvent(json.RawMessage(tt.in))
			checkIssues(t, "DecodeEvent", got, tt.want)
		})
	}
}

func TestDecodeEventValue(t *testing.T) {
	t.Parallel()
	got, is := DecodeEvent(json.RawMessage(`{"kind":"agent.exited","occurredAt":5,"exitCode":0,"signal":"SIGTERM"}`))
	if len(is) != 0 {
		t.Fatalf("DecodeEvent issues: %v", is)
	}
	want := agentbridge.Event{Kind: agentbridge.KindAgentExited, OccurredAt: 5, ExitCode: exit(0), Signal: "SIGTERM"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("DecodeEvent mismatch (-want +got):\n%s", diff)
	}
}

// TestDecodeAgreesWithTyped checks that a typed value and its JSON form get
// the same issues: the decoders add only JSON-level rules.
func TestDecodeAgreesWithTyped(t *testing.T) {
	t.Parallel()
	s := validSnapshot()
	s.Status = "running"
	s.Title = strings.Repeat("t", 300)
	s.Subagents = append(s.Subagents, agentbridge.Subagent{ID: "sub-1", Status: "x"})
	raw, _ := json.Marshal(s)
	_, got := DecodeSnapshot(raw, enabled)
	want := Snapshot(s, enabled)
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("DecodeSnapshot vs Snapshot (-typed +decoded):\n%s", diff)
	}
	e := agentbridge.Event{Kind: "wait.started", WaitID: "a b", State: "done", Title: "x", OccurredAt: -4}
	raw, _ = json.Marshal(e)
	_, got = DecodeEvent(raw)
	if diff := cmp.Diff(Event(e), got); diff != "" {
		t.Errorf("DecodeEvent vs Event (-typed +decoded):\n%s", diff)
	}
}

func TestMalformedMessageIsClear(t *testing.T) {
	t.Parallel()
	for _, in := range []string{``, `{`, `{"a" 1}`, `[1,]`, `{} {}`, `{"x":` + strings.Repeat("[", 70)} {
		_, is := DecodeEvent(json.RawMessage(in))
		if len(is) != 1 || is[0].Path != "$" || is[0].Code != InvalidType || !strings.HasPrefix(is[0].Message, "malformed JSON") {
			t.Errorf("DecodeEvent(%q) = %v, want one invalid_type at $ starting with \"malformed JSON\"", in, is)
		}
	}
}

func TestParseInteger(t *testing.T) {
	t.Parallel()
	tests := []struct {
		in   string
		want int64
		ok   bool
	}{
		{"0", 0, true},
		{"-0", 0, true},
		{"42", 42, true},
		{"-7", -7, true},
		{"1.0", 1, true},
		{"1.000", 1, true},
		{"1e3", 1000, true},
		{"1E+3", 1000, true},
		{"120e-1", 12, true},
		{"0.5e1", 5, true},
		{"0e99999999999999999999", 0, true},
		{"0.0", 0, true},
		{"9223372036854775807", 9223372036854775807, true},
		{"9223372036854775807.0", 9223372036854775807, true},
		{"-9223372036854775808e0", -9223372036854775808, true},
		{"1.5", 0, false},
		{"12.25", 0, false},
		{"1e-1", 0, false},
		{"1e-999999999", 0, false},
		{"1e-99999999999999999999", 0, false},
		{"1.0000000000000000000000000000000000000000000000000000000000000000000000000000001", 0, false},
		{"9223372036854775808", 0, false},
		{"9223372036854775808.0", 0, false},
		{"1e19", 0, false},
		{"1e999999999", 0, false},
		{"1e99999999999999999999", 0, false},
	}
	for _, tt := range tests {
		got, ok := parseInteger(tt.in)
		if got != tt.want || ok != tt.ok {
			t.Errorf("parseInteger(%q) = %d, %v, want %d, %v", tt.in, got, ok, tt.want, tt.ok)
		}
	}
}
