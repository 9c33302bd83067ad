package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/spf13/cobra"

	"github.com/agentbridge/agentbridge/answer"
	"github.com/agentbridge/agentbridge/api"
	"github.com/agentbridge/agentbridge/client"
	"github.com/agentbridge/agentbridge/notify"
	"github.com/agentbridge/agentbridge/text"
)

func newNotifyCmd(a *app) *cobra.Command {
	var events []string
	var bus string
	cmd := &cobra.Command{
		Use:   "notify",
		Short: "raise desktop notifications when a session needs you",
		Long: `Follow the bridge's event stream and raise a desktop notification (on
Linux over D-Bus, org.freedesktop.Notifications: GNOME, KDE, dunst, mako …;
on macOS through osascript) when a session starts waiting or blocked, or a turn fails: the agent, the
session's title and the reason. One notification per wait: nothing more
while the same wait goes on, and a session's next notification replaces
its last. What the stream shows when notify connects is not notified.
Without a notification service on the session bus (or osascript on macOS)
it says so and exits 1.

A waiting session whose permission prompt can be answered through the
bridge (hooks installed with --answer, answering on: docs/answering.md)
gets Approve and Deny actions on its notification (D-Bus; macOS banners
raised through osascript take no actions); a click answers the prompt
that was open when the notification was raised, never a later one (the
bridge refuses a stale answer, and notify says so on stderr).`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			for _, e := range events {
				if !slices.Contains(notify.Events, e) {
					return usagef("--events: %q is not one of %s", e, strings.Join(notify.Events, ", "))
				}
			}
			c, err := newClient(cmd.Flags(), a.env)
			if err != nil {
				return err
			}
			names := map[string]string{}
			d, err := dialDesktop(goos, bus, func(h string) string { return names[h] })
			if err != nil {
				return err
			}
			defer d.Close()
			if dd, ok := d.(*notify.Desktop); ok {
				if err := answerFromNotifications(cmd.Context(), c.Client, dd, a.stderr); err != nil {
					return err
				}
			}
			return notifyDesktop(cmd.Context(), c.Client, d, names, events, a.stderr, a.backoff)
		},
	}
	fs := cmd.Flags()
	clientFlags(fs)
	fs.StringSliceVar(&events, "events", []string{notify.EventWaiting, notify.EventBlocked, notify.EventFailed},
		"notify on these `events`: "+strings.Join(notify.Events, ", "))
	fs.StringVar(&bus, "bus", "", "D-Bus session bus `address` (default $DBUS_SESSION_BUS_ADDRESS)")
	mustComplete(cmd, "events", fixedCompletions(notify.Events...))
	return cmd
}

// desktop raises notifications on the user's desktop.
type desktop interface {
	notify.Notifier
	Close() error
}

// dialDesktop returns goos's desktop notifier: osascript on macOS, D-Bus
// (at bus; "": the user's session bus) elsewhere. agent names a harness
// for people.
func dialDesktop(goos, bus string, agent func(harness string) string) (desktop, error) {
	if goos == "darwin" {
		b, err := notify.NewBanner()
		if err != nil {
			return nil, err
		}
		b.Agent = agent
		return b, nil
	}
	d, err := notify.DialDesktop(bus)
	if err != nil {
		return nil, err
	}
	d.Agent = agent
	return d, nil
}

