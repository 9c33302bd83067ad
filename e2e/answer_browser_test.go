package e2e

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/agentbridge/agentbridge/client"
)

const answerSID = "5d0c8e1a-7b3f-4c2e-9a61-3f2b8c4d7e90"

// home is the bridge's HOME.
func (b *bridge) home() string {
	for _, kv := range b.env {
		if v, ok := strings.CutPrefix(kv, "HOME="); ok {
			return v
		}
	}
	b.t.Fatal("the bridge has no HOME")
	return ""
}

// hook posts a Claude Code hook payload as `agentbridge hook` does; with
// wait, as `hook --answer` does for a permission prompt: the verdict (or
// "" when none came) arrives on the channel.
func (b *bridge) hook(event, command string, wait bool) <-chan string {
	b.t.Helper()
	payload, _ := json.Marshal(map[string]any{"session_id": answerSID, "hook_event_name": event, "cwd": "/tmp/proj",
		"tool_name": "Bash", "tool_input": map[string]any{"command": command}})
	req, _ := http.NewRequest(http.MethodPost, b.base+"/v1/hooks/claude-code", strings.NewReader(string(payload)))
	req.Header.Set("Authorization", "Bearer "+b.token)
	req.Header.Set("Content-Type", "application/json")
	if wait {
		req.Header.Set("Agentbridge-Wait", "120")
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		b.t.Fatalf("hook %s: %v", event, err)
	}
	out := make(chan string, 1)
	go func() {
		defer res.Body.Close()
		var v struct{ Decision, Message string }
		json.NewDecoder(res.Body).Decode(&v)
		out <- strings.TrimSpace(v.Decision + " " + v.Message)
	}()
	return out
}

// claudeJournal writes the journal of the Claude Code session the hooks
// name: the bridge shows a session its journal has.
func (b *bridge) claudeJournal() {
	b.t.Helper()
	project := filepath.Join(b.home(), ".claude", "projects", "-tmp-proj")
	if err := os.MkdirAll(project, 0o700); err != nil {
		b.t.Fatal(err)
	}
	line, _ := json.Marshal(map[string]any{"parentUuid": nil, "isSidechain": false, "userType": "external", "cwd": "/tmp/proj",
		"sessionId": answerSID, "version": "2.1.332", "type": "user", "message": map[string]any{"role": "user", "content": "publish the site"},
		"uuid": "u1", "timestamp": time.Now().UTC().Format(time.RFC3339Nano)})
	if err := os.WriteFile(filepath.Join(project, answerSID+".jsonl"), append(line, '\n'), 0o600); err != nil {
		b.t.Fatal(err)
	}
}

func verdictOf(t *testing.T, ch <-chan string) string {
	t.Helper()
	select {
	case v := <-ch:
		return v
	case <-time.After(30 * time.Second):
		t.Fatal("the waiting hook got no verdict")
		return ""
	}
}

