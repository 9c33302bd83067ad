package main

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"

	"github.com/agentbridge/agentbridge"
	"github.com/agentbridge/agentbridge/answer"
	"github.com/agentbridge/agentbridge/internal/bridgetest"
	"github.com/agentbridge/agentbridge/internal/dbustest"
	"github.com/agentbridge/agentbridge/internal/testlog"
)

// notifyRig starts a session bus with a fake notification service and a
// bridge, and returns a function that publishes an event of a session.
func notifyRig(t *testing.T) (*dbustest.Notifications, *bridgetest.Bridge, string, func(string, agentbridge.Event)) {
	addr := dbustest.Bus(t)
	fake := dbustest.Serve(t, addr)
	b := bridgetest.Start(t, bridgetest.Options{})
	return fake, b, addr, func(id string, e agentbridge.Event) {
		t.Helper()
		b.Publish(t, "test-push", agentbridge.Op{Op: agentbridge.OpEvent, SessionID: id, Harness: "test-agent", Event: e})
	}
}

// runNotify runs `agentbridge notify` against b and the session bus at
// addr until the test ends; it returns its stderr and a channel that
// gets its error should it end before.
func runNotify(t *testing.T, b *bridgetest.Bridge, addr string) (*testlog.Buffer, <-chan error) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	stderr := &testlog.Buffer{}
	done := make(chan error, 1)
	ended := make(chan error, 1)
	go func() {
		err := runArgs(ctx, "notify", []string{"--addr", b.Addr, "--bus", addr}, []string{"AGENTBRIDGE_TOKEN=" + b.Token, "HOME=" + t.TempDir()},
			strings.NewReader(""), &bytes.Buffer{}, stderr, watchBackoff)
		ended <- err
		done <- err
	}()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("notify: %v (stderr %s)", err, stderr.String())
		}
	})
	return stderr, ended
}

// TestNotifyRaisesOneDesktopNotificationPerWait runs `agentbridge notify`
// against a bridge and a private session bus with a fake notification
// service: a session already waiting when it connects is not notified; a
// session that starts waiting is, once, with the agent, the title and the
// reason, however long the wait goes on; a failed turn is too.
func TestNotifyRaisesOneDesktopNotificationPerWait(t *testing.T) {
	fake, b, addr, ev := notifyRig(t)
	ev("old", agentbridge.Event{Kind: agentbridge.KindSessionStarted, Title: "Already waiting"})
	ev("old", agentbridge.Event{Kind: agentbridge.KindWaitStarted, WaitID: "w0", State: agentbridge.StatusWaiting, Reason: "approve Read"})
	ev("s1", agentbridge.Event{Kind: agentbridge.KindSessionStarted, Title: "Fix the flaky tests"})
	ev("s1", agentbridge.Event{Kind: agentbridge.KindTurnStarted, TurnID: "t1"})

	runNotify(t, b, addr)
	bridgetest.AwaitSubscribers(t, b.Registry, 1) // connected, with its baseline
	if n := fake.Count(); n != 0 {
		t.Fatalf("%d notifications for what the stream showed at connect, want none", n)
	}

	ev("s1", agentbridge.Event{Kind: agentbridge.KindWaitStarted, WaitID: "w1", State: agentbridge.StatusWaiting, Reason: "approve Bash: git push"})
	s := fake.Next(t)
	if s.Summary != "Test Agent is waiting for you" || s.Body != "Fix the flaky tests\napprove Bash: git push" || s.App != "agentbridge" {
		t.Errorf("notification %+v, want the agent, the title and the reason", s)
	}
	ev("s1", agentbridge.Event{Kind: agentbridge.KindToolStarted, ToolID: "x", Name: "Bash"}) // the same wait goes on
	ev("s1", agentbridge.Event{Kind: agentbridge.KindWaitFinished, WaitID: "w1"})
	ev("s1", agentbridge.Event{Kind: agentbridge.KindAgentDone, Outcome: agentbridge.OutcomeError})
	s = fake.Next(t)
	if s.Summary != "Test Agent failed" || s.Replaces == 0 {
		t.Errorf("notification %+v, want the failed turn, replacing the session's last", s)
	}
	// A later wait of another session is notified next: nothing came
	// between (the stream and the notifications keep their order).
	ev("s2", agentbridge.Event{Kind: agentbridge.KindSessionStarted, Title: "Marker"})
	ev("s2", agentbridge.Event{Kind: agentbridge.KindWaitStarted, WaitID: "w2", State: agentbridge.StatusWaiting, Reason: "approve Edit"})
	if s = fake.Next(t); s.Body != "Marker\napprove Edit" {
		t.Errorf("notification %+v after the failed turn, want the marker session's wait", s)
	}
	if n := fake.Count(); n != 3 {
		t.Errorf("%d notifications, want 3 (one wait, one failed turn, the marker's wait)", n)
	}
}

