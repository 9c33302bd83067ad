package hub

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/agentbridge/agentbridge"
)

// pushHub is a hub with one push source "p" of harness "a" and a clock
// the test moves.
func pushHub(t *testing.T) (*Hub, *time.Time) {
	t.Helper()
	now := t0
	h := newHub(t, Options{Now: func() time.Time { return now }})
	if err := h.AddPush(info("p", "a")); err != nil {
		t.Fatal(err)
	}
	return h, &now
}

func publish(t *testing.T, h *Hub, ops ...agentbridge.Op) {
	t.Helper()
	if err := h.Publish("p", ops); err != nil {
		t.Fatal(err)
	}
}

func pushed1(t *testing.T, h *Hub, id string) agentbridge.Entry {
	t.Helper()
	e, ok := h.Session("p", id)
	if !ok {
		t.Fatalf("session %s missing", id)
	}
	return e
}

func event(id, harness string, e agentbridge.Event) agentbridge.Op {
	return agentbridge.Op{Op: agentbridge.OpEvent, SessionID: id, Harness: harness, Event: e}
}

// TestRejectedPublishLeavesTheFold: a rejected batch changes nothing a
// later operation is checked against — not only the sessions clients see,
// but the fold behind them (the wait its valid first operation opened).
func TestRejectedPublishLeavesTheFold(t *testing.T) {
	h, _ := pushHub(t)
	publish(t, h, event("s1", "a", agentbridge.Event{Kind: agentbridge.KindSessionStarted}))
	err := h.Publish("p", []agentbridge.Op{
		event("s1", "", agentbridge.Event{Kind: agentbridge.KindWaitStarted, WaitID: "w1", State: agentbridge.StatusWaiting}),
		{Op: "patch"},
	})
	if diff := cmp.Diff([]string{"$[1].op invalid_enum"}, issuePaths(t, err)); diff != "" {
		t.Fatalf("issues mismatch (-want +got):\n%s", diff)
	}
	finish := []agentbridge.Op{event("s1", "", agentbridge.Event{Kind: agentbridge.KindWaitFinished, WaitID: "w1"})}
	if diff := cmp.Diff([]string{"$[0].event.waitId invalid_id"}, issuePaths(t, h.Check("p", finish))); diff != "" {
		t.Errorf("the rejected batch's wait is open in the fold (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"$[0].event.waitId invalid_id"}, issuePaths(t, h.Publish("p", finish))); diff != "" {
		t.Errorf("the rejected batch's wait is open in the fold (-want +got):\n%s", diff)
	}
	// Nor does a session it made, or a reset it made, stay behind: an
	// event without a harness is taken for a session the source has, and
	// only for one.
	for _, ops := range [][]agentbridge.Op{
		{event("s9", "a", agentbridge.Event{Kind: agentbridge.KindSessionStarted}), {Op: "patch"}},
		{{Op: agentbridge.OpReset, Sessions: []agentbridge.Snapshot{snap("s9", "a", agentbridge.StatusIdle)}}, {Op: "patch"}},
	} {
		if err := h.Publish("p", ops); err == nil {
			t.Fatal("a batch with an unknown op was taken")
		}
		if err := h.Check("p", ops[:1]); err != nil {
			t.Fatal(err)
		}
		check := []agentbridge.Op{
			event("s9", "", agentbridge.Event{Kind: agentbridge.KindAgentMetadata, Title: "x"}),
			event("s1", "", agentbridge.Event{Kind: agentbridge.KindAgentMetadata, Title: "y"}),
		}
		if diff := cmp.Diff([]string{"$[0].harness missing_field"}, issuePaths(t, h.Check("p", check))); diff != "" {
			t.Errorf("after %s: the store is not as it was (-want +got):\n%s", ops[0].Op, diff)
		}
	}
}

// TestCheckKeepsHeldHooks: a hook held for a push session not reported
// yet is folded when a publish makes the session, and not by a Check of
// the same operations.
func TestCheckKeepsHeldHooks(t *testing.T) {
	h, _ := pushHub(t)
	if err := h.Hook("p", "s1", hookAsk(t0.UnixMilli())); err != nil {
		t.Fatal(err)
	}
	ops := []agentbridge.Op{event("s1", "a", agentbridge.Event{Kind: agentbridge.KindSessionStarted})}
	if err := h.Check("p", ops); err != nil {
		t.Fatal(err)
	}
	if _, ok := h.Session("p", "s1"); ok {
		t.Fatal("Check made a session")
	}
	publish(t, h, ops...)
	if got := pushed1(t, h, "s1").Snapshot; got.Status != agentbridge.StatusWaiting {
		t.Errorf("the held hook was not folded when the session was published: %+v", got)
	}
	publish(t, h, agentbridge.Op{Op: agentbridge.OpUpsert, Session: snap("s2", "a", agentbridge.StatusIdle)})
	if err := h.Hook("p", "s2", hookAsk(t0.UnixMilli())); err != nil {
		t.Fatal(err)
	}
	if got := pushed1(t, h, "s2").Snapshot; got.Status != agentbridge.StatusWaiting {
		t.Errorf("a hook for a pushed snapshot's session: %+v", got)
	}
}

// TestPushedTurnEndsAreNew: a push source's agent.done without occurredAt
// ends the turn at the hub's clock when it comes — also after the session
// was given whole again (upsert), and when a session id is used again
// after its session stopped: nothing replays a push source's events, so
// no earlier stamp or read time is given again.
func TestPushedTurnEndsAreNew(t *testing.T) {
	h, now := pushHub(t)
	done := agentbridge.Event{Kind: agentbridge.KindAgentDone, Outcome: agentbridge.OutcomeSuccess}
	publish(t, h, event("s1", "a", agentbridge.Event{Kind: agentbridge.KindSessionStarted}),
		event("s1", "", agentbridge.Event{Kind: agentbridge.KindTurnStarted, TurnID: "t1"}), event("s1", "", done))
	*now = now.Add(time.Minute)
	publish(t, h, agentbridge.Op{Op: agentbridge.OpUpsert, Session: snap("s1", "a", agentbridge.StatusIdle)},
		event("s1", "", agentbridge.Event{Kind: agentbridge.KindTurnStarted, TurnID: "t2"}), event("s1", "", done))
	if got := pushed1(t, h, "s1").Snapshot.LastTurnEndedAt; got != now.UnixMilli() {
		t.Errorf("after an upsert: lastTurnEndedAt %d, want the clock %d", got, now.UnixMilli())
	}
	publish(t, h, event("s1", "", agentbridge.Event{Kind: agentbridge.KindSessionStopped}))
	*now = now.Add(time.Minute)
	publish(t, h, event("s1", "a", agentbridge.Event{Kind: agentbridge.KindSessionStarted}),
		event("s1", "", agentbridge.Event{Kind: agentbridge.KindTurnStarted, TurnID: "t1"}), event("s1", "", done))
	e := pushed1(t, h, "s1")
	if e.Snapshot.LastTurnEndedAt != now.UnixMilli() || e.Activity == nil || e.Activity.StatusSince != now.UnixMilli() {
		t.Errorf("a session id used again: lastTurnEndedAt %d, activity %+v; want the clock %d", e.Snapshot.LastTurnEndedAt, e.Activity, now.UnixMilli())
	}
}
