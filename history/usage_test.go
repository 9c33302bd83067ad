package history

import (
	"context"
	"errors"
	"path/filepath"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"

	"github.com/agentbridge/agentbridge"
	"github.com/agentbridge/agentbridge/hub"
)

// TestUsage: tokens and cost where the model call was recorded, turns
// where they started, waits where they started; days in the given zone.
func TestUsage(t *testing.T) {
	t.Parallel()
	s := running(t, filepath.Join(t.TempDir(), "h.db"), Options{})
	// One session across midnight in Tokyo (UTC+9): base is 19:00 there.
	day1 := base + 4*3600_000 // 23:00 Tokyo
	ss := &session{source: "claude", id: "s", harness: "claude-code", fresh: true}
	record(t, s,
		ss.fact(day1, agentbridge.Event{Kind: agentbridge.KindSessionStarted, Cwd: "/p", Model: "claude-opus-4-6"}),
		ss.fact(day1+1000, agentbridge.Event{Kind: agentbridge.KindTurnStarted}),
		ss.fact(day1+2000, agentbridge.Event{Kind: agentbridge.KindWaitStarted, WaitID: "w", State: agentbridge.StatusWaiting}),
		ss.fact(day1+3000, agentbridge.Event{Kind: agentbridge.KindAgentMetadata, Usage: use(1_000_000, 0, 0, 0)}),
		ss.fact(day1+3600_000, agentbridge.Event{Kind: agentbridge.KindWaitFinished, WaitID: "w"}), // the next day
		ss.fact(day1+3601_000, agentbridge.Event{Kind: agentbridge.KindAgentMetadata, Usage: use(0, 1_000_000, 0, 0)}),
		ss.fact(day1+3602_000, agentbridge.Event{Kind: agentbridge.KindAgentDone, Outcome: agentbridge.OutcomeSuccess}),
	)
	other := &session{source: "codex", id: "o", harness: "codex", fresh: true}
	record(t, s,
		other.fact(day1+3700_000, agentbridge.Event{Kind: agentbridge.KindSessionStarted, Cwd: "/q", Model: "mystery-1"}),
		other.fact(day1+3701_000, agentbridge.Event{Kind: agentbridge.KindTurnStarted}),
		other.fact(day1+3702_000, agentbridge.Event{Kind: agentbridge.KindAgentMetadata, Usage: use(500, 0, 0, 0)}),
	)
	tokyo, err := time.LoadLocation("Asia/Tokyo")
	if err != nil {
		t.Skip("no time zone data:", err) // the zone database is missing on this system
	}
	cost := func(usd float64, unpriced int64) *agentbridge.Cost {
		return &agentbridge.Cost{USD: usd, Estimate: true, PricesAsOf: PricesAsOf, UnpricedTokens: unpriced}
	}
	got, err := s.Usage(context.Background(), UsageQuery{By: agentbridge.UsageByDay, Split: agentbridge.UsageByModel, Loc: tokyo})
	if err != nil {
		t.Fatal(err)
	}
	want := agentbridge.UsageTable{By: "day", Split: "model", TZ: "Asia/Tokyo", Rows: []agentbridge.UsageRow{
		{Key: "2026-12-01", SplitKey: "claude-opus-4-6", Usage: agentbridge.Usage{InputTokens: 1_000_000}, Tokens: 1_000_000,
			Cost: cost(5, 0), Sessions: 1, Turns: 1, ActiveMs: 3601_000, WaitingMs: 3598_000},
		{Key: "2026-12-02", SplitKey: "claude-opus-4-6", Usage: agentbridge.Usage{OutputTokens: 1_000_000}, Tokens: 1_000_000,
			Cost: cost(25, 0), Sessions: 1},
		{Key: "2026-12-02", SplitKey: "mystery-1", Usage: agentbridge.Usage{InputTokens: 500}, Tokens: 500, Sessions: 1, Turns: 1},
	}, Total: agentbridge.UsageRow{Usage: agentbridge.Usage{InputTokens: 1_000_500, OutputTokens: 1_000_000}, Tokens: 2_000_500,
		Cost: cost(30, 500), Sessions: 2, Turns: 2, ActiveMs: 3601_000, WaitingMs: 3598_000}}
	if diff := cmp.Diff(want, got, cmpopts.EquateApprox(0, 1e-9)); diff != "" {
		t.Errorf("usage by day and model (-want +got):\n%s", diff)
	}

	byProject, err := s.Usage(context.Background(), UsageQuery{By: agentbridge.UsageByProject, Query: Query{Harness: "codex"}})
	if err != nil {
		t.Fatal(err)
	}
	if len(byProject.Rows) != 1 || byProject.Rows[0].Key != "/q#root" || byProject.Rows[0].Cost != nil {
		t.Errorf("codex by project = %+v, want one row /q#root with no cost (its model is unpriced)", byProject.Rows)
	}

	for _, q := range []UsageQuery{{By: "week"}, {By: "day", Split: "day"}, {By: "day", Split: "colour"}} {
		if _, err := s.Usage(context.Background(), q); !errors.Is(err, ErrQuery) {
			t.Errorf("Usage(%+v) = %v, want ErrQuery", q, err)
		}
	}
}

