package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// hardMainEnv makes the test binary run main() (see TestHardeningHelperMain),
// so that a test can start, signal and kill a real bridge process.
const hardMainEnv = "HARDENING_RUN_BRIDGE_MAIN"

// TestHardeningHelperMain is not a test: with hardMainEnv set it runs the
// bridge's main with the arguments after "--".
func TestHardeningHelperMain(t *testing.T) {
	if os.Getenv(hardMainEnv) != "1" {
		t.Skip("helper process for the hardening tests")
	}
	i := slices.Index(os.Args, "--")
	os.Args = append([]string{"agentbridge"}, os.Args[i+1:]...)
	main()
}

// hardBridgeProc is a bridge running as a child process.
type hardBridgeProc struct {
	cmd    *exec.Cmd
	host   string // host:port
	token  string
	stderr *logBuffer
	waited chan error
}

// hardStartBridgeProc starts the bridge in a child process with env and args
// and waits for its dashboard URL.
func hardStartBridgeProc(t *testing.T, env []string, args ...string) *hardBridgeProc {
	t.Helper()
	cmd := exec.Command(os.Args[0], append([]string{"-test.run=^TestHardeningHelperMain$", "--"}, args...)...)
	cmd.Env = append([]string{hardMainEnv + "=1", "PATH=" + os.Getenv("PATH")}, env...)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	p := &hardBridgeProc{cmd: cmd, stderr: &logBuffer{}, waited: make(chan error, 1)}
	cmd.Stderr = p.stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { p.waited <- cmd.Wait() }()
	t.Cleanup(func() {
		cmd.Process.Kill()
		<-p.waited
		p.waited <- nil
	})
	urls := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			if strings.HasPrefix(sc.Text(), "agentbridge: serving at ") {
				urls <- sc.Text()
			}
		}
		io.Copy(io.Discard, out)
	}()
	select {
	case line := <-urls:
		u, err := dashboardFrom(t, line, env)
		if err != nil {
			t.Fatal(err)
		}
		p.host, p.token = u.Host, u.Query().Get("token")
	case <-time.After(20 * time.Second):
		t.Fatalf("bridge printed no URL within 20s; stderr:\n%s", p.stderr)
	}
	return p
}

