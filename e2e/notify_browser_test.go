package e2e

import (
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/cdproto/browser"
	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/chromedp"
)

// recordNotifications wraps the page's Notification constructor so that
// the test sees every notification the page raises (headless Chromium has
// no notification centre to look at).
const recordNotifications = `(() => {
  const N = window.Notification;
  if (!N) return;
  window.__notes = [];
  class Recorded extends N {
    constructor(title, opts) {
      super(title, opts);
      window.__notes.push({ title, body: (opts && opts.body) || '', tag: (opts && opts.tag) || '', note: this });
    }
  }
  window.Notification = Recorded;
})();`

// TestDashboardActivityAndNotifications: the running tool and its time
// come from the bridge (a page loaded after the tool started shows it);
// with notifications switched on (permission granted), a session that
// starts waiting raises one notification with its reason, the same wait
// going on raises no other, a click focuses the session, and a reload
// remembers the switch and notifies nothing for what it finds.
func TestDashboardActivityAndNotifications(t *testing.T) {
	ctx := newTab(t)
	b := startBridge(t)
	at := time.Now().Add(-90 * time.Second).UnixMilli()
	ev := func(id string, e map[string]any) {
		t.Helper()
		b.publish(map[string]any{"op": "event", "sessionId": id, "harness": "example-agent", "event": e})
	}
	ev("s-tool", map[string]any{"kind": "session.started", "title": "Refactor ledger export", "cwd": "/home/ana/src/payments"})
	ev("s-tool", map[string]any{"kind": "turn.started", "turnId": "t1", "occurredAt": at})
	ev("s-tool", map[string]any{"kind": "tool.started", "toolId": "x1", "name": "Bash", "occurredAt": at + 30_000})
	ev("s-other", map[string]any{"kind": "session.started", "title": "Fix flaky settlement tests", "cwd": "/home/ana/src/payments"})
	ev("s-other", map[string]any{"kind": "turn.started", "turnId": "t1"})

	c := chromedp.FromContext(ctx)
	if _, err := chromedp.Call(ctx, browser.SetPermission, browser.SetPermissionParams{
		Permission: &browser.PermissionDescriptor{Name: "notifications"}, Setting: browser.PermissionSettingGranted,
		Origin: b.base, BrowserContextID: c.BrowserContextID,
	}); err != nil {
		t.Fatalf("grant the notification permission: %v", err)
	}
	if _, err := chromedp.Call(ctx, page.AddScriptToEvaluateOnNewDocument, page.AddScriptToEvaluateOnNewDocumentParams{Source: recordNotifications}); err != nil {
		t.Fatal(err)
	}
	if err := chromedp.Do(ctx, chromedp.Navigate(b.dashboardURL())); err != nil {
		t.Fatalf("open the dashboard: %v", err)
	}
	waitJS(t, ctx, "the sessions", `document.querySelectorAll('tr.row').length === 2 && document.querySelector('#conn').dataset.state === 'live'`)

	t.Run("the running tool and for how long, after a load", func(t *testing.T) {
		waitJS(t, ctx, "the tool's time", `/running Bash for 1m \d\ds/.test(document.querySelector('tr.row[data-session="s-tool"]').innerText)`)
		// The times shown are ages by the bridge's clock: the tool's (60 s
		// at publish) and the turn's (90 s), each at most its age once
		// read (a page that counted from its own load would show seconds).
		got := rowText(t, ctx, "s-tool")
		age := time.Since(time.UnixMilli(at))
		within := func(what string, shown, least time.Duration) {
			if shown < least || shown > age-(90*time.Second-least)+time.Second {
				t.Errorf("%s %v should be its age from the bridge (%v at publish):\n%s", what, shown, least, got)
			}
		}
		durations := regexp.MustCompile(`(\d+)m (\d+)s`).FindAllStringSubmatch(got, -1)
		if !strings.Contains(got, "running Bash for") || len(durations) < 2 {
			t.Fatalf("no running tool and turn time in the row:\n%s", got)
		}
		for i, what := range []string{"the tool's time", "the turn's time"} {
			mins, _ := strconv.Atoi(durations[i][1])
			sec, _ := strconv.Atoi(durations[i][2])
			within(what, time.Duration(mins*60+sec)*time.Second, []time.Duration{60 * time.Second, 90 * time.Second}[i])
		}
	})

	notes := func() int {
		n, err := chromedp.Run(ctx, chromedp.Evaluate[int](`window.__notes.length`))
		if err != nil {
			t.Fatal(err)
		}
		return n
	}
	if _, err := chromedp.Run(ctx, chromedp.Evaluate[chromedp.Void](`document.querySelector('#notify').click()`)); err != nil {
		t.Fatal(err)
	}
	waitJS(t, ctx, "the switch on", `document.querySelector('#notify').getAttribute('aria-checked') === 'true'`)

	ev("s-other", map[string]any{"kind": "wait.started", "waitId": "w1", "state": "waiting", "reason": "Approve shell command: git push"})
	waitJS(t, ctx, "a notification", `window.__notes.length >= 1`)
	ev("s-other", map[string]any{"kind": "tool.started", "toolId": "x2", "name": "Bash"}) // the same wait goes on
	ev("s-tool", map[string]any{"kind": "tool.finished", "toolId": "x1"})                 // another session, still running
	waitJS(t, ctx, "the later upserts", `!/running Bash/.test(document.querySelector('tr.row[data-session="s-tool"]').innerText)`)
	if n := notes(); n != 1 {
		t.Fatalf("%d notifications, want one for the one wait", n)
	}
	got, err := chromedp.Run(ctx, chromedp.Evaluate[map[string]string](`({title: window.__notes[0].title, body: window.__notes[0].body})`))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(got["body"], "Approve shell command: git push") || !strings.Contains(got["body"], "Fix flaky settlement tests") || !strings.Contains(got["title"], "waiting") {
		t.Errorf("notification = %q, want the session and the reason", got)
	}

	t.Run("a click focuses the session", func(t *testing.T) {
		if _, err := chromedp.Run(ctx, chromedp.Evaluate[chromedp.Void](`window.__notes[0].note.onclick()`)); err != nil {
			t.Fatal(err)
		}
		waitJS(t, ctx, "the row focused", `document.activeElement?.dataset?.session === 's-other'`)
	})

	t.Run("a reload remembers the switch and notifies nothing it finds", func(t *testing.T) {
		if err := chromedp.Do(ctx, chromedp.Reload()); err != nil {
			t.Fatal(err)
		}
		waitJS(t, ctx, "live again", `document.querySelectorAll('tr.row').length === 2 && document.querySelector('#conn').dataset.state === 'live'`)
		waitJS(t, ctx, "the switch remembered", `document.querySelector('#notify').getAttribute('aria-checked') === 'true'`)
		time.Sleep(300 * time.Millisecond)
		if n := notes(); n != 0 {
			t.Errorf("%d notifications on the page's first load, want none", n)
		}
	})
}
