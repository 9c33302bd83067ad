package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/agentbridge/agentbridge"
	"github.com/agentbridge/agentbridge/client"
	"github.com/agentbridge/agentbridge/config"
	"github.com/agentbridge/agentbridge/internal/bridgetest"
	"github.com/agentbridge/agentbridge/sources"
)

// logBuffer is a goroutine-safe buffer for serve's output.
type logBuffer = bridgetest.LogBuffer

// runServe runs serveMain in-process with env and args until the test
// ends and returns once it printed its dashboard URL.
func runServe(t *testing.T, env []string, args ...string) *bridgetest.Served {
	t.Helper()
	s := bridgetest.Serve(t, func(ctx context.Context, stdout, stderr io.Writer) error {
		return serveMain(ctx, args, env, stdout, stderr)
	})
	u, err := dashboardFrom(t, s.Line, env)
	if err != nil {
		t.Fatalf("dashboard URL: %v", err)
	}
	s.URL, s.Token = u, u.Query().Get("token")
	return s
}

// startServe runs serveMain in the background and returns the dashboard URL
// it printed, a way to stop it, and its stderr.
func startServe(t *testing.T, env []string, args ...string) (dashboard *url.URL, stop func() error, stderr *logBuffer) {
	t.Helper()
	s := runServe(t, env, args...)
	return s.URL, func() error { return s.Stop(t) }, s.Stderr
}

// pushHome makes a home whose configuration declares the push source
// example-push (harness example-agent), and the environment naming it.
func pushHome(t *testing.T) (home string, env []string) {
	t.Helper()
	home = t.TempDir()
	cfgDir := filepath.Join(home, ".config", "agentbridge")
	if err := os.MkdirAll(cfgDir, 0o700); err != nil {
		t.Fatal(err)
	}
	yaml := "push:\n  - id: example-push\n    displayName: Example Agent\n    harnesses:\n      - {id: example-agent, displayName: Example Agent}\n"
	if err := os.WriteFile(filepath.Join(cfgDir, "config.yaml"), []byte(yaml), 0o600); err != nil {
		t.Fatal(err)
	}
	return home, []string{"HOME=" + home}
}

