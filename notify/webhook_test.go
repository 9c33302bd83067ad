package notify

import (
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentbridge/agentbridge"
	"github.com/agentbridge/agentbridge/hub"
	"github.com/agentbridge/agentbridge/internal/bridgetest"
	"github.com/prometheus/client_golang/prometheus"
)

// receiver is a local webhook endpoint that records what it was sent.
type receiver struct {
	*httptest.Server
	mu     sync.Mutex
	bodies []Transition
	keys   []string
	hdr    []http.Header
	tries  int
	fail   int           // answer 500 to this many requests first
	delay  time.Duration // before answering
	got    chan struct{}
}

func newReceiver(t *testing.T, fail int, delay time.Duration) *receiver {
	r := &receiver{fail: fail, delay: delay, got: make(chan struct{}, 100)}
	r.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		b, _ := io.ReadAll(req.Body)
		time.Sleep(r.delay)
		r.mu.Lock()
		defer r.mu.Unlock()
		r.tries++
		if r.fail > 0 {
			r.fail--
			w.WriteHeader(http.StatusInternalServerError)
			return
		}
		var tr Transition
		if err := json.Unmarshal(b, &tr); err != nil {
			t.Errorf("body is not JSON: %v", err)
		}
		if strings.Contains(string(b), "secret-token") || strings.Contains(string(b), "/home/") {
			t.Errorf("body carries a secret or a path: %s", b)
		}
		r.bodies = append(r.bodies, tr)
		r.keys = append(r.keys, req.Header.Get("Idempotency-Key"))
		r.hdr = append(r.hdr, req.Header.Clone())
		r.got <- struct{}{}
	}))
	t.Cleanup(r.Close)
	return r
}

func (r *receiver) wait(t *testing.T, n int) {
	t.Helper()
	for range n {
		select {
		case <-r.got:
		case <-time.After(time.Minute): // a hang bound, not a timing
			t.Fatalf("the receiver got %d of %d posts", len(r.snapshot()), n)
		}
	}
}

func (r *receiver) snapshot() []Transition {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.bodies)
}

// bridge is a hub with one push source and webhooks following it.
type bridge struct {
	h     *hub.Hub
	diags chan agentbridge.Diagnostic
}

func newBridge(t *testing.T, hooks ...Webhook) *bridge {
	t.Helper()
	return newLinkingBridge(t, nil, hooks...)
}

// newLinkingBridge is newBridge whose webhooks get answer links from link.
func newLinkingBridge(t *testing.T, link func(source, session string) string, hooks ...Webhook) *bridge {
	t.Helper()
	reg := prometheus.NewRegistry()
	h := hub.New(hub.Options{Registry: reg})
	if err := h.AddPush(agentbridge.SourceInfo{ID: "hooks", Harnesses: []agentbridge.Harness{{ID: "claude-code", DisplayName: "Claude Code"}}}); err != nil {
		t.Fatal(err)
	}
	b := &bridge{h: h, diags: make(chan agentbridge.Diagnostic, 100)}
	// Timeout: a request that took longer would be tried again, a
	// duplicate no test wants; a loaded machine under -race can be slow.
	w := &Webhooks{Hooks: hooks, Backoff: 20 * time.Millisecond, Timeout: time.Minute, Host: "box", Link: link,
		Report: func(src string, d agentbridge.Diagnostic) {
			_ = h.Diagnose(src, d)
			b.diags <- d
		}}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); w.Run(ctx, h) }()
	t.Cleanup(func() { cancel(); <-done })
	bridgetest.AwaitSubscribers(t, reg, 1) // the follower holds its baseline
	return b
}

func (b *bridge) event(t *testing.T, id string, e agentbridge.Event) {
	t.Helper()
	if err := b.h.Publish("hooks", []agentbridge.Op{{Op: agentbridge.OpEvent, SessionID: id, Harness: "claude-code", Event: e}}); err != nil {
		t.Fatal(err)
	}
}

func (b *bridge) wait(t *testing.T, id, waitID, reason string) {
	t.Helper()
	b.event(t, id, agentbridge.Event{Kind: agentbridge.KindWaitStarted, WaitID: waitID, State: agentbridge.StatusWaiting, Reason: reason})
}

