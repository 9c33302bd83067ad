package client_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/agentbridge/agentbridge"
	"github.com/agentbridge/agentbridge/client"
	"github.com/agentbridge/agentbridge/hub"
	"github.com/agentbridge/agentbridge/internal/bridgetest"
)

// follower applies a followed stream to a State, as a client would.
type follower struct {
	mu      sync.Mutex
	st      client.State
	ids     []uint64
	firsts  []string // the first record of each connection
	first   bool
	resumed int
	drops   int
	changed chan struct{}
	done    chan error
}

func follow(t *testing.T, c *client.Client, o client.FollowOptions) *follower {
	t.Helper()
	f := &follower{changed: make(chan struct{}, 1), done: make(chan error, 1)}
	o.Backoff = client.Backoff{Min: time.Millisecond, Max: 20 * time.Millisecond}
	o.OnConnect = func(resumed bool) {
		f.mu.Lock()
		defer f.mu.Unlock()
		f.first = true
		if resumed {
			f.resumed++
		}
	}
	o.OnDrop = func(error) {
		f.mu.Lock()
		defer f.mu.Unlock()
		f.drops++
	}
	ctx, cancel := context.WithCancel(context.Background())
	go func() {
		f.done <- c.Follow(ctx, o, func(ev client.Event) error {
			f.mu.Lock()
			defer f.mu.Unlock()
			if f.first {
				f.firsts = append(f.firsts, ev.Name)
				f.first = false
			}
			f.ids = append(f.ids, ev.ID)
			if err := f.st.Apply(ev); err != nil {
				return err
			}
			select {
			case f.changed <- struct{}{}:
			default:
			}
			return nil
		})
	}()
	t.Cleanup(func() {
		cancel()
		if err := <-f.done; !errors.Is(err, context.Canceled) {
			t.Errorf("Follow ended with %v, want context.Canceled", err)
		}
	})
	return f
}

// converge waits until the follower's state is at the revision GET
// /v1/sessions shows and checks that both list the same sessions.
func (f *follower) converge(t *testing.T, c *client.Client, q url.Values, want func([]hub.Entry) bool) []hub.Entry {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		l, err := c.Sessions(t.Context(), q)
		if err != nil {
			t.Fatal(err)
		}
		f.mu.Lock()
		rev, got := f.st.Revision(), f.st.Sessions()
		f.mu.Unlock()
		if rev == l.Revision && want(l.Sessions) {
			if diff := cmp.Diff(l.Sessions, got); diff != "" {
				t.Fatalf("state at revision %d differs from GET /v1/sessions (-get +state):\n%s", rev, diff)
			}
			return got
		}
		if time.Now().After(deadline) {
			t.Fatalf("state at revision %d (%d sessions) never reached GET /v1/sessions at %d (%v)", rev, len(got), l.Revision, l.Sessions)
		}
		select {
		case <-f.changed:
		case <-time.After(20 * time.Millisecond):
		}
	}
}

func (f *follower) check(t *testing.T) {
	t.Helper()
	f.mu.Lock()
	defer f.mu.Unlock()
	if !slices.IsSorted(f.ids) || len(slices.Compact(slices.Clone(f.ids))) != len(f.ids) {
		t.Errorf("ids delivered are not strictly increasing (a duplicate or a step back): %v", f.ids)
	}
}

func snap(id string, st agentbridge.Status) agentbridge.Snapshot {
	return agentbridge.Snapshot{ID: id, Harness: "test-agent", Status: st, Title: "session " + id}
}

func count(n int) func([]hub.Entry) bool { return func(e []hub.Entry) bool { return len(e) == n } }

// TestFollowKeepsStateExact applies a live stream through upserts,
// lifecycle events, removes, a reset, a harness switched off and on, and
// dropped connections, in both wire forms; after each step the state must
// equal GET /v1/sessions at the same revision and no event may come twice.
func TestFollowKeepsStateExact(t *testing.T) {
	for _, format := range []client.Format{client.SSE, client.NDJSON} {
		t.Run(fmt.Sprint(format), func(t *testing.T) {
			t.Parallel()
			b := bridgetest.Start(t, bridgetest.Options{})
			c := b.Client()
			const src = "test-push"
			b.Publish(t, src, hub.Op{Op: hub.OpUpsert, Session: snap("a", agentbridge.StatusIdle)})
			f := follow(t, c, client.FollowOptions{StreamOptions: client.StreamOptions{Format: format}})
			f.converge(t, c, nil, count(1))

			b.Publish(t, src,
				hub.Op{Op: hub.OpEvent, SessionID: "b", Harness: "other-agent", Event: agentbridge.Event{Kind: agentbridge.KindSessionStarted, Title: "b"}},
				hub.Op{Op: hub.OpEvent, SessionID: "b", Event: agentbridge.Event{Kind: agentbridge.KindTurnStarted, TurnID: "t1"}},
				hub.Op{Op: hub.OpEvent, SessionID: "a", Event: agentbridge.Event{Kind: agentbridge.KindTurnStarted, TurnID: "t"}},
			)
			got := f.converge(t, c, nil, count(2))
			if got[1].Snapshot.Status != agentbridge.StatusRunning {
				t.Errorf("b after turn.started: %+v, want running", got[1].Snapshot)
			}

			b.DropStreams() // resume by since: the ring still holds everything
			b.Publish(t, src, hub.Op{Op: hub.OpEvent, SessionID: "a", Event: agentbridge.Event{Kind: agentbridge.KindAgentDone, Outcome: agentbridge.OutcomeSuccess}})
			b.Publish(t, src, hub.Op{Op: hub.OpRemove, SessionID: "b"})
			f.converge(t, c, nil, func(e []hub.Entry) bool { return len(e) == 1 && e[0].Snapshot.Status == agentbridge.StatusDone })

			b.Publish(t, src, hub.Op{Op: hub.OpReset, Sessions: []agentbridge.Snapshot{snap("c", agentbridge.StatusIdle), {ID: "d", Harness: "other-agent", Status: agentbridge.StatusWaiting, WaitingFor: "approval"}}})
			f.converge(t, c, nil, count(2))

			if _, err := b.Hub.SetHarness(src, "other-agent", false); err != nil {
				t.Fatal(err)
			}
			f.converge(t, c, nil, count(1))
			f.mu.Lock()
			on, ok := f.st.Harnesses(src)
			f.mu.Unlock()
			if !ok || !slices.Equal(on, []string{"test-agent"}) {
				t.Errorf("enabled harnesses = %v (%v), want [test-agent]", on, ok)
			}
			if _, err := b.Hub.SetHarness(src, "other-agent", true); err != nil {
				t.Fatal(err)
			}
			b.DropStreams()
			b.Publish(t, src, hub.Op{Op: hub.OpUpsert, Session: snap("e", agentbridge.StatusIdle)})
			f.converge(t, c, nil, count(2))
			f.check(t)
			f.mu.Lock()
			defer f.mu.Unlock()
			if f.resumed < 2 || f.drops < 2 {
				t.Errorf("%d resumed connections after %d drops, want ≥ 2 of each", f.resumed, f.drops)
			}
			if f.firsts[0] != client.NameReset {
				t.Errorf("first connection began with %q, want a reset", f.firsts[0])
			}
			for i, n := range f.firsts[1:] {
				if n == client.NameReset {
					t.Errorf("resumed connection %d began with a reset: the ring held its cursor, it must replay", i+1)
				}
			}
		})
	}
}