func TestServeAnswersAndShutsDown(t *testing.T) {
	t.Parallel()
	home, env := pushHome(t)
	u, stop, stderr := startServe(t, env, "--listen", "127.0.0.1:0")

	if u.Port() == "0" || u.Hostname() != "127.0.0.1" {
		t.Errorf("dashboard URL %s: want the real port on 127.0.0.1", u)
	}
	token := u.Query().Get("token")
	b, err := os.ReadFile(filepath.Join(home, ".local/state/agentbridge/token"))
	if err != nil {
		t.Fatalf("token file: %v", err)
	}
	if token == "" || strings.TrimSpace(string(b)) != token {
		t.Errorf("URL token %q, token file %q: want the same, non-empty", token, b)
	}

	base := "http://" + u.Host
	get := func(path, tok string) (int, string) {
		t.Helper()
		r, _ := http.NewRequest("GET", base+path, nil)
		if tok != "" {
			r.Header.Set("Authorization", "Bearer "+tok)
		}
		resp, err := http.DefaultClient.Do(r)
		if err != nil {
			t.Fatalf("GET %s: %v", path, err)
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(body)
	}
	if code, body := get("/v1/sources", token); code != 200 || !strings.Contains(body, `"id":"example-push"`) {
		t.Errorf("GET /v1/sources = %d %s; want 200 listing the push source", code, body)
	}
	if code, _ := get("/v1/sources", ""); code != 401 {
		t.Errorf("GET /v1/sources without the token = %d, want 401", code)
	}
	if code, body := get("/healthz", ""); code != 200 || !strings.Contains(body, `"version"`) {
		t.Errorf("GET /healthz = %d %s; want 200 with the version", code, body)
	}
	if code, body := get("/metrics", token); code != 200 || !strings.Contains(body, "go_goroutines") {
		t.Errorf("GET /metrics = %d; want 200 with Go metrics (%.200s)", code, body)
	}

	// An open stream must not hold the shutdown up.
	stream, err := client.New(u.Host, token).Open(t.Context(), client.StreamOptions{Format: client.SSE})
	if err != nil {
		t.Fatalf("GET /v1/events: %v", err)
	}
	defer stream.Close()
	if stream.Format() != client.SSE {
		t.Fatalf("GET /v1/events answered %v, want text/event-stream", stream.Format())
	}
	if ev, err := stream.Next(); err != nil || ev.Name != agentbridge.RecordReset {
		t.Fatalf("the stream did not start with a reset: %s, %v", ev.Name, err)
	}

	if err := stop(); err != nil {
		t.Errorf("serve returned %v after cancel, want nil", err)
	}
	for { // ends: the stream was closed
		if _, err := stream.Next(); err != nil {
			break
		}
	}
	if _, err := http.Get(base + "/healthz"); err == nil {
		t.Errorf("server still answers after shutdown")
	}
	if strings.Contains(stderr.String(), token) {
		t.Errorf("the token appears in the log:\n%s", stderr)
	}
}

func TestServeReusesTheTokenAcrossRestarts(t *testing.T) {
	t.Parallel()
	env := []string{"HOME=" + t.TempDir()}
	u1, stop, _ := startServe(t, env, "--listen=127.0.0.1:0")
	if err := stop(); err != nil {
		t.Fatal(err)
	}
	u2, stop2, _ := startServe(t, env, "--listen=127.0.0.1:0")
	defer stop2()
	if a, b := u1.Query().Get("token"), u2.Query().Get("token"); a == "" || a != b {
		t.Errorf("tokens %q then %q: want one token reused", a, b)
	}
}

func TestServeAuthNoneHasNoTokenInURL(t *testing.T) {
	t.Parallel()
	home := t.TempDir()
	u, stop, _ := startServe(t, []string{"HOME=" + home}, "--listen=127.0.0.1:0", "--auth=none")
	defer stop()
	if u.RawQuery != "" {
		t.Errorf("URL %s carries a query with auth none", u)
	}
	if _, err := os.Stat(filepath.Join(home, ".local/state/agentbridge/token")); err == nil {
		t.Errorf("a token file was made with auth none")
	}
	resp, err := http.Get("http://" + u.Host + "/v1/sessions")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Errorf("GET /v1/sessions with auth none = %d, want 200", resp.StatusCode)
	}
}

func TestServeRefusesUnsafeSettings(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		args []string
		env  []string
		want string
	}{
		{"auth none on all interfaces", []string{"--listen=0.0.0.0:0", "--allow-remote", "--auth=none"}, nil, "auth none"},
		{"non-loopback without the flag", []string{"--listen=0.0.0.0:0"}, nil, "allowRemote"},
		{"auth none from the environment", []string{"--allow-remote"}, []string{"AGENTBRIDGE_LISTEN=[::]:0", "AGENTBRIDGE_AUTH=none"}, "auth none"},
		{"unknown source switch", nil, []string{"AGENTBRIDGE_CONFIG=CFG"}, "sources.nosuchagent"},
		{"stray argument", []string{"now"}, nil, "unexpected argument"},
		{"bad flag", []string{"--listen"}, nil, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			home := t.TempDir()
			cfg := filepath.Join(home, "c.yaml")
			if err := os.WriteFile(cfg, []byte("listen: 127.0.0.1:0\nsources:\n  nosuchagent: {enabled: false}\n"), 0o600); err != nil {
				t.Fatal(err)
			}
			env := []string{"HOME=" + home}
			for _, e := range tt.env {
				env = append(env, strings.ReplaceAll(e, "CFG", cfg))
			}
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			var out, errb logBuffer
			err := serveMain(ctx, tt.args, env, &out, &errb)
			if err == nil {
				t.Fatalf("serveMain(%q) = nil, want an error", tt.args)
			}
			if !strings.Contains(err.Error(), tt.want) {
				t.Errorf("serveMain(%q) = %v, want it to name %q", tt.args, err, tt.want)
			}
			if out.String() != "" {
				t.Errorf("stdout %q: nothing should be printed when refusing to start", out.String())
			}
		})
	}
}

