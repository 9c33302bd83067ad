package remote_test

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/agentbridge/agentbridge"
	"github.com/agentbridge/agentbridge/config"
	"github.com/agentbridge/agentbridge/hub"
	"github.com/agentbridge/agentbridge/internal/bridgetest"
	"github.com/agentbridge/agentbridge/remote"
)

// scripted is a remote whose n-th connection (from 0; the last script
// for every later one) is sent the lines of script[n], then held open.
func scripted(t *testing.T, scripts ...[]string) string {
	t.Helper()
	var mu sync.Mutex
	conns := 0
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		n := min(conns, len(scripts)-1)
		conns++
		mu.Unlock()
		w.Header().Set("Content-Type", "application/x-ndjson")
		w.WriteHeader(http.StatusOK)
		for _, l := range scripts[n] {
			fmt.Fprintln(w, l)
		}
		w.(http.Flusher).Flush()
		if n < len(scripts)-1 {
			return // the connection drops
		}
		<-r.Context().Done()
	}))
	t.Cleanup(srv.Close)
	return srv.URL
}

func resetLine(id uint64, session string) string {
	return fmt.Sprintf(`{"id":%d,"event":"reset","data":{"source":"codex","sessions":[{"id":%q,"harness":"codex","status":"idle"}]}}`, id, session)
}

// TestRemoteIdsGoBack: a remote whose ids go back on a new connection (a
// bridge restarted without its revision mark, another bridge now at the
// same address, or one that sent an id of 2^64−1 once) is followed from
// the resets it sends: its sessions now are shown, not those of before.
// Before, every event with an id below the highest ever seen was dropped
// as a duplicate, on every later connection: the remote was frozen.
func TestRemoteIdsGoBack(t *testing.T) {
	for _, tc := range []struct {
		name   string
		before []string
	}{
		{"restarted lower", []string{resetLine(5_000_000, "old")}},
		{"an id of 2^64-1", []string{resetLine(100, "old"), fmt.Sprintf(`{"id":%d,"event":"upsert","data":{"source":"codex","snapshot":{"id":"old","harness":"codex","status":"running"}}}`, ^uint64(0))}},
		{"an id of 2^53", []string{resetLine(1<<53, "old")}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			url := scripted(t, tc.before, []string{resetLine(10, "new"), fmt.Sprintf(`{"id":11,"event":"upsert","data":{"source":"codex","snapshot":{"id":"new","harness":"codex","status":"running"}}}`)})
			local := bridgetest.Start(t, bridgetest.Options{})
			follow(t, local, config.Remote{ID: "devbox", URL: url, TokenFile: tokenFile(t, "token-0123456789abcdef0123")}, remote.Options{Linger: time.Hour})
			waitFor(t, "the remote's sessions after its ids went back", func() bool {
				_, es := local.Hub.Sessions(agentbridge.Filter{})
				return slices.Equal(hosts(es), []string{"devbox/codex/new/running"})
			})
		})
	}
}

// TestHostileRemoteRecords: what a hostile remote sends in one stream —
// a title of C1/bidi controls, a reset of 5,000
// sessions, resets for 100 sources, lifecycle events of sessions it never
// reported — leaves the local bridge with valid text, at most
// hub.MaxRemoteSessions sessions and hub.MaxRemoteSources sources of it
// (the sources it named first kept), and the records after them still
// applied.
func TestHostileRemoteRecords(t *testing.T) {
	var lines []string
	id := uint64(1)
	add := func(format string, a ...any) {
		lines = append(lines, fmt.Sprintf(`{"id":%d,`, id)+fmt.Sprintf(format, a...))
		id++
	}
	add(`"event":"upsert","data":{"source":"codex","snapshot":{"id":"first","harness":"codex","status":"idle"}}}`)
	add(`"event":"upsert","data":{"source":"codex","snapshot":{"id":"utf","harness":"codex","status":"idle","title":"bidi \u009b\u202e title"}}}`)
	var big strings.Builder
	for i := range 5000 {
		if i > 0 {
			big.WriteString(",")
		}
		fmt.Fprintf(&big, `{"id":"s%d","harness":"codex","status":"idle"}`, i)
	}
	add(`"event":"reset","data":{"source":"claude-code","sessions":[%s]}}`, big.String())
	for i := range 100 {
		add(`"event":"reset","data":{"source":"src-%d","sessions":[{"id":"x","harness":"codex","status":"idle"}]}}`, i)
	}
	add(`"event":"lifecycle","data":{"source":"codex","sessionId":"never","event":{"kind":"turn.started","turnId":"t"}}}`)
	add(`"event":"upsert","data":{"source":"codex","snapshot":{"id":"marker","harness":"codex","status":"running"}}}`)
	url := scripted(t, lines)
	local := bridgetest.Start(t, bridgetest.Options{})
	follow(t, local, config.Remote{ID: "devbox", URL: url, TokenFile: tokenFile(t, "token-0123456789abcdef0123")}, remote.Options{Linger: time.Hour})
	waitFor(t, "the record after the hostile ones", func() bool {
		_, ok := local.Hub.SessionOn("devbox", "codex", "marker")
		return ok
	})
	_, es := local.Hub.Sessions(agentbridge.Filter{})
	sources := map[string]bool{}
	for _, e := range es {
		sources[e.Source] = true
		if s := e.Snapshot.Title; !utf8.ValidString(s) || strings.ContainsAny(s, "\u009b\u202e") {
			t.Errorf("session %s title %q", e.Snapshot.ID, s)
		}
	}
	if len(es) > hub.MaxRemoteSessions || len(sources) > hub.MaxRemoteSources {
		t.Errorf("%d sessions of %d sources kept; bounds %d and %d", len(es), len(sources), hub.MaxRemoteSessions, hub.MaxRemoteSources)
	}
	if _, ok := local.Hub.SessionOn("devbox", "codex", "never"); ok {
		t.Error("a lifecycle event made a session the remote never reported")
	}
}

