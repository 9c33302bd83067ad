package sse

import (
	"net/http"
	"net/http/httptest"
	"runtime"
	"testing"
	"time"

	"github.com/agentbridge/agentbridge"
	"github.com/agentbridge/agentbridge/hub"
)

// TestGoroutinesPerStream: an SSE client costs the same few goroutines,
// filtered or not, and none of them is ours: on the server net/http's
// connection goroutine (running r3's handler) and its background reader,
// r3's stream and r3's disconnect watcher; in this test's client the
// transport's read and write loops and the frame reader. (Before the
// subscription's queue was attached to r3's buffer, a pump goroutine per
// connection moved the records across, and a filtered subscription had a
// second one in the hub.)
func TestGoroutinesPerStream(t *testing.T) {
	const perStream = 7 // 4 on the server, 3 in this test's client
	for _, q := range []string{"unfiltered", "filtered"} {
		t.Run(q, func(t *testing.T) {
			fx := newFixture(t, hub.Options{}, Options{})
			fx.upsert(t, "p", "s1", agentbridge.StatusRunning)
			// The handler takes a filter through Serve, as the api package
			// calls it.
			url := fx.srv.URL + "/"
			if q == "filtered" {
				f := agentbridge.Filter{Statuses: []agentbridge.Status{agentbridge.StatusRunning}}
				srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { fx.h.Serve(w, r, f) }))
				t.Cleanup(srv.Close)
				url = srv.URL + "/"
			}
			before := settled(runtime.NumGoroutine())
			const n = 10
			for range n {
				s := open(t, url, nil)
				s.next(t) // its initial records are in: the subscription is attached
			}
			after := settled(runtime.NumGoroutine())
			if per := float64(after-before) / n; per > perStream {
				t.Errorf("%.1f goroutines per stream, want at most %d", per, perStream)
			}
		})
	}
}

// settled waits until the goroutine count stops falling from n (the
// short-lived ones that start a stream end) and returns it.
func settled(n int) int {
	for deadline := time.Now().Add(wait); time.Now().Before(deadline); {
		time.Sleep(20 * time.Millisecond)
		m := runtime.NumGoroutine()
		if m >= n {
			return m
		}
		n = m
	}
	return n
}
