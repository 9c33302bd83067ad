package history

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/agentbridge/agentbridge"
	"github.com/agentbridge/agentbridge/hub"
)

// base is the tests' epoch: 2026-12-01 10:00 UTC, in ms.
var base = time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC).UnixMilli()

// running opens a store at path and runs its writer until the test ends.
func running(t testing.TB, path string, o Options) *Store {
	t.Helper()
	if o.Project == nil {
		o.Project = func(cwd string) string { return cwd + "#root" }
	}
	if o.Now == nil {
		o.Now = func() time.Time { return time.UnixMilli(base + 24*3600_000) }
	}
	s, err := Open(path, o)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Error(err)
		}
		if err := s.Close(); err != nil {
			t.Error(err)
		}
	})
	return s
}

func record(t testing.TB, s *Store, facts ...hub.Fact) {
	t.Helper()
	s.Record(facts)
	if err := s.Sync(context.Background()); err != nil {
		t.Fatal(err)
	}
}

// session builds facts of one session, the way the hub hands them: each
// with the session's state after it.
type session struct {
	host, source, id, harness, model, cwd string
	usage                                 agentbridge.Usage
	ended                                 *agentbridge.Ended
	fresh                                 bool
}

func (ss *session) fact(at int64, e agentbridge.Event) hub.Fact {
	e.OccurredAt = at
	if e.Model != "" {
		ss.model = e.Model
	}
	if e.Cwd != "" {
		ss.cwd = e.Cwd
	}
	if e.Usage != nil {
		ss.usage = ss.usage.Add(e.Usage.Usage)
	}
	if e.Kind == agentbridge.KindAgentExited {
		ss.ended = &agentbridge.Ended{At: at}
	}
	f := hub.Fact{Host: ss.host, Source: ss.source, SessionID: ss.id, Harness: ss.harness, Event: e,
		Model: ss.model, Cwd: ss.cwd, Usage: ss.usage, Ended: ss.ended, Fresh: ss.fresh}
	ss.fresh = false
	return f
}

func use(in, out, cr, cw int64) *agentbridge.UsageReport {
	return &agentbridge.UsageReport{Usage: agentbridge.Usage{InputTokens: in, OutputTokens: out, CacheReadTokens: cr, CacheWriteTokens: cw}}
}

// journal is a session's journal as facts: two turns, a wait answered,
// tools, usage, an exit in a third turn.
func journal() []hub.Fact {
	ss := &session{source: "claude", id: "s1", harness: "claude-code", fresh: true}
	m := base
	return []hub.Fact{
		ss.fact(m, agentbridge.Event{Kind: agentbridge.KindSessionStarted, Cwd: "/w/p", Model: "claude-sonnet-4-5"}),
		ss.fact(m+1000, agentbridge.Event{Kind: agentbridge.KindTurnStarted, TurnID: "t1"}),
		ss.fact(m+2000, agentbridge.Event{Kind: agentbridge.KindAgentMetadata, Usage: use(1000, 100, 0, 0)}),
		ss.fact(m+3000, agentbridge.Event{Kind: agentbridge.KindToolStarted, ToolID: "a", Name: "Bash"}),
		ss.fact(m+4000, agentbridge.Event{Kind: agentbridge.KindWaitStarted, WaitID: "w1", State: agentbridge.StatusWaiting, Reason: "Allow Bash?"}),
		ss.fact(m+9000, agentbridge.Event{Kind: agentbridge.KindWaitFinished, WaitID: "w1"}),
		ss.fact(m+10000, agentbridge.Event{Kind: agentbridge.KindToolFinished, ToolID: "a", Outcome: agentbridge.OutcomeSuccess}),
		ss.fact(m+11000, agentbridge.Event{Kind: agentbridge.KindAgentMetadata, Usage: use(0, 200, 5000, 1000)}),
		ss.fact(m+12000, agentbridge.Event{Kind: agentbridge.KindAgentDone, Outcome: agentbridge.OutcomeSuccess}),
		ss.fact(m+20000, agentbridge.Event{Kind: agentbridge.KindTurnStarted, TurnID: "t2"}),
		ss.fact(m+21000, agentbridge.Event{Kind: agentbridge.KindToolStarted, ToolID: "b", Name: "Edit"}),
		ss.fact(m+22000, agentbridge.Event{Kind: agentbridge.KindWaitStarted, WaitID: "w2", State: agentbridge.StatusWaiting, Reason: "Allow Edit?"}),
		ss.fact(m+25000, agentbridge.Event{Kind: agentbridge.KindAgentExited}),
	}
}

