package validate

import (
	"encoding/json"
	"strconv"
	"strings"
	"testing"
)

// hostBase is the smallest snapshot the host takes: "only identity, pid,
// and cwd are required" (extension-api 3.1's own test).
const hostBase = `"id":"session-1","harness":"example-agent","pid":4242,"cwd":"/home/test/project"`

func hostSnap(extra string) string {
	if extra == "" {
		return "{" + hostBase + "}"
	}
	return "{" + hostBase + "," + extra + "}"
}

func subs(n int) string {
	parts := make([]string, n)
	for i := range parts {
		parts[i] = `{"id":"s` + strconv.Itoa(i) + `","type":"explore","status":"running"}`
	}
	return `"subagents":[` + strings.Join(parts, ",") + `]`
}

// hostSnapshotCases state the host's validateAgentSessionSnapshot rule by
// rule, with its codes (extension API 3.1).
var hostSnapshotCases = []decodeCase{
	{"only identity, pid and cwd are required", hostSnap(""), nil},
	{"every field", hostSnap(`"title":"Fix the build","model":"fixture-model","status":"running","waitingFor":"x","tool":"Bash","lastTurn":"completed","lastTurnEndedAt":1700000000000,"error":"boom","subagents":[{"id":"sub-1","type":"explore","status":"running"},{"id":"sub-2","parentId":"sub-1","type":"t","title":"T","status":"completed"}]`), nil},
	{"not an object", `[1]`, iss("$", "invalid_type")},
	{"unknown field", hostSnap(`"activity":{}`), iss("$.activity", "unknown_field")},

	// id: any non-empty string of at most 256
	{"id any characters", `{"id":"a b/c:é🚀","harness":"example-agent","pid":1,"cwd":"/"}`, nil},
	{"id 256", `{"id":"` + strings.Repeat("i", 256) + `","harness":"example-agent","pid":1,"cwd":"/"}`, nil},
	{"id 257", `{"id":"` + strings.Repeat("i", 257) + `","harness":"example-agent","pid":1,"cwd":"/"}`, iss("$.id", "invalid_string")},
	{"id empty", `{"id":"","harness":"example-agent","pid":1,"cwd":"/"}`, iss("$.id", "invalid_string")},
	{"id missing", `{"harness":"example-agent","pid":1,"cwd":"/"}`, iss("$.id", "invalid_string")},
	{"id a number", `{"id":7,"harness":"example-agent","pid":1,"cwd":"/"}`, iss("$.id", "invalid_string")},

	// harness: [a-z][a-z0-9-]{0,63}, declared and switched on
	{"harness pattern", `{"id":"a","harness":"Example","pid":1,"cwd":"/"}`, iss("$.harness", "invalid_id", "$.harness", "harness_not_enabled")},
	{"harness 65", `{"id":"a","harness":"` + strings.Repeat("h", 65) + `","pid":1,"cwd":"/"}`, iss("$.harness", "invalid_string", "$.harness", "harness_not_enabled")},
	{"harness missing", `{"id":"a","pid":1,"cwd":"/"}`, iss("$.harness", "invalid_string")},
	{"harness switched off", `{"id":"a","harness":"codex","pid":1,"cwd":"/"}`, iss("$.harness", "harness_not_enabled")},

	// pid: a safe integer from 1 to 2^31-1, required
	{"pid missing", `{"id":"a","harness":"example-agent","cwd":"/"}`, iss("$.pid", "invalid_integer")},
	{"pid 0", `{"id":"a","harness":"example-agent","pid":0,"cwd":"/"}`, iss("$.pid", "invalid_integer")},
	{"pid 2^31-1", `{"id":"a","harness":"example-agent","pid":2147483647,"cwd":"/"}`, nil},
	{"pid 2^31", `{"id":"a","harness":"example-agent","pid":2147483648,"cwd":"/"}`, iss("$.pid", "invalid_integer")},
	{"pid a fraction", `{"id":"a","harness":"example-agent","pid":1.5,"cwd":"/"}`, iss("$.pid", "invalid_integer")},
	{"pid a string", `{"id":"a","harness":"example-agent","pid":"12","cwd":"/"}`, iss("$.pid", "invalid_integer")},

	// cwd: non-empty, at most 4,096, starts with / and has no NUL, required
	{"cwd missing", `{"id":"a","harness":"example-agent","pid":1}`, iss("$.cwd", "invalid_string")},
	{"cwd empty", `{"id":"a","harness":"example-agent","pid":1,"cwd":""}`, iss("$.cwd", "invalid_string")},
	{"cwd relative", `{"id":"a","harness":"example-agent","pid":1,"cwd":"work/app"}`, iss("$.cwd", "invalid_path")},
	{"cwd NUL", `{"id":"a","harness":"example-agent","pid":1,"cwd":"/a\u0000b"}`, iss("$.cwd", "invalid_path")},
	{"cwd need not be clean", `{"id":"a","harness":"example-agent","pid":1,"cwd":"/a/../b/"}`, nil},
	{"cwd 4096", `{"id":"a","harness":"example-agent","pid":1,"cwd":"/` + strings.Repeat("c", 4095) + `"}`, nil},
	{"cwd 4097", `{"id":"a","harness":"example-agent","pid":1,"cwd":"/` + strings.Repeat("c", 4096) + `"}`, iss("$.cwd", "invalid_string")},

	// display text: non-empty, bounded in UTF-16 units, anything else goes
	{"title 512", hostSnap(`"title":"` + strings.Repeat("t", 512) + `"`), nil},
	{"title 513", hostSnap(`"title":"` + strings.Repeat("t", 513) + `"`), iss("$.title", "invalid_string")},
	{"title 256 emoji are 512 units", hostSnap(`"title":"` + strings.Repeat("😀", 256) + `"`), nil},
	{"title 257 emoji are 514 units", hostSnap(`"title":"` + strings.Repeat("😀", 257) + `"`), iss("$.title", "invalid_string")},
	{"title with a newline", hostSnap(`"title":"a\nb"`), nil},
	{"title empty", hostSnap(`"title":""`), iss("$.title", "invalid_string")},
	{"model 256", hostSnap(`"model":"` + strings.Repeat("m", 256) + `"`), nil},
	{"model 257", hostSnap(`"model":"` + strings.Repeat("m", 257) + `"`), iss("$.model", "invalid_string")},
	{"waitingFor 1024 with any status", hostSnap(`"status":"running","waitingFor":"` + strings.Repeat("w", 1024) + `"`), nil},
	{"waitingFor 1025", hostSnap(`"waitingFor":"` + strings.Repeat("w", 1025) + `"`), iss("$.waitingFor", "invalid_string")},
	{"tool 256", hostSnap(`"tool":"` + strings.Repeat("t", 256) + `"`), nil},
	{"tool 257", hostSnap(`"tool":"` + strings.Repeat("t", 257) + `"`), iss("$.tool", "invalid_string")},
	{"error 1024", hostSnap(`"error":"` + strings.Repeat("e", 1024) + `"`), nil},
	{"error 1025", hostSnap(`"error":"` + strings.Repeat("e", 1025) + `"`), iss("$.error", "invalid_string")},

	// enums
	{"status each", hostSnap(`"status":"blocked"`), nil},
	{"status done", hostSnap(`"status":"done"`), iss("$.status", "invalid_enum")},
	{"status exited", hostSnap(`"status":"exited"`), iss("$.status", "invalid_enum")},
	{"status a number", hostSnap(`"status":1`), iss("$.status", "invalid_enum")},
	{"lastTurn interrupted", hostSnap(`"lastTurn":"interrupted"`), nil},
	{"lastTurn cancelled", hostSnap(`"lastTurn":"cancelled"`), iss("$.lastTurn", "invalid_enum")},
	{"lastTurnEndedAt 0", hostSnap(`"lastTurnEndedAt":0`), nil},
	{"lastTurnEndedAt 2^53-1", hostSnap(`"lastTurnEndedAt":9007199254740991`), nil},
	{"lastTurnEndedAt 2^53", hostSnap(`"lastTurnEndedAt":9007199254740992`), iss("$.lastTurnEndedAt", "invalid_integer")},
	{"lastTurnEndedAt negative", hostSnap(`"lastTurnEndedAt":-1`), iss("$.lastTurnEndedAt", "invalid_integer")},

	// subagents: at most 64, unique ids, closed {id, parentId?, type, title?, status}
	{"64 subagents", hostSnap(subs(64)), nil},
	{"65 subagents", hostSnap(subs(65)), iss("$.subagents", "invalid_array")},
	{"subagents not an array", hostSnap(`"subagents":{}`), iss("$.subagents", "invalid_array")},
	{"subagent not an object", hostSnap(`"subagents":[1]`), iss("$.subagents[0]", "invalid_type")},
	{"subagent without status", hostSnap(`"subagents":[{"id":"s","type":"t"}]`), iss("$.subagents[0].status", "invalid_enum")},
	{"subagent status unknown", hostSnap(`"subagents":[{"id":"s","type":"t","status":"done"}]`), iss("$.subagents[0].status", "invalid_enum")},
	{"subagent without type", hostSnap(`"subagents":[{"id":"s","status":"running"}]`), iss("$.subagents[0].type", "invalid_string")},
	{"subagent type 128", hostSnap(`"subagents":[{"id":"s","type":"` + strings.Repeat("t", 128) + `","status":"running"}]`), nil},
	{"subagent type 129", hostSnap(`"subagents":[{"id":"s","type":"` + strings.Repeat("t", 129) + `","status":"running"}]`), iss("$.subagents[0].type", "invalid_string")},
	{"subagent without id", hostSnap(`"subagents":[{"type":"t","status":"running"}]`), iss("$.subagents[0].id", "invalid_string")},
	{"subagent parentId empty", hostSnap(`"subagents":[{"id":"s","parentId":"","type":"t","status":"running"}]`), iss("$.subagents[0].parentId", "invalid_string")},
	{"subagent parentId naming nothing listed", hostSnap(`"subagents":[{"id":"s","parentId":"elsewhere","type":"t","status":"running"}]`), nil},
	{"subagent title 513", hostSnap(`"subagents":[{"id":"s","type":"t","title":"` + strings.Repeat("t", 513) + `","status":"running"}]`), iss("$.subagents[0].title", "invalid_string")},
	{"subagent unknown field", hostSnap(`"subagents":[{"id":"s","type":"t","status":"running","model":"m"}]`), iss("$.subagents[0].model", "unknown_field")},
	{"subagent id twice", hostSnap(`"subagents":[{"id":"s","type":"t","status":"running"},{"id":"s","type":"t","status":"failed"}]`), iss("$.subagents[1]", "duplicate")},
}

