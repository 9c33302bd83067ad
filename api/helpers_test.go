package api

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentbridge/agentbridge"
	"github.com/agentbridge/agentbridge/hub"
)

const testToken = "test-token-0123456789abcdef"

// fakeHub is a Hub with canned answers that records what it was asked.
type fakeHub struct {
	mu         sync.Mutex
	sources    []agentbridge.SourceState
	entries    []agentbridge.Entry
	diags      []agentbridge.DiagnosticEntry
	rev        uint64
	filter     agentbridge.Filter
	published  []agentbridge.Op
	publishErr error
	harnessErr error
	switched   string
	panicOn    string
}

func newFakeHub() *fakeHub {
	return &fakeHub{
		rev: 1700000000000001,
		sources: []agentbridge.SourceState{{
			SourceInfo: agentbridge.SourceInfo{ID: "claude-code", DisplayName: "Claude Code",
				EnvironmentVariables: []string{"CLAUDE_CONFIG_DIR"},
				Observes:             map[string]agentbridge.Observe{"waiting": {How: agentbridge.Observed, From: "journal"}}},
			Harnesses: []agentbridge.HarnessState{{Harness: agentbridge.Harness{ID: "claude-code", DisplayName: "Claude Code"}, Enabled: true}},
		}, {
			SourceInfo: agentbridge.SourceInfo{ID: "example-push", DisplayName: "Example Agent", EnvironmentVariables: []string{}, Push: true},
			Harnesses:  []agentbridge.HarnessState{{Harness: agentbridge.Harness{ID: "example-agent", DisplayName: "Example Agent"}, Enabled: true}},
		}},
		entries: []agentbridge.Entry{{Source: "claude-code", Snapshot: agentbridge.Snapshot{
			ID: "sess-1", Harness: "claude-code", PID: 4242, Cwd: "/home/u/p", Title: "fix the tests",
			Status: agentbridge.StatusWaiting, WaitingFor: "approval", LastTurn: agentbridge.LastTurnCompleted, LastTurnEndedAt: 1700000000000,
			Subagents: []agentbridge.Subagent{{ID: "a1", Type: "explore", Status: agentbridge.SubagentRunning}},
		}}},
		diags: []agentbridge.DiagnosticEntry{{Source: "codex", Revision: 1700000000000000,
			Diagnostic: agentbridge.Diagnostic{Code: "journal-unreadable", Message: "a journal could not be read"}, At: 1700000000000}},
	}
}

func (f *fakeHub) maybePanic(m string) {
	if f.panicOn == m {
		panic("fake hub: " + m)
	}
}

func (f *fakeHub) Sources() []agentbridge.SourceState { f.maybePanic("Sources"); return f.sources }

func (f *fakeHub) SetHarness(source, harness string, enabled bool) (agentbridge.SourceState, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.harnessErr != nil {
		return agentbridge.SourceState{}, f.harnessErr
	}
	f.switched = fmt.Sprintf("%s/%s=%v", source, harness, enabled)
	st := f.sources[0]
	st.Harnesses = []agentbridge.HarnessState{{Harness: st.Harnesses[0].Harness, Enabled: enabled}}
	return st, nil
}

func (f *fakeHub) Sessions(fl agentbridge.Filter) (uint64, []agentbridge.Entry) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.filter = fl
	return f.rev, f.entries
}

func (f *fakeHub) Session(source, id string) (agentbridge.Entry, bool) {
	return f.SessionOn("", source, id)
}

func (f *fakeHub) SessionOn(host, source, id string) (agentbridge.Entry, bool) {
	for _, e := range f.entries {
		if e.Host == host && e.Source == source && e.Snapshot.ID == id {
			return e, true
		}
	}
	return agentbridge.Entry{}, false
}

func (f *fakeHub) Diagnostics() []agentbridge.DiagnosticEntry { return f.diags }

func (f *fakeHub) Publish(source string, ops []agentbridge.Op) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.publishErr != nil {
		return f.publishErr
	}
	f.published = ops
	f.rev += uint64(len(ops))
	return nil
}

// Check answers Publish's error for an empty ops (the source check) and
// nil otherwise.
func (f *fakeHub) Check(source string, ops []agentbridge.Op) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if len(ops) == 0 && f.publishErr != nil && !errors.Is(f.publishErr, hub.ErrInvalid) {
		return f.publishErr
	}
	return nil
}

func (f *fakeHub) Revision() uint64 {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.rev
}