// want is what the history shows of journal().
func wantJournal() agentbridge.HistorySession {
	return agentbridge.HistorySession{
		Source: "claude", ID: "s1", Harness: "claude-code", Model: "claude-sonnet-4-5", Cwd: "/w/p",
		Project: "/w/p#root", StartedAt: base, LastAt: base + 25000, Ended: &agentbridge.Ended{At: base + 25000},
		Usage: agentbridge.Usage{InputTokens: 1000, OutputTokens: 300, CacheReadTokens: 5000, CacheWriteTokens: 1000},
		// 1000×3 + 300×15 + 5000×0.3 + 1000×3.75 per million
		Cost:      &agentbridge.Cost{USD: (3000 + 4500 + 1500 + 3750) / 1e6, Estimate: true, PricesAsOf: PricesAsOf},
		ActiveMs:  11000 + 5000,
		WaitingMs: 5000 + 3000,
		Turns: []agentbridge.HistoryTurn{{
			Index: 0, ID: "t1", StartedAt: base + 1000, EndedAt: base + 12000, Outcome: agentbridge.OutcomeSuccess,
			Model: "claude-sonnet-4-5", Tools: 1,
			Usage: agentbridge.Usage{InputTokens: 1000, OutputTokens: 300, CacheReadTokens: 5000, CacheWriteTokens: 1000},
			Cost:  &agentbridge.Cost{USD: (3000 + 4500 + 1500 + 3750) / 1e6, Estimate: true, PricesAsOf: PricesAsOf},
			Waits: []agentbridge.HistoryWait{{ID: "w1", State: agentbridge.StatusWaiting, Reason: "Allow Bash?",
				StartedAt: base + 4000, EndedAt: base + 9000, Answered: agentbridge.WaitAnswered}},
		}, {
			Index: 1, ID: "t2", StartedAt: base + 20000, EndedAt: base + 25000, Outcome: agentbridge.OutcomeCancelled,
			Model: "claude-sonnet-4-5", Tools: 1,
			Waits: []agentbridge.HistoryWait{{ID: "w2", State: agentbridge.StatusWaiting, Reason: "Allow Edit?",
				StartedAt: base + 22000, EndedAt: base + 25000, Answered: agentbridge.WaitExited}},
		}},
	}
}

func sessions(t testing.TB, s *Store, q Query) []agentbridge.HistorySession {
	t.Helper()
	got, err := s.Sessions(context.Background(), q)
	if err != nil {
		t.Fatal(err)
	}
	return got
}

func TestFold(t *testing.T) {
	t.Parallel()
	s := running(t, filepath.Join(t.TempDir(), "h.db"), Options{})
	record(t, s, journal()...)
	got := sessions(t, s, Query{})
	if diff := cmp.Diff([]agentbridge.HistorySession{wantJournal()}, got); diff != "" {
		t.Errorf("history (-want +got):\n%s", diff)
	}
}

