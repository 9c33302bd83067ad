package api_test

import (
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/agentbridge/agentbridge"
	"github.com/agentbridge/agentbridge/api"
	"github.com/agentbridge/agentbridge/hub"
)

// FuzzPublishEndpoint sends any body to POST /v1/sources/{source}/publish
// of a real hub: the answer is 200 or a 4xx problem, never a 500 or a
// panic; a refused body changes nothing (all or nothing); an accepted one
// reports the new revision, and GET /v1/sessions stays valid JSON.
func FuzzPublishEndpoint(f *testing.F) {
	f.Fuzz(func(t *testing.T, body []byte) {
		h := hub.New(hub.Options{Logger: slog.New(slog.DiscardHandler)})
		if err := h.AddPush(agentbridge.SourceInfo{ID: "example-push", DisplayName: "Example", EnvironmentVariables: []string{},
			Harnesses: []agentbridge.Harness{{ID: "example-agent", DisplayName: "Example"}}}); err != nil {
			t.Fatal(err)
		}
		// A session exists first, so remove, event and upsert have something to act on.
		if err := h.Publish("example-push", []agentbridge.Op{{Op: agentbridge.OpUpsert, Session: agentbridge.Snapshot{ID: "s-1", Harness: "example-agent", Status: agentbridge.StatusRunning}}}); err != nil {
			t.Fatal(err)
		}
		const addr = "127.0.0.1:7391"
		s := &api.Server{Hub: h, Addr: addr, Token: accessToken, OpenAPI: []byte("openapi: 3.0.3\n"),
			Events: api.EventsFunc(func(http.ResponseWriter, *http.Request, agentbridge.Filter) {})}
		handler := s.Handler()
		rev0, before := h.Sessions(agentbridge.Filter{})
		diags0 := len(h.Diagnostics())

		req := httptest.NewRequest("POST", "http://"+addr+"/v1/sources/example-push/publish", strings.NewReader(string(body)))
		req.Header.Set("Authorization", "Bearer "+accessToken)
		req.Header.Set("Content-Type", "application/json")
		rec := httptest.NewRecorder()
		handler.ServeHTTP(rec, req)
		resp := rec.Result()
		out, _ := io.ReadAll(resp.Body)

		switch {
		case resp.StatusCode == 200:
			var r struct {
				Revision uint64 `json:"revision"`
			}
			if err := json.Unmarshal(out, &r); err != nil || r.Revision < rev0 {
				t.Fatalf("200 with body %s: want the new revision (was %d)", out, rev0)
			}
		case resp.StatusCode >= 400 && resp.StatusCode < 500:
			if ct := resp.Header.Get("Content-Type"); ct != "application/problem+json" {
				t.Fatalf("%d with Content-Type %q, want a problem", resp.StatusCode, ct)
			}
			var p api.Problem
			if err := json.Unmarshal(out, &p); err != nil || p.Status != resp.StatusCode || p.Detail == "" {
				t.Fatalf("%d with problem %s", resp.StatusCode, out)
			}
			rev1, after := h.Sessions(agentbridge.Filter{})
			a, _ := json.Marshal(after)
			b, _ := json.Marshal(before)
			if rev1 != rev0 || string(a) != string(b) || len(h.Diagnostics()) != diags0 {
				t.Fatalf("refused body %q (%d) changed the hub: revision %d → %d", body, resp.StatusCode, rev0, rev1)
			}
		default:
			t.Fatalf("body %q: status %d (%s), want 200 or a 4xx", body, resp.StatusCode, out)
		}
		_, entries := h.Sessions(agentbridge.Filter{})
		if _, err := json.Marshal(entries); err != nil {
			t.Fatalf("sessions after %q do not encode: %v", body, err)
		}
	})
}
