package api

import (
	"bufio"
	"context"
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/agentbridge/agentbridge"
	"github.com/agentbridge/agentbridge/answer"
	"github.com/agentbridge/agentbridge/hub"
)

const answerSID = "1b8f7e0e-3c2a-4d6b-9a55-0e4f2d7c9a10"

// answerFixture is a bridge with a real hub, a Claude Code session and
// answering on (unless off), with its audit log in a temporary directory.
func answerFixture(t *testing.T, on bool, more ...func(*Server)) (*fixture, *hub.Hub, string) {
	t.Helper()
	h := hub.New(hub.Options{})
	if err := h.AddPush(agentbridge.SourceInfo{ID: "claude-code", DisplayName: "Claude Code", EnvironmentVariables: []string{},
		Harnesses: []agentbridge.Harness{{ID: "claude-code", DisplayName: "Claude Code"}}}); err != nil {
		t.Fatal(err)
	}
	if err := h.Publish("claude-code", []agentbridge.Op{{Op: agentbridge.OpEvent, SessionID: answerSID, Harness: "claude-code",
		Event: agentbridge.Event{Kind: agentbridge.KindTurnStarted, TurnID: "t1", OccurredAt: 1}}}); err != nil {
		t.Fatal(err)
	}
	log := filepath.Join(t.TempDir(), "answers.jsonl")
	f := newFixture(t, func(s *Server) {
		s.Hub = h
		if on {
			s.Answers = answer.New()
			s.Audit = &answer.Audit{Path: log}
		}
		for _, f := range more {
			f(s)
		}
	})
	return f, h, log
}

// waitingHook posts a PermissionRequest as `agentbridge hook --answer`
// does and returns once the bridge answered its headers; the verdict
// arrives on the channel ("" when the body ends without one).
func waitingHook(t *testing.T, f *fixture, secs string) (*http.Response, <-chan answer.Verdict, context.CancelFunc) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	r, err := http.NewRequestWithContext(ctx, http.MethodPost, f.ts.URL+"/v1/hooks/claude-code",
		strings.NewReader(fixtureFile(t, "claude-code/permission-request.json")))
	if err != nil {
		t.Fatal(err)
	}
	r.Header.Set("Content-Type", "application/json")
	r.Header.Set("Authorization", "Bearer "+testToken)
	r.Header.Set(WaitHeader, secs)
	resp, err := http.DefaultClient.Do(r)
	if err != nil {
		t.Fatal(err)
	}
	out := make(chan answer.Verdict, 1)
	go func() {
		defer resp.Body.Close()
		var v answer.Verdict
		json.NewDecoder(bufio.NewReader(resp.Body)).Decode(&v)
		out <- v
	}()
	return resp, out, cancel
}

func entryOf(t *testing.T, f *fixture) EntryView {
	t.Helper()
	resp, body := f.do(t, req{path: "/v1/sessions/claude-code/" + answerSID})
	if resp.StatusCode != 200 {
		t.Fatalf("session: %d %s", resp.StatusCode, body)
	}
	var e EntryView
	if err := json.Unmarshal(body, &e); err != nil {
		t.Fatal(err)
	}
	return e
}

func postAnswer(t *testing.T, f *fixture, waitID, body string, hdr map[string]string) (*http.Response, []byte) {
	t.Helper()
	return f.do(t, req{method: "POST", path: "/v1/sessions/claude-code/" + answerSID + "/waits/" + waitID + "/answer", body: body, headers: hdr})
}

func verdict(t *testing.T, ch <-chan answer.Verdict) answer.Verdict {
	t.Helper()
	select {
	case v := <-ch:
		return v
	case <-time.After(10 * time.Second):
		t.Fatal("the waiting hook got no verdict")
		return answer.Verdict{}
	}
}

