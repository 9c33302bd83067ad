package api

import (
	"net/http"
	"os"
	"strings"
	"testing"

	"github.com/agentbridge/agentbridge/answer"
	"github.com/agentbridge/agentbridge/hub"
)

const form = "application/x-www-form-urlencoded"

// linkOf is the answer link of the fixture's session's open wait.
func linkOf(t *testing.T, f *fixture) string {
	t.Helper()
	l := f.srv.Answers.Link("claude-code", answerSID)
	if l == "" {
		t.Fatal("no open wait")
	}
	return "/answer/" + l
}

// TestAnswerLink: a webhook's answer link shows the prompt without
// answering it (a preview fetches it), its form answers it once, without
// the token, and the answer is audited as the link's.
func TestAnswerLink(t *testing.T) {
	t.Parallel()
	f, _, log := answerFixture(t, true, func(s *Server) { s.AnswerLinks = true })
	_, got, _ := waitingHook(t, f, "60")
	link := linkOf(t, f)

	r, body := f.do(t, req{path: link, noToken: true})
	if r.StatusCode != 200 || !strings.Contains(string(body), "<form method=\"post\">") || !strings.Contains(string(body), "Bash") {
		t.Fatalf("the link's page: %d %s", r.StatusCode, body)
	}
	if csp := r.Header.Get("Content-Security-Policy"); !strings.Contains(csp, "default-src 'none'") || !strings.Contains(csp, "frame-ancestors 'none'") ||
		r.Header.Get("Cache-Control") != "no-store" || r.Header.Get("Referrer-Policy") != "no-referrer" {
		t.Errorf("the page's headers: %v", r.Header)
	}
	select {
	case v := <-got:
		t.Fatalf("opening the link answered: %+v", v)
	default:
	}
	if entryOf(t, f).Answerable == nil {
		t.Fatal("opening the link closed the wait")
	}

	r, body = f.do(t, req{method: "POST", path: link, body: "decision=deny&message=not+from+the+phone", ctype: form, noToken: true})
	if r.StatusCode != 200 || !strings.Contains(string(body), "Denied") {
		t.Fatalf("the form: %d %s", r.StatusCode, body)
	}
	if v := verdict(t, got); v != (answer.Verdict{Decision: answer.Deny, Message: "not from the phone"}) {
		t.Errorf("the hook got %+v", v)
	}
	r, _ = f.do(t, req{method: "POST", path: link, body: "decision=allow", ctype: form, noToken: true})
	if r.StatusCode != http.StatusGone {
		t.Errorf("a second answer through the link: %d, want 410", r.StatusCode)
	}
	if r, _ := f.do(t, req{path: link, noToken: true}); r.StatusCode != http.StatusGone {
		t.Errorf("the link of an answered prompt: %d, want 410", r.StatusCode)
	}
	b, _ := os.ReadFile(log)
	if !strings.Contains(string(b), `"auth":"link"`) || !strings.Contains(string(b), `"result":"accepted"`) || strings.Contains(string(b), strings.TrimPrefix(link, "/answer/")) {
		t.Errorf("the audit log: %s", b)
	}
}

// TestAnswerLinkRefusals: what an answer link refuses, and that a refusal
// leaves the prompt open.
func TestAnswerLinkRefusals(t *testing.T) {
	t.Parallel()
	f, _, _ := answerFixture(t, true, func(s *Server) { s.AnswerLinks = true })
	_, _, _ = waitingHook(t, f, "60")
	link := linkOf(t, f)
	for _, tt := range []struct {
		name, path, body, ctype string
		hdr                     map[string]string
		status                  int
	}{
		{"another secret", "/answer/" + strings.Repeat("0", 64), "decision=allow", form, nil, http.StatusGone},
		{"no decision", link, "message=x", form, nil, http.StatusUnprocessableEntity},
		{"another decision", link, "decision=always", form, nil, http.StatusUnprocessableEntity},
		{"a reason too long", link, "decision=deny&message=" + strings.Repeat("x", answer.MaxMessage+1), form, nil, http.StatusUnprocessableEntity},
		{"JSON, not the form", link, `{"decision":"allow"}`, "application/json", nil, http.StatusUnsupportedMediaType},
		{"another origin", link, "decision=allow", form, map[string]string{"Origin": "http://evil.example"}, http.StatusForbidden},
		{"cross-site", link, "decision=allow", form, map[string]string{"Sec-Fetch-Site": "cross-site"}, http.StatusForbidden},
		{"another Host", link, "decision=allow", form, map[string]string{"Host": "evil.example"}, http.StatusForbidden},
	} {
		q := req{method: "POST", path: tt.path, body: tt.body, ctype: tt.ctype, noToken: true, headers: tt.hdr}
		if h := tt.hdr["Host"]; h != "" {
			q.host, q.headers = h, nil
		}
		if r, body := f.do(t, q); r.StatusCode != tt.status {
			t.Errorf("%s: %d %s, want %d", tt.name, r.StatusCode, body, tt.status)
		}
	}
	if entryOf(t, f).Answerable == nil {
		t.Error("a refused answer closed the wait")
	}
	// without a webhook that carries links, or with answering off, the
	// routes are not there
	for _, g := range []*fixture{must(answerFixture(t, true)), must(answerFixture(t, false, func(s *Server) { s.AnswerLinks = true }))} {
		if r, _ := g.do(t, req{path: link, noToken: true}); r.StatusCode != http.StatusNotFound {
			t.Errorf("answer links off: %d, want 404", r.StatusCode)
		}
	}
}

func must(f *fixture, _ *hub.Hub, _ string) *fixture { return f }
