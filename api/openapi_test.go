package api

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/getkin/kin-openapi/openapi3filter"
	"github.com/getkin/kin-openapi/routers"
	"github.com/getkin/kin-openapi/routers/legacy"
	"github.com/go-chi/chi/v5"

	"github.com/agentbridge/agentbridge"
)

func loadSpec(t *testing.T) *openapi3.T {
	t.Helper()
	loader := openapi3.NewLoader()
	doc, err := loader.LoadFromData(agentbridge.OpenAPI)
	if err != nil {
		t.Fatalf("load openapi.yaml: %v", err)
	}
	if err := doc.Validate(context.Background()); err != nil {
		t.Fatalf("openapi.yaml is not a valid OpenAPI document: %v", err)
	}
	return doc
}

// TestSpecMatchesRouter: every chi route is documented, and every
// documented operation has a route.
func TestSpecMatchesRouter(t *testing.T) {
	t.Parallel()
	doc := loadSpec(t)
	srv := &Server{Hub: newFakeHub(), Events: &fakeEvents{}, Addr: "127.0.0.1:7391", Token: testToken}
	routes, ok := srv.Handler().(chi.Routes)
	if !ok {
		t.Fatal("Handler() is not a chi router")
	}
	var inRouter []string
	err := chi.Walk(routes, func(method, route string, _ http.Handler, _ ...func(http.Handler) http.Handler) error {
		route = strings.ReplaceAll(route, "/*/", "/")
		if route == "/*" {
			route = "/{file}" // the dashboard's static files
		}
		inRouter = append(inRouter, method+" "+route)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	var inSpec []string
	for path, item := range doc.Paths.Map() {
		for method := range item.Operations() {
			inSpec = append(inSpec, method+" "+path)
		}
	}
	slices.Sort(inRouter)
	slices.Sort(inSpec)
	for _, r := range inRouter {
		if !slices.Contains(inSpec, r) {
			t.Errorf("route %s is not documented in openapi.yaml", r)
		}
	}
	for _, s := range inSpec {
		if !slices.Contains(inRouter, s) {
			t.Errorf("openapi.yaml documents %s, which the router does not serve", s)
		}
	}
}

// TestResponsesMatchSpec sends real requests and validates each request
// and response against openapi.yaml.
func TestResponsesMatchSpec(t *testing.T) {
	t.Parallel()
	doc := loadSpec(t)
	f := newFixture(t, func(s *Server) { s.History = sampleHistory() })
	off := newFixture(t, nil)
	doc.Servers = openapi3.Servers{{URL: f.ts.URL}}
	router, err := legacy.NewRouter(doc)
	if err != nil {
		t.Fatal(err)
	}
	big := `{"id":"` + strings.Repeat("a", MaxBody) + `"}`
	tests := []struct {
		name       string
		req        req
		status     int
		skipBody   bool // not JSON (streams, metrics)
		invalidReq bool // the request itself is (deliberately) outside the spec
	}{
		{"sources", req{path: "/v1/sources"}, 200, false, false},
		{"sessions", req{path: "/v1/sessions?status=waiting,running&project=/home/u"}, 200, false, false},
		{"session", req{path: "/v1/sessions/claude-code/sess-1"}, 200, false, false},
		{"session 404", req{path: "/v1/sessions/claude-code/none"}, 404, false, false},
		{"diagnostics", req{path: "/v1/diagnostics"}, 200, false, false},
		{"events", req{path: "/v1/events?since=5"}, 200, true, false},
		{"healthz", req{path: "/healthz", noToken: true}, 200, false, false},
		{"metrics", req{path: "/metrics"}, 200, true, false},
		{"harness switch", req{method: "POST", path: "/v1/sources/claude-code/harnesses/claude-code", body: `{"enabled":true}`}, 200, false, false},
		{"validate valid", req{method: "POST", path: "/v1/validate/snapshot", body: `{"id":"s","harness":"codex","status":"idle"}`}, 200, false, false},
		{"validate invalid", req{method: "POST", path: "/v1/validate/event?harnesses=codex", body: `{"kind":"nope","x":1}`}, 200, false, false},
		{"validate reset", req{method: "POST", path: "/v1/validate/reset", body: `[]`}, 200, false, false},
		{"validate diagnostic", req{method: "POST", path: "/v1/validate/diagnostic", body: `{"code":"a","message":"b"}`}, 200, false, false},
		{"publish", req{method: "POST", path: "/v1/sources/example-push/publish",
			body: `[{"op":"upsert","session":{"id":"s-1","harness":"example-agent","status":"waiting","waitingFor":"approval"}},{"op":"event","sessionId":"s-1","event":{"kind":"wait.finished","waitId":"w"}}]`}, 200, false, false},
		{"publish 422", req{method: "POST", path: "/v1/sources/example-push/publish", body: `{"op":"upsert","session":{"id":"s-1"}}`}, 422, false, true},
		{"publish 415", req{method: "POST", path: "/v1/sources/example-push/publish", body: `{}`, ctype: "text/plain"}, 415, false, true},
		{"publish 413", req{method: "POST", path: "/v1/sources/example-push/publish", body: big}, 413, false, true},
		{"publish bad JSON", req{method: "POST", path: "/v1/sources/example-push/publish", body: `{`}, 400, false, true},
		{"sessions bad status", req{path: "/v1/sessions?status=asleep"}, 400, false, true},
		{"sources 401", req{path: "/v1/sources", noToken: true}, 401, false, false},
		{"sessions foreign origin", req{path: "/v1/sessions", headers: map[string]string{"Origin": "https://evil.example"}}, 403, false, false},
		{"dashboard token trade", req{path: "/?token=" + testToken, noToken: true}, 303, true, false},
		{"history", req{path: "/v1/history?from=30d&project=/home/u/p&outcome=success&limit=10&turns=5"}, 200, false, false},
		{"history csv", req{path: "/v1/history?format=csv"}, 200, false, false},
		{"history 400", req{path: "/v1/history?from=soon"}, 400, false, true},
		{"usage", req{path: "/v1/usage?by=day&split=model&tz=UTC&from=1764547200000"}, 200, false, false},
		{"usage csv", req{path: "/v1/usage?by=harness&format=csv"}, 200, false, false},
		{"usage without by", req{path: "/v1/usage"}, 400, false, true},
		{"prune", req{method: "POST", path: "/v1/history/prune", body: `{"olderThan":"90d"}`}, 200, false, false},
		{"prune 422", req{method: "POST", path: "/v1/history/prune", body: `{"olderThan":7}`}, 422, false, true},
		{"history off", req{path: "/v1/history", host: "off"}, 404, false, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ff := f
			if tt.req.host == "off" { // the fixture without a history
				ff, tt.req.host = off, ""
			}
			resp, body := ff.do(t, tt.req)
			if resp.StatusCode != tt.status {
				t.Fatalf("status %d, want %d (%s)", resp.StatusCode, tt.status, body)
			}
			method := tt.req.method
			if method == "" {
				method = "GET"
			}
			r, _ := http.NewRequest(method, f.ts.URL+tt.req.path, strings.NewReader(tt.req.body))
			r.Header = resp.Request.Header.Clone()
			route, params, err := router.FindRoute(r)
			if err != nil {
				t.Fatalf("FindRoute(%s %s): %v", method, tt.req.path, err)
			}
			opts := &openapi3filter.Options{
				AuthenticationFunc:    openapi3filter.NoopAuthenticationFunc,
				IncludeResponseStatus: true,
				ExcludeResponseBody:   tt.skipBody,
				MultiError:            true,
			}
			in := &openapi3filter.RequestValidationInput{Request: r, PathParams: params, Route: route, Options: opts}
			if !tt.invalidReq {
				if err := openapi3filter.ValidateRequest(context.Background(), in); err != nil {
					t.Errorf("request does not match the spec: %v", err)
				}
			}
			out := &openapi3filter.ResponseValidationInput{
				RequestValidationInput: in, Status: resp.StatusCode, Header: resp.Header,
				Body: io.NopCloser(bytes.NewReader(body)), Options: opts,
			}
			if err := openapi3filter.ValidateResponse(context.Background(), out); err != nil {
				t.Errorf("response %s does not match the spec: %v", body, err)
			}
		})
	}
}

var _ routers.Router = (*legacy.Router)(nil)