// TestRemoteInvalidUTF8: a line that is not JSON (invalid UTF-8, which no
// bridge's encoder writes) breaks the stream's grammar: the connection is
// dropped with a diagnostic naming no address, retried with backoff, and
// what came before it stays.
func TestRemoteInvalidUTF8(t *testing.T) {
	url := scripted(t, []string{resetLine(1, "before"),
		`{"id":2,"event":"upsert","data":{"source":"codex","snapshot":{"id":"bad","harness":"codex","status":"idle","title":"\xff\xfe"}}}`})
	local := bridgetest.Start(t, bridgetest.Options{})
	follow(t, local, config.Remote{ID: "devbox", URL: url, TokenFile: tokenFile(t, "token-0123456789abcdef0123")}, remote.Options{Linger: time.Hour})
	waitFor(t, "the remote-failed diagnostic beside the session before", func() bool {
		_, ok := local.Hub.SessionOn("devbox", "codex", "before")
		for _, d := range local.Hub.Diagnostics() {
			if ok && d.Host == "devbox" && d.Diagnostic.Code == remote.CodeFailed && !strings.Contains(d.Diagnostic.Message, "127.0.0.1") {
				return true
			}
		}
		return false
	})
	if _, ok := local.Hub.SessionOn("devbox", "codex", "bad"); ok {
		t.Error("the record of invalid UTF-8 was applied")
	}
}

// TestSlowLorisRemote: a remote that sends its first record a byte at a
// time, without end (its line bound is TestEndlessLineIsBounded's), holds
// one connection; the local bridge goes on publishing meanwhile, and the
// follower ends with its context (the test's cleanup waits for it).
func TestSlowLorisRemote(t *testing.T) {
	sent := make(chan struct{}, 1)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/x-ndjson")
		w.WriteHeader(http.StatusOK)
		line := []byte(`{"id":1,"event":"reset","data":{"source":"codex","sessions":[` + strings.Repeat(`{"id":"s","harness":"codex","status":"idle"},`, 1000))
		for i := 0; ; i++ {
			if _, err := w.Write(line[i%len(line) : i%len(line)+1]); err != nil {
				return
			}
			w.(http.Flusher).Flush()
			if i == 100 {
				select {
				case sent <- struct{}{}:
				default:
				}
			}
			select {
			case <-r.Context().Done():
				return
			case <-time.After(time.Millisecond):
			}
		}
	}))
	t.Cleanup(srv.Close)
	local := bridgetest.Start(t, bridgetest.Options{})
	follow(t, local, config.Remote{ID: "slow", URL: srv.URL, TokenFile: tokenFile(t, "token-0123456789abcdef0123")}, remote.Options{Linger: time.Hour})
	<-sent
	local.Publish(t, "test-push", agentbridge.Op{Op: agentbridge.OpUpsert, Session: snap("mine", "running")})
	waitFor(t, "the local session while the remote trickles", func() bool {
		_, ok := local.Hub.Session("test-push", "mine")
		return ok
	})
}