func (f *fakeHub) lastFilter() agentbridge.Filter {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.filter
}

// fakeEvents writes one SSE frame and records the filter it got.
type fakeEvents struct {
	mu     sync.Mutex
	filter agentbridge.Filter
}

func (e *fakeEvents) Serve(w http.ResponseWriter, r *http.Request, f agentbridge.Filter) {
	e.mu.Lock()
	e.filter = f
	e.mu.Unlock()
	w.Header().Set("Content-Type", "text/event-stream")
	fmt.Fprint(w, "retry: 1000\n\n")
}

type fixture struct {
	ts     *httptest.Server
	hub    *fakeHub
	events *fakeEvents
	srv    *Server
	host   string // host:port of the listener
}

// newFixture starts a Server over a real listener; mutate adjusts it before
// Handler is built.
func newFixture(t testing.TB, mutate func(*Server)) *fixture {
	t.Helper()
	ts := httptest.NewUnstartedServer(nil)
	f := &fixture{ts: ts, hub: newFakeHub(), events: &fakeEvents{}, host: ts.Listener.Addr().String()}
	f.srv = &Server{Hub: f.hub, Events: f.events, Addr: f.host, Token: testToken, OpenAPI: []byte("openapi: 3.0.3\n")}
	if mutate != nil {
		mutate(f.srv)
	}
	ts.Config.Handler = f.srv.Handler()
	ts.Start()
	t.Cleanup(ts.Close)
	return f
}

// req is one request to send; zero fields take sensible defaults (token
// sent, JSON content type on bodies).
type req struct {
	method  string
	path    string
	body    string
	ctype   string // "" means application/json when there is a body; "-" sends none
	noToken bool
	headers map[string]string
	host    string
}

func (f *fixture) do(t testing.TB, q req) (*http.Response, []byte) {
	t.Helper()
	if q.method == "" {
		q.method = http.MethodGet
	}
	var body io.Reader
	if q.body != "" {
		body = strings.NewReader(q.body)
	}
	r, err := http.NewRequest(q.method, f.ts.URL+q.path, body)
	if err != nil {
		t.Fatal(err)
	}
	if q.body != "" || q.ctype != "" {
		switch q.ctype {
		case "":
			r.Header.Set("Content-Type", "application/json")
		case "-":
		default:
			r.Header.Set("Content-Type", q.ctype)
		}
	}
	if !q.noToken {
		r.Header.Set("Authorization", "Bearer "+testToken)
	}
	for k, v := range q.headers {
		r.Header.Set(k, v)
	}
	if q.host != "" {
		r.Host = q.host
	}
	c := &http.Client{Timeout: time.Minute, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err := c.Do(r)
	if err != nil {
		t.Fatalf("%s %s: %v", q.method, q.path, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("%s %s: read body: %v", q.method, q.path, err)
	}
	return resp, b
}

// rawRequest sends text over TCP and returns the status line and the rest.
func (f *fixture) rawRequest(t testing.TB, text string) (status string, rest string) {
	t.Helper()
	conn, err := net.DialTimeout("tcp", f.host, 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	conn.SetDeadline(time.Now().Add(10 * time.Second))
	if _, err := io.WriteString(conn, text); err != nil {
		t.Fatal(err)
	}
	br := bufio.NewReader(conn)
	status, err = br.ReadString('\n')
	if err != nil {
		t.Fatalf("read status: %v", err)
	}
	b, _ := io.ReadAll(br)
	return strings.TrimSpace(status), string(b)
}

// problemOf checks that a response is a problem document with status and
// returns it.
func problemOf(t testing.TB, resp *http.Response, body []byte, status int) Problem {
	t.Helper()
	if resp.StatusCode != status {
		t.Errorf("status %d, want %d; body %s", resp.StatusCode, status, body)
	}
	if ct := resp.Header.Get("Content-Type"); ct != "application/problem+json" {
		t.Errorf("Content-Type %q, want application/problem+json", ct)
	}
	var p Problem
	if err := json.Unmarshal(body, &p); err != nil {
		t.Fatalf("problem body %q: %v", body, err)
	}
	if p.Status != resp.StatusCode || !strings.HasPrefix(p.Type, ProblemTypePrefix) || p.Title == "" || p.Detail == "" {
		t.Errorf("problem %+v: want type %s…, a title, a detail and status %d", p, ProblemTypePrefix, resp.StatusCode)
	}
	if strings.Contains(string(body), testToken) {
		t.Errorf("problem body reveals the token: %s", body)
	}
	return p
}
