package notify

import (
	"bufio"
	"errors"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/godbus/dbus/v5"
)

// privateBus starts a session bus of its own for the test and returns its
// address.
func privateBus(t *testing.T) string {
	t.Helper()
	bin, err := exec.LookPath("dbus-daemon")
	if err != nil {
		t.Skip("dbus-daemon is not installed (apt package dbus)")
	}
	cmd := exec.Command(bin, "--session", "--nofork", "--print-address")
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil {
		t.Fatalf("dbus-daemon printed no address: %v", err)
	}
	return strings.TrimSpace(line)
}

// fakeNotifications is a notification service on a bus: it records every
// Notify call.
type fakeNotifications struct {
	mu    sync.Mutex
	calls []shown
	next  uint32
	got   chan shown
}

type shown struct {
	App, Summary, Body string
	Replaces           uint32
	Urgency            byte
}

func (f *fakeNotifications) Notify(app string, replaces uint32, icon, summary, body string, actions []string, hints map[string]dbus.Variant, timeout int32) (uint32, *dbus.Error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	s := shown{App: app, Summary: summary, Body: body, Replaces: replaces}
	if u, ok := hints["urgency"].Value().(byte); ok {
		s.Urgency = u
	}
	f.calls = append(f.calls, s)
	f.got <- s
	if replaces != 0 {
		return replaces, nil
	}
	f.next++
	return f.next, nil
}

func serveNotifications(t *testing.T, addr string) *fakeNotifications {
	t.Helper()
	conn, err := dbus.Connect(addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	f := &fakeNotifications{got: make(chan shown, 100)}
	if err := conn.ExportMethodTable(map[string]any{"Notify": f.Notify}, notifyPath, notifyIface); err != nil {
		t.Fatal(err)
	}
	if r, err := conn.RequestName(notifyName, dbus.NameFlagDoNotQueue); err != nil || r != dbus.RequestNameReplyPrimaryOwner {
		t.Fatalf("request name: %v %v", r, err)
	}
	return f
}

func (f *fakeNotifications) next1(t *testing.T) shown {
	t.Helper()
	select {
	case s := <-f.got:
		return s
	case <-time.After(10 * time.Second):
		t.Fatal("no notification")
	}
	return shown{}
}

func TestDesktopWithoutService(t *testing.T) {
	addr := privateBus(t)
	_, err := DialDesktop(addr)
	if !errors.Is(err, ErrNoService) {
		t.Fatalf("DialDesktop on a bus without a notification service: %v, want ErrNoService", err)
	}
	if !strings.Contains(err.Error(), "org.freedesktop.Notifications") {
		t.Errorf("the message %q does not say what is missing", err)
	}
}

func TestDesktopNotify(t *testing.T) {
	addr := privateBus(t)
	f := serveNotifications(t, addr)
	d, err := DialDesktop(addr)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	d.Agent = func(h string) string { return map[string]string{"claude-code": "Claude Code"}[h] }
	tr := Transition{Source: "claude-code", SessionID: "s1", Harness: "claude-code", Status: "waiting", Title: "Fix the tests", WaitingFor: "approve Bash"}
	if err := d.Notify(tr); err != nil {
		t.Fatal(err)
	}
	s := f.next1(t)
	if s.App != "agentbridge" || s.Summary != "Claude Code is waiting for you" || s.Body != "Fix the tests\napprove Bash" || s.Urgency != 2 || s.Replaces != 0 {
		t.Errorf("shown %+v", s)
	}
	tr.Status, tr.WaitingFor = "done", ""
	if err := d.Notify(tr); err != nil {
		t.Fatal(err)
	}
	if s := f.next1(t); s.Replaces != 1 || s.Summary != "Claude Code is done" || s.Urgency != 1 {
		t.Errorf("the session's next notification %+v should replace its first (id 1)", s)
	}
}
