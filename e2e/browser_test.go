package e2e

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentbridge/agentbridge/internal/testenv"
	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/emulation"
	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/chromedp"
)

// chromiumPath finds Debian's chromium. Without it the test skips, except
// under CI, where a missing browser is a failure.
func chromiumPath(t *testing.T) string {
	t.Helper()
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome-stable", "google-chrome"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	testenv.Missing(t, "chromium is not installed; apt-get install chromium (as .ci/run does) to run the browser test")
	return ""
}

// The browser is started once per test binary; each test gets a tab in a
// fresh browser context (its own cookies and storage).
var (
	browserOnce   sync.Once
	browserCtx    context.Context
	browserCancel context.CancelFunc = func() {}
	browserErr    error
)

// newTab returns a tab of the shared headless Chromium in a fresh browser
// context.
func newTab(t *testing.T) context.Context {
	t.Helper()
	path := chromiumPath(t)
	browserOnce.Do(func() {
		profile, err := os.MkdirTemp(binDir, "chromium-profile-")
		if err != nil {
			browserErr = err
			return
		}
		opts := append(chromedp.DefaultExecAllocatorOptions[:],
			chromedp.ExecPath(path),
			chromedp.Headless,
			chromedp.NoSandbox,
			chromedp.DisableGPU,
			chromedp.NoFirstRun,
			chromedp.Flag("disable-quic", true),
			chromedp.Flag("disable-background-networking", true),
			chromedp.Flag("disable-component-update", true),
			chromedp.Flag("disable-sync", true),
			chromedp.UserDataDir(profile),
			chromedp.WindowSize(1360, 860),
		)
		allocCtx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
		ctx, cancelBrowser := chromedp.NewContext(allocCtx)
		browserCtx = ctx
		browserCancel = func() {
			cancelBrowser()
			cancelAlloc()
		}
		if err := chromedp.Do(ctx); err != nil {
			browserErr = fmt.Errorf("start chromium: %w", err)
		}
	})
	if browserErr != nil {
		t.Fatal(browserErr)
	}
	tab, cancelTab := chromedp.NewContext(browserCtx, chromedp.WithNewBrowserContext())
	ctx, cancelTimeout := context.WithTimeout(tab, 2*time.Minute)
	t.Cleanup(func() {
		cancelTimeout()
		cancelTab()
	})
	if err := chromedp.Do(ctx); err != nil {
		t.Fatalf("open a tab: %v", err)
	}
	return ctx
}

// waitJS waits until the expression is truthy in the page.
func waitJS(t *testing.T, ctx context.Context, what, expr string) {
	t.Helper()
	if _, err := chromedp.Run(ctx, chromedp.Poll[chromedp.Void](expr, chromedp.WithPollingTimeout(30*time.Second), chromedp.WithPollingInterval(50*time.Millisecond))); err != nil {
		var state string
		state, _ = chromedp.Run(ctx, chromedp.Evaluate[string](`document.querySelector('#conn')?.textContent + ' | ' + document.querySelector('main')?.innerText`))
		t.Fatalf("waiting for %s: %v\npage: %s", what, err, state)
	}
}

// rowText is the visible text of a session's row.
func rowText(t *testing.T, ctx context.Context, id string) string {
	t.Helper()
	text, err := chromedp.Run(ctx, chromedp.Evaluate[string](`document.querySelector('tr.row[data-session="`+id+`"]')?.innerText ?? ''`))
	if err != nil {
		t.Fatal(err)
	}
	return text
}

// screenshot saves a PNG of the viewport under artifacts/.
func screenshot(t *testing.T, ctx context.Context, name string) {
	t.Helper()
	png, err := chromedp.Run(ctx, chromedp.CaptureScreenshot())
	if err != nil {
		t.Fatalf("screenshot: %v", err)
	}
	dir := filepath.Join(repoRoot, "artifacts")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, png, 0o644); err != nil {
		t.Fatal(err)
	}
	t.Logf("screenshot: %s", p)
}

