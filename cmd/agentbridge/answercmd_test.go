package main

import (
	"bytes"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/agentbridge/agentbridge"
	"github.com/agentbridge/agentbridge/answer"
	"github.com/agentbridge/agentbridge/api"
	"github.com/agentbridge/agentbridge/internal/bridgetest"
)

// TestAnswerCommand: `agentbridge answer` answers the prompt a session's
// hook waits on, named by SOURCE/ID, an id or its start; a second answer
// is refused with the wait's state; a session with nothing to answer, an
// ambiguous name and a bad decision are errors that say so.
func TestAnswerCommand(t *testing.T) {
	b := bridgetest.Start(t, bridgetest.Options{Answer: true, Push: []agentbridge.SourceInfo{{ID: "claude-code", DisplayName: "Claude Code",
		EnvironmentVariables: []string{}, Harnesses: []agentbridge.Harness{{ID: "claude-code", DisplayName: "Claude Code"}}}}})
	for _, id := range []string{"abc-1", "abc-2"} {
		b.Publish(t, "claude-code", agentbridge.Op{Op: agentbridge.OpEvent, SessionID: id, Harness: "claude-code", Event: agentbridge.Event{Kind: agentbridge.KindTurnStarted, TurnID: "t1"}})
	}
	hook := func(id, command string) <-chan answer.Verdict { return waitingHook(t, b, id, command, true) }
	run := func(args ...string) (string, string, error) {
		var out, errb bytes.Buffer
		err := runArgs(t.Context(), "answer", append([]string{"--addr", b.Addr}, args...), []string{"AGENTBRIDGE_TOKEN=" + b.Token, "HOME=" + t.TempDir()},
			strings.NewReader(""), &out, &errb, watchBackoff)
		return out.String(), errb.String(), err
	}
	verdict := func(ch <-chan answer.Verdict) answer.Verdict {
		t.Helper()
		select {
		case v := <-ch:
			return v
		case <-time.After(10 * time.Second):
			t.Fatal("no verdict")
			return answer.Verdict{}
		}
	}

	if _, _, err := run("abc-1", "allow"); err == nil || !strings.Contains(err.Error(), "no prompt to answer") {
		t.Errorf("nothing to answer: %v", err)
	}
	got1 := hook("abc-1", "make deploy")
	got2 := hook("abc-2", "make test")
	if _, _, err := run("abc", "allow"); err == nil || !strings.Contains(err.Error(), "more than one session") {
		t.Errorf("an ambiguous name: %v", err)
	}
	out, _, err := run("claude-code/abc-1", "deny", "--message", "not on a Friday")
	if err != nil || !strings.Contains(out, "denied Bash: make deploy (claude-code/abc-1)") {
		t.Fatalf("deny: %v %q", err, out)
	}
	if v := verdict(got1); v != (answer.Verdict{Decision: "deny", Message: "not on a Friday"}) {
		t.Errorf("the hook got %+v", v)
	}
	if out, _, err := run("abc-2", "allow"); err != nil || !strings.HasPrefix(out, "allowed Bash: make test") {
		t.Fatalf("allow: %v %q", err, out)
	}
	if v := verdict(got2); v.Decision != "allow" {
		t.Errorf("the hook got %+v", v)
	}
	if _, _, err := run("abc-2", "allow"); err == nil || !strings.Contains(err.Error(), "no prompt to answer") {
		t.Errorf("answered already: %v", err)
	}
	for _, args := range [][]string{{"abc-2", "maybe"}, {"abc-2", "allow", "--message", "x"}, {"abc-2"}} {
		if _, _, err := run(args...); err == nil {
			t.Errorf("%q was taken", args)
		}
	}
}

// waitingHook posts a Claude Code PermissionRequest for session id to b,
// as `agentbridge hook --answer` does when wait is set; the verdict
// arrives on the channel (a zero one when none came).
func waitingHook(t *testing.T, b *bridgetest.Bridge, id, command string, wait bool) <-chan answer.Verdict {
	t.Helper()
	body, _ := json.Marshal(map[string]any{"hook_event_name": "PermissionRequest", "session_id": id, "tool_name": "Bash", "tool_input": map[string]string{"command": command}})
	req, _ := http.NewRequest(http.MethodPost, b.URL+"/v1/hooks/claude-code", bytes.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+b.Token)
	req.Header.Set("Content-Type", "application/json")
	if wait {
		req.Header.Set(api.WaitHeader, "60")
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	out := make(chan answer.Verdict, 1)
	go func() {
		defer res.Body.Close()
		var v answer.Verdict
		json.NewDecoder(res.Body).Decode(&v)
		out <- v
	}()
	return out
}