func TestWebhookPostsEachTransitionOnce(t *testing.T) {
	all := newReceiver(t, 0, 0)
	onlyFailed := newReceiver(t, 0, 0)
	b := newBridge(t,
		Webhook{URL: all.URL + "/ntfy-topic", Events: Events, Headers: map[string]string{"Authorization": "Bearer ntfy-of-the-user"}},
		Webhook{URL: onlyFailed.URL, Events: []string{EventFailed}})
	b.event(t, "s1", agentbridge.Event{Kind: agentbridge.KindSessionStarted, Title: "Fix the tests in /home/u/secret-token/x.go"})
	b.event(t, "s1", agentbridge.Event{Kind: agentbridge.KindTurnStarted, TurnID: "t1"})
	b.wait(t, "s1", "w1", "approve Bash")
	b.event(t, "s1", agentbridge.Event{Kind: agentbridge.KindToolStarted, ToolID: "x", Name: "Bash"}) // the same wait goes on
	b.event(t, "s1", agentbridge.Event{Kind: agentbridge.KindWaitFinished, WaitID: "w1"})
	b.event(t, "s1", agentbridge.Event{Kind: agentbridge.KindAgentDone, Outcome: agentbridge.OutcomeError})
	// A marker session's failed turn goes to both webhooks after all of
	// s1's posts (each webhook posts in order): once it has come, nothing
	// more of s1 can.
	failed(t, b, "marker")
	all.wait(t, 3)
	onlyFailed.wait(t, 2)
	got := all.snapshot()
	if len(got) != 3 || got[0].Status != "waiting" || got[1].Status != "failed" || got[2].SessionID != "marker" {
		t.Fatalf("posts = %+v, want waiting then failed, then the marker's", got)
	}
	w := got[0]
	if w.Source != "hooks" || w.SessionID != "s1" || w.Harness != "claude-code" || w.WaitingFor != "approve Bash" || w.Host != "box" || w.At == 0 || w.Text == "" {
		t.Errorf("waiting post = %+v", w)
	}
	if strings.Contains(w.Title, "/home/") {
		t.Errorf("title %q carries a path", w.Title)
	}
	if all.hdr[0].Get("Authorization") != "Bearer ntfy-of-the-user" || all.hdr[0].Get("Content-Type") != "application/json" {
		t.Errorf("headers = %v", all.hdr[0])
	}
	if f := onlyFailed.snapshot(); len(f) != 2 || f[0].Status != "failed" || f[0].SessionID != "s1" || f[1].SessionID != "marker" {
		t.Errorf("the failed-only webhook got %+v, want s1's failed turn, then the marker's", f)
	}
}

// failed publishes a session's start and failed turn: one "failed" post.
func failed(t *testing.T, b *bridge, id string) {
	t.Helper()
	b.event(t, id, agentbridge.Event{Kind: agentbridge.KindSessionStarted, Title: "Marker"})
	b.event(t, id, agentbridge.Event{Kind: agentbridge.KindTurnStarted, TurnID: "t1"})
	b.event(t, id, agentbridge.Event{Kind: agentbridge.KindAgentDone, Outcome: agentbridge.OutcomeError})
}

func TestWebhookRetriesWithoutDuplicates(t *testing.T) {
	r := newReceiver(t, 2, 0) // two 500s, then 200s
	b := newBridge(t, Webhook{URL: r.URL, Events: []string{EventWaiting}})
	b.wait(t, "s1", "w1", "approve Bash")
	r.wait(t, 1)
	// A marker's post comes after any repeat of s1's would have.
	b.wait(t, "marker", "w1", "marker")
	r.wait(t, 1)
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.bodies) != 2 || r.bodies[0].SessionID != "s1" || r.bodies[1].SessionID != "marker" || r.tries != 4 {
		t.Errorf("%d delivered in %d tries, want s1's in 3, then the marker's in 1", len(r.bodies), r.tries)
	}
	select {
	case d := <-b.diags:
		t.Errorf("a delivered post made a diagnostic: %+v", d)
	default:
	}
}

func TestWebhookSlowReceiverGetsEveryTransitionInOrder(t *testing.T) {
	slow := newReceiver(t, 0, 150*time.Millisecond)
	b := newBridge(t, Webhook{URL: slow.URL, Events: []string{EventWaiting}})
	var want []string
	for i := range 5 {
		id := "s" + string(rune('1'+i))
		b.wait(t, id, "w", "approve "+id)
		want = append(want, id)
	}
	b.wait(t, "marker", "w", "marker") // comes after any repeat of the five
	want = append(want, "marker")
	slow.wait(t, 6)
	var got []string
	keys := map[string]bool{}
	for i, tr := range slow.snapshot() {
		got = append(got, tr.SessionID)
		keys[slow.keys[i]] = true
	}
	if !slices.Equal(got, want) || len(keys) != len(want) {
		t.Errorf("slow receiver got %v (%d distinct keys), want %v once each", got, len(keys), want)
	}
}