func TestAnswerAllowAndDeny(t *testing.T) {
	t.Parallel()
	f, _, log := answerFixture(t, true)
	for _, tt := range []struct {
		name, body string
		want       answer.Verdict
	}{
		{"allow", `{"decision":"allow"}`, answer.Verdict{Decision: "allow"}},
		{"deny with a reason", `{"decision":"deny","message":"not on a Friday"}`, answer.Verdict{Decision: "deny", Message: "not on a Friday"}},
		{"deny whose reason holds a secret", `{"decision":"deny","message":"use token=abcdef0123456789abcdef instead"}`,
			answer.Verdict{Decision: "deny", Message: "use token=[redacted] instead"}},
	} {
		resp, got, _ := waitingHook(t, f, "60")
		if resp.StatusCode != 200 {
			t.Fatalf("%s: the waiting hook got %d", tt.name, resp.StatusCode)
		}
		e := entryOf(t, f)
		if e.Snapshot.Status != agentbridge.StatusWaiting || e.Answerable == nil {
			t.Fatalf("%s: the prompt is not answerable: %+v", tt.name, e)
		}
		if a := e.Answerable; a.Tool != "Bash" || a.Request != "git push origin main" || a.Until <= a.Since {
			t.Fatalf("%s: answerable %+v", tt.name, a)
		}
		r, body := postAnswer(t, f, e.Answerable.WaitID, tt.body, nil)
		if r.StatusCode != 200 {
			t.Fatalf("%s: answer %d %s", tt.name, r.StatusCode, body)
		}
		if v := verdict(t, got); v != tt.want {
			t.Errorf("%s: the hook got %+v, want %+v", tt.name, v, tt.want)
		}
		// the same wait again: refused with its state, never answered twice
		r, body = postAnswer(t, f, e.Answerable.WaitID, `{"decision":"allow"}`, nil)
		var c WaitConflict
		if r.StatusCode != http.StatusConflict || json.Unmarshal(body, &c) != nil || c.State != answer.StateAnswered {
			t.Errorf("%s: a second answer: %d %s", tt.name, r.StatusCode, body)
		}
		if e := entryOf(t, f); e.Answerable != nil {
			t.Errorf("%s: still answerable after the answer: %+v", tt.name, e.Answerable)
		}
	}
	b, err := os.ReadFile(log)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	if len(lines) != 6 {
		t.Fatalf("the audit log has %d lines, want 6 (3 answers, 3 conflicts):\n%s", len(lines), b)
	}
	var first, secret answer.Record
	json.Unmarshal([]byte(lines[0]), &first)
	json.Unmarshal([]byte(lines[4]), &secret)
	if first.Decision != "allow" || first.Result != answer.ResultAccepted || first.Client.Auth != "token" || first.Tool != "Bash" ||
		first.Request != "git push origin main" || first.SessionID != answerSID || first.At == 0 {
		t.Errorf("audit record %+v", first)
	}
	if strings.Contains(string(b), "abcdef0123456789abcdef") || secret.Message != "use token=[redacted] instead" {
		t.Errorf("the audit log keeps a secret: %s", lines[4])
	}
}

func TestAnswerAfterTheTerminalAnswered(t *testing.T) {
	t.Parallel()
	f, _, log := answerFixture(t, true)
	_, got, _ := waitingHook(t, f, "60")
	e := entryOf(t, f)
	if e.Answerable == nil {
		t.Fatal("not answerable")
	}
	// the user answered at the terminal: the tool ran, its PostToolUse came
	resp, _ := f.do(t, req{method: "POST", path: "/v1/hooks/claude-code", body: fixtureFile(t, "claude-code/post-tool-use.json")})
	if resp.StatusCode != 202 {
		t.Fatalf("post-tool-use: %d", resp.StatusCode)
	}
	if v := verdict(t, got); v.Decision != answer.None {
		t.Errorf("the hook got %+v, want no verdict", v)
	}
	r, body := postAnswer(t, f, e.Answerable.WaitID, `{"decision":"allow"}`, nil)
	var c WaitConflict
	if r.StatusCode != http.StatusConflict || json.Unmarshal(body, &c) != nil || c.State != answer.StateAtTerminal {
		t.Fatalf("an answer after the terminal's: %d %s", r.StatusCode, body)
	}
	if b, _ := os.ReadFile(log); !strings.Contains(string(b), `"result":"conflict","state":"terminal"`) {
		t.Errorf("the audit log misses the refused answer: %s", b)
	}
}