func TestHostSnapshot(t *testing.T) {
	runDecodeCases(t, "DecodeSnapshotAs(Host)", hostSnapshotCases, func(raw json.RawMessage) []Issue {
		_, is := DecodeSnapshotAs(raw, enabled, Host)
		return is
	})
}

// The host takes what the bridge's stricter rules refuse, and refuses
// what the bridge lets through only because pid and cwd are optional to
// it.
func TestProfilesDiffer(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		name         string
		in           string
		bridge, host []pc
	}{
		{"no pid, no cwd", `{"id":"a","harness":"example-agent","status":"idle"}`, nil, iss("$.pid", "invalid_integer", "$.cwd", "invalid_string")},
		{"an id outside the identity rule", `{"id":"a b","harness":"example-agent","pid":1,"cwd":"/"}`, iss("$.id", "invalid_id"), nil},
		{"a parentId outside the identity rule", hostSnap(`"subagents":[{"id":"s","parentId":"a b","type":"t","status":"running"}]`), iss("$.subagents[0].parentId", "invalid_id"), nil},
		{"an unclean cwd", `{"id":"a","harness":"example-agent","pid":1,"cwd":"/a/./b"}`, iss("$.cwd", "invalid_path"), nil},
		{"a control character", hostSnap(`"title":"a\tb"`), iss("$.title", "invalid_string"), nil},
		{"waitingFor while running", hostSnap(`"status":"running","waitingFor":"x"`), iss("$.waitingFor", "invalid_string"), nil},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			_, got := DecodeSnapshotAs(json.RawMessage(tt.in), enabled, Bridge)
			checkIssues(t, "bridge", got, tt.bridge)
			_, got = DecodeSnapshotAs(json.RawMessage(tt.in), enabled, Host)
			checkIssues(t, "host", got, tt.host)
		})
	}
}