func TestWebhookDeadReceiverIsADiagnostic(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	dead := "http://" + l.Addr().String() + "/hooks/T000/B000/XXXXsecretXXXX"
	l.Close()
	live := newReceiver(t, 0, 0)
	b := newBridge(t, Webhook{URL: dead, Events: []string{EventWaiting}}, Webhook{URL: live.URL, Events: []string{EventWaiting}})
	b.wait(t, "s1", "w1", "approve Bash")
	live.wait(t, 1) // the dead one does not hold up the others
	select {
	case d := <-b.diags:
		if d.Code != "webhook-failed" || strings.Contains(d.Message, "secret") || strings.Contains(d.Message, "127.0.0.1") {
			t.Errorf("diagnostic = %+v", d)
		}
	case <-time.After(time.Minute):
		t.Fatal("no diagnostic for a dead webhook")
	}
	found := false
	for _, d := range b.h.Diagnostics() {
		found = found || d.Diagnostic.Code == "webhook-failed"
	}
	if !found {
		t.Error("GET /v1/diagnostics does not show the failed webhook")
	}
}

// A receiver that redirects (to another origin, to a loopback service, to
// itself) is not followed: nothing is sent to the target, so neither the
// body nor the configured headers (an X-Api-Key) go anywhere else; the 3xx
// is a final answer, a diagnostic.
func TestWebhookRedirectIsNotFollowed(t *testing.T) {
	target := newReceiver(t, 0, 0)
	for _, code := range []int{http.StatusTemporaryRedirect, http.StatusPermanentRedirect, http.StatusFound} {
		var tries sync.WaitGroup
		tries.Add(1)
		redirector := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			defer tries.Done()
			http.Redirect(w, r, target.URL+"/stolen", code)
		}))
		b := newBridge(t, Webhook{URL: redirector.URL, Events: []string{EventWaiting}, Headers: map[string]string{"X-Api-Key": "k-123"}})
		b.wait(t, "s1", "w1", "approve Bash")
		select {
		case d := <-b.diags:
			if d.Code != "webhook-failed" || !strings.Contains(d.Message, "redirect") {
				t.Errorf("%d: diagnostic %+v", code, d)
			}
		case <-time.After(time.Minute):
			t.Fatalf("%d: no diagnostic for a redirect", code)
		}
		tries.Wait() // one request only: a 3xx is not tried again
		redirector.Close()
	}
	target.mu.Lock()
	defer target.mu.Unlock()
	if target.tries != 0 {
		t.Fatalf("the redirect target was sent %d requests", target.tries)
	}
}

// TestWebhookAnswerLink: a waiting transition whose prompt can be answered
// carries its answer link to a webhook with an AnswerURL, and to no other;
// a prompt that cannot be answered, and any other transition, carry none.
func TestWebhookAnswerLink(t *testing.T) {
	linked := newReceiver(t, 0, 0)
	plain := newReceiver(t, 0, 0)
	b := newLinkingBridge(t, func(source, session string) string {
		if source == "hooks" && session == "s1" {
			return "0123abcd"
		}
		return ""
	},
		Webhook{URL: linked.URL, Events: Events, AnswerURL: "https://bridge.example.ts.net/"},
		Webhook{URL: plain.URL, Events: Events})
	b.wait(t, "s1", "w1", "approve Bash")
	b.wait(t, "s2", "w2", "approve Edit")
	b.event(t, "s1", agentbridge.Event{Kind: agentbridge.KindAgentDone, Outcome: agentbridge.OutcomeError})
	linked.wait(t, 3)
	plain.wait(t, 3)
	got := linked.snapshot()
	if got[0].SessionID != "s1" || got[0].Answer == nil || got[0].Answer.URL != "https://bridge.example.ts.net/answer/0123abcd" {
		t.Errorf("the answerable wait's post: %+v", got[0])
	}
	if got[1].Answer != nil || got[2].Answer != nil {
		t.Errorf("posts that cannot be answered carry a link: %+v, %+v", got[1].Answer, got[2].Answer)
	}
	for _, tr := range plain.snapshot() {
		if tr.Answer != nil {
			t.Errorf("a webhook without answerUrl got a link: %+v", tr)
		}
	}
}
