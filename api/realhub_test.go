package api

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/agentbridge/agentbridge"
	"github.com/agentbridge/agentbridge/hub"
	"github.com/agentbridge/agentbridge/validate"
)

// TestWithRealHub runs the publish and switch routes against the real hub:
// its issues keep their root paths, and its answers decode as the API says.
func TestWithRealHub(t *testing.T) {
	t.Parallel()
	h := hub.New(hub.Options{})
	if err := h.AddPush(agentbridge.SourceInfo{ID: "example-push", DisplayName: "Example Agent", EnvironmentVariables: []string{},
		Harnesses: []agentbridge.Harness{{ID: "example-agent", DisplayName: "Example Agent"}, {ID: "other", DisplayName: "Other"}}}); err != nil {
		t.Fatal(err)
	}
	f := newFixture(t, func(s *Server) { s.Hub = h })
	const path = "/v1/sources/example-push/publish"

	resp, body := f.do(t, req{method: "POST", path: path, body: `{"op":"upsert","session":{"id":"s-1","harness":"codex","status":"running"}}`})
	p := problemOf(t, resp, body, 422)
	want := []validate.Issue{{Path: "$.session.harness", Code: validate.HarnessNotEnabled}}
	var got []validate.Issue
	for _, is := range p.Issues {
		got = append(got, validate.Issue{Path: is.Path, Code: is.Code})
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("single-op issues mismatch (-want +got):\n%s", diff)
	}

	resp, body = f.do(t, req{method: "POST", path: path, body: `[
		{"op":"upsert","session":{"id":"s-1","harness":"example-agent","status":"running"}},
		{"op":"event","sessionId":"s-1","event":{"kind":"wait.finished","waitId":"w-9"}}]`})
	p = problemOf(t, resp, body, 422)
	if len(p.Issues) == 0 || !strings.HasPrefix(p.Issues[0].Path, "$[1].event") {
		t.Errorf("issues %+v, want one at $[1].event… (a wait that is not open)", p.Issues)
	}
	if _, n := h.Sessions(agentbridge.Filter{}); len(n) != 0 {
		t.Errorf("a rejected publish left %d sessions; want all or nothing", len(n))
	}

	resp, body = f.do(t, req{method: "POST", path: path, body: `{"op":"upsert","session":{"id":"s-1","harness":"example-agent","status":"running"}}`})
	var pr PublishResult
	if resp.StatusCode != 200 || json.Unmarshal(body, &pr) != nil || pr.Revision == 0 || pr.Revision != h.Revision() {
		t.Fatalf("publish: %d %s, want 200 with the revision %d", resp.StatusCode, body, h.Revision())
	}
	_, body = f.do(t, req{path: "/v1/sessions"})
	var sr SessionsResponse
	if err := json.Unmarshal(body, &sr); err != nil || len(sr.Sessions) != 1 || sr.Revision != pr.Revision {
		t.Errorf("sessions %s: want the one session at revision %d", body, pr.Revision)
	}

	resp, body = f.do(t, req{method: "POST", path: "/v1/sources/example-push/harnesses/example-agent", body: `{"enabled":false}`})
	var st agentbridge.SourceState
	if resp.StatusCode != 200 || json.Unmarshal(body, &st) != nil || st.Harnesses[0].Enabled {
		t.Errorf("switch off: %d %s, want 200 with example-agent off", resp.StatusCode, body)
	}
	if _, n := h.Sessions(agentbridge.Filter{}); len(n) != 0 {
		t.Errorf("switching the harness off left %d sessions", len(n))
	}
	for _, tt := range []struct {
		path   string
		status int
	}{
		{"/v1/sources/nope/harnesses/example-agent", 404},
		{"/v1/sources/example-push/harnesses/nope", 404},
	} {
		resp, body = f.do(t, req{method: "POST", path: tt.path, body: `{"enabled":true}`})
		problemOf(t, resp, body, tt.status)
	}
	resp, body = f.do(t, req{method: "POST", path: "/v1/sources/nope/publish", body: `[]`})
	problemOf(t, resp, body, 404)
}

