package history

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/agentbridge/agentbridge"
	"github.com/agentbridge/agentbridge/fold"
	"github.com/agentbridge/agentbridge/hub"
)

// journalSource is a source the test drives through its Start.
type journalSource struct{ started chan hub.Start }

func (j *journalSource) Info() agentbridge.SourceInfo {
	return agentbridge.SourceInfo{ID: "claude-code", DisplayName: "claude-code", EnvironmentVariables: []string{},
		Harnesses: []agentbridge.Harness{{ID: "claude-code", DisplayName: "claude-code"}}}
}

func (j *journalSource) Run(ctx context.Context, st hub.Start) error {
	j.started <- st
	<-ctx.Done()
	return nil
}

// throughAHub runs a store and a hub recording into it, with one journal
// source whose Publisher it returns; both end with the test.
func throughAHub(t *testing.T) (*Store, *hub.Hub, hub.Sink) {
	t.Helper()
	s := running(t, filepath.Join(t.TempDir(), "h.db"), Options{})
	h := hub.New(hub.Options{Recorder: s, Now: func() time.Time { return time.UnixMilli(base + 60_000) }})
	src := &journalSource{started: make(chan hub.Start, 1)}
	if err := h.Add(src); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { h.Run(ctx); close(done) }() //nolint:errcheck // ends with ctx
	t.Cleanup(func() { cancel(); <-done })
	return s, h, (<-src.started).Publisher
}

// TestThroughTheHub: a journal folded by a real hub, with a hook's wait,
// scanned again (a restart's rescan), gives the history of what it says,
// once.
func TestThroughTheHub(t *testing.T) {
	t.Parallel()
	s, h, sink := throughAHub(t)
	use := func(in, out int64) *agentbridge.UsageReport {
		return &agentbridge.UsageReport{Usage: agentbridge.Usage{InputTokens: in, OutputTokens: out}}
	}
	journal := []agentbridge.Event{
		{Kind: agentbridge.KindSessionStarted, OccurredAt: base, Model: "claude-opus-4-6", Cwd: "/w/app"},
		{Kind: agentbridge.KindTurnStarted, TurnID: "t1", OccurredAt: base + 1000},
		{Kind: agentbridge.KindAgentMetadata, OccurredAt: base + 2000, Usage: use(100, 10)},
		{Kind: agentbridge.KindToolStarted, ToolID: "tool1", Name: "Bash", OccurredAt: base + 3000},
		{Kind: agentbridge.KindToolFinished, ToolID: "tool1", Outcome: agentbridge.OutcomeSuccess, OccurredAt: base + 9000},
		{Kind: agentbridge.KindAgentMetadata, OccurredAt: base + 10000, Usage: use(200, 20)},
		{Kind: agentbridge.KindAgentDone, Outcome: agentbridge.OutcomeSuccess, OccurredAt: base + 11000},
	}
	scan := func(upTo int) {
		sink.Rescan()
		for _, e := range journal[:upTo] {
			if err := sink.Fold("s1", "claude-code", e); err != nil {
				t.Fatal(err)
			}
		}
		sink.Flush()
	}
	scan(4) // up to the tool's start
	if err := h.Hook("claude-code", "s1", fold.Hook{Kind: fold.HookAsk, Key: "k1", ToolID: "tool1", Reason: "Approve Bash", At: base + 4000}); err != nil {
		t.Fatal(err)
	}
	scan(len(journal)) // a restart: the whole journal again
	scan(len(journal)) // and again
	if err := s.Sync(context.Background()); err != nil {
		t.Fatal(err)
	}
	got := sessions(t, s, Query{})
	if len(got) != 1 {
		t.Fatalf("%d sessions, want 1", len(got))
	}
	want := agentbridge.HistoryTurn{Index: 0, ID: "t1", StartedAt: base + 1000, EndedAt: base + 11000,
		Outcome: agentbridge.OutcomeSuccess, Model: "claude-opus-4-6", Tools: 1,
		Usage: agentbridge.Usage{InputTokens: 300, OutputTokens: 30},
		Cost:  &agentbridge.Cost{USD: (300*5 + 30*25) / 1e6, Estimate: true, PricesAsOf: PricesAsOf},
		Waits: []agentbridge.HistoryWait{{ID: got[0].Turns[0].Waits[0].ID, State: agentbridge.StatusWaiting, Reason: "Approve Bash",
			StartedAt: base + 4000, EndedAt: base + 9000, Answered: agentbridge.WaitAnswered}}}
	if len(got[0].Turns) != 1 {
		t.Fatalf("turns %+v, want 1", got[0].Turns)
	}
	if diff := cmp.Diff(want, got[0].Turns[0]); diff != "" {
		t.Errorf("the turn (-want +got):\n%s", diff)
	}
	if got[0].Usage != want.Usage || got[0].Project != "/w/app#root" || got[0].WaitingMs != 5000 || got[0].ActiveMs != 10000 {
		t.Errorf("session: usage %+v, project %q, waiting %d, active %d", got[0].Usage, got[0].Project, got[0].WaitingMs, got[0].ActiveMs)
	}
}