// TestUsageEqualsTheJournalSums: whatever the shape of the counts (added
// per message, corrected down, replaced by a fresh fold), the usage rows
// sum to the session's last totals.
func TestUsageEqualsTheJournalSums(t *testing.T) {
	t.Parallel()
	s := running(t, filepath.Join(t.TempDir(), "h.db"), Options{})
	ss := &session{source: "x", id: "1", harness: "x", model: "gpt-5.4", fresh: true}
	totals := []agentbridge.Usage{{InputTokens: 10}, {InputTokens: 30, OutputTokens: 5}, {InputTokens: 25, OutputTokens: 9}, {InputTokens: 40, OutputTokens: 9, CacheReadTokens: 100}}
	for i, u := range totals {
		ss.usage = u
		record(t, s, ss.fact(base+int64(i), agentbridge.Event{Kind: agentbridge.KindAgentMetadata}))
	}
	got, err := s.Usage(context.Background(), UsageQuery{By: agentbridge.UsageByHarness})
	if err != nil {
		t.Fatal(err)
	}
	if got.Total.Usage != totals[len(totals)-1] {
		t.Errorf("usage total = %+v, want the last totals %+v", got.Total.Usage, totals[len(totals)-1])
	}
	// A fresh fold from zero: the old rows go, the new totals count.
	ss.fresh, ss.usage = true, agentbridge.Usage{InputTokens: 7}
	record(t, s, ss.fact(base+10, agentbridge.Event{Kind: agentbridge.KindAgentMetadata}))
	if got, _ = s.Usage(context.Background(), UsageQuery{By: agentbridge.UsageByHarness}); got.Total.Usage != ss.usage {
		t.Errorf("usage after a fresh fold = %+v, want %+v", got.Total.Usage, ss.usage)
	}
}

// TestPrune: sessions whose last event is before the cut go with all
// their rows; the others stay; the writer carries on.
func TestPrune(t *testing.T) {
	t.Parallel()
	s := running(t, filepath.Join(t.TempDir(), "h.db"), Options{Retention: -1})
	record(t, s, journal()...)
	young := &session{source: "x", id: "young", harness: "x", fresh: true}
	record(t, s, young.fact(base+100_000, agentbridge.Event{Kind: agentbridge.KindTurnStarted}))
	res, err := s.Prune(context.Background(), time.UnixMilli(base+50_000))
	if err != nil {
		t.Fatal(err)
	}
	if res != (PruneResult{Sessions: 1, Turns: 2}) {
		t.Errorf("Prune = %+v, want 1 session, 2 turns", res)
	}
	for _, table := range tables {
		var n int
		if err := s.rdb.QueryRow("SELECT COUNT(*) FROM " + table + " WHERE sid NOT IN (SELECT sid FROM sessions)").Scan(&n); err != nil {
			t.Fatal(err)
		}
		if n != 0 {
			t.Errorf("%s: %d rows of pruned sessions left", table, n)
		}
	}
	record(t, s, young.fact(base+200_000, agentbridge.Event{Kind: agentbridge.KindAgentDone, Outcome: agentbridge.OutcomeSuccess}))
	got := sessions(t, s, Query{})
	if len(got) != 1 || got[0].ID != "young" || len(got[0].Turns) != 1 || got[0].Turns[0].EndedAt != base+200_000 {
		t.Errorf("after the prune: %+v, want young with its turn ended", got)
	}
}

