package main

import (
	"bytes"
	"context"
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

	"github.com/google/go-cmp/cmp"

	"github.com/agentbridge/agentbridge/client"
	"github.com/agentbridge/agentbridge/internal/bridgetest"
)

// fastBackoff keeps reconnection tests quick.
var fastBackoff = client.Backoff{Min: 5 * time.Millisecond, Max: 50 * time.Millisecond}

// streamServer serves /v1/events from a script: connection i gets
// script[i] (lines written one by one, then the connection ends); later
// connections block until the client goes. It records each connection's
// since parameter.
type streamServer struct {
	mu     sync.Mutex
	since  []string
	script [][]string
	sse    bool
}

func (s *streamServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path != "/v1/events" || r.URL.Query().Get("format") != "ndjson" {
		http.Error(w, "unexpected request", http.StatusBadRequest)
		return
	}
	s.mu.Lock()
	n := len(s.since)
	s.since = append(s.since, r.URL.Query().Get("since"))
	var lines []string
	if n < len(s.script) {
		lines = s.script[n]
	}
	s.mu.Unlock()
	if s.sse {
		w.Header().Set("Content-Type", "text/event-stream")
	} else {
		w.Header().Set("Content-Type", "application/x-ndjson")
	}
	w.WriteHeader(http.StatusOK)
	w.(http.Flusher).Flush()
	if n >= len(s.script) {
		<-r.Context().Done()
		return
	}
	for _, l := range lines {
		io.WriteString(w, l)
		w.(http.Flusher).Flush()
	}
}

func (s *streamServer) sinces() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.since...)
}

func ndjson(id int, event, data string) string {
	return fmt.Sprintf(`{"id":%d,"event":%q,"data":%s}`+"\n", id, event, data)
}