// TestReplayIsIdempotent: the same journal told again (a restart's
// rescan: its first fact Fresh) gives the same history, whether the
// writer was restarted in between or not, and a hook's wait stays.
func TestReplayIsIdempotent(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "h.db")
	hook := hub.Fact{Source: "claude", SessionID: "s1", Harness: "claude-code", Hook: true,
		Event: agentbridge.Event{Kind: agentbridge.KindWaitStarted, WaitID: "hook-1", State: agentbridge.StatusWaiting, Reason: "hook", OccurredAt: base + 30000}}
	func() {
		s := running(t, path, Options{})
		record(t, s, journal()...)
		record(t, s, hook)
		record(t, s, journal()...) // told again in the same run
	}()
	s := running(t, path, Options{})
	record(t, s, journal()...) // and after a restart
	want := wantJournal()
	want.LastAt = base + 30000
	got := sessions(t, s, Query{})
	if diff := cmp.Diff([]agentbridge.HistorySession{want}, got); diff != "" {
		t.Errorf("history after replays (-want +got):\n%s", diff)
	}
	var hooks int
	if err := s.rdb.QueryRow("SELECT COUNT(*) FROM waits WHERE journal=0").Scan(&hooks); err != nil {
		t.Fatal(err)
	}
	if hooks != 1 {
		t.Errorf("hook waits after replays = %d, want 1", hooks)
	}
}

// TestRestartContinuesTheOpenTurn: a writer restarted in the middle of a
// turn (no Fresh: the hub kept following) ends that turn, its wait and
// its usage where they belong.
func TestRestartContinuesTheOpenTurn(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "h.db")
	facts := journal()[:5] // up to the wait's start, in turn 0
	ss := &session{source: "claude", id: "s1", harness: "claude-code", model: "claude-sonnet-4-5", cwd: "/w/p",
		usage: agentbridge.Usage{InputTokens: 1000, OutputTokens: 100}}
	func() {
		s := running(t, path, Options{})
		record(t, s, facts...)
	}()
	s := running(t, path, Options{})
	record(t, s,
		ss.fact(base+9000, agentbridge.Event{Kind: agentbridge.KindWaitFinished, WaitID: "w1"}),
		ss.fact(base+10000, agentbridge.Event{Kind: agentbridge.KindToolFinished, ToolID: "a"}),
		ss.fact(base+11000, agentbridge.Event{Kind: agentbridge.KindAgentMetadata, Usage: use(0, 200, 5000, 1000)}),
		ss.fact(base+12000, agentbridge.Event{Kind: agentbridge.KindAgentDone, Outcome: agentbridge.OutcomeSuccess}),
	)
	got := sessions(t, s, Query{})
	want := wantJournal().Turns[0]
	if len(got) != 1 || len(got[0].Turns) != 1 {
		t.Fatalf("sessions = %+v, want one with one turn", got)
	}
	if diff := cmp.Diff(want, got[0].Turns[0]); diff != "" {
		t.Errorf("turn after the restart (-want +got):\n%s", diff)
	}
}

