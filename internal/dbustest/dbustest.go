// Package dbustest runs a private D-Bus session bus for a test and serves a
// fake desktop notification service (org.freedesktop.Notifications) on it
// that records what it is asked to show.
package dbustest

import (
	"bufio"
	"errors"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentbridge/agentbridge/internal/testenv"
	"github.com/godbus/dbus/v5"
)

// Bus starts a session bus of the test's own (dbus-daemon --session) and
// returns its address; the test skips when dbus-daemon is not installed
// (apt package dbus). The bus ends with the test.
func Bus(t testing.TB) string {
	t.Helper()
	bin, err := exec.LookPath("dbus-daemon")
	if err != nil {
		testenv.Missing(t, "dbus-daemon is not installed (apt package dbus)")
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

// Shown is one notification the fake service was asked to show.
type Shown struct {
	App, Summary, Body string
	Replaces           uint32
	Urgency            byte
	ID                 uint32   // the id the service gave it
	Actions            []string // key, label, key, label, …
}

// Notifications is a fake notification service.
type Notifications struct {
	conn  *dbus.Conn
	mu    sync.Mutex
	calls []Shown
	next  uint32
	got   chan Shown
	fail  int
}

// FailNext makes the next n Notify calls fail with a D-Bus error (a
// notification server that is restarting), recording nothing.
func (f *Notifications) FailNext(n int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.fail = n
}

// Serve puts a fake notification service on the bus at addr.
func Serve(t testing.TB, addr string) *Notifications {
	t.Helper()
	conn, err := dbus.Connect(addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	f := &Notifications{conn: conn, got: make(chan Shown, 100)}
	if err := conn.ExportMethodTable(map[string]any{"Notify": f.notify}, "/org/freedesktop/Notifications", "org.freedesktop.Notifications"); err != nil {
		t.Fatal(err)
	}
	if r, err := conn.RequestName("org.freedesktop.Notifications", dbus.NameFlagDoNotQueue); err != nil || r != dbus.RequestNameReplyPrimaryOwner {
		t.Fatalf("request name: %v %v", r, err)
	}
	return f
}

// Invoke emits ActionInvoked for notification id, as a service does when
// the user clicks one of its actions.
func (f *Notifications) Invoke(t testing.TB, id uint32, action string) {
	t.Helper()
	if err := f.conn.Emit("/org/freedesktop/Notifications", "org.freedesktop.Notifications.ActionInvoked", id, action); err != nil {
		t.Fatal(err)
	}
}

func (f *Notifications) notify(app string, replaces uint32, _, summary, body string, actions []string, hints map[string]dbus.Variant, _ int32) (uint32, *dbus.Error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.fail > 0 {
		f.fail--
		return 0, dbus.MakeFailedError(errors.New("the notification server is restarting"))
	}
	s := Shown{App: app, Summary: summary, Body: body, Replaces: replaces, Actions: actions}
	if u, ok := hints["urgency"].Value().(byte); ok {
		s.Urgency = u
	}
	s.ID = replaces
	if replaces == 0 {
		f.next++
		s.ID = f.next
	}
	f.calls = append(f.calls, s)
	f.got <- s
	return s.ID, nil
}

// Next waits for the next notification (failing the test after 10 s).
func (f *Notifications) Next(t testing.TB) Shown {
	t.Helper()
	select {
	case s := <-f.got:
		return s
	case <-time.After(10 * time.Second):
		t.Fatal("no notification")
	}
	return Shown{}
}

// Count is how many notifications were shown so far.
func (f *Notifications) Count() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.calls)
}