var hostResetCases = []decodeCase{
	{"empty", `[]`, nil},
	{"two", `[` + hostSnap("") + `,{"id":"b","harness":"example-agent","pid":2,"cwd":"/"}]`, nil},
	{"not an array", `{}`, iss("$.sessions", "missing_field")},
	{"a string", `"x"`, iss("$", "invalid_array")},
	{"id twice", `[` + hostSnap("") + `,` + hostSnap("") + `]`, iss("$[1]", "duplicate")},
	{"a bad element", `[` + hostSnap("") + `,{"id":"b","harness":"example-agent"}]`, iss("$[1].pid", "invalid_integer", "$[1].cwd", "invalid_string")},
	{"1024", `[` + sessionsJSON(1024) + `]`, nil},
	{"1025 is one issue", `[` + sessionsJSON(1025) + `]`, iss("$", "invalid_array")},
}

// runDecodeCases runs each case through check, in parallel.
func runDecodeCases(t *testing.T, call string, cases []decodeCase, check func(raw json.RawMessage) []Issue) {
	t.Parallel()
	for _, tt := range cases {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			checkIssues(t, call, check(json.RawMessage(tt.in)), tt.want)
		})
	}
}

func TestHostReset(t *testing.T) {
	runDecodeCases(t, "DecodeResetAs(Host)", hostResetCases, func(raw json.RawMessage) []Issue {
		_, is := DecodeResetAs(raw, enabled, Host)
		return is
	})
}