func colorScheme(t *testing.T, ctx context.Context, scheme string) {
	t.Helper()
	_, err := chromedp.Run(ctx, chromedp.Func(func(ctx context.Context, tg *chromedp.Target) error {
		_, err := chromedp.Call(ctx, emulation.SetEmulatedMedia, emulation.SetEmulatedMediaParams{
			Features: []*emulation.MediaFeature{{Name: "prefers-color-scheme", Value: scheme}},
		})
		return err
	}))
	if err != nil {
		t.Fatalf("emulate %s: %v", scheme, err)
	}
}

func TestDashboard(t *testing.T) {
	ctx := newTab(t)
	b := startBridge(t)
	now := time.Now().UnixMilli()
	b.publish(map[string]any{"op": "reset", "sessions": []map[string]any{
		{"id": "s-wait", "harness": "example-agent", "pid": 4012, "cwd": "/home/ana/src/payments", "title": "Fix flaky settlement tests", "model": "example-large",
			"status": "waiting", "waitingFor": "Approve shell command: make test", "lastTurn": "completed", "lastTurnEndedAt": now - 600_000,
			"subagents": []map[string]any{{"id": "sub-1", "type": "explore", "title": "Find callers of settle()", "status": "running"}, {"id": "sub-2", "type": "review", "status": "completed"}}},
		{"id": "s-run", "harness": "example-agent", "pid": 4077, "cwd": "/home/ana/src/payments", "title": "Refactor ledger export", "model": "example-large", "status": "running"},
		{"id": "s-done", "harness": "other-agent", "pid": 5120, "cwd": "/home/ana/src/site", "title": "Update landing page copy", "model": "other-mini", "status": "idle", "lastTurn": "completed", "lastTurnEndedAt": now - 125_000},
		{"id": "s-blocked", "harness": "other-agent", "cwd": "/home/ana/src/site", "title": "Migrate CI to new runners", "status": "blocked", "waitingFor": "Rate limit reached", "lastTurn": "failed", "lastTurnEndedAt": now - 30_000},
	}})
	b.publish(map[string]any{"op": "diagnostic", "diagnostic": map[string]any{"code": "journal-unreadable", "message": "one record could not be parsed and was skipped"}})

	// The printed URL carries the token; the bridge trades it for a cookie
	// and strips it from the address bar.
	if err := chromedp.Do(ctx, chromedp.Navigate(b.dashboardURL())); err != nil {
		t.Fatalf("open the dashboard: %v", err)
	}
	waitJS(t, ctx, "the published sessions", `document.querySelectorAll('tr.row').length === 4 && document.querySelector('#conn').dataset.state === 'live'`)
	loc, err := chromedp.Run(ctx, chromedp.Location())
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(loc, "token") {
		t.Errorf("the token stays in the address bar: %s", loc)
	}

	t.Run("status and waiting reason", func(t *testing.T) {
		got := rowText(t, ctx, "s-wait")
		for _, want := range []string{"waiting", "Fix flaky settlement tests", "Approve shell command: make test", "Example Agent", "example-large", "4012", "completed", "2 subagents"} {
			if !strings.Contains(got, want) {
				t.Errorf("row s-wait lacks %q:\n%s", want, got)
			}
		}
		if got := rowText(t, ctx, "s-blocked"); !strings.Contains(got, "blocked") || !strings.Contains(got, "Rate limit reached") || !strings.Contains(got, "failed") {
			t.Errorf("row s-blocked:\n%s", got)
		}
		// Idle after a finished turn reads "done".
		if got := rowText(t, ctx, "s-done"); !strings.Contains(got, "done") || !strings.Contains(got, "completed") {
			t.Errorf("row s-done:\n%s", got)
		}
		heads, err := chromedp.Run(ctx, chromedp.Evaluate[[]string](`[...document.querySelectorAll('tr.group .name')].map(e => e.textContent)`))
		if err != nil {
			t.Fatal(err)
		}
		if strings.Join(heads, ",") != "payments,site" {
			t.Errorf("project groups = %q, want payments then site", heads)
		}
		diag, err := chromedp.Run(ctx, chromedp.Evaluate[string](`document.querySelector('#diagnostics').innerText`))
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(diag, "journal-unreadable") {
			t.Errorf("diagnostics panel: %q", diag)
		}
	})

	colorScheme(t, ctx, "light")
	screenshot(t, ctx, "dashboard-light.png")
	colorScheme(t, ctx, "dark")
	screenshot(t, ctx, "dashboard-dark.png")
	colorScheme(t, ctx, "light")

	t.Run("a later change arrives without reload", func(t *testing.T) {
		if _, err := chromedp.Run(ctx, chromedp.Evaluate[chromedp.Void](`window.__sameDocument = true`)); err != nil {
			t.Fatal(err)
		}
		b.publish(map[string]any{"op": "upsert", "session": map[string]any{
			"id": "s-run", "harness": "example-agent", "pid": 4077, "cwd": "/home/ana/src/payments", "title": "Refactor ledger export", "model": "example-large",
			"status": "waiting", "waitingFor": "Answer a question: keep the CSV format?"}})
		waitJS(t, ctx, "s-run to be waiting", `document.querySelector('tr.row[data-session="s-run"]')?.dataset.status === 'waiting'`)
		if got := rowText(t, ctx, "s-run"); !strings.Contains(got, "Answer a question: keep the CSV format?") {
			t.Errorf("row s-run lacks the waiting reason:\n%s", got)
		}
		same, err := chromedp.Run(ctx, chromedp.Evaluate[bool](`window.__sameDocument === true`))
		if err != nil || !same {
			t.Errorf("the page reloaded (err %v)", err)
		}
		title, _ := chromedp.Run(ctx, chromedp.Title())
		if !strings.HasPrefix(title, "(3)") {
			t.Errorf("document title = %q, want the count of sessions that need you, (3)", title)
		}
	})

	t.Run("the tool, a failed turn's error, nested subagents and an end", func(t *testing.T) {
		ev := func(id string, events ...map[string]any) {
			ops := make([]map[string]any, len(events))
			for i, e := range events {
				ops[i] = map[string]any{"op": "event", "sessionId": id, "event": e}
				if i == 0 {
					ops[i]["harness"] = "example-agent"
				}
			}
			b.publish(ops)
		}
		ev("s-ev",
			map[string]any{"kind": "session.started", "title": "Events session", "pid": 4300, "cwd": "/home/ana/src/payments"},
			map[string]any{"kind": "turn.started", "turnId": "t1"},
			map[string]any{"kind": "tool.started", "toolId": "u1", "name": "Bash"},
			map[string]any{"kind": "subagent.started", "subagentId": "sa", "parentAgentId": "s-ev", "type": "explore", "title": "Look around"},
			map[string]any{"kind": "subagent.started", "subagentId": "sb", "parentAgentId": "sa"},
		)
		waitJS(t, ctx, "s-ev running Bash", `document.querySelector('tr.row[data-session="s-ev"]')?.dataset.status === 'running'`)
		if got := rowText(t, ctx, "s-ev"); !strings.Contains(got, "Bash") {
			t.Errorf("row s-ev lacks the tool:\n%s", got)
		}
		nested, err := chromedp.Run(ctx, chromedp.Evaluate[string](`(() => { const li = document.querySelector('tr.row[data-session="s-ev"] li[data-parent="sa"]'); return li ? li.textContent : ''; })()`))
		if err != nil || !strings.Contains(nested, "subagent") {
			t.Errorf("the untyped subagent is not nested under its parent: %q (err %v)", nested, err)
		}
		ev("s-ev", map[string]any{"kind": "agent.done", "outcome": "error", "summary": "API error 429: quota exceeded"})
		waitJS(t, ctx, "s-ev done", `document.querySelector('tr.row[data-session="s-ev"]')?.dataset.status === 'done'`)
		if got := rowText(t, ctx, "s-ev"); !strings.Contains(got, "quota exceeded") || !strings.Contains(got, "failed") {
			t.Errorf("row s-ev lacks the failed turn's error:\n%s", got)
		}
		ev("s-ev", map[string]any{"kind": "agent.exited", "exitCode": 0})
		waitJS(t, ctx, "s-ev ended", `document.querySelector('tr.row[data-session="s-ev"]')?.dataset.status === 'ended'`)
		if got := rowText(t, ctx, "s-ev"); !strings.Contains(got, "ended") || !strings.Contains(got, "exit code 0") {
			t.Errorf("row s-ev does not read ended:\n%s", got)
		}
		b.publish(map[string]any{"op": "remove", "sessionId": "s-ev"})
		waitJS(t, ctx, "s-ev gone", `!document.querySelector('tr.row[data-session="s-ev"]')`)
	})

	t.Run("switching a harness off removes its sessions", func(t *testing.T) {
		sw := `button[role="switch"][data-source="example-push"][data-harness="other-agent"]`
		// Keyboard: focus the switch and press Space.
		if err := chromedp.Do(ctx, chromedp.Focus(chromedp.CSS(sw)), chromedp.KeyEvent(" ")); err != nil {
			t.Fatal(err)
		}
		waitJS(t, ctx, "the other-agent sessions to go", `document.querySelectorAll('tr.row[data-harness="other-agent"]').length === 0 && document.querySelectorAll('tr.row').length === 2`)
		waitJS(t, ctx, "the switch to read off", `document.querySelector('`+sw+`').getAttribute('aria-checked') === 'false'`)
		focused, err := chromedp.Run(ctx, chromedp.Evaluate[bool](`document.activeElement === document.querySelector('`+sw+`')`))
		if err != nil || !focused {
			t.Errorf("the switch lost keyboard focus (err %v)", err)
		}
		screenshot(t, ctx, "dashboard-harness-off.png")
		if err := chromedp.Do(ctx, chromedp.Click(chromedp.CSS(sw))); err != nil {
			t.Fatal(err)
		}
		waitJS(t, ctx, "the switch to read on", `document.querySelector('`+sw+`').getAttribute('aria-checked') === 'true'`)
	})

	t.Run("the connection indicator follows a bridge restart", func(t *testing.T) {
		b.stop()
		waitJS(t, ctx, "the indicator to leave live", `['reconnecting','connecting'].includes(document.querySelector('#conn').dataset.state)`)
		screenshot(t, ctx, "dashboard-reconnecting.png")
		b.start()
		b.publish(map[string]any{"op": "upsert", "session": map[string]any{"id": "s-new", "harness": "example-agent", "cwd": "/home/ana/src/payments", "title": "After the restart", "status": "running"}})
		waitJS(t, ctx, "live again with the new run's sessions", `document.querySelector('#conn').dataset.state === 'live' && !!document.querySelector('tr.row[data-session="s-new"]') && !document.querySelector('tr.row[data-session="s-wait"]')`)
	})
}