// TestUsageOfASessionBackAfterItLeft: a session that stops and is written
// again in the same run comes back with a fold built anew, whose counts
// start from zero (added counts) or start again at the journal's totals
// (Codex's Total reports): the history keeps what it counted before and
// adds only what is new, so its totals are the journal's, also after a
// prune (which leaves the writer's state of the sessions it keeps).
func TestUsageOfASessionBackAfterItLeft(t *testing.T) {
	t.Parallel()
	for _, total := range []bool{false, true} {
		t.Run(fmt.Sprintf("total=%v", total), func(t *testing.T) {
			t.Parallel()
			s, _, sink := throughAHub(t)
			var sum int64
			use := func(in int64) *agentbridge.UsageReport {
				if sum += in; total {
					return &agentbridge.UsageReport{Usage: agentbridge.Usage{InputTokens: sum}, Total: true}
				}
				return &agentbridge.UsageReport{Usage: agentbridge.Usage{InputTokens: in}}
			}
			fold := func(es ...agentbridge.Event) {
				for _, e := range es {
					if err := sink.Fold("s1", "claude-code", e); err != nil {
						t.Fatal(err)
					}
				}
				sink.Flush()
			}
			fold(agentbridge.Event{Kind: agentbridge.KindSessionStarted, OccurredAt: base, Model: "claude-opus-4-6"},
				agentbridge.Event{Kind: agentbridge.KindTurnStarted, TurnID: "t1", OccurredAt: base + 1000},
				agentbridge.Event{Kind: agentbridge.KindAgentMetadata, OccurredAt: base + 2000, Usage: use(1000)},
				agentbridge.Event{Kind: agentbridge.KindAgentDone, Outcome: agentbridge.OutcomeSuccess, OccurredAt: base + 3000},
				agentbridge.Event{Kind: agentbridge.KindSessionStopped, OccurredAt: base + 4000})
			fold(agentbridge.Event{Kind: agentbridge.KindTurnStarted, TurnID: "t2", OccurredAt: base + 10_000},
				agentbridge.Event{Kind: agentbridge.KindAgentMetadata, OccurredAt: base + 11_000, Usage: use(100)})
			if err := s.Sync(context.Background()); err != nil {
				t.Fatal(err)
			}
			if _, err := s.Prune(context.Background(), time.UnixMilli(base-1)); err != nil {
				t.Fatal(err)
			}
			fold(agentbridge.Event{Kind: agentbridge.KindAgentMetadata, OccurredAt: base + 12_000, Usage: use(10)},
				agentbridge.Event{Kind: agentbridge.KindAgentDone, Outcome: agentbridge.OutcomeSuccess, OccurredAt: base + 13_000})
			if err := s.Sync(context.Background()); err != nil {
				t.Fatal(err)
			}
			got := sessions(t, s, Query{})
			if len(got) != 1 || len(got[0].Turns) != 2 {
				t.Fatalf("sessions %+v, want one with two turns", got)
			}
			want := agentbridge.Usage{InputTokens: 1110}
			if got[0].Usage != want || got[0].Turns[0].Usage.InputTokens != 1000 || got[0].Turns[1].Usage.InputTokens != 110 {
				t.Errorf("usage %+v, turns %+v and %+v; want %+v: 1000 then 110",
					got[0].Usage, got[0].Turns[0].Usage, got[0].Turns[1].Usage, want)
			}
			tab, err := s.Usage(context.Background(), UsageQuery{By: agentbridge.UsageByDay, Loc: time.UTC})
			if err != nil {
				t.Fatal(err)
			}
			if tab.Total.Usage != want {
				t.Errorf("usage by day: total %+v, want %+v", tab.Total.Usage, want)
			}
		})
	}
}

// TestRemovedSessionEndsItsTurn: a push source that removes a session
// (op remove) instead of telling session.stopped: its open turn ends as
// cancelled and its open wait as stopped, at the hub's clock, instead of
// staying open in the history for ever.
func TestRemovedSessionEndsItsTurn(t *testing.T) {
	t.Parallel()
	s := running(t, filepath.Join(t.TempDir(), "h.db"), Options{})
	now := base + 60_000
	h := hub.New(hub.Options{Recorder: s, Now: func() time.Time { return time.UnixMilli(now) }})
	if err := h.AddPush(agentbridge.SourceInfo{ID: "p", DisplayName: "p", EnvironmentVariables: []string{},
		Harnesses: []agentbridge.Harness{{ID: "a", DisplayName: "a"}}}); err != nil {
		t.Fatal(err)
	}
	ev := func(e agentbridge.Event) agentbridge.Op {
		return agentbridge.Op{Op: agentbridge.OpEvent, SessionID: "s1", Harness: "a", Event: e}
	}
	if err := h.Publish("p", []agentbridge.Op{
		ev(agentbridge.Event{Kind: agentbridge.KindTurnStarted, TurnID: "t1", OccurredAt: base}),
		ev(agentbridge.Event{Kind: agentbridge.KindWaitStarted, WaitID: "w1", State: agentbridge.StatusWaiting, Reason: "Allow?", OccurredAt: base + 1000}),
	}); err != nil {
		t.Fatal(err)
	}
	if err := h.Publish("p", []agentbridge.Op{{Op: agentbridge.OpRemove, SessionID: "s1"}}); err != nil {
		t.Fatal(err)
	}
	if err := s.Sync(context.Background()); err != nil {
		t.Fatal(err)
	}
	got := sessions(t, s, Query{})
	if len(got) != 1 || len(got[0].Turns) != 1 || len(got[0].Turns[0].Waits) != 1 {
		t.Fatalf("sessions %+v, want one with one turn and its wait", got)
	}
	tu, w := got[0].Turns[0], got[0].Turns[0].Waits[0]
	if tu.EndedAt != now || tu.Outcome != agentbridge.OutcomeCancelled || w.EndedAt != now || w.Answered != agentbridge.WaitStopped {
		t.Errorf("turn ended %d %q, wait ended %d %q; want both at %d, cancelled and stopped", tu.EndedAt, tu.Outcome, w.EndedAt, w.Answered, now)
	}
}
