package client_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/agentbridge/agentbridge"
	"github.com/agentbridge/agentbridge/client"
	"github.com/agentbridge/agentbridge/internal/bridgetest"
)

func snap(id string, st agentbridge.Status) agentbridge.Snapshot {
	return agentbridge.Snapshot{ID: id, Harness: "test-agent", Status: st, Title: "session " + id}
}

func count(n int) func([]agentbridge.Entry) bool {
	return func(e []agentbridge.Entry) bool { return len(e) == n }
}

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
			b.Publish(t, src, agentbridge.Op{Op: agentbridge.OpUpsert, Session: snap("a", agentbridge.StatusIdle)})
			f := bridgetest.Follow(t, c, client.FollowOptions{StreamOptions: client.StreamOptions{Format: format}})
			f.Converge(t, c, nil, count(1))

			b.Publish(t, src,
				agentbridge.Op{Op: agentbridge.OpEvent, SessionID: "b", Harness: "other-agent", Event: agentbridge.Event{Kind: agentbridge.KindSessionStarted, Title: "b"}},
				agentbridge.Op{Op: agentbridge.OpEvent, SessionID: "b", Event: agentbridge.Event{Kind: agentbridge.KindTurnStarted, TurnID: "t1"}},
				agentbridge.Op{Op: agentbridge.OpEvent, SessionID: "a", Event: agentbridge.Event{Kind: agentbridge.KindTurnStarted, TurnID: "t"}},
			)
			got := f.Converge(t, c, nil, count(2))
			if got[1].Snapshot.Status != agentbridge.StatusRunning {
				t.Errorf("b after turn.started: %+v, want running", got[1].Snapshot)
			}

			b.DropStreams() // resume by since: the ring still holds everything
			b.Publish(t, src, agentbridge.Op{Op: agentbridge.OpEvent, SessionID: "a", Event: agentbridge.Event{Kind: agentbridge.KindAgentDone, Outcome: agentbridge.OutcomeSuccess}})
			b.Publish(t, src, agentbridge.Op{Op: agentbridge.OpRemove, SessionID: "b"})
			f.Converge(t, c, nil, func(e []agentbridge.Entry) bool {
				return len(e) == 1 && e[0].Snapshot.Status == agentbridge.StatusIdle && e[0].Snapshot.LastTurn == agentbridge.LastTurnCompleted
			})

			b.Publish(t, src, agentbridge.Op{Op: agentbridge.OpReset, Sessions: []agentbridge.Snapshot{snap("c", agentbridge.StatusIdle), {ID: "d", Harness: "other-agent", Status: agentbridge.StatusWaiting, WaitingFor: "approval"}}})
			f.Converge(t, c, nil, count(2))

			if _, err := b.Hub.SetHarness(src, "other-agent", false); err != nil {
				t.Fatal(err)
			}
			f.Converge(t, c, nil, count(1))
			on, ok := f.Harnesses(src)
			if !ok || !slices.Equal(on, []string{"test-agent"}) {
				t.Errorf("enabled harnesses = %v (%v), want [test-agent]", on, ok)
			}
			if _, err := b.Hub.SetHarness(src, "other-agent", true); err != nil {
				t.Fatal(err)
			}
			b.DropStreams()
			b.Publish(t, src, agentbridge.Op{Op: agentbridge.OpUpsert, Session: snap("e", agentbridge.StatusIdle)})
			f.Converge(t, c, nil, count(2))
			f.CheckIDs(t)
			rec := f.Record()
			if rec.Resumed < 2 || rec.Drops < 2 {
				t.Errorf("%d resumed connections after %d drops, want ≥ 2 of each", rec.Resumed, rec.Drops)
			}
			if rec.Firsts[0] != agentbridge.RecordReset {
				t.Errorf("first connection began with %q, want a reset", rec.Firsts[0])
			}
			for i, n := range rec.Firsts[1:] {
				if n == agentbridge.RecordReset {
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
	f := bridgetest.Follow(t, c, client.FollowOptions{StreamOptions: client.StreamOptions{Query: q, Format: client.NDJSON}})
	b.Publish(t, "test-push", agentbridge.Op{Op: agentbridge.OpUpsert, Session: snap("a", agentbridge.StatusIdle)},
		agentbridge.Op{Op: agentbridge.OpUpsert, Session: snap("b", agentbridge.StatusRunning)})
	got := f.Converge(t, c, q, count(1))
	if got[0].Snapshot.ID != "b" {
		t.Errorf("filtered state %v, want only b", got)
	}
	b.Publish(t, "test-push", agentbridge.Op{Op: agentbridge.OpEvent, SessionID: "a", Event: agentbridge.Event{Kind: agentbridge.KindTurnStarted, TurnID: "t"}})
	f.Converge(t, c, q, count(2))
}

// TestLoadThenFollow starts from the snapshot and follows from its
// revision: no reset is needed to be exact.
func TestLoadThenFollow(t *testing.T) {
	t.Parallel()
	b := bridgetest.Start(t, bridgetest.Options{})
	c := b.Client()
	b.Publish(t, "test-push", agentbridge.Op{Op: agentbridge.OpUpsert, Session: snap("a", agentbridge.StatusIdle)})
	l, err := c.Sessions(t.Context(), nil)
	if err != nil {
		t.Fatal(err)
	}
	var st client.State
	st.Load(l)
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	var names []string
	errc := make(chan error, 1)
	go func() {
		errc <- c.Follow(ctx, client.FollowOptions{StreamOptions: client.StreamOptions{Since: l.Revision}}, func(e client.Event) error {
			names = append(names, e.Name)
			if err := st.Apply(e); err != nil {
				return err
			}
			if e.Name == agentbridge.RecordUpsert {
				return errDone
			}
			return nil
		})
	}()
	b.Publish(t, "test-push", agentbridge.Op{Op: agentbridge.OpUpsert, Session: snap("b", agentbridge.StatusRunning)})
	if err := <-errc; err != errDone {
		t.Fatalf("Follow: %v", err)
	}
	want, err := c.Sessions(t.Context(), nil)
	if err != nil {
		t.Fatal(err)
	}
	if st.Revision() != want.Revision || !cmp.Equal(st.Sessions(), want.Sessions) {
		t.Errorf("state at %d: %v; GET /v1/sessions at %d: %v", st.Revision(), st.Sessions(), want.Revision, want.Sessions)
	}
	if slices.Contains(names, agentbridge.RecordReset) {
		t.Errorf("records %v: a cursor the bridge holds must not bring a reset", names)
	}
}

var errDone = errors.New("done")

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

// TestResetsBackoff: only a connection that delivered events and ended
// cleanly (or was lost) starts the backoff again at Min; one that broke
// the stream's rules (a line without end, a bad event) after a valid
// record keeps backing off, so that such a bridge is not retried at full
// speed.
func TestResetsBackoff(t *testing.T) {
	for _, tc := range []struct {
		name      string
		delivered bool
		err       error
		want      bool
	}{
		{"delivered, the bridge ended the stream", true, nil, true},
		{"delivered, connection lost", true, errors.New("connection reset by peer"), true},
		{"delivered, then a line too long", true, fmt.Errorf("read: %w", client.ErrLineTooLong), false},
		{"delivered, then a bad event", true, fmt.Errorf("line 3: %w", client.ErrBadEvent), false},
		{"nothing delivered", false, nil, false},
		{"nothing delivered, a line too long", false, client.ErrLineTooLong, false},
	} {
		if got := client.ResetsBackoff(tc.delivered, tc.err); got != tc.want {
			t.Errorf("%s: ResetsBackoff = %v, want %v", tc.name, got, tc.want)
		}
	}
}