func TestAnswerTurnEndSettles(t *testing.T) {
	t.Parallel()
	f, _, _ := answerFixture(t, true)
	_, got, _ := waitingHook(t, f, "60")
	// a PreToolUse of another call or a notification settles nothing
	f.do(t, req{method: "POST", path: "/v1/hooks/claude-code", body: fixtureFile(t, "claude-code/notification-permission.json")})
	if e := entryOf(t, f); e.Answerable == nil {
		t.Fatal("a notification closed the wait")
	}
	f.do(t, req{method: "POST", path: "/v1/hooks/claude-code", body: fixtureFile(t, "claude-code/stop.json")})
	if v := verdict(t, got); v.Decision != answer.None {
		t.Errorf("the hook got %+v after the turn ended", v)
	}
}

func TestAnswerRefusals(t *testing.T) {
	t.Parallel()
	f, _, _ := answerFixture(t, true)
	_, _, _ = waitingHook(t, f, "60")
	id := entryOf(t, f).Answerable.WaitID
	for _, tt := range []struct {
		name, wait, body string
		hdr              map[string]string
		status           int
		slug             string
	}{
		{"another wait than the one open", "w0000", `{"decision":"allow"}`, nil, 409, "wait-closed"},
		{"no decision", id, `{}`, nil, 422, "invalid-request"},
		{"another decision", id, `{"decision":"maybe"}`, nil, 422, "invalid-request"},
		{"an unknown field", id, `{"decision":"allow","always":true}`, nil, 422, "invalid-request"},
		{"a reason too long", id, `{"decision":"deny","message":"` + strings.Repeat("x", answer.MaxMessage+1) + `"}`, nil, 422, "invalid-request"},
		{"another origin", id, `{"decision":"allow"}`, map[string]string{"Origin": "http://evil.example"}, 403, "forbidden-origin"},
		{"cross-site fetch", id, `{"decision":"allow"}`, map[string]string{"Sec-Fetch-Site": "cross-site"}, 403, "forbidden-origin"},
	} {
		r, body := postAnswer(t, f, tt.wait, tt.body, tt.hdr)
		if p := problemOf(t, r, body, tt.status); p.Type != ProblemTypePrefix+tt.slug {
			t.Errorf("%s: %s, want %s", tt.name, p.Type, tt.slug)
		}
	}
	r, body := f.do(t, req{method: "POST", path: "/v1/sessions/claude-code/" + answerSID + "/waits/" + id + "/answer", body: `{"decision":"allow"}`, noToken: true})
	problemOf(t, r, body, http.StatusUnauthorized)
	r, body = f.do(t, req{method: "POST", path: "/v1/sessions/claude-code/" + answerSID + "/waits/" + id + "/answer?host=lab", body: `{"decision":"allow"}`})
	if p := problemOf(t, r, body, 403); p.Type != ProblemTypePrefix+"remote-wait" {
		t.Errorf("a remote's wait: %s", p.Type)
	}
	if entryOf(t, f).Answerable == nil {
		t.Error("a refused answer closed the wait")
	}
}

func TestAnswerRateLimit(t *testing.T) {
	t.Parallel()
	f, _, _ := answerFixture(t, true)
	limited := false
	for range AnswerBurst + 5 {
		r, _ := postAnswer(t, f, "w0000", `{"decision":"allow"}`, nil)
		if r.StatusCode == http.StatusTooManyRequests {
			limited = r.Header.Get("Retry-After") != ""
			break
		}
	}
	if !limited {
		t.Error("a burst of answers was never limited")
	}
}

func TestAnswerUnknownWait(t *testing.T) {
	t.Parallel()
	f, _, _ := answerFixture(t, true)
	r, body := postAnswer(t, f, "w0000", `{"decision":"allow"}`, nil)
	if p := problemOf(t, r, body, 404); p.Type != ProblemTypePrefix+"unknown-wait" {
		t.Errorf("a wait never opened: %s", p.Type)
	}
}

