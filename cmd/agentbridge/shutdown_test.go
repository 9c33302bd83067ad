package main

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agentbridge/agentbridge/internal/bridgetest"
)

// servedBridge is one bridge run in-process by serveMain.
type servedBridge struct{ *bridgetest.Served }

// startServedBridge runs serveMain with env and args until the test ends and
// returns once it printed its dashboard URL.
func startServedBridge(t *testing.T, env []string, args ...string) *servedBridge {
	t.Helper()
	return &servedBridge{runServe(t, env, args...)}
}

// stop cancels the bridge and returns how long serveMain took to return.
func (s *servedBridge) stop(t *testing.T) time.Duration {
	t.Helper()
	start := time.Now()
	if err := s.Stop(t); err != nil {
		t.Errorf("serve returned %v, want nil", err)
	}
	return time.Since(start)
}

// openRawStream opens GET path over a raw connection and reads until the first
// reset arrived; the caller owns the connection.
func openRawStream(t *testing.T, s *servedBridge, path string) (net.Conn, *bufio.Reader) {
	t.Helper()
	c, err := net.DialTimeout("tcp", s.Addr, 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	c.SetDeadline(time.Now().Add(15 * time.Second))
	fmt.Fprintf(c, "GET %s HTTP/1.1\r\nHost: %s\r\nAuthorization: Bearer %s\r\nAccept: text/event-stream\r\n\r\n", path, s.Addr, s.Token)
	br := bufio.NewReader(c)
	for {
		line, err := br.ReadString('\n')
		if err != nil {
			t.Fatalf("stream: %v", err)
		}
		if strings.HasPrefix(line, "event: reset") || strings.Contains(line, `"event":"reset"`) {
			break
		}
	}
	c.SetDeadline(time.Time{})
	return c, br
}

// forcedShutdown is what serve logs when requests were still open when its
// shutdown grace ran out and it had to close them. A stream must end with
// the base context (at once), so a shutdown with open or abandoned streams
// never gets there: checking the log rather than the time the shutdown
// took keeps the test independent of the machine's load.
const forcedShutdown = "requests still open at shutdown"

// checkGraceful fails the test when the bridge's shutdown had to force its
// connections closed.
func checkGraceful(t *testing.T, stderr fmt.Stringer, what string) {
	t.Helper()
	if strings.Contains(stderr.String(), forcedShutdown) {
		t.Errorf("the shutdown waited out its grace with %s: a stream did not end with the base context:\n%s", what, stderr)
	}
}

// TestShutdownIsBoundedWithStreams: the bridge exits promptly on
// cancel whether its stream clients are still reading, have aborted (closed
// their socket: the Node fetch abort), have half-closed their side, or
// stopped reading.
func TestShutdownIsBoundedWithStreams(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name string
		prep func(c net.Conn)
	}{
		{"reading client", func(net.Conn) {}},
		{"aborted client", func(c net.Conn) { c.Close() }},
		{"aborted client with reset", func(c net.Conn) { c.(*net.TCPConn).SetLinger(0); c.Close() }},
		{"half-closed client", func(c net.Conn) { c.(*net.TCPConn).CloseWrite() }},
		{"client that stopped reading", func(c net.Conn) {}},
	}
	for _, tc := range cases {
		for _, path := range []string{"/v1/events", "/v1/events?format=ndjson"} {
			t.Run(tc.name+" "+path, func(t *testing.T) {
				t.Parallel()
				home := t.TempDir()
				s := startServedBridge(t, []string{"HOME=" + home}, "--listen", "127.0.0.1:0")
				c, br := openRawStream(t, s, path)
				defer c.Close()
				tc.prep(c)
				if tc.name == "reading client" {
					go io.Copy(io.Discard, br)
				}
				took := s.stop(t)
				checkGraceful(t, s.Stderr, "a "+tc.name+" on "+path)
				t.Logf("shutdown took %v", took)
			})
		}
	}
}

// TestShutdownWithStuckStream: a stream client that stopped
// reading while records kept coming (its socket buffers full, the server's
// write blocked) must not hold the shutdown up either.
func TestShutdownWithStuckStream(t *testing.T) {
	t.Parallel()
	home := t.TempDir()
	cfgDir := filepath.Join(home, ".config", "agentbridge")
	if err := os.MkdirAll(cfgDir, 0o700); err != nil {
		t.Fatal(err)
	}
	yaml := "push:\n  - id: example-push\n    harnesses:\n      - {id: example-agent}\n"
	if err := os.WriteFile(filepath.Join(cfgDir, "config.yaml"), []byte(yaml), 0o600); err != nil {
		t.Fatal(err)
	}
	s := startServedBridge(t, []string{"HOME=" + home}, "--listen", "127.0.0.1:0")
	// 320 sessions of ~16 KiB (64 subagents with long titles), 5 MiB:
	// more than the socket buffers hold (4 MiB at most here). The stuck
	// client connects afterwards, so its initial reset alone blocks the
	// server's write, well within the stream's 10 s write timeout however
	// slow publishing was.
	title := strings.Repeat("x", 190)
	var subs []string
	for k := range 64 {
		subs = append(subs, fmt.Sprintf(`{"id":"a-%d","type":"%s","title":"%s","status":"running"}`, k, title[:100], title))
	}
	client := &http.Client{Timeout: 30 * time.Second}
	for i := range 64 {
		var ops []string
		for j := range 5 {
			ops = append(ops, fmt.Sprintf(`{"op":"upsert","session":{"id":"s-%d-%d","harness":"example-agent","status":"running","title":"%s","subagents":[%s]}}`,
				i, j, title, strings.Join(subs, ",")))
		}
		req, _ := http.NewRequest("POST", "http://"+s.Addr+"/v1/sources/example-push/publish", strings.NewReader("["+strings.Join(ops, ",")+"]"))
		req.Header.Set("Authorization", "Bearer "+s.Token)
		req.Header.Set("Content-Type", "application/json")
		resp, err := client.Do(req)
		if err != nil {
			t.Fatalf("publish: %v", err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 {
			t.Fatalf("publish: %d %s", resp.StatusCode, body)
		}
	}
	c, err := net.DialTimeout("tcp", s.Addr, 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.(*net.TCPConn).SetReadBuffer(1024)
	start := time.Now()
	fmt.Fprintf(c, "GET /v1/events HTTP/1.1\r\nHost: %s\r\nAuthorization: Bearer %s\r\n\r\n", s.Addr, s.Token)
	// Wait until the client is subscribed: from then on the server writes
	// it a reset larger than every buffer between them, which it cannot
	// finish while the client reads nothing, so the shutdown meets a write
	// that is blocked or will block; without the stream's abort on the base
	// context that write would hold the shutdown past its grace.
	clients := func() string {
		req, _ := http.NewRequest("GET", "http://"+s.Addr+"/metrics", nil)
		req.Header.Set("Authorization", "Bearer "+s.Token)
		resp, err := client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		sc := bufio.NewScanner(resp.Body)
		for sc.Scan() {
			if v, ok := strings.CutPrefix(sc.Text(), "agentbridge_stream_clients "); ok {
				return v
			}
		}
		return "?"
	}
	for n := clients(); n != "1"; n = clients() {
		if time.Since(start) > time.Minute {
			t.Fatalf("the stuck client never subscribed (%s clients)", n)
		}
		time.Sleep(20 * time.Millisecond) // the test's look at /metrics, not a wait for time
	}
	took := s.stop(t)
	checkGraceful(t, s.Stderr, "a stuck stream client")
	t.Logf("shutdown took %v", took)
}
