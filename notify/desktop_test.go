package notify

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/agentbridge/agentbridge/internal/dbustest"
)

func TestDesktopWithoutService(t *testing.T) {
	addr := dbustest.Bus(t)
	_, err := DialDesktop(addr)
	if !errors.Is(err, ErrNoService) {
		t.Fatalf("DialDesktop on a bus without a notification service: %v, want ErrNoService", err)
	}
	if !strings.Contains(err.Error(), "org.freedesktop.Notifications") {
		t.Errorf("the message %q does not say what is missing", err)
	}
}

func TestDesktopNotify(t *testing.T) {
	d, f := dialFake(t)
	d.Agent = func(h string) string { return map[string]string{"claude-code": "Claude Code"}[h] }
	tr := Transition{Source: "claude-code", SessionID: "s1", Harness: "claude-code", Status: "waiting", Title: "Fix the tests", WaitingFor: "approve Bash"}
	if err := d.Notify(tr); err != nil {
		t.Fatal(err)
	}
	s := f.Next(t)
	if s.App != "agentbridge" || s.Summary != "Claude Code is waiting for you" || s.Body != "Fix the tests\napprove Bash" || s.Urgency != 2 || s.Replaces != 0 {
		t.Errorf("shown %+v", s)
	}
	tr.Status, tr.WaitingFor = "done", ""
	if err := d.Notify(tr); err != nil {
		t.Fatal(err)
	}
	if s := f.Next(t); s.Replaces != 1 || s.Summary != "Claude Code is done" || s.Urgency != 1 {
		t.Errorf("the session's next notification %+v should replace its first (id 1)", s)
	}
}

// The body is markup on servers that take it: an agent's text is escaped
// (&, <, >), so a title with a link shows as text, not as a link.
func TestDesktopBodyIsEscaped(t *testing.T) {
	d, f := dialFake(t)
	tr := Transition{Source: "codex", SessionID: "s1", Harness: "codex", Status: "waiting",
		Title: `<a href="https://evil.example">update</a> & <b>run</b>`, WaitingFor: "approve x > y"}
	if err := d.Notify(tr); err != nil {
		t.Fatal(err)
	}
	want := `&lt;a href="https://evil.example"&gt;update&lt;/a&gt; &amp; &lt;b&gt;run&lt;/b&gt;` + "\napprove x &gt; y"
	if s := f.Next(t); s.Body != want {
		t.Errorf("body %q, want %q", s.Body, want)
	}
}

// dialFake connects a Desktop to a fake notification service on a bus of
// the test's own.
func dialFake(t *testing.T) (*Desktop, *dbustest.Notifications) {
	t.Helper()
	addr := dbustest.Bus(t)
	f := dbustest.Serve(t, addr)
	d, err := DialDesktop(addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { d.Close() })
	return d, f
}

// A notification with actions (an answerable prompt's Approve and Deny):
// the service shows them, and a click on one arrives on Invoked with the
// session it was for; a click on another application's notification, or
// on one that no longer offers actions, does not.
func TestDesktopActions(t *testing.T) {
	d, f := dialFake(t)
	d.Actions = func(tr Transition) []string {
		if tr.Status != EventWaiting {
			return nil
		}
		return []string{"allow", "Approve", "deny", "Deny"}
	}
	clicks, err := d.Invoked()
	if err != nil {
		t.Fatal(err)
	}
	tr := Transition{Source: "claude-code", SessionID: "s1", Harness: "claude-code", Status: "waiting", WaitingFor: "Approve Bash: make deploy"}
	if err := d.Notify(tr); err != nil {
		t.Fatal(err)
	}
	s := f.Next(t)
	if strings.Join(s.Actions, ",") != "allow,Approve,deny,Deny" {
		t.Fatalf("actions %q", s.Actions)
	}
	f.Invoke(t, s.ID+100, "allow") // not ours
	f.Invoke(t, s.ID, "deny")
	select {
	case a := <-clicks:
		if a != (Action{Source: "claude-code", SessionID: "s1", Key: "deny"}) {
			t.Errorf("click %+v", a)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the click never arrived")
	}
	// the session goes on: its notification is replaced by one without actions
	tr.Status = EventDone
	if err := d.Notify(tr); err != nil {
		t.Fatal(err)
	}
	if s2 := f.Next(t); len(s2.Actions) != 0 || s2.ID != s.ID {
		t.Fatalf("the replacing notification %+v", s2)
	}
	f.Invoke(t, s.ID, "allow")
	tr.SessionID, tr.Status = "s2", EventWaiting
	if err := d.Notify(tr); err != nil {
		t.Fatal(err)
	}
	s3 := f.Next(t)
	f.Invoke(t, s3.ID, "allow")
	select {
	case a := <-clicks:
		if a.SessionID != "s2" {
			t.Errorf("a click on a notification without actions arrived: %+v", a)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the click never arrived")
	}
	d.Close()
	for range clicks { // closed with the connection
	}
}