// TestTurnRules: how turns and waits end.
func TestTurnRules(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name   string
		events []agentbridge.Event
		turns  []agentbridge.HistoryTurn
	}{
		{"a turn started while one is open ends it with no outcome", []agentbridge.Event{
			{Kind: agentbridge.KindTurnStarted, TurnID: "a"},
			{Kind: agentbridge.KindWaitStarted, WaitID: "w", State: agentbridge.StatusBlocked},
			{Kind: agentbridge.KindTurnStarted, TurnID: "b"},
		}, []agentbridge.HistoryTurn{
			{Index: 0, ID: "a", StartedAt: base, EndedAt: base + 2, Waits: []agentbridge.HistoryWait{
				{ID: "w", State: agentbridge.StatusBlocked, StartedAt: base + 1, EndedAt: base + 2, Answered: agentbridge.WaitTurnEnded}}},
			{Index: 1, ID: "b", StartedAt: base + 2},
		}},
		{"session.stopped cancels the turn; its wait stopped", []agentbridge.Event{
			{Kind: agentbridge.KindTurnStarted},
			{Kind: agentbridge.KindWaitStarted, WaitID: "w", State: agentbridge.StatusWaiting},
			{Kind: agentbridge.KindSessionStopped},
		}, []agentbridge.HistoryTurn{
			{Index: 0, StartedAt: base, EndedAt: base + 2, Outcome: agentbridge.OutcomeCancelled, Waits: []agentbridge.HistoryWait{
				{ID: "w", State: agentbridge.StatusWaiting, StartedAt: base + 1, EndedAt: base + 2, Answered: agentbridge.WaitStopped}}},
		}},
		{"agent.done ends the waits as turn-ended and counts tools", []agentbridge.Event{
			{Kind: agentbridge.KindTurnStarted},
			{Kind: agentbridge.KindToolStarted, ToolID: "x", Name: "Read"},
			{Kind: agentbridge.KindToolStarted, ToolID: "y", Name: "Read"},
			{Kind: agentbridge.KindWaitStarted, WaitID: "w", State: agentbridge.StatusWaiting},
			{Kind: agentbridge.KindAgentDone, Outcome: agentbridge.OutcomeError},
		}, []agentbridge.HistoryTurn{
			{Index: 0, StartedAt: base, EndedAt: base + 4, Outcome: agentbridge.OutcomeError, Tools: 2, Waits: []agentbridge.HistoryWait{
				{ID: "w", State: agentbridge.StatusWaiting, StartedAt: base + 3, EndedAt: base + 4, Answered: agentbridge.WaitTurnEnded}}},
		}},
		{"an undated event takes the session's last time", []agentbridge.Event{
			{Kind: agentbridge.KindTurnStarted},
			{Kind: agentbridge.KindAgentDone, Outcome: agentbridge.OutcomeSuccess, OccurredAt: -1},
		}, []agentbridge.HistoryTurn{
			{Index: 0, StartedAt: base, EndedAt: base, Outcome: agentbridge.OutcomeSuccess},
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			s := running(t, filepath.Join(t.TempDir(), "h.db"), Options{})
			ss := &session{source: "x", id: "1", harness: "x"}
			for i, e := range tc.events {
				at := base + int64(i)
				if e.OccurredAt == -1 {
					at = 0
				}
				record(t, s, ss.fact(at, e))
			}
			got := sessions(t, s, Query{})
			if len(got) != 1 {
				t.Fatalf("sessions = %d, want 1", len(got))
			}
			for i := range tc.turns {
				if tc.turns[i].Waits == nil {
					tc.turns[i].Waits = []agentbridge.HistoryWait{}
				}
			}
			if diff := cmp.Diff(tc.turns, got[0].Turns); diff != "" {
				t.Errorf("turns (-want +got):\n%s", diff)
			}
		})
	}
}

// TestAnsweredFromBridge: a wait answered through the bridge says so,
// whether the answer is recorded before the wait's end or after it.
func TestAnsweredFromBridge(t *testing.T) {
	t.Parallel()
	for _, late := range []bool{false, true} {
		s := running(t, filepath.Join(t.TempDir(), "h.db"), Options{})
		ss := &session{source: "x", id: "1", harness: "x"}
		record(t, s, ss.fact(base, agentbridge.Event{Kind: agentbridge.KindTurnStarted}),
			ss.fact(base+1, agentbridge.Event{Kind: agentbridge.KindWaitStarted, WaitID: "w", State: agentbridge.StatusWaiting}))
		if !late {
			s.Answered("", "x", "1", base+2)
		}
		record(t, s, ss.fact(base+3, agentbridge.Event{Kind: agentbridge.KindWaitFinished, WaitID: "w"}))
		if late {
			s.Answered("", "x", "1", base+2)
		}
		s.Answered("", "x", "unknown", base+2) // a session the history does not hold: nothing
		if err := s.Sync(context.Background()); err != nil {
			t.Fatal(err)
		}
		got := sessions(t, s, Query{})
		if a := got[0].Turns[0].Waits[0].Answered; a != agentbridge.WaitFromBridge {
			t.Errorf("late=%v: answered = %q, want %q", late, a, agentbridge.WaitFromBridge)
		}
		if len(got) != 1 {
			t.Errorf("late=%v: %d sessions, want 1 (Answered must not make one)", late, len(got))
		}
	}
}