func TestServeBuildsTheConfiguredSources(t *testing.T) {
	t.Parallel()
	// Every registered source that is not optional runs by default.
	var defaults []string
	for _, r := range sources.Registered() {
		if !r.Optional {
			defaults = append(defaults, r.Info.ID)
		}
	}
	with := func(ids []string, add string) []string {
		out := append(slices.Clone(ids), add)
		slices.Sort(out)
		return out
	}
	without := func(ids []string, drop string) []string {
		return slices.DeleteFunc(slices.Clone(ids), func(s string) bool { return s == drop })
	}
	if !slices.Contains(defaults, "claude-code") || !slices.Contains(defaults, "codex") || slices.Contains(defaults, "example") {
		t.Fatalf("default sources %v", defaults)
	}
	tests := []struct {
		name string
		env  []string
		want []string // source ids, in order
	}{
		{"defaults", nil, defaults},
		{"example agent home set", []string{"EXAMPLE_AGENT_HOME=@EXDIR@"}, with(defaults, "example")},
		{"codex switched off", []string{"AGENTBRIDGE_CONFIG=CFG"}, append(without(defaults, "codex"), "test-push")},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			home := t.TempDir()
			cfg := filepath.Join(home, "c.yaml")
			yaml := "sources:\n  codex: {enabled: false}\npush:\n  - id: test-push\n    harnesses: [{id: h}]\n"
			if err := os.WriteFile(cfg, []byte(yaml), 0o600); err != nil {
				t.Fatal(err)
			}
			env := []string{"HOME=" + home}
			for _, e := range tt.env {
				e = strings.ReplaceAll(e, "CFG", cfg)
				env = append(env, strings.ReplaceAll(e, "@EXDIR@", filepath.Join(home, "example")))
			}
			s := runServe(t, env, "--listen=127.0.0.1:0")
			var body struct {
				Sources []struct {
					ID string `json:"id"`
				} `json:"sources"`
			}
			if err := s.Client().GetJSON(t.Context(), "/v1/sources", nil, &body); err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, s := range body.Sources {
				got = append(got, s.ID)
			}
			if strings.Join(got, ",") != strings.Join(tt.want, ",") {
				t.Errorf("sources %v, want %v", got, tt.want)
			}
		})
	}
}