// TestPublishReportsEveryIssue: a publish that fails reports every issue at
// once, those found while decoding (an unknown field) together with the
// harness switch and the hub's state rules (a wait that is not open) up to
// the first operation that could not be decoded, in operation order; an unknown or non-push source is answered as such even
// when the body is invalid too.
func TestPublishReportsEveryIssue(t *testing.T) {
	t.Parallel()
	h := hub.New(hub.Options{})
	if err := h.AddPush(agentbridge.SourceInfo{ID: "example-push", DisplayName: "Example Agent", EnvironmentVariables: []string{},
		Harnesses: []agentbridge.Harness{{ID: "example-agent", DisplayName: "Example Agent"}, {ID: "off", DisplayName: "Off"}}}); err != nil {
		t.Fatal(err)
	}
	if _, err := h.SetHarness("example-push", "off", false); err != nil {
		t.Fatal(err)
	}
	f := newFixture(t, func(s *Server) { s.Hub = h })
	const path = "/v1/sources/example-push/publish"
	tests := []struct {
		name string
		body string
		want []validate.Issue
	}{
		{"single upsert", `{"op":"upsert","session":{"id":"s-1","harness":"off","status":"running","extra":1}}`,
			[]validate.Issue{{Path: "$.session.extra", Code: validate.UnknownField}, {Path: "$.session.harness", Code: validate.HarnessNotEnabled}}},
		{"single unknown field of the op", `{"op":"upsert","session":{"id":"s-1","harness":"example-agent","status":"idle"},"x":1}`,
			[]validate.Issue{{Path: "$.x", Code: validate.UnknownField}}},
		{"array: decoding and state issues", `[
			{"op":"event","sessionId":"s-3","harness":"example-agent","event":{"kind":"session.started"}},
			{"op":"event","sessionId":"s-3","event":{"kind":"wait.finished","waitId":"w-1"}},
			{"op":"event","sessionId":"s-2","event":{"kind":"wait.finished","waitId":"w-9"}},
			{"op":"upsert","session":{"id":"s-1","harness":"example-agent","status":"bogus"}},
			{"op":"reset","sessions":[{"id":"a","harness":"off","status":"idle"}]},
			{"op":"event","sessionId":"s-9","event":{"kind":"turn.started","turnId":"t-1"}}]`,
			[]validate.Issue{
				{Path: "$[1].event.waitId", Code: validate.InvalidID},
				{Path: "$[2].harness", Code: validate.MissingField},
				{Path: "$[3].session.status", Code: validate.InvalidEnum},
				{Path: "$[4].sessions[0].harness", Code: validate.HarnessNotEnabled},
				// $[5] is not checked against a state that $[3] and $[4]
				// leave undefined.
			}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			resp, body := f.do(t, req{method: "POST", path: path, body: tt.body})
			p := problemOf(t, resp, body, 422)
			var got []validate.Issue
			for _, is := range p.Issues {
				got = append(got, validate.Issue{Path: is.Path, Code: is.Code})
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("issues mismatch (-want +got):\n%s", diff)
			}
			if _, n := h.Sessions(agentbridge.Filter{}); len(n) != 0 {
				t.Errorf("a rejected publish left %d sessions", len(n))
			}
		})
	}
	resp, body := f.do(t, req{method: "POST", path: path, body: `{"op":"upsert","x":1}`})
	if p := problemOf(t, resp, body, 422); len(p.Issues) == 0 || !strings.Contains(p.Issues[0].Message, "an upsert") {
		t.Errorf("issues %+v, want the unknown field named as a field of an upsert operation", p.Issues)
	}
	resp, body = f.do(t, req{method: "POST", path: "/v1/sources/nope/publish", body: `{"op":"bogus"}`})
	problemOf(t, resp, body, 404)
}