// TestQueries: filters, range, limits.
func TestQueries(t *testing.T) {
	t.Parallel()
	s := running(t, filepath.Join(t.TempDir(), "h.db"), Options{})
	record(t, s, journal()...)
	remote := &session{host: "box", source: "codex", id: "r1", harness: "codex", fresh: true}
	record(t, s,
		remote.fact(base+100_000, agentbridge.Event{Kind: agentbridge.KindSessionStarted, Cwd: "/r", Model: "gpt-5.4"}),
		remote.fact(base+101_000, agentbridge.Event{Kind: agentbridge.KindTurnStarted}),
		remote.fact(base+102_000, agentbridge.Event{Kind: agentbridge.KindAgentMetadata, Usage: use(10, 20, 0, 0)}),
	)
	ids := func(q Query) []string {
		var out []string
		for _, h := range sessions(t, s, q) {
			out = append(out, h.ID)
		}
		return out
	}
	at := func(ms int64) time.Time { return time.UnixMilli(ms) }
	for _, tc := range []struct {
		name string
		q    Query
		want []string
	}{
		{"all, newest first", Query{}, []string{"r1", "s1"}},
		{"limit", Query{Limit: 1}, []string{"r1"}},
		{"local host", Query{Host: agentbridge.LocalHost}, []string{"s1"}},
		{"remote host", Query{Host: "box"}, []string{"r1"}},
		{"harness", Query{Harness: "codex"}, []string{"r1"}},
		{"source", Query{Source: "claude"}, []string{"s1"}},
		{"project (a remote's is its cwd)", Query{Project: "/r"}, []string{"r1"}},
		{"outcome success", Query{Outcome: "success"}, []string{"s1"}},
		{"outcome running", Query{Outcome: "running"}, []string{"r1"}},
		{"range before the remote", Query{To: at(base + 50_000)}, []string{"s1"}},
		{"range after the journal", Query{From: at(base + 50_000)}, []string{"r1"}},
		{"range overlapping the journal", Query{From: at(base + 10_000), To: at(base + 11_000)}, []string{"s1"}},
		{"empty range", Query{From: at(base + 200_000)}, nil},
	} {
		if diff := cmp.Diff(tc.want, ids(tc.q)); diff != "" {
			t.Errorf("%s (-want +got):\n%s", tc.name, diff)
		}
	}
	got := sessions(t, s, Query{Turns: 1})
	if n := len(got[1].Turns); n != 1 || got[1].Turns[0].Index != 1 {
		t.Errorf("Turns: 1 kept %+v, want the last turn only", got[1].Turns)
	}
	if got[1].ActiveMs != wantJournal().ActiveMs {
		t.Errorf("ActiveMs with Turns 1 = %d, want every turn's %d", got[1].ActiveMs, wantJournal().ActiveMs)
	}
}

// TestRunWritesTheQueueAtItsEnd: facts recorded just before the writer's
// context ends are written before Run returns.
func TestRunWritesTheQueueAtItsEnd(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "h.db")
	s, err := Open(path, Options{Retention: -1, Project: func(cwd string) string { return cwd + "#root" }})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	s.Record(journal())
	cancel() // before Run even starts: it still writes the queue
	go func() { done <- s.Run(ctx) }()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	got := sessions(t, s, Query{})
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]agentbridge.HistorySession{wantJournal()}, got); diff != "" {
		t.Errorf("history after Run ended (-want +got):\n%s", diff)
	}
}

// TestRunWritesWithoutSync: facts recorded are written by the writer on
// its own, after its delay (a timer armed by the wake), with no Sync.
func TestRunWritesWithoutSync(t *testing.T) {
	t.Parallel()
	s, err := Open(filepath.Join(t.TempDir(), "h.db"), Options{Retention: -1, Project: func(cwd string) string { return cwd + "#root" }})
	if err != nil {
		t.Fatal(err)
	}
	flushed := make(chan struct{}, 1)
	s.flushed = func() {
		select {
		case flushed <- struct{}{}:
		default:
		}
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.Run(ctx) }()
	defer func() {
		cancel()
		if err := <-done; err != nil {
			t.Error(err)
		}
		if err := s.Close(); err != nil {
			t.Error(err)
		}
	}()
	s.Record(journal())
	for {
		<-flushed
		if got := sessions(t, s, Query{}); len(got) == 1 {
			if diff := cmp.Diff(wantJournal(), got[0]); diff != "" {
				t.Errorf("history written by the writer alone (-want +got):\n%s", diff)
			}
			return
		}
	}
}