// TestServeShutsDownQuicklyWithOpenConnections: cancelling serve (SIGTERM)
// ends it promptly although clients hold connections open: a stream that is
// read, a stream whose reader stopped, and a connection that never sent a
// request (Node's fetch keeps such a spare connection; net/http's Shutdown
// waited 5 s for it). The bound is generous; the bug took seconds. (A
// stream blocked writing to a stalled reader is covered in package sse.)
func TestServeShutsDownQuicklyWithOpenConnections(t *testing.T) {
	t.Parallel()
	home := t.TempDir()
	u, stop, stderr := startServe(t, []string{"HOME=" + home}, "--listen=127.0.0.1:0")
	token := u.Query().Get("token")
	dial := func() net.Conn {
		t.Helper()
		c, err := net.DialTimeout("tcp", u.Host, 10*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		return c
	}
	for _, path := range []string{"/v1/events", "/v1/events?format=ndjson"} {
		for _, read := range []bool{true, false} {
			c := dial()
			fmt.Fprintf(c, "GET %s HTTP/1.1\r\nHost: %s\r\nAuthorization: Bearer %s\r\n\r\n", path, u.Host, token)
			br := bufio.NewReader(c)
			c.SetReadDeadline(time.Now().Add(10 * time.Second))
			if line, err := br.ReadString('\n'); err != nil || !strings.Contains(line, "200") {
				t.Fatalf("%s: %q %v", path, line, err)
			}
			c.SetReadDeadline(time.Time{})
			if read {
				go io.Copy(io.Discard, br)
			}
		}
	}
	silent := dial() // connected, never sends a request
	// Make sure the server has accepted it before stopping.
	silent.SetReadDeadline(time.Now().Add(50 * time.Millisecond))
	silent.Read(make([]byte, 1))

	start := time.Now()
	if err := stop(); err != nil {
		t.Errorf("serve returned %v, want nil", err)
	}
	checkGraceful(t, stderr, "open streams and a silent connection")
	t.Logf("shutdown took %v", time.Since(start))
}

// TestServeRevisionsGrowAcrossRestarts: the revision mark kept in the state
// directory lifts a restarted bridge's revisions above everything an
// earlier run may have handed out, even when the clock says otherwise.
func TestServeRevisionsGrowAcrossRestarts(t *testing.T) {
	t.Parallel()
	home := t.TempDir()
	env := []string{"HOME=" + home}
	markFile := filepath.Join(home, ".local/state/agentbridge/revision")
	revision := func(u *url.URL) uint64 {
		t.Helper()
		l, err := client.New(u.Host, u.Query().Get("token")).Sessions(t.Context(), nil)
		if err != nil {
			t.Fatal(err)
		}
		return l.Revision
	}
	u1, stop1, _ := startServe(t, env, "--listen=127.0.0.1:0")
	rev1 := revision(u1)
	if err := stop1(); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(markFile)
	if err != nil {
		t.Fatalf("no revision mark was kept: %v", err)
	}
	var mark uint64
	if _, err := fmt.Sscan(string(b), &mark); err != nil || mark < rev1 {
		t.Fatalf("revision mark %q, want a number at least the run's revision %d", b, rev1)
	}

	// An earlier run far ahead of the clock (it published a great many
	// records, or the clock was set back since).
	const ahead = uint64(1) << 52
	if err := os.WriteFile(markFile, []byte(fmt.Sprintln(ahead)), 0o600); err != nil {
		t.Fatal(err)
	}
	u2, stop2, _ := startServe(t, env, "--listen=127.0.0.1:0")
	defer stop2()
	if rev2 := revision(u2); rev2 <= ahead {
		t.Errorf("restarted bridge at revision %d, want above the kept mark %d", rev2, ahead)
	}
}

// TestServePrintsTheTokenOnlyToATerminal: to a terminal, serve prints the
// dashboard URL with its token; to anything else only the address (the
// pipe case is checked by every test that starts serve, via dashboardFrom).
func TestServePrintsTheTokenOnlyToATerminal(t *testing.T) {
	t.Parallel()
	env := testEnv(t)
	out := &logBuffer{}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	a := &app{env: env, stdin: strings.NewReader(""), stdout: out, stderr: io.Discard, backoff: watchBackoff,
		isTerminal: func(io.Writer) bool { return true }}
	done := make(chan error, 1)
	go func() { done <- a.execute(ctx, []string{"serve", "--listen", "127.0.0.1:0"}) }()
	waitUntil(t, "the dashboard URL", func() bool { return strings.Contains(out.String(), "\n") })
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	tok, err := os.ReadFile(filepath.Join(envGet(env, "XDG_STATE_HOME"), "agentbridge", "token"))
	if err != nil {
		t.Fatal(err)
	}
	line := strings.SplitN(out.String(), "\n", 2)[0]
	if !strings.HasPrefix(line, "agentbridge: dashboard at http://127.0.0.1:") || !strings.HasSuffix(line, "/?token="+strings.TrimSpace(string(tok))) {
		t.Errorf("serve printed %q to a terminal, want the dashboard URL with the token", line)
	}
}

// TestServeFallsBackWhenTheAddressIsTaken: the demo's fallback listens
// elsewhere when its address is taken, and says where.
func TestServeFallsBackWhenTheAddressIsTaken(t *testing.T) {
	t.Parallel()
	busy := realListener(t)
	env := testEnv(t)
	out := &logBuffer{}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	a := &app{env: env, stdin: strings.NewReader(""), stdout: out, stderr: io.Discard, backoff: watchBackoff}
	cfg, err := config.Load(nil, append(env, "AGENTBRIDGE_LISTEN="+busy))
	if err != nil {
		t.Fatal(err)
	}
	var got string
	done := make(chan error, 1)
	go func() {
		done <- a.serve(ctx, cfg, serveOptions{fallbackListen: "127.0.0.1:0", listening: func(addr string) func() {
			got = addr
			return func() {}
		}})
	}()
	waitUntil(t, "serve to listen", func() bool { return strings.Contains(out.String(), "serving at") })
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if got == "" || got == busy || !strings.Contains(out.String(), got) {
		t.Errorf("listened at %q (busy: %s), printed %q", got, busy, out.String())
	}
}

// TestServeKeepsHistoryAcrossRestarts: what a push source told is in the
// history after the bridge stopped and started again (the writer writes
// what it was told before the store closes), and with --history=false the
// history routes answer history-off.
func TestServeKeepsHistoryAcrossRestarts(t *testing.T) {
	t.Parallel()
	_, env := pushHome(t)
	now := time.Now().UnixMilli()
	ev := func(e agentbridge.Event) map[string]any {
		return map[string]any{"op": "event", "sessionId": "s1", "harness": "example-agent", "event": e}
	}
	ops := []map[string]any{
		ev(agentbridge.Event{Kind: agentbridge.KindSessionStarted, OccurredAt: now - 5000, Cwd: "/work/app"}),
		ev(agentbridge.Event{Kind: agentbridge.KindTurnStarted, TurnID: "t1", OccurredAt: now - 4000}),
		ev(agentbridge.Event{Kind: agentbridge.KindWaitStarted, WaitID: "w1", State: agentbridge.StatusWaiting, Reason: "Approve Bash", OccurredAt: now - 3000}),
		ev(agentbridge.Event{Kind: agentbridge.KindWaitFinished, WaitID: "w1", OccurredAt: now - 2000}),
		ev(agentbridge.Event{Kind: agentbridge.KindAgentDone, Outcome: agentbridge.OutcomeSuccess, OccurredAt: now - 1000}),
	}
	body, err := json.Marshal(ops)
	if err != nil {
		t.Fatal(err)
	}
	u, stop, _ := startServe(t, env, "--listen=127.0.0.1:0")
	c := client.New(u.Host, u.Query().Get("token"))
	res, err := c.Do(t.Context(), http.MethodPost, "/v1/sources/example-push/publish", nil, bytes.NewReader(body), "")
	if err != nil {
		t.Fatalf("publish: %v", err)
	}
	res.Body.Close()
	if err := stop(); err != nil {
		t.Fatal(err)
	}

	u, stop, _ = startServe(t, env, "--listen=127.0.0.1:0")
	c = client.New(u.Host, u.Query().Get("token"))
	got, err := c.History(t.Context(), client.HistoryQuery{})
	if err != nil {
		t.Fatalf("history after a restart: %v", err)
	}
	if len(got) != 1 || got[0].ID != "s1" || len(got[0].Turns) != 1 {
		t.Fatalf("history after a restart: %+v, want session s1 with one turn", got)
	}
	turn := got[0].Turns[0]
	if turn.Outcome != agentbridge.OutcomeSuccess || turn.StartedAt != now-4000 || turn.EndedAt != now-1000 ||
		len(turn.Waits) != 1 || turn.Waits[0].StartedAt != now-3000 || turn.Waits[0].EndedAt != now-2000 || got[0].WaitingMs != 1000 {
		t.Errorf("the turn after a restart: %+v (waiting %d ms)", turn, got[0].WaitingMs)
	}
	if err := stop(); err != nil {
		t.Fatal(err)
	}

	u, stop, _ = startServe(t, env, "--listen=127.0.0.1:0", "--history=false")
	defer stop()
	_, err = client.New(u.Host, u.Query().Get("token")).History(t.Context(), client.HistoryQuery{})
	var se *client.StatusError
	if !errors.As(err, &se) || se.Status != http.StatusNotFound || !strings.Contains(err.Error(), "history") {
		t.Errorf("history with --history=false: %v, want a 404 saying the history is off", err)
	}
}
