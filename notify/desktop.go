package notify

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/godbus/dbus/v5"
)

// The freedesktop.org notification service.
const (
	notifyName  = "org.freedesktop.Notifications"
	notifyPath  = "/org/freedesktop/Notifications"
	notifyIface = "org.freedesktop.Notifications"
)

// ErrNoService is (wrapped in) the error of DialDesktop when nothing on
// the session bus shows notifications.
var ErrNoService = errors.New("no desktop notification service (org.freedesktop.Notifications) on the session bus: is a desktop session with a notification daemon running?")

// Desktop raises desktop notifications over D-Bus (the freedesktop.org
// Desktop Notifications interface, which GNOME, KDE, dunst, mako and
// others serve). A session's new notification replaces its earlier one,
// so a desktop shows at most one per session.
type Desktop struct {
	// AppName is the notifying application's name; "": "agentbridge".
	AppName string
	// Agent names a harness for people ("Claude Code"); nil or "": the id.
	Agent func(harness string) string

	conn *dbus.Conn
	obj  dbus.BusObject
	ids  map[key]uint32
}

// DialDesktop connects to the session bus at addr (a D-Bus address; "":
// the user's, from DBUS_SESSION_BUS_ADDRESS) and checks that a
// notification service is there (running, or startable by the bus).
func DialDesktop(addr string) (*Desktop, error) {
	var conn *dbus.Conn
	var err error
	if addr == "" {
		conn, err = dbus.ConnectSessionBus()
	} else {
		conn, err = dbus.Connect(addr)
	}
	if err != nil {
		return nil, fmt.Errorf("connect to the D-Bus session bus: %w", err)
	}
	var owned bool
	if err := conn.BusObject().Call("org.freedesktop.DBus.NameHasOwner", 0, notifyName).Store(&owned); err != nil {
		conn.Close()
		return nil, fmt.Errorf("ask the session bus for %s: %w", notifyName, err)
	}
	if !owned {
		var names []string
		_ = conn.BusObject().Call("org.freedesktop.DBus.ListActivatableNames", 0).Store(&names)
		if !slices.Contains(names, notifyName) {
			conn.Close()
			return nil, ErrNoService
		}
	}
	return &Desktop{conn: conn, obj: conn.Object(notifyName, notifyPath), ids: map[key]uint32{}}, nil
}

// Close ends the connection.
func (d *Desktop) Close() error { return d.conn.Close() }

// Notify shows one transition: the agent and the event as the summary,
// the title and the reason as the body; waits, blocks and failures are
// urgent ("critical" urgency, which most daemons keep until dismissed).
func (d *Desktop) Notify(tr Transition) error {
	app := d.AppName
	if app == "" {
		app = "agentbridge"
	}
	summary, body := message(tr, d.Agent)
	body = markupEscaper.Replace(body)
	urgency := byte(1)
	if tr.Status == EventWaiting || tr.Status == EventBlocked || tr.Status == EventFailed {
		urgency = 2
	}
	hints := map[string]dbus.Variant{
		"urgency":  dbus.MakeVariant(urgency),
		"category": dbus.MakeVariant("im.received"),
	}
	k := key{tr.Source, tr.SessionID}
	var id uint32
	err := d.obj.Call(notifyIface+".Notify", 0, app, d.ids[k], "", summary, body, []string{}, hints, int32(-1)).Store(&id)
	if err != nil {
		return fmt.Errorf("desktop notification: %w", err)
	}
	if len(d.ids) >= 4096 {
		clear(d.ids)
	}
	d.ids[k] = id
	return nil
}

// message is a notification's summary (the agent, by its name for people
// when agent knows it, and the event) and body (the title and the
// reason).
func message(tr Transition, agent func(harness string) string) (summary, body string) {
	name := tr.Harness
	if agent != nil {
		if a := agent(tr.Harness); a != "" {
			name = a
		}
	}
	summary = name + " " + verb(tr.Status)
	body = tr.Title
	if tr.WaitingFor != "" {
		if body != "" {
			body += "\n"
		}
		body += tr.WaitingFor
	}
	return summary, body
}

// markupEscaper escapes a notification body as the Desktop Notifications
// specification asks: servers with the body-markup capability read the
// body as a small XML-like markup (<b>, <a href>, <img>), so an agent's
// title such as `<a href="https://x">update</a>` would render as a link;
// escaped, it shows as the text it is. Servers without markup show the
// text of the entities decoded or as is; both are safe.
var markupEscaper = strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;")

// verb says an event for a notification summary.
func verb(status string) string {
	switch status {
	case EventWaiting:
		return "is waiting for you"
	case EventBlocked:
		return "is blocked"
	case EventFailed:
		return "failed"
	case EventDone:
		return "is done"
	case EventExited:
		return "exited"
	}
	return status
}