// TestFollowFiltered: a filtered stream folds to the filtered GET.
func TestFollowFiltered(t *testing.T) {
	t.Parallel()
	b := bridgetest.Start(t, bridgetest.Options{})
	c := b.Client()
	q := url.Values{"status": {"running"}}
	f := follow(t, c, client.FollowOptions{StreamOptions: client.StreamOptions{Query: q, Format: client.NDJSON}})
	b.Publish(t, "test-push", hub.Op{Op: hub.OpUpsert, Session: snap("a", agentbridge.StatusIdle)},
		hub.Op{Op: hub.OpUpsert, Session: snap("b", agentbridge.StatusRunning)})
	got := f.converge(t, c, q, count(1))
	if got[0].Snapshot.ID != "b" {
		t.Errorf("filtered state %v, want only b", got)
	}
	b.Publish(t, "test-push", hub.Op{Op: hub.OpEvent, SessionID: "a", Event: agentbridge.Event{Kind: agentbridge.KindTurnStarted, TurnID: "t"}})
	f.converge(t, c, q, count(2))
}

// TestLoadThenFollow starts from the snapshot and follows from its
// revision: no reset is needed to be exact.
func TestLoadThenFollow(t *testing.T) {
	t.Parallel()
	b := bridgetest.Start(t, bridgetest.Options{})
	c := b.Client()
	b.Publish(t, "test-push", hub.Op{Op: hub.OpUpsert, Session: snap("a", agentbridge.StatusIdle)})
	l, err := c.Sessions(t.Context(), nil)
	if err != nil {
		t.Fatal(err)
	}
	f := &follower{changed: make(chan struct{}, 1)}
	f.st.Load(l)
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	var names []string
	errc := make(chan error, 1)
	go func() {
		errc <- c.Follow(ctx, client.FollowOptions{StreamOptions: client.StreamOptions{Since: l.Revision}}, func(e client.Event) error {
			f.mu.Lock()
			defer f.mu.Unlock()
			names = append(names, e.Name)
			f.changed <- struct{}{}
			return f.st.Apply(e)
		})
	}()
	b.Publish(t, "test-push", hub.Op{Op: hub.OpUpsert, Session: snap("b", agentbridge.StatusRunning)})
	f.converge(t, c, nil, count(2))
	cancel()
	<-errc
	if slices.Contains(names, client.NameReset) {
		t.Errorf("records %v: a cursor the bridge holds must not bring a reset", names)
	}
}

func TestFollowEnds(t *testing.T) {
	t.Parallel()
	t.Run("nothing listens", func(t *testing.T) {
		c := client.New(bridgetest.FreeAddr(t), "")
		err := c.Follow(t.Context(), client.FollowOptions{}, func(client.Event) error { return nil })
		if !errors.Is(err, client.ErrNotRunning) {
			t.Errorf("err = %v, want ErrNotRunning", err)
		}
	})
	t.Run("wrong token is not retried", func(t *testing.T) {
		b := bridgetest.Start(t, bridgetest.Options{})
		c := client.New(b.Addr, "wrong-token-0123456789abcdef")
		err := c.Follow(t.Context(), client.FollowOptions{}, func(client.Event) error { return nil })
		var se *client.StatusError
		if !errors.As(err, &se) || se.Status != http.StatusUnauthorized || se.Retryable() {
			t.Fatalf("err = %v, want a 401 not to retry", err)
		}
		if want := "the bridge refused the token"; !contains(err.Error(), want) || contains(err.Error(), "0123456789") {
			t.Errorf("err = %q, want %q and no token", err, want)
		}
	})
	t.Run("the callback's error", func(t *testing.T) {
		b := bridgetest.Start(t, bridgetest.Options{})
		stop := errors.New("enough")
		err := b.Client().Follow(t.Context(), client.FollowOptions{}, func(client.Event) error { return stop })
		if err != stop {
			t.Errorf("err = %v, want the callback's", err)
		}
	})
}
