package sourcestest

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agentbridge/agentbridge"
	"github.com/agentbridge/agentbridge/hub"
)

// Clock is a settable clock for a real hub (hub.Options.Now).
type Clock struct{ ms atomic.Int64 }

// Set sets the time, in epoch milliseconds.
func (c *Clock) Set(ms int64) { c.ms.Store(ms) }

// Now returns the time set.
func (c *Clock) Now() time.Time { return time.UnixMilli(c.ms.Load()) }

// Real is a real hub.Hub running one source for a test.
type Real struct {
	*hub.Hub
	sub *hub.Subscription
}

// RunReal runs src in a real hub whose clock is clock until the test
// ends. Unlike Hub, it stamps and keeps
// what the hub does (the clock, activity, diagnostics).
func RunReal(t testing.TB, src hub.Source, clock *Clock, o hub.Options) *Real {
	t.Helper()
	o.Now = clock.Now
	h := hub.New(o)
	if err := h.Add(src); err != nil {
		t.Fatal(err)
	}
	r := &Real{Hub: h, sub: h.Subscribe(0, false, agentbridge.Filter{})}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); _ = h.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		<-done
		r.sub.Close()
	})
	return r
}

// WaitFor waits, on the hub's stream, until cond holds (bounded by
// Timeout).
func (r *Real) WaitFor(t testing.TB, what string, cond func(h *hub.Hub) bool) {
	t.Helper()
	deadline := time.NewTimer(Timeout)
	defer deadline.Stop()
	for !cond(r.Hub) {
		select {
		case <-r.sub.C:
		case <-r.sub.Done:
			t.Fatalf("waiting for %s: the stream ended", what)
		case <-deadline.C:
			t.Fatalf("waiting for %s: not within %v", what, Timeout)
		}
	}
}

// Entry returns the session id as the hub lists it.
func (r *Real) Entry(id string) (agentbridge.Entry, bool) {
	_, es := r.Sessions(agentbridge.Filter{})
	for _, e := range es {
		if e.Snapshot.ID == id {
			return e, true
		}
	}
	return agentbridge.Entry{}, false
}