func TestWatchResumesAfterDrop(t *testing.T) {
	for _, sse := range []bool{false, true} {
		t.Run(fmt.Sprintf("sse=%v", sse), func(t *testing.T) {
			line := ndjson
			if sse {
				line = func(id int, event, data string) string {
					return fmt.Sprintf("id: %d\nevent: %s\ndata: %s\n\n", id, event, data)
				}
			}
			srv := &streamServer{sse: sse, script: [][]string{
				{line(100, "reset", `{"source":"codex","sessions":[]}`), line(101, "upsert", `{"source":"codex","snapshot":{"id":"a","harness":"codex","status":"idle"}}`)},
				{},                 // the bridge answers, then drops at once
				{"garbage line\n"}, // a broken stream: resume again from 101
				{line(102, "remove", `{"source":"codex","sessionId":"a"}`)},
			}}
			fb := httptest.NewServer(srv)
			defer fb.Close()
			var stdout, stderr bytes.Buffer
			args := []string{"--addr", strings.TrimPrefix(fb.URL, "http://"), "--limit", "3", "--status", "running"}
			if err := watchMain(t.Context(), args, testEnv(t), &stdout, &stderr, fastBackoff); err != nil {
				t.Fatalf("watch: %v", err)
			}
			want := `{"id":100,"event":"reset","data":{"source":"codex","sessions":[]}}
{"id":101,"event":"upsert","data":{"source":"codex","snapshot":{"id":"a","harness":"codex","status":"idle"}}}
{"id":102,"event":"remove","data":{"source":"codex","sessionId":"a"}}
`
			if diff := cmp.Diff(want, stdout.String()); diff != "" {
				t.Errorf("stdout (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff([]string{"", "101", "101", "101"}, srv.sinces()); diff != "" {
				t.Errorf("since per connection (-want +got):\n%s", diff)
			}
			if !strings.Contains(stderr.String(), "resuming") {
				t.Errorf("stderr = %q, want a note about resuming", stderr.String())
			}
		})
	}
}

// TestWatchSurvivesBridgeRestart stops the bridge (nothing listens for a
// while), starts a new one on the same address and checks that watch
// resumes there with the last id.
func TestWatchSurvivesBridgeRestart(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	first := &streamServer{script: [][]string{{ndjson(5, "reset", `{"source":"codex","sessions":[]}`)}}}
	// The first bridge serves its script, then blocks its next connection
	// until it is shut down.
	srv1 := &http.Server{Handler: first}
	go srv1.Serve(l)

	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	pr, pw := io.Pipe()
	done := make(chan error, 1)
	var stderr logBuffer
	go func() {
		done <- watchMain(ctx, []string{"--addr", addr, "--limit", "2"}, testEnv(t), pw, &stderr, fastBackoff)
		pw.Close()
	}()
	lines := make(chan string, 4)
	go func() {
		b := make([]byte, 0, 4096)
		buf := make([]byte, 4096)
		for {
			n, err := pr.Read(buf)
			b = append(b, buf[:n]...)
			for {
				i := bytes.IndexByte(b, '\n')
				if i < 0 {
					break
				}
				lines <- string(b[:i])
				b = b[i+1:]
			}
			if err != nil {
				close(lines)
				return
			}
		}
	}()
	select {
	case l := <-lines:
		if !strings.Contains(l, `"id":5`) {
			t.Fatalf("first line %q, want event 5", l)
		}
	case <-ctx.Done():
		t.Fatal("no first event")
	}
	waitFor(t, func() bool { return len(first.sinces()) >= 2 }) // watch reconnected and is waiting
	srv1.Close()                                                // the bridge stops
	waitFor(t, func() bool { return strings.Contains(stderr.String(), "resuming") })

	second := &streamServer{script: [][]string{{ndjson(7, "reset", `{"source":"codex","sessions":[]}`)}}}
	var l2 net.Listener
	waitFor(t, func() bool {
		l2, err = net.Listen("tcp", addr)
		return err == nil
	})
	srv2 := &http.Server{Handler: second}
	go srv2.Serve(l2)
	defer srv2.Close()

	select {
	case l := <-lines:
		if !strings.Contains(l, `"id":7`) {
			t.Fatalf("second line %q, want event 7", l)
		}
	case <-ctx.Done():
		t.Fatal("watch did not resume on the restarted bridge")
	}
	if err := <-done; err != nil {
		t.Fatalf("watch: %v", err)
	}
	if got := second.sinces(); len(got) == 0 || got[0] != "5" {
		t.Errorf("since on the restarted bridge = %v, want 5 first", got)
	}
}

func TestWatchSinceFlag(t *testing.T) {
	srv := &streamServer{script: [][]string{{ndjson(43, "upsert", `{}`)}}}
	fb := httptest.NewServer(srv)
	defer fb.Close()
	var stdout, stderr bytes.Buffer
	args := []string{"--addr", strings.TrimPrefix(fb.URL, "http://"), "--since", "42", "--limit", "1"}
	if err := watchMain(t.Context(), args, testEnv(t), &stdout, &stderr, fastBackoff); err != nil {
		t.Fatalf("watch: %v", err)
	}
	if diff := cmp.Diff([]string{"42"}, srv.sinces()); diff != "" {
		t.Errorf("since (-want +got):\n%s", diff)
	}
}

func TestWatchStops(t *testing.T) {
	t.Run("not running at start", func(t *testing.T) {
		dead := bridgetest.FreeAddr(t)
		var stdout, stderr bytes.Buffer
		err := watchMain(t.Context(), []string{"--addr", dead}, testEnv(t), &stdout, &stderr, fastBackoff)
		if err == nil || err.Error() != "no agentbridge at "+dead+": start it with `agentbridge serve`" {
			t.Errorf("err = %v, want the not-running error", err)
		}
	})
	t.Run("a 4xx is not retried", func(t *testing.T) {
		fb := newFakeBridge(t, func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "application/problem+json")
			w.WriteHeader(http.StatusBadRequest)
			w.Write([]byte(`{"title":"Bad filter","status":400,"detail":"ancestorPid is not a process id"}`))
		})
		var stdout, stderr bytes.Buffer
		err := watchMain(t.Context(), []string{"--addr", fb.addr()}, testEnv(t), &stdout, &stderr, fastBackoff)
		if err == nil || !strings.Contains(err.Error(), "ancestorPid is not a process id") {
			t.Errorf("err = %v, want the problem", err)
		}
		if len(fb.requests()) != 1 {
			t.Errorf("%d requests, want 1", len(fb.requests()))
		}
	})
	t.Run("a 503 is retried", func(t *testing.T) {
		var mu sync.Mutex
		calls := 0
		fb := newFakeBridge(t, func(w http.ResponseWriter, r *http.Request) {
			mu.Lock()
			calls++
			n := calls
			mu.Unlock()
			if n == 1 { // a stream that ends at once
				w.Header().Set("Content-Type", "application/x-ndjson")
				w.WriteHeader(http.StatusOK)
				return
			}
			if n < 4 {
				w.WriteHeader(http.StatusServiceUnavailable)
				return
			}
			w.Header().Set("Content-Type", "application/x-ndjson")
			io.WriteString(w, ndjson(9, "reset", `{}`))
		})
		var stdout, stderr bytes.Buffer
		if err := watchMain(t.Context(), []string{"--addr", fb.addr(), "--limit", "1"}, testEnv(t), &stdout, &stderr, fastBackoff); err != nil {
			t.Fatalf("watch: %v", err)
		}
		if !strings.Contains(stdout.String(), `"id":9`) {
			t.Errorf("stdout = %q, want event 9", stdout.String())
		}
	})
	t.Run("interrupt", func(t *testing.T) {
		srv := &streamServer{} // every connection just stays open
		fb := httptest.NewServer(srv)
		defer fb.Close()
		ctx, cancel := context.WithCancel(t.Context())
		done := make(chan error, 1)
		go func() {
			var stdout, stderr bytes.Buffer
			done <- watchMain(ctx, []string{"--addr", strings.TrimPrefix(fb.URL, "http://")}, testEnv(t), &stdout, &stderr, fastBackoff)
		}()
		waitFor(t, func() bool { return len(srv.sinces()) == 1 })
		cancel()
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("interrupted watch: err = %v, want nil", err)
			}
		case <-time.After(10 * time.Second):
			t.Fatal("watch did not stop on interrupt")
		}
	})
	t.Run("closed stdout", func(t *testing.T) {
		srv := &streamServer{script: [][]string{{ndjson(1, "reset", `{}`)}}}
		fb := httptest.NewServer(srv)
		defer fb.Close()
		var stderr bytes.Buffer
		err := watchMain(t.Context(), []string{"--addr", strings.TrimPrefix(fb.URL, "http://")}, testEnv(t), failWriter{}, &stderr, fastBackoff)
		if err == nil || !strings.Contains(err.Error(), "write") {
			t.Errorf("err = %v, want a write error", err)
		}
	})
}