// TestProjectRule: the default project of a cwd is the nearest directory
// at or above it holding a .git entry (a directory, or a linked
// worktree's file), else the cwd itself; one that is not absolute and
// clean is its own project.
func TestProjectRule(t *testing.T) {
	t.Parallel()
	base := t.TempDir()
	for _, d := range []string{"repo/.git", "repo/a/b", "wt/x", "none/y"} {
		if err := os.MkdirAll(filepath.Join(base, d), 0o700); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(base, "wt/.git"), []byte("gitdir: ../repo/.git/worktrees/wt\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for cwd, want := range map[string]string{
		filepath.Join(base, "repo/a/b"): filepath.Join(base, "repo"),
		filepath.Join(base, "repo"):     filepath.Join(base, "repo"),
		filepath.Join(base, "wt/x"):     filepath.Join(base, "wt"),
		filepath.Join(base, "none/y"):   filepath.Join(base, "none/y"),
		"relative/dir":                  "relative/dir",
	} {
		if got := ProjectRoot(cwd); got != want {
			t.Errorf("ProjectRoot(%q) = %q, want %q", cwd, got, want)
		}
	}
}

// TestFactWithoutEvent: a session given whole (a remote's update: no
// event) changes the session and its usage, and makes no turn.
func TestFactWithoutEvent(t *testing.T) {
	t.Parallel()
	s := running(t, filepath.Join(t.TempDir(), "h.db"), Options{})
	code := 0
	record(t, s, hub.Fact{Host: "box", Source: "codex", SessionID: "r", Harness: "codex", Fresh: true,
		Event: agentbridge.Event{OccurredAt: base}, Model: "gpt-5", Cwd: "/r", Title: "fix it",
		Usage: agentbridge.Usage{InputTokens: 1_000_000}, Ended: &agentbridge.Ended{At: base, ExitCode: &code}})
	got := sessions(t, s, Query{})
	want := []agentbridge.HistorySession{{Host: "box", Source: "codex", ID: "r", Harness: "codex", Title: "fix it",
		Model: "gpt-5", Cwd: "/r", Project: "/r", StartedAt: base, LastAt: base,
		Ended: &agentbridge.Ended{At: base, ExitCode: &code}, Usage: agentbridge.Usage{InputTokens: 1_000_000},
		Cost: &agentbridge.Cost{USD: 1.25, Estimate: true, PricesAsOf: PricesAsOf}, Turns: []agentbridge.HistoryTurn{}}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("history (-want +got):\n%s", diff)
	}
}

// TestStatusClosesWaits: a fact after which the session is neither
// waiting nor blocked closes the waits the history holds open (the fold
// closed a hook's wait because the journal shows the agent went on); a
// fact with no status closes nothing.
func TestStatusClosesWaits(t *testing.T) {
	t.Parallel()
	s := running(t, filepath.Join(t.TempDir(), "h.db"), Options{})
	ss := &session{source: "x", id: "1", harness: "x"}
	with := func(f hub.Fact, st agentbridge.Status) hub.Fact { f.Status = st; return f }
	hook := with(ss.fact(base+1, agentbridge.Event{Kind: agentbridge.KindWaitStarted, WaitID: "h", State: agentbridge.StatusWaiting}), agentbridge.StatusWaiting)
	hook.Hook = true
	record(t, s,
		with(ss.fact(base, agentbridge.Event{Kind: agentbridge.KindTurnStarted}), agentbridge.StatusRunning),
		hook,
		ss.fact(base+2, agentbridge.Event{Kind: agentbridge.KindAgentMetadata}), // no status: nothing closes
		with(ss.fact(base+3, agentbridge.Event{Kind: agentbridge.KindToolFinished, ToolID: "t"}), agentbridge.StatusRunning),
	)
	got := sessions(t, s, Query{})
	want := []agentbridge.HistoryWait{{ID: "h", State: agentbridge.StatusWaiting, StartedAt: base + 1, EndedAt: base + 3, Answered: agentbridge.WaitAnswered}}
	if diff := cmp.Diff(want, got[0].Turns[0].Waits); diff != "" {
		t.Errorf("waits (-want +got):\n%s", diff)
	}
}

// TestWholeAgainKeepsTheTime: a session given whole again later (a
// remote's reset) does not move its last event's time.
func TestWholeAgainKeepsTheTime(t *testing.T) {
	t.Parallel()
	s := running(t, filepath.Join(t.TempDir(), "h.db"), Options{})
	whole := func(at int64) hub.Fact {
		return hub.Fact{Host: "box", Source: "codex", SessionID: "r", Harness: "codex", Event: agentbridge.Event{OccurredAt: at}, Model: "gpt-5"}
	}
	record(t, s, whole(base), whole(base+3600_000))
	got := sessions(t, s, Query{})
	if len(got) != 1 || got[0].StartedAt != base || got[0].LastAt != base {
		t.Errorf("after a second snapshot: %+v, want started and last at the first", got)
	}
}

// TestRecountAddsToWhatWasUsed: a session given whole from a snapshot (a
// push source's upsert: its fold built anew, counts from zero: Recount)
// keeps what it used before, and what its new fold counts is added.
func TestRecountAddsToWhatWasUsed(t *testing.T) {
	t.Parallel()
	s := running(t, filepath.Join(t.TempDir(), "h.db"), Options{})
	ss := &session{source: "p", id: "1", harness: "qwen", model: "qwen3-coder-plus"}
	record(t, s,
		ss.fact(base, agentbridge.Event{Kind: agentbridge.KindTurnStarted}),
		ss.fact(base+1, agentbridge.Event{Kind: agentbridge.KindAgentMetadata, Usage: use(500, 50, 0, 0)}))
	ss.usage = agentbridge.Usage{}
	whole := ss.fact(base+2, agentbridge.Event{})
	whole.Recount = true
	record(t, s, whole, ss.fact(base+3, agentbridge.Event{Kind: agentbridge.KindAgentMetadata, Usage: use(20, 2, 0, 0)}))
	got := sessions(t, s, Query{})
	if want := (agentbridge.Usage{InputTokens: 520, OutputTokens: 52}); len(got) != 1 || got[0].Usage != want {
		t.Errorf("sessions %+v, want one that used %+v", got, want)
	}
}

// TestRecountSurvivesManySessions: the writer keeps the state of a
// session whose fold was built anew (Recount) even when it holds more
// sessions than it keeps states of: the rows do not say what the fold
// counted, so a state read again would take back what it used before.
func TestRecountSurvivesManySessions(t *testing.T) {
	t.Parallel()
	s := running(t, filepath.Join(t.TempDir(), "h.db"), Options{})
	ss := &session{source: "p", id: "back", harness: "x", model: "gpt-5"}
	record(t, s, ss.fact(base, agentbridge.Event{Kind: agentbridge.KindAgentMetadata, Usage: use(1000, 0, 0, 0)}))
	ss.usage = agentbridge.Usage{}
	again := ss.fact(base+1, agentbridge.Event{Kind: agentbridge.KindAgentMetadata, Usage: use(10, 0, 0, 0)})
	again.Recount = true
	record(t, s, again)
	others := make([]hub.Fact, 0, maxStates+1)
	for i := range maxStates + 1 {
		o := &session{source: "p", id: fmt.Sprintf("other-%d", i), harness: "x"}
		others = append(others, o.fact(base+2, agentbridge.Event{Kind: agentbridge.KindTurnStarted}))
	}
	record(t, s, others...)
	record(t, s, ss.fact(base+3, agentbridge.Event{Kind: agentbridge.KindAgentMetadata, Usage: use(10, 0, 0, 0)}))
	got := sessions(t, s, Query{Source: "p", Limit: 1})
	if want := (agentbridge.Usage{InputTokens: 1020}); len(got) != 1 || got[0].ID != "back" || got[0].Usage != want {
		t.Errorf("sessions %+v, want back that used %+v", got, want)
	}
}