func (p *hardBridgeProc) get(t *testing.T, path string, v any) {
	t.Helper()
	req, _ := http.NewRequest("GET", "http://"+p.host+path, nil)
	req.Header.Set("Authorization", "Bearer "+p.token)
	c := &http.Client{Timeout: 10 * time.Second}
	resp, err := c.Do(req)
	if err != nil {
		t.Fatalf("GET %s: %v", path, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != 200 {
		b, _ := io.ReadAll(resp.Body)
		t.Fatalf("GET %s: %d %s", path, resp.StatusCode, b)
	}
	if err := json.NewDecoder(resp.Body).Decode(v); err != nil {
		t.Fatalf("GET %s: %v", path, err)
	}
}

func (p *hardBridgeProc) post(t *testing.T, path, body string) {
	t.Helper()
	req, _ := http.NewRequest("POST", "http://"+p.host+path, strings.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+p.token)
	req.Header.Set("Content-Type", "application/json")
	resp, err := (&http.Client{Timeout: 10 * time.Second}).Do(req)
	if err != nil {
		t.Fatalf("POST %s: %v", path, err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Fatalf("POST %s: %d %s", path, resp.StatusCode, b)
	}
}

// sessionsView is GET /v1/sessions reduced to source/id → snapshot JSON.
func (p *hardBridgeProc) sessionsView(t *testing.T) (uint64, map[string]string) {
	var body struct {
		Revision uint64 `json:"revision"`
		Sessions []struct {
			Source   string          `json:"source"`
			Snapshot json.RawMessage `json:"snapshot"`
		} `json:"sessions"`
	}
	p.get(t, "/v1/sessions", &body)
	m := map[string]string{}
	for _, s := range body.Sessions {
		var id struct{ ID string }
		json.Unmarshal(s.Snapshot, &id)
		m[s.Source+"/"+id.ID] = hardCanonJSON(s.Snapshot)
	}
	return body.Revision, m
}

func hardCanonJSON(b []byte) string {
	var v any
	if err := json.Unmarshal(b, &v); err != nil {
		return string(b)
	}
	out, _ := json.Marshal(v)
	return string(out)
}

// hardFollower applies the JSON-lines stream to its own state like a client
// would, reconnecting with the last id after a drop.
type hardFollower struct {
	mu      sync.Mutex
	state   map[string]string
	last    uint64
	ids     []uint64 // every id seen, in order
	firsts  []string // the first record name of each connection
	resumes int      // connections after the first
	events  chan struct{}
}

func (f *hardFollower) snapshot() (map[string]string, uint64, []string, []uint64) {
	f.mu.Lock()
	defer f.mu.Unlock()
	m := make(map[string]string, len(f.state))
	for k, v := range f.state {
		m[k] = v
	}
	return m, f.last, slices.Clone(f.firsts), slices.Clone(f.ids)
}

// apply folds one stream record into the hardFollower's state.
func (f *hardFollower) apply(id uint64, name string, data json.RawMessage, first bool) {
	var d struct {
		Source    string            `json:"source"`
		Sessions  []json.RawMessage `json:"sessions"`
		Snapshot  json.RawMessage   `json:"snapshot"`
		SessionID string            `json:"sessionId"`
	}
	json.Unmarshal(data, &d)
	idOf := func(s json.RawMessage) string {
		var v struct{ ID string }
		json.Unmarshal(s, &v)
		return v.ID
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if first {
		f.firsts = append(f.firsts, name)
	}
	f.last = id
	f.ids = append(f.ids, id)
	switch name {
	case "reset":
		for k := range f.state {
			if strings.HasPrefix(k, d.Source+"/") {
				delete(f.state, k)
			}
		}
		for _, s := range d.Sessions {
			f.state[d.Source+"/"+idOf(s)] = hardCanonJSON(s)
		}
	case "upsert":
		f.state[d.Source+"/"+idOf(d.Snapshot)] = hardCanonJSON(d.Snapshot)
	case "remove":
		delete(f.state, d.Source+"/"+d.SessionID)
	}
}

// follow reads the stream until ctx ends, reconnecting (with the last id)
// whenever the connection drops or cannot be made.
func (f *hardFollower) follow(ctx context.Context, hostToken func() (string, string)) {
	for n := 0; ctx.Err() == nil; {
		host, token := hostToken()
		req, _ := http.NewRequestWithContext(ctx, "GET", "http://"+host+"/v1/events?format=ndjson", nil)
		req.Header.Set("Authorization", "Bearer "+token)
		f.mu.Lock()
		if f.last != 0 {
			req.Header.Set("Last-Event-ID", fmt.Sprint(f.last))
		}
		f.mu.Unlock()
		resp, err := http.DefaultClient.Do(req)
		if err != nil || resp.StatusCode != 200 {
			if err == nil {
				resp.Body.Close()
			}
			select {
			case <-ctx.Done():
			case <-time.After(50 * time.Millisecond):
			}
			continue
		}
		if n > 0 {
			f.mu.Lock()
			f.resumes++
			f.mu.Unlock()
		}
		n++
		sc := bufio.NewScanner(resp.Body)
		sc.Buffer(nil, 16<<20)
		first := true
		for sc.Scan() {
			if len(sc.Bytes()) == 0 {
				continue
			}
			var rec struct {
				ID    uint64          `json:"id"`
				Event string          `json:"event"`
				Data  json.RawMessage `json:"data"`
			}
			if json.Unmarshal(sc.Bytes(), &rec) != nil {
				continue
			}
			f.apply(rec.ID, rec.Event, rec.Data, first)
			first = false
			select {
			case f.events <- struct{}{}:
			default:
			}
		}
		resp.Body.Close()
	}
}

// hardWaitConverged waits until the hardFollower's state equals GET /v1/sessions
// of p and want holds for it.
func hardWaitConverged(t *testing.T, f *hardFollower, p *hardBridgeProc, what string, want func(map[string]string) bool) map[string]string {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		_, view := p.sessionsView(t)
		got, _, _, _ := f.snapshot()
		if hardMapsEqual(got, view) && want(view) {
			return view
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: client state %v\nGET /v1/sessions %v", what, got, view)
		}
		select {
		case <-f.events:
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// TestHardeningRestartWhileFollowing kills the bridge (SIGKILL) while a
// client follows, starts it again on the same port and home, and checks
// that the client resumes with resets: the journal's session comes back,
// the push session of the killed run is gone, ids keep growing, and the
// client's state ends equal to GET /v1/sessions. Then a SIGTERM with an
// aborted stream open stops the bridge promptly, and the token appeared in
// neither its argv nor its log.
func TestHardeningRestartWhileFollowing(t *testing.T) {
	t.Parallel()
	home := t.TempDir()
	exHome := filepath.Join(home, "example")
	if err := os.MkdirAll(filepath.Join(exHome, "sessions"), 0o700); err != nil {
		t.Fatal(err)
	}
	journal := `{"type":"session","ts":"2026-11-30T09:00:00.000Z","title":"Refactor","model":"example-large-2","cwd":"/work/shop"}` + "\n" +
		`{"type":"prompt","ts":"2026-11-30T09:00:02.000Z","turnId":"turn-1","text":"split it"}` + "\n"
	if err := os.WriteFile(filepath.Join(exHome, "sessions", "kept-1.jsonl"), []byte(journal), 0o600); err != nil {
		t.Fatal(err)
	}
	cfgDir := filepath.Join(home, ".config", "agentbridge")
	if err := os.MkdirAll(cfgDir, 0o700); err != nil {
		t.Fatal(err)
	}
	yaml := "push:\n  - id: example-push\n    harnesses:\n      - {id: example-agent}\n"
	if err := os.WriteFile(filepath.Join(cfgDir, "config.yaml"), []byte(yaml), 0o600); err != nil {
		t.Fatal(err)
	}
	env := []string{"HOME=" + home, "EXAMPLE_AGENT_HOME=" + exHome}

	p1 := hardStartBridgeProc(t, env, "--listen", "127.0.0.1:0")
	p1.post(t, "/v1/sources/example-push/publish", `{"op":"upsert","session":{"id":"gone-1","harness":"example-agent","status":"running"}}`)

	var mu sync.Mutex
	cur := p1
	hostToken := func() (string, string) {
		mu.Lock()
		defer mu.Unlock()
		return cur.host, cur.token
	}
	ctx, cancel := context.WithCancel(context.Background())
	f := &hardFollower{state: map[string]string{}, events: make(chan struct{}, 1)}
	done := make(chan struct{})
	go func() { defer close(done); f.follow(ctx, hostToken) }()
	defer func() { cancel(); <-done }()

	hardWaitConverged(t, f, p1, "run 1", func(v map[string]string) bool {
		_, kept := v["example/kept-1"]
		_, gone := v["example-push/gone-1"]
		return kept && gone
	})
	_, last1, _, ids1 := f.snapshot()

	if err := p1.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	<-p1.waited
	p1.waited <- nil

	p2 := hardStartBridgeProc(t, env, "--listen", p1.host, "--log-level", "debug") // the token stays out of debug lines too
	if p2.token != p1.token {
		t.Errorf("the restarted bridge has another token: the token file was not reused")
	}
	mu.Lock()
	cur = p2
	mu.Unlock()
	view := hardWaitConverged(t, f, p2, "after the restart", func(v map[string]string) bool {
		_, kept := v["example/kept-1"]
		return kept
	})
	if _, stale := view["example-push/gone-1"]; stale {
		t.Errorf("the push session of the killed run survived the restart")
	}
	_, _, firsts, ids := f.snapshot()
	if len(firsts) < 2 {
		t.Fatalf("the client connected %d times, want a resume after the restart", len(firsts))
	}
	for i, name := range firsts[1:] {
		if name != "reset" {
			t.Errorf("connection %d after the restart began with %q, want a reset", i+2, name)
		}
	}
	for i := 1; i < len(ids); i++ {
		if ids[i] <= ids[i-1] {
			t.Errorf("ids went from %d to %d (the killed run ended at %d): ids must only grow", ids[i-1], ids[i], last1)
			break
		}
	}
	if len(ids) <= len(ids1) {
		t.Errorf("no records after the restart")
	}

	// The one-time dashboard URL, at debug level: the token must not be logged.
	noRedirect := &http.Client{Timeout: 10 * time.Second, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	if resp, err := noRedirect.Get("http://" + p2.host + "/?token=" + p2.token); err == nil {
		resp.Body.Close()
		if resp.StatusCode != http.StatusSeeOther {
			t.Errorf("GET /?token=: %d, want 303", resp.StatusCode)
		}
	}

	// SIGTERM with a stream whose client aborted: exits promptly and clean.
	c, err := net.DialTimeout("tcp", p2.host, 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	fmt.Fprintf(c, "GET /v1/events HTTP/1.1\r\nHost: %s\r\nAuthorization: Bearer %s\r\n\r\n", p2.host, p2.token)
	c.SetReadDeadline(time.Now().Add(10 * time.Second))
	br := bufio.NewReader(c)
	for {
		line, err := br.ReadString('\n')
		if err != nil || strings.HasPrefix(line, "event: reset") {
			break
		}
	}
	c.Close()
	cmdline, _ := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", p2.cmd.Process.Pid))
	if strings.Contains(string(cmdline), p2.token) {
		t.Errorf("the token is in the process's argv")
	}
	time.Sleep(100 * time.Millisecond)
	cancel()
	<-done
	start := time.Now()
	p2.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case err := <-p2.waited:
		p2.waited <- nil
		if err != nil {
			t.Errorf("bridge exit after SIGTERM: %v, want status 0", err)
		}
	case <-time.After(15 * time.Second):
		t.Fatalf("bridge still running 15s after SIGTERM")
	}
	if took := time.Since(start); took > hardShutdownBound {
		t.Errorf("exit took %v after SIGTERM with an aborted stream, want under %v", took, hardShutdownBound)
	} else {
		t.Logf("exit took %v after SIGTERM", took)
	}
	for _, p := range []*hardBridgeProc{p1, p2} {
		if strings.Contains(p.stderr.String(), p.token) {
			t.Errorf("the token is in the log:\n%s", p.stderr)
		}
	}
	b, err := os.ReadFile(filepath.Join(home, ".local", "state", "agentbridge", "token"))
	if err != nil || strings.TrimSpace(string(b)) != p2.token {
		t.Errorf("token file: %q, %v", b, err)
	}
	if fi, err := os.Stat(filepath.Join(home, ".local", "state", "agentbridge", "token")); err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("token file mode %v (%v), want 0600", fi.Mode().Perm(), err)
	}
}

func hardMapsEqual(a, b map[string]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if b[k] != v {
			return false
		}
	}
	return true
}