// TestPruneOfASessionStillGoing: a session pruned while the hub still
// folds it comes back with what it uses after the prune, not with all it
// used before (which the prune removed, and which would land on the day
// of its next fact).
func TestPruneOfASessionStillGoing(t *testing.T) {
	t.Parallel()
	s := running(t, filepath.Join(t.TempDir(), "h.db"), Options{Retention: -1})
	ss := &session{source: "x", id: "1", harness: "x", model: "gpt-5", fresh: true}
	record(t, s, ss.fact(base, agentbridge.Event{Kind: agentbridge.KindAgentMetadata, Usage: use(1000, 100, 0, 0)}))
	if res, err := s.Prune(context.Background(), time.UnixMilli(base+1)); err != nil || res.Sessions != 1 {
		t.Fatalf("Prune = %+v, %v; want the session removed", res, err)
	}
	s.Answered("", "x", "1", base+2) // makes nothing, forgets nothing
	record(t, s, ss.fact(base+3600_000, agentbridge.Event{Kind: agentbridge.KindAgentMetadata, Usage: use(10, 1, 0, 0)}))
	got := sessions(t, s, Query{})
	if want := (agentbridge.Usage{InputTokens: 10, OutputTokens: 1}); len(got) != 1 || got[0].Usage != want {
		t.Errorf("after the prune: %+v, want one session that used %+v", got, want)
	}
}

// TestRetention: Run prunes what is past the retention when it starts.
func TestRetention(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "h.db")
	func() {
		s := running(t, path, Options{Retention: -1})
		record(t, s, journal()...)
	}()
	now := func() time.Time { return time.UnixMilli(base).Add(DefaultRetention + time.Hour) }
	s := running(t, path, Options{Now: now})
	if err := s.Sync(context.Background()); err != nil { // Run has pruned before it takes the queue
		t.Fatal(err)
	}
	if got := sessions(t, s, Query{}); len(got) != 0 {
		t.Errorf("sessions past the retention: %d, want 0", len(got))
	}
}

// TestQueueBound: past MaxQueueBytes of facts waiting (queued, or taken
// by the writer and not yet written), Record drops (and counts) instead of
// growing or blocking; the facts the writer took count until it is done
// with them.
func TestQueueBound(t *testing.T) {
	t.Parallel()
	reg := prometheus.NewRegistry()
	s, err := Open(filepath.Join(t.TempDir(), "h.db"), Options{Registry: reg})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	facts := journal()
	// Records facts until some are dropped (or far more than the bound
	// could hold were recorded), and returns how many are queued.
	fill := func() (queued int) {
		lost := s.lost
		for range MaxQueueBytes/(len(facts)*itemSize) + 2 {
			s.Record(facts)
			s.mu.Lock()
			dropped := s.lost > lost
			s.mu.Unlock()
			if dropped {
				break
			}
		}
		s.mu.Lock()
		defer s.mu.Unlock()
		if s.queued+s.flying > MaxQueueBytes || s.lost == 0 {
			t.Errorf("%d + %d bytes waiting (max %d), lost %d: want the bound kept and the excess counted", s.queued, s.flying, MaxQueueBytes, s.lost)
		}
		return len(s.queue)
	}
	// The bound is reached within a hand-out's size: a few facts more or
	// less fit in what is left.
	full := fill()
	q, _, lost := s.take() // the writer writes them: they still count
	if n := fill(); n > len(facts) {
		t.Errorf("%d facts queued while the writer holds a full queue, want at most %d", n, len(facts))
	}
	s.giveBack(q) // written: room again
	if n := fill(); n < full-len(facts) {
		t.Errorf("%d facts queued once the writer is done, want about %d as at first", n, full)
	}
	s.mu.Lock()
	lost += s.lost
	s.mu.Unlock()
	if got := testCounter(s.dropped); got != float64(lost) {
		t.Errorf("dropped counter = %v, want %d", got, lost)
	}
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	registered := false
	for _, mf := range mfs {
		registered = registered || mf.GetName() == "agentbridge_history_dropped_facts_total"
	}
	if !registered {
		t.Error("agentbridge_history_dropped_facts_total is not registered")
	}
}

func testCounter(c interface{ Write(*dto.Metric) error }) float64 {
	var m dto.Metric
	if err := c.Write(&m); err != nil {
		return -1
	}
	return m.GetCounter().GetValue()
}