// TestDashboardAnswers: the dashboard shows a waiting Claude Code session's
// prompt in full with Approve and Deny when its hook waits for an answer;
// Approve of a destructive-looking command asks first (unless the user
// turned that off), Deny asks why and the hook gets the reason, and a
// prompt answered elsewhere meanwhile is refused with a message, never
// approved twice.
func TestDashboardAnswers(t *testing.T) {
	ctx := newTab(t)
	b := startBridgeConfig(t, "hooks:\n  answer: true\n")
	b.claudeJournal()
	if err := chromedp.Do(ctx, chromedp.Navigate(b.dashboardURL())); err != nil {
		t.Fatalf("open the dashboard: %v", err)
	}
	row := `tr.row[data-session="` + answerSID + `"]`
	waitJS(t, ctx, "the Claude Code session", `!!document.querySelector('`+row+`')`)
	// the page's dialogs answer as a user would, and are counted
	if _, err := chromedp.Run(ctx, chromedp.Evaluate[chromedp.Void](`window.__confirms = []; window.confirm = (m) => { window.__confirms.push(m); return true; };
		window.prompt = () => 'not from the dashboard';`)); err != nil {
		t.Fatal(err)
	}
	click := func(sel string) {
		t.Helper()
		if err := chromedp.Do(ctx, chromedp.Click(chromedp.CSS(row+" "+sel))); err != nil {
			t.Fatal(err)
		}
	}
	confirms := func() int {
		n, err := chromedp.Run(ctx, chromedp.Evaluate[int](`window.__confirms.length`))
		if err != nil {
			t.Fatal(err)
		}
		return n
	}
	prev := ""
	next := func(command string) <-chan string {
		t.Helper()
		if prev != "" {
			b.hook("PostToolUse", prev, false) // the previous call ran: a new prompt is a new waiting
			waitJS(t, ctx, "the session to go on", `document.querySelector('`+row+`')?.dataset.status !== 'waiting'`)
		}
		prev = command
		got := b.hook("PermissionRequest", command, true)
		waitJS(t, ctx, "the prompt's buttons", `document.querySelector('`+row+` .request')?.textContent === `+jsString(command))
		return got
	}

	t.Run("approve a destructive-looking command: confirmed first", func(t *testing.T) {
		got := next("git push --force origin main")
		text := rowText(t, ctx, answerSID)
		for _, want := range []string{"Approve Bash: git push --force origin main", "git push --force origin main", "looks destructive", "Approve", "Deny"} {
			if !strings.Contains(text, want) {
				t.Errorf("the row lacks %q:\n%s", want, text)
			}
		}
		screenshot(t, ctx, "dashboard-answer.png")
		click(".answer-allow")
		if v := verdictOf(t, got); v != "allow" {
			t.Errorf("the hook got %q", v)
		}
		if n := confirms(); n != 1 {
			t.Errorf("%d confirmations, want 1", n)
		}
		waitJS(t, ctx, "the buttons to go", `!document.querySelector('`+row+` .answer')`)
	})

	t.Run("deny: the hook gets the reason", func(t *testing.T) {
		got := next("make deploy")
		click(".answer-deny")
		if v := verdictOf(t, got); v != "deny not from the dashboard" {
			t.Errorf("the hook got %q", v)
		}
	})

	t.Run("the confirmation is the user's choice", func(t *testing.T) {
		if err := chromedp.Do(ctx, chromedp.Click(chromedp.CSS(`#confirm-risky`))); err != nil {
			t.Fatal(err)
		}
		waitJS(t, ctx, "the setting off", `document.querySelector('#confirm-risky').getAttribute('aria-checked') === 'false' && localStorage.getItem('agentbridge.confirmRisky.v1') === '0'`)
		before := confirms()
		got := next("rm -rf build")
		click(".answer-allow")
		if v := verdictOf(t, got); v != "allow" {
			t.Errorf("the hook got %q", v)
		}
		if n := confirms(); n != before {
			t.Errorf("asked to confirm with the setting off")
		}
	})

	t.Run("answered elsewhere first: refused, never approved twice", func(t *testing.T) {
		got := next("make release")
		// another client answers first (the page keeps the buttons it read:
		// nothing on the stream changes)
		var e struct{ Answerable struct{ WaitID string } }
		if err := client.New(b.addr, b.token).GetJSON(t.Context(), "/v1/sessions/claude-code/"+answerSID, nil, &e); err != nil {
			t.Fatal(err)
		}
		res, err := client.New(b.addr, b.token).Do(t.Context(), http.MethodPost, "/v1/sessions/claude-code/"+answerSID+"/waits/"+e.Answerable.WaitID+"/answer", nil,
			strings.NewReader(`{"decision":"deny","message":"from the CLI"}`), "")
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		if v := verdictOf(t, got); v != "deny from the CLI" {
			t.Errorf("the hook got %q", v)
		}
		click(".answer-allow")
		waitJS(t, ctx, "the refusal", `!document.querySelector('#alert').hidden && document.querySelector('#alert').textContent.includes('answered or closed meanwhile (answered)')`)
	})
	lines, _ := os.ReadFile(filepath.Join(b.home(), ".local", "state", "agentbridge", "answers.jsonl"))
	if n, c := strings.Count(string(lines), `"result":"accepted"`), strings.Count(string(lines), `"result":"conflict","state":"answered"`); n != 4 || c != 1 || strings.Count(string(lines), `"auth":"cookie"`) != 4 {
		t.Errorf("the audit log has %d accepted answers and %d refused, want 4 and 1, the dashboard's by its cookie:\n%s", n, c, lines)
	}
}