// notifyDesktop follows the stream (client.Follow, resuming after drops)
// and tells d the transitions of the chosen events until ctx ends. The
// agents' display names are filled into names (which d reads) from GET
// /v1/sources. A drop is reported once on stderr, then "reconnected".
func notifyDesktop(ctx context.Context, c *client.Client, d notify.Notifier, names map[string]string, events []string, stderr io.Writer, bo backoff) error {
	var srcs api.SourcesResponse
	if err := c.GetJSON(ctx, "/v1/sources", nil, &srcs); err == nil {
		for _, s := range srcs.Sources {
			for _, h := range s.Harnesses {
				names[h.ID] = h.DisplayName
			}
		}
	}
	host, _ := os.Hostname()
	t := notify.Teller{Tracker: notify.Tracker{Host: host}, To: d, Events: events}
	failing := false
	t.OnError = func(err error, retry time.Time) {
		if !failing { // once per run of failures
			fmt.Fprintf(stderr, "agentbridge notify: %v; trying again from %s\n", err, retry.Format(time.TimeOnly))
		}
		failing = true
	}
	// A transition that could not be shown is tried again when its backoff
	// ends: a one-shot timer, armed only while one waits, owned here.
	var mu sync.Mutex
	due := make(chan time.Time, 1)
	arm := func(at time.Time) {
		if at.IsZero() {
			failing = false
			return
		}
		select {
		case <-due:
		default:
		}
		due <- at
	}
	rctx, stop := context.WithCancel(ctx)
	var wg sync.WaitGroup
	defer wg.Wait()
	defer stop()
	wg.Go(func() {
		timer := time.NewTimer(0)
		timer.Stop()
		defer timer.Stop()
		for {
			select {
			case <-rctx.Done():
				return
			case at := <-due:
				timer.Reset(time.Until(at))
			case <-timer.C:
				mu.Lock()
				arm(t.Flush())
				mu.Unlock()
			}
		}
	})
	o := client.FollowOptions{StreamOptions: client.StreamOptions{Format: client.NDJSON}, Backoff: bo}
	onConnect, onDrop := reportDrops("notify", stderr)
	o.OnConnect = func(b bool) { mu.Lock(); defer mu.Unlock(); onConnect(b) }
	o.OnDrop = func(err error) { mu.Lock(); defer mu.Unlock(); onDrop(err) }
	err := c.Follow(ctx, o, func(ev client.Event) error {
		mu.Lock()
		defer mu.Unlock()
		arm(t.Record(ev.Name, ev.Data))
		return nil
	})
	if ctx.Err() != nil {
		return nil
	}
	return err
}

// answerFromNotifications offers Approve and Deny on the notification of a
// waiting session whose prompt is answerable, and answers it when one is
// clicked, until d is closed.
func answerFromNotifications(ctx context.Context, c *client.Client, d *notify.Desktop, stderr io.Writer) error {
	clicks, err := d.Invoked()
	if err != nil {
		return err
	}
	local, _ := os.Hostname() // what notifyDesktop's Tracker names this bridge's own sessions by
	var mu sync.Mutex
	waits := map[[2]string]answer.Answerable{} // source, session → the wait its notification offered
	d.Actions = func(tr notify.Transition) []string {
		k := [2]string{tr.Source, tr.SessionID}
		mu.Lock()
		delete(waits, k)
		mu.Unlock()
		if tr.Status != notify.EventWaiting || (tr.Host != "" && tr.Host != local) {
			return nil
		}
		gctx, cancel := context.WithTimeout(ctx, 2*time.Second)
		defer cancel()
		var e struct {
			Answerable *answer.Answerable `json:"answerable"`
		}
		if c.GetJSON(gctx, sessionPath(tr.Source, tr.SessionID), nil, &e) != nil || e.Answerable == nil {
			return nil
		}
		mu.Lock()
		if len(waits) >= 1024 {
			clear(waits)
		}
		waits[k] = *e.Answerable
		mu.Unlock()
		return []string{answer.Allow, "Approve", answer.Deny, "Deny"}
	}
	go func() { // ends when d is closed (clicks closes)
		for a := range clicks {
			mu.Lock()
			w, ok := waits[[2]string{a.Source, a.SessionID}]
			delete(waits, [2]string{a.Source, a.SessionID})
			mu.Unlock()
			if !ok || (a.Key != answer.Allow && a.Key != answer.Deny) {
				continue
			}
			req := api.AnswerRequest{Decision: a.Key}
			if a.Key == answer.Deny {
				req.Message = "Denied from a desktop notification"
			}
			actx, cancel := context.WithTimeout(ctx, 10*time.Second)
			err := postAnswer(actx, c, a.Source, a.SessionID, w.WaitID, req)
			cancel()
			// the tool and the session, never the request: notify's
			// stderr is a log (a service's journal), and the request is
			// what the agent was about to do
			what := text.Printable(w.Tool + " (" + a.Source + "/" + a.SessionID + ")")
			if err != nil {
				fmt.Fprintf(stderr, "agentbridge notify: could not %s %s: %v\n", a.Key, what, err)
				continue
			}
			fmt.Fprintf(stderr, "agentbridge notify: %s %s\n", map[string]string{answer.Allow: "allowed", answer.Deny: "denied"}[a.Key], what)
		}
	}()
	return nil
}
