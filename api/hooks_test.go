package api

import (
	"net/http"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/agentbridge/agentbridge"
	"github.com/agentbridge/agentbridge/hub"
)

func fixtureFile(t *testing.T, name string) string {
	t.Helper()
	b, err := os.ReadFile("../hooks/testdata/" + name)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func TestHookRoute(t *testing.T) {
	t.Parallel()
	h := hub.New(hub.Options{})
	if err := h.AddPush(agentbridge.SourceInfo{ID: "claude-code", DisplayName: "Claude Code", EnvironmentVariables: []string{},
		Harnesses: []agentbridge.Harness{{ID: "claude-code", DisplayName: "Claude Code"}}}); err != nil {
		t.Fatal(err)
	}
	if err := h.AddPush(agentbridge.SourceInfo{ID: "example-push", DisplayName: "Example", EnvironmentVariables: []string{},
		Harnesses: []agentbridge.Harness{{ID: "example-agent", DisplayName: "Example"}}}); err != nil {
		t.Fatal(err)
	}
	const sid = "1b8f7e0e-3c2a-4d6b-9a55-0e4f2d7c9a10"
	if err := h.Publish("claude-code", []agentbridge.Op{{Op: agentbridge.OpEvent, SessionID: sid, Harness: "claude-code",
		Event: agentbridge.Event{Kind: agentbridge.KindTurnStarted, TurnID: "t1", OccurredAt: 1}}}); err != nil {
		t.Fatal(err)
	}
	f := newFixture(t, func(s *Server) { s.Hub = h })
	post := func(source, body string, hdr map[string]string) (*http.Response, []byte) {
		return f.do(t, req{method: "POST", path: "/v1/hooks/" + source, body: body, headers: hdr})
	}

	resp, body := post("claude-code", fixtureFile(t, "claude-code/permission-request.json"), nil)
	if resp.StatusCode != http.StatusAccepted {
		t.Fatalf("permission request: %d %s", resp.StatusCode, body)
	}
	e, _ := h.Session("claude-code", sid)
	if e.Snapshot.Status != agentbridge.StatusWaiting || e.Snapshot.WaitingFor != "Approve Bash: git push origin main" {
		t.Fatalf("after the prompt: %+v", e.Snapshot)
	}
	// the answer, run by the agent after the prompt: its own time orders it
	at := strconv.FormatInt(time.Now().UnixMilli(), 10)
	resp, _ = post("claude-code", fixtureFile(t, "claude-code/post-tool-use.json"), map[string]string{HookAtHeader: at})
	if e, _ := h.Session("claude-code", sid); resp.StatusCode != 202 || e.Snapshot.Status != agentbridge.StatusRunning {
		t.Fatalf("after the answer: %d %+v", resp.StatusCode, e.Snapshot)
	}

	for _, tt := range []struct {
		name, source, body string
		status             int
		slug               string
	}{
		{"unknown source", "nope", `{}`, 404, "unknown-source"},
		{"a source without hooks", "example-push", `{}`, 404, "unknown-source"},
		{"not JSON", "claude-code", `{"hook_event_name":`, 400, "invalid-json"},
		{"not an object", "claude-code", `[1]`, 400, "invalid-hook"},
		{"unknown event", "claude-code", fixtureFile(t, "claude-code/unknown-event.json"), 422, "invalid-hook"},
		{"no session", "claude-code", fixtureFile(t, "claude-code/no-session.json"), 422, "invalid-hook"},
		{"oversized", "claude-code", `{"x":"` + strings.Repeat("a", MaxBody) + `"}`, 413, "body-too-large"},
	} {
		resp, body := post(tt.source, tt.body, nil)
		p := problemOf(t, resp, body, tt.status)
		if p.Type != ProblemTypePrefix+tt.slug {
			t.Errorf("%s: problem %s, want %s", tt.name, p.Type, tt.slug)
		}
		if strings.Contains(string(body), "/home/") {
			t.Errorf("%s: the problem leaks a path: %s", tt.name, body)
		}
	}
	var codes []string
	for _, d := range h.Diagnostics() {
		codes = append(codes, d.Diagnostic.Code)
	}
	want := "hook-invalid-json hook-unknown-event hook-invalid-payload hook-too-large"
	if got := strings.Join(codes, " "); got != want {
		t.Errorf("diagnostics %q, want %q", got, want)
	}
	resp, body = f.do(t, req{method: "POST", path: "/v1/hooks/claude-code", body: `{}`, ctype: "text/plain"})
	problemOf(t, resp, body, http.StatusUnsupportedMediaType)
}