func TestAnsweringOff(t *testing.T) {
	t.Parallel()
	f, _, _ := answerFixture(t, false)
	resp, _, _ := waitingHook(t, f, "60")
	if resp.StatusCode != http.StatusAccepted {
		t.Errorf("a hook asking to wait with answering off: %d, want 202 at once", resp.StatusCode)
	}
	if e := entryOf(t, f); e.Answerable != nil || e.Snapshot.Status != agentbridge.StatusWaiting {
		t.Errorf("entry %+v", e)
	}
	r, body := postAnswer(t, f, "w0000", `{"decision":"allow"}`, nil)
	if p := problemOf(t, r, body, 403); p.Type != ProblemTypePrefix+"answering-off" || !strings.Contains(p.Detail, "hooks.answer") {
		t.Errorf("answer with answering off: %+v", p)
	}
}

func TestAnswerWaitEnds(t *testing.T) {
	t.Parallel()
	f, _, _ := answerFixture(t, true)
	// the bound passes: no verdict
	_, got, _ := waitingHook(t, f, "1")
	if v := verdict(t, got); v.Decision != answer.None {
		t.Errorf("after its bound: %+v", v)
	}
	// the bridge stops: the body ends without a verdict
	_, got, _ = waitingHook(t, f, "60")
	f.srv.Answers.Close()
	if v := verdict(t, got); v.Decision != answer.None {
		t.Errorf("the bridge stopping: %+v", v)
	}
}

// TestAnswerAfterTheSessionEnded: the agent's process is gone while its
// hook still holds the wait: the entry is no longer answerable, an answer
// gets 409 gone, and the hook is told no verdict.
func TestAnswerAfterTheSessionEnded(t *testing.T) {
	t.Parallel()
	f, h, _ := answerFixture(t, true)
	_, got, _ := waitingHook(t, f, "60")
	id := entryOf(t, f).Answerable.WaitID
	if err := h.Publish("claude-code", []agentbridge.Op{{Op: agentbridge.OpEvent, SessionID: answerSID, Harness: "claude-code",
		Event: agentbridge.Event{Kind: agentbridge.KindAgentExited, OccurredAt: 2}}}); err != nil {
		t.Fatal(err)
	}
	if e := entryOf(t, f); e.Ended == nil || e.Answerable != nil {
		t.Errorf("an ended session's entry: ended %+v, answerable %+v", e.Ended, e.Answerable)
	}
	r, body := postAnswer(t, f, id, `{"decision":"allow"}`, nil)
	var c WaitConflict
	if r.StatusCode != http.StatusConflict || json.Unmarshal(body, &c) != nil || c.State != answer.StateGone {
		t.Errorf("an answer after the session ended: %d %s", r.StatusCode, body)
	}
	if v := verdict(t, got); v.Decision != answer.None {
		t.Errorf("the hook of an ended session got %+v", v)
	}
}

// TestAnswerIsNotedInTheHistory: an answer through the bridge is told to
// the history (a wait it shows as answered from the bridge); a refused
// second answer is not.
func TestAnswerIsNotedInTheHistory(t *testing.T) {
	t.Parallel()
	hist := &fakeHistory{}
	f, _, _ := answerFixture(t, true, func(s *Server) { s.History = hist })
	resp, got, _ := waitingHook(t, f, "60")
	if resp.StatusCode != 200 {
		t.Fatalf("the waiting hook got %d", resp.StatusCode)
	}
	e := entryOf(t, f)
	if e.Answerable == nil {
		t.Fatalf("the prompt is not answerable: %+v", e)
	}
	if r, body := postAnswer(t, f, e.Answerable.WaitID, `{"decision":"allow"}`, nil); r.StatusCode != 200 {
		t.Fatalf("answer %d %s", r.StatusCode, body)
	}
	verdict(t, got)
	postAnswer(t, f, e.Answerable.WaitID, `{"decision":"allow"}`, nil) // refused: already answered
	hist.mu.Lock()
	defer hist.mu.Unlock()
	if want := []string{"/claude-code/" + answerSID}; !slices.Equal(hist.answered, want) {
		t.Errorf("the history was told of answers %q, want %q", hist.answered, want)
	}
}
