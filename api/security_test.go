package api

import (
	"net/http"
	"testing"
)

// No page of the bridge may be framed, by any origin: every answer (the
// dashboard, the API, errors, refusals) says so in both headers browsers
// read.
func TestNoFraming(t *testing.T) {
	f := newFixture(t, nil)
	for _, q := range []req{
		{path: "/"},
		{path: "/?token=" + testToken, noToken: true},
		{path: "/v1/sessions"},
		{path: "/v1/sessions", noToken: true},
		{path: "/v1/nothing"},
		{path: "/healthz"},
		{path: "/openapi.yaml"},
		{path: "/v1/sessions", host: "evil.example:80"},
		{method: http.MethodPost, path: "/v1/hooks/claude-code", body: "{"},
	} {
		resp, _ := f.do(t, q)
		if got := resp.Header.Get("Content-Security-Policy"); got != "frame-ancestors 'none'" {
			t.Errorf("%s %s (%d): Content-Security-Policy %q", q.method, q.path, resp.StatusCode, got)
		}
		if got := resp.Header.Get("X-Frame-Options"); got != "DENY" {
			t.Errorf("%s %s (%d): X-Frame-Options %q", q.method, q.path, resp.StatusCode, got)
		}
	}
}
