package api

import (
	"strings"
	"testing"
)

// TestMethodsAndHead: a wrong method gets 405 with the Allow header
// (RFC 9110); HEAD is answered wherever GET is, behind the same checks,
// and HEAD of the stream answers its headers without streaming.
func TestMethodsAndHead(t *testing.T) {
	t.Parallel()
	f := newFixture(t, nil)
	for _, tt := range []struct {
		method, path string
		status       int
		allow, ctype string
	}{
		{"DELETE", "/v1/sessions", 405, "GET, HEAD", "application/problem+json"},
		{"POST", "/healthz", 405, "GET, HEAD", "application/problem+json"},
		{"PUT", "/v1/sources/example-push/publish", 405, "POST", "application/problem+json"},
		{"HEAD", "/healthz", 200, "", "application/json"},
		{"HEAD", "/v1/sessions", 200, "", "application/json"},
		{"HEAD", "/v1/events", 200, "", "text/event-stream"},
		{"HEAD", "/v1/events?format=ndjson", 200, "", "application/x-ndjson"},
	} {
		resp, _ := f.do(t, req{method: tt.method, path: tt.path})
		if resp.StatusCode != tt.status || resp.Header.Get("Allow") != tt.allow || resp.Header.Get("Content-Type") != tt.ctype {
			t.Errorf("%s %s = %d, Allow %q, Content-Type %q; want %d, %q, %q", tt.method, tt.path,
				resp.StatusCode, resp.Header.Get("Allow"), resp.Header.Get("Content-Type"), tt.status, tt.allow, tt.ctype)
		}
	}
	if resp, _ := f.do(t, req{method: "HEAD", path: "/v1/sessions", noToken: true}); resp.StatusCode != 401 {
		t.Errorf("HEAD /v1/sessions without the token = %d, want 401", resp.StatusCode)
	}
	if resp, _ := f.do(t, req{method: "HEAD", path: "/healthz", host: "evil.example:80"}); resp.StatusCode != 403 {
		t.Errorf("HEAD /healthz with a foreign Host = %d, want 403", resp.StatusCode)
	}
}

// TestSessionOfUnknownSource: GET /v1/sessions/{source}/{id} tells an
// unknown source from an unknown session.
func TestSessionOfUnknownSource(t *testing.T) {
	t.Parallel()
	f := newFixture(t, nil)
	resp, body := f.do(t, req{path: "/v1/sessions/nope/sess-1"})
	if p := problemOf(t, resp, body, 404); p.Type != ProblemTypePrefix+"unknown-source" {
		t.Errorf("type %q, want unknown-source", p.Type)
	}
	resp, body = f.do(t, req{path: "/v1/sessions/claude-code/nope"})
	if p := problemOf(t, resp, body, 404); p.Type != ProblemTypePrefix+"unknown-session" {
		t.Errorf("type %q, want unknown-session", p.Type)
	}
}

// TestUnknownQueryParameterNamesTheRouteParameters: the problem lists the
// parameters the route takes, cleanly.
func TestUnknownQueryParameterNamesTheRouteParameters(t *testing.T) {
	t.Parallel()
	f := newFixture(t, nil)
	resp, body := f.do(t, req{path: "/v1/sessions?stauts=running"})
	p := problemOf(t, resp, body, 400)
	if !strings.HasSuffix(p.Detail, "source, harness, status, host, project, ancestorPid") {
		t.Errorf("detail %q, want it to end with the parameter list", p.Detail)
	}
}