func jsString(s string) string { b, _ := json.Marshal(s); return string(b) }

// TestAnswerLinkInChromium: with a webhook that carries answer links, a
// waiting prompt's post holds a link; opened in a browser it shows the
// request without answering it, and its Deny button answers it with the
// reason typed; the link then answers nothing more.
func TestAnswerLinkInChromium(t *testing.T) {
	ctx := newTab(t)
	posts := make(chan string, 8)
	recv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var tr struct{ Answer *struct{ URL string } }
		json.NewDecoder(r.Body).Decode(&tr)
		if tr.Answer != nil {
			posts <- tr.Answer.URL
		}
	}))
	t.Cleanup(recv.Close)
	const answerURL = "https://bridge.example.test"
	b := startBridgeConfig(t, "hooks:\n  answer: true\nnotify:\n  webhooks:\n    - url: "+recv.URL+"\n      events: [waiting]\n      answerUrl: "+answerURL+"\n")
	b.claudeJournal()
	if err := chromedp.Do(ctx, chromedp.Navigate(b.dashboardURL())); err != nil {
		t.Fatal(err)
	}
	waitJS(t, ctx, "the Claude Code session", `!!document.querySelector('tr.row[data-session="`+answerSID+`"]')`)
	got := b.hook("PermissionRequest", "make deploy", true)
	var link string
	select {
	case link = <-posts:
	case <-time.After(30 * time.Second):
		t.Fatal("the webhook got no answer link")
	}
	path, ok := strings.CutPrefix(link, answerURL+"/answer/")
	if !ok || len(path) != 64 {
		t.Fatalf("answer link %q", link)
	}
	page := b.base + "/answer/" + path // the bridge as the receiver would reach it
	if err := chromedp.Do(ctx, chromedp.Navigate(page)); err != nil {
		t.Fatal(err)
	}
	waitJS(t, ctx, "the prompt's page", `document.querySelector('pre')?.textContent === 'make deploy' && !!document.querySelector('button[value=deny]')`)
	select {
	case v := <-got:
		t.Fatalf("opening the link answered: %q", v)
	default:
	}
	if err := chromedp.Do(ctx, chromedp.SendKeys(`textarea[name=message]`, "not from the phone"), chromedp.Click(`button[value=deny]`)); err != nil {
		t.Fatal(err)
	}
	if v := verdictOf(t, got); v != "deny not from the phone" {
		t.Errorf("the hook got %q", v)
	}
	// the form's answer is a new page: wait for it as the browser loads it
	if err := chromedp.Do(ctx, chromedp.WaitVisible(chromedp.Search(`//h1[text()="Denied"]`))); err != nil {
		t.Fatalf("the answer's page: %v", err)
	}
	// the link answers nothing more
	if err := chromedp.Do(ctx, chromedp.Navigate(page)); err != nil {
		t.Fatal(err)
	}
	waitJS(t, ctx, "the closed page", `document.querySelector('h1')?.textContent === 'This prompt is closed' && !document.querySelector('form')`)
	lines, _ := os.ReadFile(filepath.Join(b.home(), ".local", "state", "agentbridge", "answers.jsonl"))
	if !strings.Contains(string(lines), `"auth":"link"`) || strings.Contains(string(lines), path) {
		t.Errorf("the audit log: %s", lines)
	}
}
