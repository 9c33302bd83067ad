package notify

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"

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

	// Actions, when set, gives the actions a transition's notification
	// offers, as D-Bus wants them: key, label, key, label, … (nil: none).
	// A click on one is delivered on Invoked.
	Actions func(tr Transition) []string

	conn    *dbus.Conn
	obj     dbus.BusObject
	ids     map[key]uint32
	mu      sync.Mutex
	byID    map[uint32]key // the notifications that offer actions
	invoked chan Action
	signals chan *dbus.Signal
}

// Action is a click on an action of a session's notification.
type Action struct {
	Source, SessionID string
	Key               string // the action's key
}

// maxActionable bounds the notifications with actions remembered.
const maxActionable = 1024

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
	return &Desktop{conn: conn, obj: conn.Object(notifyName, notifyPath), ids: map[key]uint32{}, byID: map[uint32]key{}}, nil
}

// Close ends the connection (and Invoked's channel).
func (d *Desktop) Close() error { return d.conn.Close() }

// Invoked delivers the clicks on the actions of the notifications this
// Desktop raised (the service's ActionInvoked signal), until Close. Call
// it once, before the first Notify with actions.
func (d *Desktop) Invoked() (<-chan Action, error) {
	if err := d.conn.AddMatchSignal(dbus.WithMatchObjectPath(notifyPath), dbus.WithMatchInterface(notifyIface), dbus.WithMatchMember("ActionInvoked")); err != nil {
		return nil, fmt.Errorf("listen for notification actions: %w", err)
	}
	d.signals = make(chan *dbus.Signal, 16)
	d.invoked = make(chan Action, 16)
	d.conn.Signal(d.signals)
	go d.relay() // ends when Close closes the signal channel
	return d.invoked, nil
}

func (d *Desktop) relay() {
	defer close(d.invoked)
	for sig := range d.signals {
		if sig.Name != notifyIface+".ActionInvoked" || len(sig.Body) != 2 {
			continue
		}
		id, ok1 := sig.Body[0].(uint32)
		action, ok2 := sig.Body[1].(string)
		if !ok1 || !ok2 {
			continue
		}
		d.mu.Lock()
		k, ok := d.byID[id]
		d.mu.Unlock()
		if !ok {
			continue // another application's notification
		}
		select {
		case d.invoked <- Action{Source: k.source, SessionID: k.id, Key: action}:
		default: // nobody reads: a click is dropped, never blocks the bus
		}
	}
}

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
	actions := []string{}
	if d.Actions != nil {
		if a := d.Actions(tr); len(a) > 0 {
			actions = a
		}
	}
	// The lock is held across the call: a click on the new notification
	// can arrive before the call returns its id, and relay waits for the
	// id to be known rather than drop the click (godbus never blocks its
	// reader on a busy signal channel).
	d.mu.Lock()
	defer d.mu.Unlock()
	var id uint32
	err := d.obj.Call(notifyIface+".Notify", 0, app, d.ids[k], "", summary, body, actions, hints, int32(-1)).Store(&id)
	if err != nil {
		return fmt.Errorf("desktop notification: %w", err)
	}
	if len(d.ids) >= 4096 {
		clear(d.ids)
	}
	d.ids[k] = id
	if len(actions) > 0 {
		if len(d.byID) >= maxActionable {
			clear(d.byID)
		}
		d.byID[id] = k
	} else {
		delete(d.byID, id)
	}
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
