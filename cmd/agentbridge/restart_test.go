package main

import (
	"bufio"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/agentbridge/agentbridge"
	"github.com/agentbridge/agentbridge/client"
	"github.com/agentbridge/agentbridge/internal/bridgetest"
)

// bridgeMainEnv makes the test binary run main() (see TestBridgeMainHelper),
// so that a test can start, signal and kill a real bridge process.
const bridgeMainEnv = "TEST_RUN_BRIDGE_MAIN"

// TestBridgeMainHelper is not a test: with bridgeMainEnv set it runs the
// bridge's main with the arguments after "--".
func TestBridgeMainHelper(t *testing.T) {
	if os.Getenv(bridgeMainEnv) != "1" {
		t.Skip("helper process for the tests that run a real bridge process")
	}
	i := slices.Index(os.Args, "--")
	os.Args = append([]string{"agentbridge"}, os.Args[i+1:]...)
	main()
}

// bridgeProc is a bridge running as a child process.
type bridgeProc struct{ *bridgetest.Process }

// startBridgeProc starts the bridge in a child process with env and args
// and waits for its dashboard URL.
func startBridgeProc(t *testing.T, env []string, args ...string) *bridgeProc {
	t.Helper()
	cmd := exec.Command(os.Args[0], append([]string{"-test.run=^TestBridgeMainHelper$", "--"}, args...)...)
	cmd.Env = append([]string{bridgeMainEnv + "=1", "PATH=" + os.Getenv("PATH")}, env...)
	p := bridgetest.Exec(t, cmd)
	u, err := dashboardFrom(t, p.Line, env)
	if err != nil {
		t.Fatal(err)
	}
	p.URL, p.Token = u, u.Query().Get("token")
	return &bridgeProc{p}
}

func (p *bridgeProc) post(t *testing.T, path, body string) {
	t.Helper()
	resp, err := p.Client().Do(t.Context(), http.MethodPost, path, nil, strings.NewReader(body), "")
	if err != nil {
		t.Fatalf("POST %s: %v", path, err)
	}
	resp.Body.Close()
}

// hasSession reports whether the list holds the session source/id.
func hasSession(l []agentbridge.Entry, source, id string) bool {
	return slices.ContainsFunc(l, func(e agentbridge.Entry) bool { return e.Source == source && e.Snapshot.ID == id })
}

// TestRestartWhileFollowing kills the bridge (SIGKILL) while a
// client follows, starts it again on the same port and home, and checks
// that the client resumes with resets: the journal's session comes back,
// the push session of the killed run is gone, ids keep growing, and the
// client's state ends equal to GET /v1/sessions. Then a SIGTERM with an
// aborted stream open stops the bridge promptly, and the token appeared in
// neither its argv nor its log.
func TestRestartWhileFollowing(t *testing.T) {
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

	p1 := startBridgeProc(t, env, "--listen", "127.0.0.1:0")
	p1.post(t, "/v1/sources/example-push/publish", `{"op":"upsert","session":{"id":"gone-1","harness":"example-agent","status":"running"}}`)

	// the restarted bridge has the same address and token
	f := bridgetest.Follow(t, p1.Client(), client.FollowOptions{StreamOptions: client.StreamOptions{Format: client.NDJSON},
		Backoff: client.Backoff{Min: 50 * time.Millisecond, Max: 50 * time.Millisecond}})
	f.Converge(t, p1.Client(), nil, func(v []agentbridge.Entry) bool {
		return hasSession(v, "example", "kept-1") && hasSession(v, "example-push", "gone-1")
	})
	ids1 := f.Record().IDs

	if err := p1.Cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	<-p1.Exited

	p2 := startBridgeProc(t, env, "--listen", p1.Addr, "--log-level", "debug") // the token stays out of debug lines too
	if p2.Token != p1.Token {
		t.Errorf("the restarted bridge has another token: the token file was not reused")
	}
	view := f.Converge(t, p2.Client(), nil, func(v []agentbridge.Entry) bool {
		return hasSession(v, "example", "kept-1")
	})
	if hasSession(view, "example-push", "gone-1") {
		t.Errorf("the push session of the killed run survived the restart")
	}
	rec := f.Record()
	firsts, ids := rec.Firsts, rec.IDs
	if len(firsts) < 2 {
		t.Fatalf("the client connected %d times, want a resume after the restart", len(firsts))
	}
	for i, name := range firsts[1:] {
		if name != "reset" {
			t.Errorf("connection %d after the restart began with %q, want a reset", i+2, name)
		}
	}
	f.CheckIDs(t) // across the killed run and the new one
	if len(ids) <= len(ids1) {
		t.Errorf("no records after the restart")
	}

	// The one-time dashboard URL, at debug level: the token must not be logged.
	noRedirect := &http.Client{Timeout: 10 * time.Second, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	if resp, err := noRedirect.Get("http://" + p2.Addr + "/?token=" + p2.Token); err == nil {
		resp.Body.Close()
		if resp.StatusCode != http.StatusSeeOther {
			t.Errorf("GET /?token=: %d, want 303", resp.StatusCode)
		}
	}

	// SIGTERM with a stream whose client aborted: exits promptly and clean.
	c, err := net.DialTimeout("tcp", p2.Addr, 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	fmt.Fprintf(c, "GET /v1/events HTTP/1.1\r\nHost: %s\r\nAuthorization: Bearer %s\r\n\r\n", p2.Addr, p2.Token)
	c.SetReadDeadline(time.Now().Add(10 * time.Second))
	br := bufio.NewReader(c)
	for {
		line, err := br.ReadString('\n')
		if err != nil || strings.HasPrefix(line, "event: reset") {
			break
		}
	}
	c.Close()
	cmdline, _ := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", p2.Cmd.Process.Pid))
	if strings.Contains(string(cmdline), p2.Token) {
		t.Errorf("the token is in the process's argv")
	}
	f.Stop()
	start := time.Now()
	p2.Cmd.Process.Signal(syscall.SIGTERM)
	select {
	case err := <-p2.Exited:
		if err != nil {
			t.Errorf("bridge exit after SIGTERM: %v, want status 0", err)
		}
	case <-time.After(15 * time.Second):
		t.Fatalf("bridge still running 15s after SIGTERM")
	}
	checkGraceful(t, p2.Stderr, "an aborted stream")
	t.Logf("exit took %v after SIGTERM", time.Since(start))
	for _, p := range []*bridgeProc{p1, p2} {
		if strings.Contains(p.Stderr.String(), p.Token) {
			t.Errorf("the token is in the log:\n%s", p.Stderr)
		}
	}
	b, err := os.ReadFile(filepath.Join(home, ".local", "state", "agentbridge", "token"))
	if err != nil || strings.TrimSpace(string(b)) != p2.Token {
		t.Errorf("token file: %q, %v", b, err)
	}
	if fi, err := os.Stat(filepath.Join(home, ".local", "state", "agentbridge", "token")); err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("token file mode %v (%v), want 0600", fi.Mode().Perm(), err)
	}
}