// TestHeavyStartUpLosesNothing: the start-up scans of a home with many
// large recent journals hand their facts out in one Record per source, at
// each scan's end: two hand-outs of 200 sessions of 1,000 events, the
// second while the writer writes the first, are queued whole, in bounded
// memory.
func TestHeavyStartUpLosesNothing(t *testing.T) {
	t.Parallel()
	s, err := Open(filepath.Join(t.TempDir(), "h.db"), Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	claude := scanFacts(200, 1000)
	codex := scanFacts(200, 1000)
	for i := range codex {
		codex[i].Source = "codex"
	}
	s.Record(claude)
	q, _, _ := s.take() // the writer writes the first source's facts
	s.Record(codex)
	s.mu.Lock()
	queued, held, lost := len(s.queue), s.queued+s.flying, s.lost
	s.mu.Unlock()
	if len(q) != len(claude) || queued != len(codex) || lost != 0 {
		t.Fatalf("the writer holds %d facts and %d are queued (%d lost), want %d and %d, none lost",
			len(q), queued, lost, len(claude), len(codex))
	}
	if per := held / (len(claude) + len(codex)); held > MaxQueueBytes || per > 160 {
		t.Errorf("%d bytes held, %d a fact: want at most %d, and a compact record a fact", held, per, MaxQueueBytes)
	}
	if got := testCounter(s.dropped); got != 0 {
		t.Errorf("dropped counter = %v, want 0", got)
	}
}

// TestOverflowLosingAFreshFact: when the full queue drops a retelling's
// Fresh fact, the retelling's facts that are kept replace what the
// session's journal told before, instead of doubling it.
func TestOverflowLosingAFreshFact(t *testing.T) {
	t.Parallel()
	s, err := Open(filepath.Join(t.TempDir(), "h.db"), Options{Project: func(cwd string) string { return cwd + "#root" }})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	filler := &session{source: "x", id: "filler", harness: "x"}
	fill := []hub.Fact{filler.fact(base, agentbridge.Event{Kind: agentbridge.KindAgentMetadata})}
	s.maxQueue = 64 * handOutSize(nil, fill)
	full := func() bool {
		s.mu.Lock()
		defer s.mu.Unlock()
		return s.lost > 0
	}
	ctx := context.Background()
	write := func() {
		if q, marks, _ := s.take(); len(q) > 0 {
			if err := s.write(ctx, q, marks); err != nil {
				t.Fatal(err)
			}
			s.carry(marks)
			s.giveBack(q)
		}
	}
	s.Record(journal())
	write()
	for !full() {
		s.Record(fill)
	}
	retold := journal()
	s.Record(retold[:5]) // dropped: the queue is full
	write()
	s.Record(retold[5:])
	write()
	got, err := s.Sessions(ctx, Query{Source: "claude"})
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 1 || len(got[0].Turns) != 1 || got[0].Turns[0].ID != "t2" || got[0].Turns[0].Index != 0 {
		t.Fatalf("after the loss: %+v, want only the kept turn t2, numbered 0", got)
	}
}

// TestUsageOfUndatedStarts: a turn or wait whose start is unknown (0: an
// undated first record of a scan) adds no time: it ended 56 years after
// the epoch, not after it started. Its turn still counts.
func TestUsageOfUndatedStarts(t *testing.T) {
	t.Parallel()
	s := running(t, filepath.Join(t.TempDir(), "h.db"), Options{})
	ss := &session{source: "x", id: "1", harness: "x", fresh: true}
	record(t, s,
		ss.fact(0, agentbridge.Event{Kind: agentbridge.KindTurnStarted}),
		ss.fact(0, agentbridge.Event{Kind: agentbridge.KindWaitStarted, WaitID: "w", State: agentbridge.StatusWaiting}),
		ss.fact(base, agentbridge.Event{Kind: agentbridge.KindWaitFinished, WaitID: "w"}),
		ss.fact(base+1000, agentbridge.Event{Kind: agentbridge.KindAgentDone, Outcome: agentbridge.OutcomeSuccess}),
	)
	got, err := s.Usage(context.Background(), UsageQuery{By: agentbridge.UsageByHarness})
	if err != nil {
		t.Fatal(err)
	}
	if tot := got.Total; tot.Turns != 1 || tot.ActiveMs != 0 || tot.WaitingMs != 0 {
		t.Errorf("total: %d turns, active %d ms, waiting %d ms; want 1 turn and no time", tot.Turns, tot.ActiveMs, tot.WaitingMs)
	}
	h := sessions(t, s, Query{})
	if len(h) != 1 || h[0].ActiveMs != 0 || h[0].WaitingMs != 0 {
		t.Errorf("sessions %+v, want one with no time", h)
	}
}
