package api

import (
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/agentbridge/agentbridge"
	"github.com/agentbridge/agentbridge/hub"
	"github.com/agentbridge/agentbridge/internal/testlog"
	"github.com/agentbridge/agentbridge/validate"
)

func TestRoutesAnswer(t *testing.T) {
	t.Parallel()
	f := newFixture(t, nil)
	tests := []struct {
		name     string
		req      req
		status   int
		ctype    string
		contains string
	}{
		{"healthz without token", req{path: "/healthz", noToken: true}, 200, "application/json", `"ok"`},
		{"openapi without token", req{path: "/openapi.yaml", noToken: true}, 200, "application/yaml", "openapi:"},
		{"dashboard without token", req{path: "/", noToken: true}, 200, "text/html; charset=utf-8", "<"},
		{"sources", req{path: "/v1/sources"}, 200, "application/json", `"sources":[{"id":"claude-code"`},
		{"sessions", req{path: "/v1/sessions"}, 200, "application/json", `"revision":1700000000000001,"sessions":[{"source":"claude-code"`},
		{"session", req{path: "/v1/sessions/claude-code/sess-1"}, 200, "application/json", `"snapshot":{"id":"sess-1"`},
		{"diagnostics", req{path: "/v1/diagnostics"}, 200, "application/json", `"diagnostics":[{"source":"codex"`},
		{"events", req{path: "/v1/events?status=running&since=12"}, 200, "text/event-stream", "retry:"},
		{"metrics", req{path: "/metrics"}, 200, "text/plain; version=0.0.4; charset=utf-8; escaping=underscores", ""},
		{"harness switch", req{method: "POST", path: "/v1/sources/claude-code/harnesses/claude-code", body: `{"enabled": false}`},
			200, "application/json", `"enabled":false`},
		{"publish", req{method: "POST", path: "/v1/sources/example-push/publish", body: `{"op":"remove","sessionId":"s-1"}`},
			200, "application/json", `{"revision":1700000000000002}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			resp, body := f.do(t, tt.req)
			if resp.StatusCode != tt.status {
				t.Fatalf("%s %s: status %d, want %d; body %s", tt.req.method, tt.req.path, resp.StatusCode, tt.status, body)
			}
			if ct := resp.Header.Get("Content-Type"); tt.ctype != "" && !strings.HasPrefix(ct, strings.Split(tt.ctype, ";")[0]) {
				t.Errorf("Content-Type %q, want %q", ct, tt.ctype)
			}
			if !strings.Contains(string(body), tt.contains) {
				t.Errorf("body %s does not contain %s", body, tt.contains)
			}
		})
	}
	if got := f.hub.switched; got != "claude-code/claude-code=false" {
		t.Errorf("SetHarness got %q, want claude-code/claude-code=false", got)
	}
}

func TestBadRequestsGetProblems(t *testing.T) {
	t.Parallel()
	f := newFixture(t, nil)
	big := `{"id":"` + strings.Repeat("a", MaxBody) + `"}`
	tests := []struct {
		name   string
		req    req
		status int
		slug   string
	}{
		{"missing token", req{path: "/v1/sources", noToken: true}, 401, "unauthorized"},
		{"wrong token", req{path: "/v1/sessions", noToken: true, headers: map[string]string{"Authorization": "Bearer nope-nope-nope-nope"}}, 401, "unauthorized"},
		{"basic auth", req{path: "/v1/sessions", noToken: true, headers: map[string]string{"Authorization": "Basic " + testToken}}, 401, "unauthorized"},
		{"token in the query of /v1", req{path: "/v1/sessions?token=" + testToken, noToken: true}, 401, "unauthorized"},
		{"metrics without token", req{path: "/metrics", noToken: true}, 401, "unauthorized"},
		{"events without token", req{path: "/v1/events", noToken: true}, 401, "unauthorized"},
		{"foreign host", req{path: "/v1/sources", host: "evil.example:" + port(f)}, 403, "forbidden-host"},
		{"foreign host on healthz", req{path: "/healthz", host: "evil.example"}, 403, "forbidden-host"},
		{"loopback name, wrong port", req{path: "/v1/sources", host: "localhost:1"}, 403, "forbidden-host"},
		{"loopback name, no port", req{path: "/v1/sources", host: "localhost"}, 403, "forbidden-host"},
		{"rebound name with the port", req{path: "/", host: "attacker.test:" + port(f)}, 403, "forbidden-host"},
		{"foreign origin GET", req{path: "/v1/sessions", headers: map[string]string{"Origin": "https://evil.example"}}, 403, "forbidden-origin"},
		{"other local port origin", req{path: "/v1/events", headers: map[string]string{"Origin": "http://localhost:3000"}}, 403, "forbidden-origin"},
		{"cross-site fetch", req{path: "/v1/sessions", headers: map[string]string{"Sec-Fetch-Site": "cross-site"}}, 403, "forbidden-origin"},
		{"same-site fetch", req{path: "/v1/sessions", headers: map[string]string{"Sec-Fetch-Site": "same-site"}}, 403, "forbidden-origin"},
		{"foreign origin POST", req{method: "POST", path: "/v1/validate/snapshot", body: `{}`, headers: map[string]string{"Origin": "https://evil.example"}}, 403, "forbidden-origin"},
		{"cross-site POST", req{method: "POST", path: "/v1/validate/snapshot", body: `{}`, headers: map[string]string{"Sec-Fetch-Site": "cross-site"}}, 403, "forbidden-origin"},
		{"text/plain body", req{method: "POST", path: "/v1/validate/snapshot", body: `{}`, ctype: "text/plain"}, 415, "unsupported-media-type"},
		{"form body", req{method: "POST", path: "/v1/sources/claude-code/harnesses/claude-code", body: `enabled=true`, ctype: "application/x-www-form-urlencoded"}, 415, "unsupported-media-type"},
		{"no content type", req{method: "POST", path: "/v1/sources/example-push/publish", body: `{}`, ctype: "-"}, 415, "unsupported-media-type"},
		{"too big", req{method: "POST", path: "/v1/validate/snapshot", body: big}, 413, "body-too-large"},
		{"bad JSON", req{method: "POST", path: "/v1/validate/snapshot", body: `{"id":`}, 400, "invalid-json"},
		{"trailing garbage", req{method: "POST", path: "/v1/sources/example-push/publish", body: `{} {}`}, 400, "invalid-json"},
		{"empty body", req{method: "POST", path: "/v1/sources/example-push/publish", ctype: "application/json"}, 400, "invalid-json"},
		{"unknown source id form", req{method: "POST", path: "/v1/sources/Not_An_Id/harnesses/x", body: `{"enabled":true}`}, 404, "unknown-source"},
		{"unknown harness id form", req{method: "POST", path: "/v1/sources/codex/harnesses/X", body: `{"enabled":true}`}, 404, "unknown-harness"},
		{"switch body not boolean", req{method: "POST", path: "/v1/sources/claude-code/harnesses/claude-code", body: `{"enabled":"yes"}`}, 422, "invalid-request"},
		{"switch body extra field", req{method: "POST", path: "/v1/sources/claude-code/harnesses/claude-code", body: `{"enabled":true,"x":1}`}, 422, "invalid-request"},
		{"switch body missing", req{method: "POST", path: "/v1/sources/claude-code/harnesses/claude-code", body: `{}`}, 422, "invalid-request"},
		{"unknown session", req{path: "/v1/sessions/claude-code/nope"}, 404, "unknown-session"},
		{"malformed session id", req{path: "/v1/sessions/claude-code/" + url.PathEscape("a b")}, 404, "unknown-session"},
		{"unknown status", req{path: "/v1/sessions?status=running,sleeping"}, 400, "bad-query"},
		{"unknown profile", req{method: "POST", path: "/v1/validate/snapshot?profile=terminay", body: `{}`}, 400, "bad-query"},
		{"status done is not a status", req{path: "/v1/sessions?status=done"}, 400, "bad-query"},
		{"relative project", req{path: "/v1/sessions?project=src/app"}, 400, "bad-query"},
		{"unclean project", req{path: "/v1/sessions?project=/home/u/../v"}, 400, "bad-query"},
		{"trailing slash project", req{path: "/v1/sessions?project=/home/u/"}, 400, "bad-query"},
		{"zero ancestorPid", req{path: "/v1/sessions?ancestorPid=0"}, 400, "bad-query"},
		{"negative ancestorPid", req{path: "/v1/sessions?ancestorPid=-4"}, 400, "bad-query"},
		{"word ancestorPid", req{path: "/v1/sessions?ancestorPid=init"}, 400, "bad-query"},
		{"bad source filter", req{path: "/v1/sessions?source=Claude"}, 400, "bad-query"},
		{"unknown parameter", req{path: "/v1/sessions?stauts=running"}, 400, "bad-query"},
		{"events bad status", req{path: "/v1/events?status=nope"}, 400, "bad-query"},
		{"events bad since", req{path: "/v1/events?since=yesterday"}, 400, "bad-query"},
		{"events bad format", req{path: "/v1/events?format=xml"}, 400, "bad-query"},
		{"validate unknown kind", req{method: "POST", path: "/v1/validate/everything", body: `{}`}, 404, "not-found"},
		{"validate bad harness list", req{method: "POST", path: "/v1/validate/snapshot?harnesses=A", body: `{}`}, 400, "bad-query"},
		{"unknown path", req{path: "/nope", noToken: true}, 404, "not-found"},
		{"unknown v1 path", req{path: "/v1/nope"}, 404, "not-found"},
		{"wrong method", req{method: "DELETE", path: "/v1/sources"}, 405, "method-not-allowed"},
		{"GET on publish", req{path: "/v1/sources/example-push/publish"}, 405, "method-not-allowed"},
		{"bad dashboard token", req{path: "/?token=wrong", noToken: true}, 401, "unauthorized"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			resp, body := f.do(t, tt.req)
			p := problemOf(t, resp, body, tt.status)
			if want := ProblemTypePrefix + tt.slug; p.Type != want {
				t.Errorf("type %q, want %q", p.Type, want)
			}
			if tt.status == 401 && resp.Header.Get("WWW-Authenticate") == "" {
				t.Errorf("401 without WWW-Authenticate")
			}
		})
	}
}

func port(f *fixture) string { return f.host[strings.LastIndex(f.host, ":")+1:] }

func TestHostCheck(t *testing.T) {
	t.Parallel()
	f := newFixture(t, func(s *Server) { s.AllowedHosts = []string{"bridge.lan", "other.lan:8080"} })
	p := port(f)
	tests := []struct {
		host string
		want int
	}{
		{"127.0.0.1:" + p, 200},
		{"localhost:" + p, 200},
		{"LOCALHOST:" + p, 200},
		{"127.0.0.2:" + p, 200},
		{"[::1]:" + p, 200},
		{"bridge.lan:" + p, 200},
		{"other.lan:8080", 200},
		{"other.lan:" + p, 403},
		{"bridge.lan:1", 403},
		{"192.168.1.10:" + p, 403},
		{"[::1]", 403},
		{"127.0.0.1:" + p + "0", 403},
		{"evil.example", 403},
	}
	for _, tt := range tests {
		resp, body := f.do(t, req{path: "/healthz", host: tt.host})
		if resp.StatusCode != tt.want {
			t.Errorf("Host %q: status %d, want %d (%s)", tt.host, resp.StatusCode, tt.want, body)
		}
	}
}

func TestEmptyHostRefused(t *testing.T) {
	t.Parallel()
	f := newFixture(t, nil)
	status, rest := f.rawRequest(t, "GET /healthz HTTP/1.0\r\n\r\n")
	if !strings.Contains(status, "403") || !strings.Contains(rest, "forbidden-host") {
		t.Errorf("HTTP/1.0 without Host: %s\n%s; want 403 forbidden-host", status, rest)
	}
	status, _ = f.rawRequest(t, "GET /healthz HTTP/1.1\r\nHost: \r\nConnection: close\r\n\r\n")
	if !strings.Contains(status, "403") && !strings.Contains(status, "400") {
		t.Errorf("HTTP/1.1 with an empty Host: %s, want 400 or 403", status)
	}
}

func TestOwnOriginAllowed(t *testing.T) {
	t.Parallel()
	f := newFixture(t, nil)
	for _, h := range []map[string]string{
		{"Origin": "http://127.0.0.1:" + port(f), "Sec-Fetch-Site": "same-origin"},
		{"Origin": "http://localhost:" + port(f), "Sec-Fetch-Site": "cross-site"},
		{"Sec-Fetch-Site": "same-origin"},
		{"Sec-Fetch-Site": "none"},
	} {
		resp, body := f.do(t, req{method: "POST", path: "/v1/validate/diagnostic", body: `{"code":"x","message":"y"}`, headers: h})
		if resp.StatusCode != 200 {
			t.Errorf("POST with %v: status %d, want 200 (%s)", h, resp.StatusCode, body)
		}
		if v := resp.Header.Get("Access-Control-Allow-Origin"); v != "" {
			t.Errorf("POST with %v: Access-Control-Allow-Origin %q without configured origins", h, v)
		}
	}
}

func TestNoCORSHeadersByDefault(t *testing.T) {
	t.Parallel()
	f := newFixture(t, nil)
	resp, _ := f.do(t, req{path: "/v1/sessions", headers: map[string]string{"Origin": "http://127.0.0.1:" + port(f)}})
	for k := range resp.Header {
		if strings.HasPrefix(k, "Access-Control-") {
			t.Errorf("header %s sent without configured origins", k)
		}
	}
	resp, body := f.do(t, req{method: "OPTIONS", path: "/v1/sessions", noToken: true,
		headers: map[string]string{"Origin": "https://app.example", "Access-Control-Request-Method": "GET"}})
	problemOf(t, resp, body, 403)
}

func TestCORSForConfiguredOrigin(t *testing.T) {
	t.Parallel()
	const origin = "https://app.example"
	f := newFixture(t, func(s *Server) { s.AllowedOrigins = []string{origin} })
	resp, body := f.do(t, req{method: "POST", path: "/v1/validate/diagnostic", body: `{"code":"x","message":"y"}`,
		headers: map[string]string{"Origin": origin, "Sec-Fetch-Site": "cross-site"}})
	if resp.StatusCode != 200 || resp.Header.Get("Access-Control-Allow-Origin") != origin || resp.Header.Get("Vary") != "Origin" {
		t.Errorf("POST from %s: status %d, ACAO %q, Vary %q; want 200, the origin, Origin (%s)", origin, resp.StatusCode,
			resp.Header.Get("Access-Control-Allow-Origin"), resp.Header.Get("Vary"), body)
	}
	resp, _ = f.do(t, req{method: "OPTIONS", path: "/v1/sources/codex/harnesses/codex", noToken: true,
		headers: map[string]string{"Origin": origin, "Access-Control-Request-Method": "POST", "Access-Control-Request-Headers": "authorization,content-type"}})
	if resp.StatusCode != 204 || resp.Header.Get("Access-Control-Allow-Origin") != origin ||
		!strings.Contains(resp.Header.Get("Access-Control-Allow-Headers"), "Authorization") {
		t.Errorf("preflight: status %d, headers %v; want 204 allowing the origin and Authorization", resp.StatusCode, resp.Header)
	}
	resp, body = f.do(t, req{path: "/v1/sessions", headers: map[string]string{"Origin": "https://other.example"}})
	problemOf(t, resp, body, 403)
	if v := resp.Header.Get("Access-Control-Allow-Origin"); v != "" {
		t.Errorf("ACAO %q for an origin that is not configured", v)
	}
}

func TestDashboardCookieFlow(t *testing.T) {
	t.Parallel()
	f := newFixture(t, nil)
	resp, body := f.do(t, req{path: "/?token=" + testToken + "&view=compact", noToken: true})
	if resp.StatusCode != http.StatusSeeOther {
		t.Fatalf("GET /?token=: status %d, want 303 (%s)", resp.StatusCode, body)
	}
	if loc := resp.Header.Get("Location"); loc != "/?view=compact" {
		t.Errorf("Location %q, want /?view=compact (the token stripped)", loc)
	}
	cookies := resp.Cookies()
	if len(cookies) != 1 {
		t.Fatalf("cookies %v, want one", cookies)
	}
	c := cookies[0]
	if !c.HttpOnly || c.SameSite != http.SameSiteStrictMode || c.Path != "/" || c.Name != CookieName(port(f)) {
		t.Errorf("cookie %+v: want HttpOnly, SameSite=Strict, Path=/, name %s", c, CookieName(port(f)))
	}
	if raw := resp.Header.Get("Set-Cookie"); !strings.Contains(raw, "HttpOnly") || !strings.Contains(raw, "SameSite=Strict") {
		t.Errorf("Set-Cookie %q lacks HttpOnly or SameSite=Strict", raw)
	}
	cookie := c.Name + "=" + c.Value
	for _, path := range []string{"/v1/sources", "/v1/events"} {
		resp, body = f.do(t, req{path: path, noToken: true, headers: map[string]string{"Cookie": cookie, "Sec-Fetch-Site": "same-origin"}})
		if resp.StatusCode != 200 {
			t.Errorf("GET %s with the cookie: status %d, want 200 (%s)", path, resp.StatusCode, body)
		}
	}
	resp, body = f.do(t, req{path: "/v1/sources", noToken: true, headers: map[string]string{"Cookie": c.Name + "=wrong-wrong-wrong-wrong"}})
	problemOf(t, resp, body, 401)
	resp, body = f.do(t, req{method: "POST", path: "/v1/sources/claude-code/harnesses/claude-code", body: `{"enabled":true}`, noToken: true,
		headers: map[string]string{"Cookie": cookie, "Origin": "http://127.0.0.1:" + port(f)}})
	if resp.StatusCode != 200 {
		t.Errorf("POST with the cookie from the dashboard's origin: %d, want 200 (%s)", resp.StatusCode, body)
	}
}

func TestAuthNone(t *testing.T) {
	t.Parallel()
	f := newFixture(t, func(s *Server) { s.Token = "" })
	resp, body := f.do(t, req{path: "/v1/sources", noToken: true})
	if resp.StatusCode != 200 {
		t.Errorf("GET /v1/sources with auth off: %d, want 200 (%s)", resp.StatusCode, body)
	}
	resp, body = f.do(t, req{path: "/v1/sources", noToken: true, headers: map[string]string{"Origin": "https://evil.example"}})
	problemOf(t, resp, body, 403)
}

func TestSessionsFilterParsed(t *testing.T) {
	t.Parallel()
	f := newFixture(t, nil)
	tests := []struct {
		query string
		want  agentbridge.Filter
	}{
		{"", agentbridge.Filter{}},
		{"source=claude-code,codex&harness=codex", agentbridge.Filter{Sources: []string{"claude-code", "codex"}, Harnesses: []string{"codex"}}},
		{"source=codex&source=example", agentbridge.Filter{Sources: []string{"codex", "example"}}},
		{"status=waiting,blocked,", agentbridge.Filter{Statuses: []agentbridge.Status{"waiting", "blocked"}}},
		{"project=%2Fhome%2Fu%2Fp&ancestorPid=4242", agentbridge.Filter{Project: "/home/u/p", AncestorPID: 4242}},
		{"project=/", agentbridge.Filter{Project: "/"}},
	}
	for _, tt := range tests {
		resp, body := f.do(t, req{path: "/v1/sessions?" + tt.query})
		if resp.StatusCode != 200 {
			t.Errorf("GET /v1/sessions?%s: %d (%s)", tt.query, resp.StatusCode, body)
			continue
		}
		if diff := cmp.Diff(tt.want, f.hub.lastFilter()); diff != "" {
			t.Errorf("filter of ?%s mismatch (-want +got):\n%s", tt.query, diff)
		}
	}
	f.do(t, req{path: "/v1/events?harness=codex&ancestorPid=7&format=ndjson"})
	f.events.mu.Lock()
	got := f.events.filter
	f.events.mu.Unlock()
	if diff := cmp.Diff(agentbridge.Filter{Harnesses: []string{"codex"}, AncestorPID: 7}, got); diff != "" {
		t.Errorf("events filter mismatch (-want +got):\n%s", diff)
	}
}

func TestEmptyListsAreArrays(t *testing.T) {
	t.Parallel()
	f := newFixture(t, nil)
	f.hub.entries, f.hub.diags, f.hub.sources = nil, nil, nil
	for path, want := range map[string]string{
		"/v1/sessions":    `"sessions":[]`,
		"/v1/diagnostics": `{"diagnostics":[]}`,
		"/v1/sources":     `{"sources":[]}`,
	} {
		_, body := f.do(t, req{path: path})
		if !strings.Contains(string(body), want) {
			t.Errorf("GET %s = %s, want %s", path, body, want)
		}
	}
}

func TestValidate(t *testing.T) {
	t.Parallel()
	f := newFixture(t, nil)
	const snap = `{"id":"s-1","harness":"codex","status":"running"}`
	tests := []struct {
		name      string
		path      string
		body      string
		wantValid bool
		wantCodes []validate.Code
	}{
		{"valid snapshot", "/v1/validate/snapshot", snap, true, nil},
		{"harnesses not checked when absent", "/v1/validate/snapshot", `{"id":"s-1","harness":"anything","status":"idle"}`, true, nil},
		{"harness switched on", "/v1/validate/snapshot?harnesses=codex,claude-code", snap, true, nil},
		{"harness not enabled", "/v1/validate/snapshot?harnesses=claude-code", snap, false, []validate.Code{validate.HarnessNotEnabled}},
		{"empty harness list enables none", "/v1/validate/snapshot?harnesses=", snap, false, []validate.Code{validate.HarnessNotEnabled}},
		{"unknown field", "/v1/validate/snapshot", `{"id":"s-1","harness":"codex","status":"running","colour":"red"}`, false, []validate.Code{validate.UnknownField}},
		{"bad status", "/v1/validate/snapshot", `{"id":"s-1","harness":"codex","status":"asleep"}`, false, []validate.Code{validate.InvalidEnum}},
		{"not an object", "/v1/validate/snapshot", `[1]`, false, []validate.Code{validate.InvalidType}},
		{"valid reset", "/v1/validate/reset", `[` + snap + `]`, true, nil},
		{"duplicate in reset", "/v1/validate/reset", `[` + snap + `,` + snap + `]`, false, []validate.Code{validate.Duplicate}},
		{"valid diagnostic", "/v1/validate/diagnostic", `{"code":"journal-unreadable","message":"a journal could not be read"}`, true, nil},
		{"diagnostic with a path", "/v1/validate/diagnostic", `{"code":"x","message":"cannot open /home/u/.claude/projects/a.jsonl"}`, false, []validate.Code{validate.InvalidString}},
		{"valid event", "/v1/validate/event", `{"kind":"turn.started","turnId":"t-1"}`, true, nil},
		{"event missing field", "/v1/validate/event", `{"kind":"wait.started","waitId":"w-1"}`, false, []validate.Code{validate.MissingField}},
		{"host profile: pid and cwd required", "/v1/validate/snapshot?profile=host", snap, false, []validate.Code{validate.InvalidInteger, validate.InvalidString}},
		{"host profile: with pid and cwd", "/v1/validate/snapshot?profile=host", `{"id":"s 1","harness":"codex","status":"idle","pid":7,"cwd":"/w"}`, true, nil},
		{"bridge profile named", "/v1/validate/snapshot?profile=bridge", snap, true, nil},
		{"host profile: reset", "/v1/validate/reset?profile=host", `[` + snap + `]`, false, []validate.Code{validate.InvalidInteger, validate.InvalidString}},
		{"host profile: a diagnostic with a path", "/v1/validate/diagnostic?profile=host", `{"code":"x","message":"cannot open /home/u/.claude/projects/a.jsonl"}`, true, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			resp, body := f.do(t, req{method: "POST", path: tt.path, body: tt.body})
			if resp.StatusCode != 200 {
				t.Fatalf("POST %s: %d, want 200 (%s)", tt.path, resp.StatusCode, body)
			}
			if !strings.Contains(string(body), `"issues":[`) {
				t.Errorf("body %s: issues must be an array, never null", body)
			}
			var res ValidationResult
			if err := json.Unmarshal(body, &res); err != nil {
				t.Fatal(err)
			}
			var codes []validate.Code
			for _, is := range res.Issues {
				codes = append(codes, is.Code)
			}
			if res.Valid != tt.wantValid || !cmp.Equal(codes, tt.wantCodes) {
				t.Errorf("POST %s %s = valid %v codes %v, want %v %v", tt.path, tt.body, res.Valid, codes, tt.wantValid, tt.wantCodes)
			}
		})
	}
}

func TestPublish(t *testing.T) {
	t.Parallel()
	const path = "/v1/sources/example-push/publish"
	tests := []struct {
		name       string
		body       string
		hubErr     error
		wantStatus int
		wantIssues []validate.Issue // paths and codes only
		wantOps    []agentbridge.OpKind
	}{
		{"single upsert", `{"op":"upsert","session":{"id":"s-1","harness":"example-agent","status":"running"}}`, nil, 200, nil, []agentbridge.OpKind{agentbridge.OpUpsert}},
		{"array of every op", `[
			{"op":"reset","sessions":[]},
			{"op":"upsert","session":{"id":"s-1","harness":"example-agent","status":"idle"}},
			{"op":"event","sessionId":"s-1","harness":"example-agent","event":{"kind":"turn.started","turnId":"t-1"}},
			{"op":"diagnostic","diagnostic":{"code":"push-hello","message":"hello"}},
			{"op":"remove","sessionId":"s-1"}]`, nil, 200, nil,
			[]agentbridge.OpKind{agentbridge.OpReset, agentbridge.OpUpsert, agentbridge.OpEvent, agentbridge.OpDiagnostic, agentbridge.OpRemove}},
		{"empty array", `[]`, nil, 200, nil, []agentbridge.OpKind{}},
		{"unknown field in single op", `{"op":"upsert","session":{"id":"s-1","harness":"example-agent","status":"running","x":1}}`, nil, 422,
			[]validate.Issue{{Path: "$.session.x", Code: validate.UnknownField}}, nil},
		{"unknown field in array", `[{"op":"remove","sessionId":"s-1"},{"op":"upsert","session":{"id":"s-1","harness":"example-agent","status":"running","x":1}}]`, nil, 422,
			[]validate.Issue{{Path: "$[1].session.x", Code: validate.UnknownField}}, nil},
		{"unknown op field", `{"op":"remove","sessionId":"s-1","session":{}}`, nil, 422,
			[]validate.Issue{{Path: "$.session", Code: validate.UnknownField}}, nil},
		{"every issue reported", `[{"op":"remove"},{"op":"launch"},{"sessionId":"s"},7,{"op":"event","sessionId":"bad id","harness":"Bad","event":{"kind":"nope"}}]`, nil, 422,
			[]validate.Issue{
				{Path: "$[0].sessionId", Code: validate.MissingField},
				{Path: "$[1].op", Code: validate.InvalidEnum},
				{Path: "$[2].op", Code: validate.MissingField},
				{Path: "$[3]", Code: validate.InvalidType},
				{Path: "$[4].event.kind", Code: validate.InvalidEnum},
				{Path: "$[4].sessionId", Code: validate.InvalidID},
				{Path: "$[4].harness", Code: validate.InvalidID},
			}, nil},
		{"reset sessions not an array", `{"op":"reset","sessions":{"sessions":[]}}`, nil, 422,
			[]validate.Issue{{Path: "$.sessions", Code: validate.InvalidType}}, nil},
		{"op not a string", `{"op":5}`, nil, 422, []validate.Issue{{Path: "$.op", Code: validate.InvalidType}}, nil},
		{"duplicate op field", `{"op":"remove","sessionId":"a","sessionId":"b"}`, nil, 422, []validate.Issue{{Path: "$.sessionId", Code: validate.Duplicate}}, nil},
		{"body a string", `"reset"`, nil, 422, []validate.Issue{{Path: "$", Code: validate.InvalidType}}, nil},
		{"hub rejects a single op", `{"op":"upsert","session":{"id":"s-1","harness":"codex","status":"running"}}`,
			&hub.InvalidError{Issues: []validate.Issue{{Path: "$[0].session.harness", Code: validate.HarnessNotEnabled, Message: "m"}}}, 422,
			[]validate.Issue{{Path: "$.session.harness", Code: validate.HarnessNotEnabled}}, nil},
		{"hub rejects in an array", `[{"op":"remove","sessionId":"s-9"}]`,
			&hub.InvalidError{Issues: []validate.Issue{{Path: "$[0].sessionId", Code: validate.InvalidID, Message: "m"}}}, 422,
			[]validate.Issue{{Path: "$[0].sessionId", Code: validate.InvalidID}}, nil},
		{"not a push source", `{"op":"remove","sessionId":"s-1"}`, hub.ErrNotPush, 409, nil, nil},
		{"unknown source", `{"op":"remove","sessionId":"s-1"}`, hub.ErrUnknownSource, 404, nil, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			f := newFixture(t, nil)
			f.hub.publishErr = tt.hubErr
			resp, body := f.do(t, req{method: "POST", path: path, body: tt.body})
			if tt.wantStatus == 200 {
				if resp.StatusCode != 200 {
					t.Fatalf("publish %s: %d, want 200 (%s)", tt.body, resp.StatusCode, body)
				}
				var got []agentbridge.OpKind
				for _, op := range f.hub.published {
					got = append(got, op.Op)
				}
				if len(got) != len(tt.wantOps) || (len(got) > 0 && !cmp.Equal(got, tt.wantOps)) {
					t.Errorf("published ops %v, want %v", got, tt.wantOps)
				}
				var res PublishResult
				if err := json.Unmarshal(body, &res); err != nil || res.Revision != f.hub.Revision() {
					t.Errorf("body %s, want the revision %d", body, f.hub.Revision())
				}
				return
			}
			p := problemOf(t, resp, body, tt.wantStatus)
			if f.hub.published != nil {
				t.Errorf("ops reached the hub although the request was rejected")
			}
			if tt.wantStatus != 422 {
				return
			}
			if len(p.Issues) == 0 {
				t.Fatalf("422 without issues: %s", body)
			}
			var got []validate.Issue
			for _, is := range p.Issues {
				if is.Message == "" {
					t.Errorf("issue %+v has no message", is)
				}
				got = append(got, validate.Issue{Path: is.Path, Code: is.Code})
			}
			if diff := cmp.Diff(tt.wantIssues, got); diff != "" {
				t.Errorf("issues of %s mismatch (-want +got):\n%s", tt.body, diff)
			}
		})
	}
}

func TestPublishDecodesValues(t *testing.T) {
	t.Parallel()
	f := newFixture(t, nil)
	resp, body := f.do(t, req{method: "POST", path: "/v1/sources/example-push/publish",
		body: `{"op":"event","sessionId":"s-1","harness":"example-agent","event":{"kind":"agent.exited","exitCode":0}}`})
	if resp.StatusCode != 200 {
		t.Fatalf("publish: %d (%s)", resp.StatusCode, body)
	}
	zero := 0
	want := []agentbridge.Op{{Op: agentbridge.OpEvent, SessionID: "s-1", Harness: "example-agent",
		Event: agentbridge.Event{Kind: agentbridge.KindAgentExited, ExitCode: &zero}}}
	if diff := cmp.Diff(want, f.hub.published); diff != "" {
		t.Errorf("published mismatch (-want +got):\n%s", diff)
	}
}

func TestHarnessSwitchErrors(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		err  error
		want int
	}{
		{fmt.Errorf("switch: %w", hub.ErrUnknownSource), 404},
		{fmt.Errorf("switch: %w", hub.ErrUnknownHarness), 404},
		{fmt.Errorf("disk on fire"), 500},
	} {
		f := newFixture(t, nil)
		f.hub.harnessErr = tt.err
		resp, body := f.do(t, req{method: "POST", path: "/v1/sources/codex/harnesses/codex", body: `{"enabled":true}`})
		p := problemOf(t, resp, body, tt.want)
		if strings.Contains(p.Detail, "fire") {
			t.Errorf("internal error text leaked: %q", p.Detail)
		}
	}
}

func TestPanicIsAProblem(t *testing.T) {
	t.Parallel()
	f := newFixture(t, nil)
	f.hub.panicOn = "Sources"
	resp, body := f.do(t, req{path: "/v1/sources"})
	p := problemOf(t, resp, body, 500)
	if strings.Contains(p.Detail, "fake hub") {
		t.Errorf("panic text leaked: %q", p.Detail)
	}
	resp, _ = f.do(t, req{path: "/healthz"})
	if resp.StatusCode != 200 {
		t.Errorf("server did not survive a panic: %d", resp.StatusCode)
	}
}

func TestBodyLimitsWithoutLength(t *testing.T) {
	t.Parallel()
	f := newFixture(t, nil)
	post := func(body io.Reader, ctype string) (*http.Response, []byte) {
		t.Helper()
		r, _ := http.NewRequest("POST", f.ts.URL+"/v1/validate/diagnostic", body)
		r.Header.Set("Authorization", "Bearer "+testToken)
		r.Header.Set("Content-Type", ctype)
		resp, err := http.DefaultClient.Do(r)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp, b
	}
	// A chunked body (no Content-Length) over the limit is cut off with 413.
	chunked := io.MultiReader(strings.NewReader(`{"code":"x","message":"`), strings.NewReader(strings.Repeat("a", MaxBody)), strings.NewReader(`"}`))
	resp, body := post(struct{ io.Reader }{chunked}, "application/json")
	problemOf(t, resp, body, 413)
	// Media type parameters are fine.
	resp, body = post(strings.NewReader(`{"code":"x","message":"y"}`), "application/json; charset=utf-8")
	if resp.StatusCode != 200 {
		t.Errorf("application/json; charset=utf-8: %d, want 200 (%s)", resp.StatusCode, body)
	}
}

func TestTokenNeverLogged(t *testing.T) {
	t.Parallel()
	var logs testlog.Buffer
	f := newFixture(t, func(s *Server) {
		s.Logger = slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	})
	f.do(t, req{path: "/?token=" + testToken, noToken: true})
	f.do(t, req{path: "/v1/sessions"})
	f.hub.panicOn = "Sources"
	f.do(t, req{path: "/v1/sources"})
	out := logs.String()
	if !strings.Contains(out, "/v1/sessions") || !strings.Contains(out, "panic") {
		t.Fatalf("debug log lacks the requests or the panic:\n%s", out)
	}
	if strings.Contains(out, testToken) {
		t.Errorf("the token appears in the log:\n%s", out)
	}
}

// TestDashboardWrongTokenInABrowser: a browser opening a dashboard link
// with a wrong token gets the dashboard page (which shows its sign-in card)
// with status 401 and no cookie; a script still gets the problem.
func TestDashboardWrongTokenInABrowser(t *testing.T) {
	t.Parallel()
	f := newFixture(t, nil)
	for _, h := range []map[string]string{
		{"Accept": "text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8"},
		{"Sec-Fetch-Dest": "document"},
	} {
		resp, body := f.do(t, req{path: "/?token=wrong", noToken: true, headers: h})
		if resp.StatusCode != http.StatusUnauthorized || len(resp.Cookies()) != 0 {
			t.Errorf("%v: status %d, cookies %v; want 401 and none", h, resp.StatusCode, resp.Cookies())
		}
		if ct := resp.Header.Get("Content-Type"); !strings.HasPrefix(ct, "text/html") || !strings.Contains(string(body), "app.js") {
			t.Errorf("%v: %s %q, want the dashboard page", h, ct, body)
		}
		if resp.Header.Get("Cache-Control") != "no-store" || resp.Header.Get("Referrer-Policy") != "no-referrer" {
			t.Errorf("%v: headers %v, want no-store and no-referrer", h, resp.Header)
		}
	}
	resp, body := f.do(t, req{path: "/?token=wrong", noToken: true, headers: map[string]string{"Accept": "application/json"}})
	problemOf(t, resp, body, http.StatusUnauthorized)
}