type failWriter struct{}

func (failWriter) Write([]byte) (int, error) { return 0, errors.New("broken pipe") }

// waitFor waits up to 10 s for cond.
func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatal("condition not met within 10s")
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// TestWatchSaysReconnectedOnReconnecting: after a drop, "reconnected" is
// printed as soon as the bridge answers again, while that connection is
// still open, not when it ends.
func TestWatchSaysReconnectedOnReconnecting(t *testing.T) {
	srv := &streamServer{script: [][]string{{ndjson(5, "reset", `{"source":"codex","sessions":[]}`)}}} // then a connection that stays open
	fb := httptest.NewServer(srv)
	defer fb.Close()
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	var stderr logBuffer
	done := make(chan error, 1)
	go func() {
		done <- watchMain(ctx, []string{"--addr", strings.TrimPrefix(fb.URL, "http://")}, testEnv(t), io.Discard, &stderr, fastBackoff)
	}()
	waitFor(t, func() bool { return strings.Contains(stderr.String(), "reconnected") })
	if n := len(srv.sinces()); n != 2 {
		t.Errorf("%d connections when reconnected was printed, want 2 (the second still open)", n)
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatalf("watch: %v", err)
	}
	want := "agentbridge watch: the bridge ended the stream; resuming\nagentbridge watch: reconnected\n"
	if got := stderr.String(); got != want {
		t.Errorf("stderr = %q, want %q", got, want)
	}
}
