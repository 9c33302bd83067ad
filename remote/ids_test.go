package remote_test

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"sync"
	"testing"
	"time"

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
				_, es := local.Hub.Sessions(hub.Filter{})
				return slices.Equal(hosts(es), []string{"devbox/codex/new/running"})
			})
		})
	}
}