// TestDashboardWithoutToken: opened with no token, a wrong token in its
// link, or a stale cookie, the dashboard shows the same sign-in card (never
// a raw error page), takes the token out of the address bar, and its
// Harnesses panel says it is signed out. Signed in with `agentbridge open
// --print`'s link, it shows sessions without a cwd under a plain heading.
func TestDashboardWithoutToken(t *testing.T) {
	ctx := newTab(t)
	b := startBridge(t)
	port := b.addr[strings.LastIndexByte(b.addr, ':')+1:]
	for _, tt := range []struct{ name, url, cookie string }{
		{"no token", b.base + "/", ""},
		{"a wrong token in the link", b.base + "/?token=not-this-bridges-token", ""},
		{"a cookie from another token", b.base + "/", "e2e-token-of-an-earlier-run"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if err := chromedp.Do(ctx, clearCookies(), setCookie("agentbridge_"+port, tt.cookie), chromedp.Navigate(tt.url)); err != nil {
				t.Fatalf("open the dashboard: %v", err)
			}
			waitJS(t, ctx, "the unauthorized state", `document.querySelector('#conn')?.dataset.state === 'unauthorized'`)
			card, err := chromedp.Run(ctx, chromedp.Evaluate[string](`document.querySelector('#empty').innerText`))
			if err != nil {
				t.Fatal(err)
			}
			for _, want := range []string{"Sign in to see your agents.", "agentbridge open", "agentbridge open --print"} {
				if !strings.Contains(card, want) {
					t.Errorf("sign-in card lacks %q: %q", want, card)
				}
			}
			panel, err := chromedp.Run(ctx, chromedp.Evaluate[string](`document.querySelector('#harnesses').innerText`))
			if err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(panel, "Signed out") {
				t.Errorf("Harnesses panel = %q, want it to say signed out", panel)
			}
			loc, err := chromedp.Run(ctx, chromedp.Location())
			if err != nil {
				t.Fatal(err)
			}
			if strings.Contains(loc, "token") {
				t.Errorf("the token stays in the address bar: %s", loc)
			}
			screenshot(t, ctx, "dashboard-signin-"+strings.ReplaceAll(tt.name, " ", "-")+".png")
		})
	}

	t.Run("signed in, a session without a cwd", func(t *testing.T) {
		b.publish(map[string]any{"op": "reset", "sessions": []map[string]any{
			{"id": "s-nowhere", "harness": "example-agent", "title": "No directory known", "status": "running"},
			{"id": "s-here", "harness": "example-agent", "cwd": "/home/ana/src/payments", "title": "In a project", "status": "running"},
		}})
		if err := chromedp.Do(ctx, clearCookies(), chromedp.Navigate(b.dashboardURL())); err != nil {
			t.Fatal(err)
		}
		waitJS(t, ctx, "both sessions", `document.querySelectorAll('tr.row').length === 2`)
		names, err := chromedp.Run(ctx, chromedp.Evaluate[[]string](`[...document.querySelectorAll('tr.group .name')].map(e => e.textContent)`))
		if err != nil {
			t.Fatal(err)
		}
		if strings.Join(names, ",") != "payments,No working directory" {
			t.Errorf("group names = %q, want payments, then No working directory", names)
		}
		heads, err := chromedp.Run(ctx, chromedp.Evaluate[[]string](`[...document.querySelectorAll('tr.group th')].map(e => e.textContent)`))
		if err != nil {
			t.Fatal(err)
		}
		if len(heads) != 2 || heads[1] != "No working directory1 session" {
			t.Errorf("group headings = %q, want the second to be just its name and count", heads)
		}
		for _, h := range heads {
			if strings.Contains(h, "null") || strings.Contains(h, "undefined") {
				t.Errorf("group heading %q", h)
			}
		}
	})
}

// clearCookies forgets every cookie of the browser.
func clearCookies() chromedp.Action[chromedp.Void] {
	return chromedp.Func(func(ctx context.Context, _ *chromedp.Target) error {
		_, err := chromedp.Call(ctx, network.ClearBrowserCookies, cdp.Empty{})
		return err
	})
}

// setCookie sets a cookie for 127.0.0.1, as an earlier sign-in would have
// (nothing when value is empty).
func setCookie(name, value string) chromedp.Action[chromedp.Void] {
	return chromedp.Func(func(ctx context.Context, _ *chromedp.Target) error {
		if value == "" {
			return nil
		}
		_, err := chromedp.Call(ctx, network.SetCookie, network.SetCookieParams{Name: name, Value: value, Domain: "127.0.0.1", Path: "/", HTTPOnly: &[]bool{true}[0]})
		return err
	})
}