var hostDiagnosticCases = []decodeCase{
	{"valid", `{"code":"bridge-unavailable","message":"the bridge is not running"}`, nil},
	{"a code the bridge refuses", `{"code":"a--b-","message":"m"}`, nil},
	{"a path in the message (a rule for authors only)", `{"code":"x","message":"cannot read /home/u/.claude"}`, nil},
	{"code pattern", `{"code":"Bad","message":"m"}`, iss("$.code", "invalid_id")},
	{"code 65", `{"code":"` + strings.Repeat("c", 65) + `","message":"m"}`, iss("$.code", "invalid_string")},
	{"message 512", `{"code":"x","message":"` + strings.Repeat("m", 512) + `"}`, nil},
	{"message 513", `{"code":"x","message":"` + strings.Repeat("m", 513) + `"}`, iss("$.message", "invalid_string")},
	{"missing both", `{}`, iss("$.code", "invalid_string", "$.message", "invalid_string")},
	{"unknown field", `{"code":"x","message":"m","level":"warn"}`, iss("$.level", "unknown_field")},
}

func TestHostDiagnostic(t *testing.T) {
	runDecodeCases(t, "DecodeDiagnosticAs(Host)", hostDiagnosticCases, func(raw json.RawMessage) []Issue {
		_, is := DecodeDiagnosticAs(raw, Host)
		return is
	})
}

func TestParseProfile(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]Profile{"": Bridge, "bridge": Bridge, "host": Host} {
		if got, ok := ParseProfile(in); !ok || got != want || (in != "" && got.String() != in) {
			t.Errorf("ParseProfile(%q) = %v, %v", in, got, ok)
		}
	}
	if _, ok := ParseProfile("Host"); ok {
		t.Error(`ParseProfile("Host") is ok`)
	}
}