// TestNotifyWithoutService says what is missing when nothing on the
// session bus shows notifications.
func TestNotifyWithoutService(t *testing.T) {
	addr := dbustest.Bus(t)
	b := bridgetest.Start(t, bridgetest.Options{})
	var stderr bytes.Buffer
	a := &app{env: []string{"AGENTBRIDGE_TOKEN=" + b.Token, "HOME=" + t.TempDir()}, stdin: strings.NewReader(""), stdout: &bytes.Buffer{}, stderr: &stderr, backoff: watchBackoff}
	code := a.exitCode(a.execute(context.Background(), []string{"notify", "--addr", b.Addr, "--bus", addr}))
	if code != 1 || !strings.Contains(stderr.String(), "no desktop notification service (org.freedesktop.Notifications)") {
		t.Errorf("exit %d, stderr %q: want 1 and a message naming the missing service", code, stderr.String())
	}
}

// A failed Notify (the notification server restarting) does not end
// `agentbridge notify`: the notification is shown when a later try, after
// a backoff, succeeds.
func TestNotifySurvivesAFailedNotify(t *testing.T) {
	fake, b, addr, ev := notifyRig(t)
	ev("s1", agentbridge.Event{Kind: agentbridge.KindSessionStarted, Title: "Fix the flaky tests"})
	stderr, done := runNotify(t, b, addr)
	bridgetest.AwaitSubscribers(t, b.Registry, 1) // connected, with its baseline
	fake.FailNext(2)
	ev("s1", agentbridge.Event{Kind: agentbridge.KindWaitStarted, WaitID: "w1", State: agentbridge.StatusWaiting, Reason: "approve Bash"})
	s := fake.Next(t) // the third try, after 1 s and 2 s
	if s.Summary != "Test Agent is waiting for you" {
		t.Errorf("notification %+v", s)
	}
	select {
	case err := <-done:
		t.Fatalf("notify ended: %v", err)
	default:
	}
	if msg := stderr.String(); strings.Count(msg, "trying again") != 1 || !strings.Contains(msg, "restarting") {
		t.Errorf("stderr %q, want the failure told once", msg)
	}
}

// TestNotifyAnswers: a waiting session whose prompt can be answered gets
// Approve and Deny on its notification (on a private session bus), and a
// click answers the prompt: the waiting hook gets the decision. A
// notification of a prompt that cannot be answered offers none.
func TestNotifyAnswers(t *testing.T) {
	addr := dbustest.Bus(t)
	fake := dbustest.Serve(t, addr)
	b := bridgetest.Start(t, bridgetest.Options{Answer: true, Push: []agentbridge.SourceInfo{{ID: "claude-code", DisplayName: "Claude Code",
		EnvironmentVariables: []string{}, Harnesses: []agentbridge.Harness{{ID: "claude-code", DisplayName: "Claude Code"}}}}})
	for _, id := range []string{"s1", "s2"} {
		b.Publish(t, "claude-code", agentbridge.Op{Op: agentbridge.OpEvent, SessionID: id, Harness: "claude-code", Event: agentbridge.Event{Kind: agentbridge.KindTurnStarted, TurnID: "t1"}})
	}
	stderr, _ := runNotify(t, b, addr)
	bridgetest.AwaitSubscribers(t, b.Registry, 1) // connected, with its baseline

	hook := func(id string, wait bool) <-chan answer.Verdict { return waitingHook(t, b, id, "make deploy", wait) }

	hook("s2", false) // waiting, but its hook waits for no answer
	if s := fake.Next(t); len(s.Actions) != 0 {
		t.Errorf("a prompt that cannot be answered offers %q", s.Actions)
	}
	got := hook("s1", true)
	s := fake.Next(t)
	if strings.Join(s.Actions, ",") != "allow,Approve,deny,Deny" || s.Body != "Approve Bash: make deploy" {
		t.Fatalf("notification %+v", s)
	}
	// One click, at once: the service has shown the notification before
	// notify has its id back, and the click still answers.
	fake.Invoke(t, s.ID, "allow")
	select {
	case v := <-got:
		if v.Decision != "allow" {
			t.Errorf("the hook got %+v", v)
		}
	case <-time.After(time.Minute):
		t.Fatalf("the click answered nothing; notify said %s", stderr.String())
	}
	waitFor(t, func() bool { return strings.Contains(stderr.String(), "allowed Bash (claude-code/s1)") })
	if strings.Contains(stderr.String(), "make deploy") {
		t.Errorf("notify logged what the agent asked to run: %s", stderr.String())
	}
}
