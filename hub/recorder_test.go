package hub

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/agentbridge/agentbridge"
	"github.com/agentbridge/agentbridge/fold"
)

// recorder is a Recorder that keeps every hand-out, a copy of each.
type recorder struct {
	mu     sync.Mutex
	handed [][]Fact
}

func (r *recorder) Record(facts []Fact) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.handed = append(r.handed, append([]Fact(nil), facts...))
}

// facts returns every fact handed out so far, in order, and forgets them.
func (r *recorder) facts() []Fact {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []Fact
	for _, fs := range r.handed {
		out = append(out, fs...)
	}
	r.handed = nil
	return out
}

// brief is what a test checks of a fact when the rest is checked
// elsewhere: its session, event kind and flags.
func brief(fs []Fact) []string {
	out := []string{}
	for _, f := range fs {
		s := f.Host + "/" + f.Source + "/" + f.SessionID + " " + string(f.Event.Kind)
		if f.Event.Kind == "" {
			s += "(whole)"
		}
		if f.Fresh {
			s += " fresh"
		}
		if f.Recount {
			s += " recount"
		}
		if f.Hook {
			s += " hook"
		}
		out = append(out, s)
	}
	return out
}

var nowMs = t0.UnixMilli() // the hub's clock in these tests (fixedNow)

func TestRecorderJournalFactsCarryTimeUsageAndModel(t *testing.T) {
	rec := &recorder{}
	_, s, _ := sinkOf(t, Options{Recorder: rec})
	code := 3
	mustFold(t, s, "s1", "a", agentbridge.Event{Kind: agentbridge.KindSessionStarted, OccurredAt: 100, Model: "claude-opus-4", Cwd: "/work/app", Title: "Fix the tests"})
	mustFold(t, s, "s1", "", agentbridge.Event{Kind: agentbridge.KindTurnStarted, TurnID: "t1"}) // no time: read now
	use := &agentbridge.UsageReport{Usage: agentbridge.Usage{InputTokens: 10, OutputTokens: 5, CacheReadTokens: 100}}
	mustFold(t, s, "s1", "", agentbridge.Event{Kind: agentbridge.KindAgentMetadata, OccurredAt: 120, Model: "claude-sonnet-4", Usage: use})
	mustFold(t, s, "s1", "", agentbridge.Event{Kind: agentbridge.KindAgentMetadata, OccurredAt: 130, Usage: use})
	mustFold(t, s, "s1", "", agentbridge.Event{Kind: agentbridge.KindAgentDone, Outcome: agentbridge.OutcomeSuccess}) // stamped
	mustFold(t, s, "s1", "", agentbridge.Event{Kind: agentbridge.KindAgentExited, ExitCode: &code})                   // the hub's time
	if got := rec.facts(); len(got) != 0 {
		t.Fatalf("facts handed out before Flush: %v", brief(got))
	}
	s.Flush()

	twice := agentbridge.Usage{InputTokens: 20, OutputTokens: 10, CacheReadTokens: 200}
	once := use.Usage
	ended := &agentbridge.Ended{At: nowMs, ExitCode: &code}
	fact := func(e agentbridge.Event, model string, u agentbridge.Usage) Fact {
		return Fact{Source: "src", SessionID: "s1", Harness: "a", Event: e, Model: model, Cwd: "/work/app", Title: "Fix the tests", Usage: u}
	}
	want := []Fact{
		fact(agentbridge.Event{Kind: agentbridge.KindSessionStarted, OccurredAt: 100, Model: "claude-opus-4", Cwd: "/work/app", Title: "Fix the tests"}, "claude-opus-4", agentbridge.Usage{}),
		fact(agentbridge.Event{Kind: agentbridge.KindTurnStarted, TurnID: "t1", OccurredAt: nowMs}, "claude-opus-4", agentbridge.Usage{}),
		fact(agentbridge.Event{Kind: agentbridge.KindAgentMetadata, OccurredAt: 120, Model: "claude-sonnet-4", Usage: use}, "claude-sonnet-4", once),
		fact(agentbridge.Event{Kind: agentbridge.KindAgentMetadata, OccurredAt: 130, Usage: use}, "claude-sonnet-4", twice),
		fact(agentbridge.Event{Kind: agentbridge.KindAgentDone, Outcome: agentbridge.OutcomeSuccess, OccurredAt: nowMs}, "claude-sonnet-4", twice),
		fact(agentbridge.Event{Kind: agentbridge.KindAgentExited, ExitCode: &code, OccurredAt: nowMs}, "claude-sonnet-4", twice),
	}
	want[0].Fresh = true
	want[5].Ended = ended
	for i, st := range []agentbridge.Status{"idle", "running", "running", "running", "idle", "idle"} {
		want[i].Status = st
	}
	if diff := cmp.Diff(want, rec.facts()); diff != "" {
		t.Errorf("facts (-want +got):\n%s", diff)
	}
}

func TestRecorderFactsAreHandedOncePerCommit(t *testing.T) {
	rec := &recorder{}
	_, s, _ := sinkOf(t, Options{Recorder: rec})
	for i := range 3 {
		mustFold(t, s, "s1", "a", agentbridge.Event{Kind: agentbridge.KindToolStarted, ToolID: fmt.Sprint("x", i), Name: "Bash", OccurredAt: int64(10 + i)})
	}
	s.Flush()
	s.Flush() // nothing new: nothing handed
	rec.mu.Lock()
	defer rec.mu.Unlock()
	if len(rec.handed) != 1 || len(rec.handed[0]) != 3 {
		t.Fatalf("hand-outs %v, want one of 3 facts", rec.handed)
	}
	for i, f := range rec.handed[0] {
		if f.Event.ToolID != fmt.Sprint("x", i) {
			t.Errorf("fact %d is of tool %s: out of order", i, f.Event.ToolID)
		}
	}
}

func TestRecorderHookFactsAreMarked(t *testing.T) {
	rec := &recorder{}
	h := newHub(t, Options{Recorder: rec})
	st := running(t, h, newFake(info("claude-code", "claude-code")))[0]
	// a hook before the session is known is held, and folded after its
	// first event
	if err := h.Hook("claude-code", "s2", hookAsk(5)); err != nil {
		t.Fatal(err)
	}
	if err := st.Publisher.Event("s1", "claude-code", agentbridge.Event{Kind: agentbridge.KindTurnStarted, TurnID: "t1", OccurredAt: 10, PromptText: "Ship it"}); err != nil {
		t.Fatal(err)
	}
	if err := h.Hook("claude-code", "s1", hookAsk(12)); err != nil {
		t.Fatal(err)
	}
	if err := h.Hook("claude-code", "s1", fold.Hook{Kind: fold.HookAnswered, Key: "k1", At: 14}); err != nil {
		t.Fatal(err)
	}
	if err := st.Publisher.Event("s2", "claude-code", agentbridge.Event{Kind: agentbridge.KindTurnStarted, TurnID: "t1", OccurredAt: 4}); err != nil {
		t.Fatal(err)
	}
	got := rec.facts()
	want := []string{
		"/claude-code/s1 turn.started fresh",
		"/claude-code/s1 wait.started hook",
		"/claude-code/s1 wait.finished hook",
		"/claude-code/s2 turn.started fresh",
		"/claude-code/s2 wait.started hook",
	}
	if diff := cmp.Diff(want, brief(got)); diff != "" {
		t.Fatalf("facts (-want +got):\n%s", diff)
	}
	if f := got[1]; f.Event.OccurredAt != 12 || f.Event.State != agentbridge.StatusWaiting || f.Event.Reason != "Approve Bash: git push" || f.Title != "Ship it" {
		t.Errorf("the prompt's fact: %+v", f)
	}
	if got[1].Status != agentbridge.StatusWaiting || got[2].Status != agentbridge.StatusRunning {
		t.Errorf("statuses after the prompt and the answer: %q, %q; want waiting, running", got[1].Status, got[2].Status)
	}
	if f := got[2]; f.Event.OccurredAt != 14 || f.Event.WaitID != got[1].Event.WaitID {
		t.Errorf("the answer's fact: %+v", f)
	}
}

func TestRecorderScanFactsAreFresh(t *testing.T) {
	rec := &recorder{}
	_, s, _ := sinkOf(t, Options{Recorder: rec})
	mustFold(t, s, "s1", "a", agentbridge.Event{Kind: agentbridge.KindTurnStarted, TurnID: "t0", OccurredAt: 1})
	s.Flush()
	rec.facts()

	s.Rescan()
	mustFold(t, s, "s1", "a", agentbridge.Event{Kind: agentbridge.KindSessionStarted, OccurredAt: 1})
	mustFold(t, s, "s2", "b", agentbridge.Event{Kind: agentbridge.KindTurnStarted, TurnID: "t1"}) // undated, found at start-up
	mustFold(t, s, "s1", "", agentbridge.Event{Kind: agentbridge.KindTurnStarted, TurnID: "t1", OccurredAt: 2})
	mustFold(t, s, "s2", "", agentbridge.Event{Kind: agentbridge.KindAgentDone, Outcome: agentbridge.OutcomeSuccess}) // stamped
	// a commit inside the scan (a diagnostic) hands out none of the scan's
	if err := s.Diagnostic(agentbridge.Diagnostic{Code: "format-drift", Message: "a line was not understood"}); err != nil {
		t.Fatal(err)
	}
	if got := rec.facts(); len(got) != 0 {
		t.Fatalf("a scan's facts were handed out before the scan's commit: %v", brief(got))
	}
	s.Flush()
	got := rec.facts()
	want := []string{"/src/s1 session.started fresh", "/src/s2 turn.started fresh", "/src/s1 turn.started", "/src/s2 agent.done"}
	if diff := cmp.Diff(want, brief(got)); diff != "" {
		t.Fatalf("scan facts (-want +got):\n%s", diff)
	}
	if at := got[1].Event.OccurredAt; at != 0 {
		t.Errorf("an undated event found by a scan has time %d, want 0 (unknown)", at)
	}
	if at := got[3].Event.OccurredAt; at != nowMs {
		t.Errorf("an undated agent.done found by a scan has time %d, want the hub's stamp %d", at, nowMs)
	}

	// a journal read again starts fresh; the events after it do not
	s.Restart("s1")
	mustFold(t, s, "s1", "", agentbridge.Event{Kind: agentbridge.KindSessionStarted, OccurredAt: 1})
	mustFold(t, s, "s1", "", agentbridge.Event{Kind: agentbridge.KindTurnStarted, TurnID: "t1", OccurredAt: 2})
	s.Flush()
	mustFold(t, s, "s1", "", agentbridge.Event{Kind: agentbridge.KindAgentDone, Outcome: agentbridge.OutcomeSuccess, OccurredAt: 3})
	s.Flush()
	want = []string{"/src/s1 session.started fresh", "/src/s1 turn.started", "/src/s1 agent.done"}
	if diff := cmp.Diff(want, brief(rec.facts())); diff != "" {
		t.Errorf("after Restart (-want +got):\n%s", diff)
	}

	// a scan replaced by another before its end tells nothing: the second
	// tells it again
	s.Rescan()
	mustFold(t, s, "s1", "a", agentbridge.Event{Kind: agentbridge.KindSessionStarted, OccurredAt: 1})
	s.Rescan()
	mustFold(t, s, "s2", "b", agentbridge.Event{Kind: agentbridge.KindSessionStarted, OccurredAt: 1})
	s.Flush()
	if diff := cmp.Diff([]string{"/src/s2 session.started fresh"}, brief(rec.facts())); diff != "" {
		t.Errorf("a dropped scan (-want +got):\n%s", diff)
	}
}

func TestRecorderSessionsGivenWhole(t *testing.T) {
	rec := &recorder{}
	_, s, _ := sinkOf(t, Options{Recorder: rec})
	f := fold.NewSession("s1", "a")
	use := &agentbridge.UsageReport{Usage: agentbridge.Usage{InputTokens: 7, OutputTokens: 3}}
	for _, e := range []agentbridge.Event{
		{Kind: agentbridge.KindSessionStarted, OccurredAt: 1, Model: "gpt-5", Cwd: "/work/app", Title: "Port the CLI"},
		{Kind: agentbridge.KindAgentMetadata, OccurredAt: 2, Usage: use},
	} {
		if is := f.Apply(e); len(is) > 0 {
			t.Fatal(is)
		}
	}
	if err := s.Upsert(f); err != nil {
		t.Fatal(err)
	}
	if err := s.Reset([]*fold.Session{fold.FromSnapshot(snap("s2", "b", agentbridge.StatusRunning))}); err != nil {
		t.Fatal(err)
	}
	want := []Fact{
		{Source: "src", SessionID: "s1", Harness: "a", Event: agentbridge.Event{OccurredAt: nowMs}, Status: agentbridge.StatusIdle, Model: "gpt-5", Cwd: "/work/app", Title: "Port the CLI", Usage: use.Usage},
		{Source: "src", SessionID: "s2", Harness: "b", Event: agentbridge.Event{OccurredAt: nowMs}, Status: agentbridge.StatusRunning},
		// the reset left s1 out: gone
		{Source: "src", SessionID: "s1", Harness: "a", Event: agentbridge.Event{Kind: agentbridge.KindSessionStopped, OccurredAt: nowMs},
			Status: agentbridge.StatusIdle, Model: "gpt-5", Cwd: "/work/app", Title: "Port the CLI", Usage: use.Usage},
	}
	if diff := cmp.Diff(want, rec.facts()); diff != "" {
		t.Errorf("facts (-want +got):\n%s", diff)
	}
	// the events that follow a session given whole are not fresh
	mustFold(t, s, "s2", "", agentbridge.Event{Kind: agentbridge.KindAgentDone, Outcome: agentbridge.OutcomeSuccess, OccurredAt: 5})
	s.Flush()
	if diff := cmp.Diff([]string{"/src/s2 agent.done"}, brief(rec.facts())); diff != "" {
		t.Errorf("after a reset (-want +got):\n%s", diff)
	}
}

func TestRecorderPushBatches(t *testing.T) {
	turn := func(id, turn string) agentbridge.Op {
		return agentbridge.Op{Op: agentbridge.OpEvent, SessionID: id, Harness: "a", Event: agentbridge.Event{Kind: agentbridge.KindTurnStarted, TurnID: turn, OccurredAt: 10}}
	}
	upsert := agentbridge.Op{Op: agentbridge.OpUpsert, Session: agentbridge.Snapshot{ID: "s2", Harness: "a", Status: agentbridge.StatusIdle, Model: "qwen3-coder"}}
	bad := agentbridge.Op{Op: agentbridge.OpEvent, SessionID: "s1", Event: agentbridge.Event{Kind: agentbridge.KindWaitFinished, WaitID: "nope"}}
	for _, c := range []struct {
		name  string
		check bool // Check, not Publish
		ops   []agentbridge.Op
		want  []string
	}{
		{"accepted: in order", false, []agentbridge.Op{turn("s1", "t1"), upsert, turn("s2", "t2")},
			// a push source's sessions are never told again: never fresh; a
			// fold built anew (a new session, one given whole) counts again
			[]string{"/p/s1 turn.started recount", "/p/s2 (whole) recount", "/p/s2 turn.started"}},
		{"refused: none", false, []agentbridge.Op{turn("s1", "t1"), upsert, bad}, []string{}},
		{"checked: none", true, []agentbridge.Op{turn("s1", "t1"), upsert}, []string{}},
	} {
		t.Run(c.name, func(t *testing.T) {
			rec := &recorder{}
			h := newHub(t, Options{Recorder: rec})
			if err := h.AddPush(info("p", "a")); err != nil {
				t.Fatal(err)
			}
			var err error
			if c.check {
				err = h.Check("p", c.ops)
			} else {
				err = h.Publish("p", c.ops)
			}
			if (err != nil) != (len(c.want) == 0 && !c.check) {
				t.Fatalf("publish: %v", err)
			}
			got := rec.facts()
			if diff := cmp.Diff(c.want, brief(got)); diff != "" {
				t.Fatalf("facts (-want +got):\n%s", diff)
			}
			// what a refused batch folded is folded again (a push source's
			// sessions are never fresh)
			if err := h.Publish("p", []agentbridge.Op{turn("s1", "t1")}); err != nil {
				t.Fatal(err)
			}
			if got := rec.facts(); len(got) != 1 || got[0].Fresh || got[0].Event.Kind != agentbridge.KindTurnStarted {
				t.Errorf("the next batch: %v, want one turn.started, not fresh", brief(got))
			}
		})
	}
}

// recordedRemote is a hub with a recorder, a running claude-code source
// and the remote devbox.
func recordedRemote(t *testing.T) (*recorder, *Remote) {
	t.Helper()
	rec := &recorder{}
	h := newHub(t, Options{Recorder: rec})
	running(t, h, newFake(info("claude-code", "claude-code")))
	r, err := h.AddRemote("devbox")
	if err != nil {
		t.Fatal(err)
	}
	return rec, r
}

func TestRecorderRemoteFactsCarryTheHost(t *testing.T) {
	rec, r := recordedRemote(t)
	act := map[string]*agentbridge.Activity{"r1": {Usage: &agentbridge.Usage{InputTokens: 40, OutputTokens: 2}}}
	up := agentbridge.Snapshot{ID: "r1", Harness: "claude-code", Status: agentbridge.StatusRunning, Model: "claude-opus-4", Cwd: "/srv/api", Title: "Tune the cache"}
	r.Apply([]RemoteRecord{
		{Name: agentbridge.RecordLifecycle, Source: "claude-code", SessionID: "r1", Event: agentbridge.Event{Kind: agentbridge.KindTurnStarted, TurnID: "t1", OccurredAt: 50}},
		{Name: agentbridge.RecordUpsert, Source: "claude-code", Snapshot: up, Activity: act},
		{Name: agentbridge.RecordLifecycle, Source: "claude-code", SessionID: "gone", Event: agentbridge.Event{Kind: agentbridge.KindTurnStarted, TurnID: "t1"}},
		{Name: agentbridge.RecordReset, Source: "codex", Sessions: []agentbridge.Snapshot{{ID: "r2", Harness: "codex", Status: agentbridge.StatusIdle}}},
	})
	want := []Fact{
		{Host: "devbox", Source: "claude-code", SessionID: "r1", Harness: "claude-code", Event: agentbridge.Event{Kind: agentbridge.KindTurnStarted, TurnID: "t1", OccurredAt: 50},
			Status: agentbridge.StatusRunning, Model: "claude-opus-4", Cwd: "/srv/api", Title: "Tune the cache"},
		{Host: "devbox", Source: "claude-code", SessionID: "r1", Harness: "claude-code", Event: agentbridge.Event{OccurredAt: nowMs},
			Status: agentbridge.StatusRunning, Model: "claude-opus-4", Cwd: "/srv/api", Title: "Tune the cache", Usage: agentbridge.Usage{InputTokens: 40, OutputTokens: 2}},
		{Host: "devbox", Source: "codex", SessionID: "r2", Harness: "codex", Event: agentbridge.Event{OccurredAt: nowMs}, Status: agentbridge.StatusIdle},
	}
	if diff := cmp.Diff(want, rec.facts()); diff != "" {
		t.Errorf("facts (-want +got):\n%s", diff)
	}
	// a lifecycle record of a held session, without a time: read now
	r.Apply([]RemoteRecord{{Name: agentbridge.RecordLifecycle, Source: "claude-code", SessionID: "r1", Event: agentbridge.Event{Kind: agentbridge.KindAgentDone, Outcome: agentbridge.OutcomeSuccess}}})
	got := rec.facts()
	if len(got) != 1 || got[0].Host != "devbox" || got[0].Event.OccurredAt != nowMs || got[0].Usage.InputTokens != 40 || got[0].Fresh {
		t.Errorf("a held session's lifecycle fact: %+v", got)
	}
}

func TestRecorderNilMakesNoFacts(t *testing.T) {
	h, s, _ := sinkOf(t, Options{})
	mustFold(t, s, "s1", "a", agentbridge.Event{Kind: agentbridge.KindSessionStarted, OccurredAt: 1})
	if err := h.Hook("src", "s1", hookAsk(2)); err != nil {
		t.Fatal(err)
	}
	s.Rescan()
	mustFold(t, s, "s1", "a", agentbridge.Event{Kind: agentbridge.KindSessionStarted, OccurredAt: 1})
	p := s.(*publisher)
	p.mu.Lock()
	n := len(p.facts)
	p.mu.Unlock()
	if n != 0 {
		t.Errorf("%d facts collected without a recorder", n)
	}
	s.Flush()
}

func TestRecorderShutdownDropsFacts(t *testing.T) {
	rec := &recorder{}
	h := newHub(t, Options{Recorder: rec})
	f := newFake(info("src", "a"))
	f.deaf = true
	if err := h.Add(f); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { h.Run(ctx); close(done) }()
	var st Start
	select {
	case st = <-f.started:
	case <-time.After(wait):
		t.Fatal("source not started")
	}
	s := st.Publisher
	mustFold(t, s, "s1", "a", agentbridge.Event{Kind: agentbridge.KindSessionStarted, OccurredAt: 1})
	cancel()
	<-done
	s.Flush()
	if got := rec.facts(); len(got) != 0 {
		t.Errorf("a source shutting down handed out %v", brief(got))
	}
	p := s.(*publisher)
	p.mu.Lock()
	defer p.mu.Unlock()
	if len(p.facts) != 0 {
		t.Errorf("a source shutting down still holds %d facts", len(p.facts))
	}
}

// TestRecorderSessionBackAfterItLeftIsNotFresh: a session that left the
// hub (stopped, or removed) and whose journal is written again is read on
// from where its tailer was, so its new fold is no Fresh start: a recorder
// must keep the turns it recorded before. Its fold's counts start again
// from zero: Recount.
func TestRecorderSessionBackAfterItLeftIsNotFresh(t *testing.T) {
	rec := &recorder{}
	_, s, _ := sinkOf(t, Options{Recorder: rec})
	mustFold(t, s, "s1", "a", agentbridge.Event{Kind: agentbridge.KindTurnStarted, TurnID: "t0", OccurredAt: 1})
	mustFold(t, s, "s1", "", agentbridge.Event{Kind: agentbridge.KindSessionStopped, OccurredAt: 2})
	mustFold(t, s, "s2", "a", agentbridge.Event{Kind: agentbridge.KindTurnStarted, TurnID: "t0", OccurredAt: 1})
	s.Flush()
	if err := s.Remove("s2"); err != nil {
		t.Fatal(err)
	}
	mustFold(t, s, "s1", "a", agentbridge.Event{Kind: agentbridge.KindTurnStarted, TurnID: "t1", OccurredAt: 3})
	mustFold(t, s, "s2", "a", agentbridge.Event{Kind: agentbridge.KindTurnStarted, TurnID: "t1", OccurredAt: 3})
	mustFold(t, s, "s3", "a", agentbridge.Event{Kind: agentbridge.KindTurnStarted, TurnID: "t1", OccurredAt: 3})
	s.Flush()
	want := []string{
		"/src/s1 turn.started fresh", "/src/s1 session.stopped", "/src/s2 turn.started fresh",
		"/src/s2 session.stopped", // Remove: the hub's, at its clock
		"/src/s1 turn.started recount", "/src/s2 turn.started recount", "/src/s3 turn.started fresh",
	}
	if diff := cmp.Diff(want, brief(rec.facts())); diff != "" {
		t.Errorf("facts (-want +got):\n%s", diff)
	}
}

// TestRecorderRemovedSessionStops: a session that leaves without a
// session.stopped (a push source's remove or a reset without it,
// Sink.Remove) is told as one,
// made at the hub's clock, so that a recorder ends its open turn and
// waits; one that stopped already, or a remove of nothing, tells nothing
// more; a refused batch's remove tells nothing.
func TestRecorderRemovedSessionStops(t *testing.T) {
	rec := &recorder{}
	h := newHub(t, Options{Recorder: rec})
	if err := h.AddPush(info("p", "a")); err != nil {
		t.Fatal(err)
	}
	ev := func(id string, kind agentbridge.EventKind) agentbridge.Op {
		e := agentbridge.Event{Kind: kind, OccurredAt: 10}
		if kind == agentbridge.KindTurnStarted {
			e.TurnID = "t"
		}
		return agentbridge.Op{Op: agentbridge.OpEvent, SessionID: id, Harness: "a", Event: e}
	}
	remove := func(id string) agentbridge.Op { return agentbridge.Op{Op: agentbridge.OpRemove, SessionID: id} }
	if err := h.Publish("p", []agentbridge.Op{ev("s1", agentbridge.KindTurnStarted), ev("s2", agentbridge.KindTurnStarted)}); err != nil {
		t.Fatal(err)
	}
	rec.facts()
	bad := agentbridge.Op{Op: agentbridge.OpEvent, SessionID: "s1", Event: agentbridge.Event{Kind: agentbridge.KindWaitFinished, WaitID: "nope"}}
	if err := h.Publish("p", []agentbridge.Op{remove("s1"), bad}); err == nil {
		t.Fatal("a batch with a bad event was applied")
	}
	if got := rec.facts(); len(got) != 0 {
		t.Errorf("a refused batch told %v", brief(got))
	}
	if err := h.Publish("p", []agentbridge.Op{remove("s1"), ev("s2", agentbridge.KindSessionStopped), remove("s2"), remove("none")}); err != nil {
		t.Fatal(err)
	}
	got := rec.facts()
	if diff := cmp.Diff([]string{"/p/s1 session.stopped", "/p/s2 session.stopped"}, brief(got)); diff != "" {
		t.Fatalf("facts (-want +got):\n%s", diff)
	}
	if got[0].Event.OccurredAt != nowMs {
		t.Errorf("the remove's session.stopped at %d, want the hub's clock %d", got[0].Event.OccurredAt, nowMs)
	}
	// a reset leaves out the sessions that are gone: s3 and s4 stop, s5 stays
	if err := h.Publish("p", []agentbridge.Op{ev("s3", agentbridge.KindTurnStarted), ev("s4", agentbridge.KindTurnStarted), ev("s5", agentbridge.KindTurnStarted)}); err != nil {
		t.Fatal(err)
	}
	rec.facts()
	reset := agentbridge.Op{Op: agentbridge.OpReset, Sessions: []agentbridge.Snapshot{{ID: "s5", Harness: "a", Status: agentbridge.StatusRunning}}}
	if err := h.Publish("p", []agentbridge.Op{reset}); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"/p/s5 (whole) recount", "/p/s3 session.stopped", "/p/s4 session.stopped"}, brief(rec.facts())); diff != "" {
		t.Errorf("facts of a reset (-want +got):\n%s", diff)
	}
}

// TestRecorderRemoteSessionGone: a remote's session that goes without a
// session.stopped reaching this bridge (a remove record, or a reset that
// leaves it out: it ended while the remote was out of reach) is told as a
// session.stopped at the hub's clock; one the remote told stopped, or a
// remote out of reach (Leave: its sessions may go on), tells nothing more.
func TestRecorderRemoteSessionGone(t *testing.T) {
	rec, r := recordedRemote(t)
	snap := func(id string) agentbridge.Snapshot {
		return agentbridge.Snapshot{ID: id, Harness: "claude-code", Status: agentbridge.StatusRunning}
	}
	r.Apply([]RemoteRecord{{Name: agentbridge.RecordReset, Source: "claude-code",
		Sessions: []agentbridge.Snapshot{snap("r1"), snap("r2"), snap("r3"), snap("r4")}}})
	rec.facts()
	r.Apply([]RemoteRecord{
		{Name: agentbridge.RecordLifecycle, Source: "claude-code", SessionID: "r1", Event: agentbridge.Event{Kind: agentbridge.KindSessionStopped, OccurredAt: 70}},
		{Name: agentbridge.RecordRemove, Source: "claude-code", SessionID: "r1"},
		{Name: agentbridge.RecordRemove, Source: "claude-code", SessionID: "r2"},
		{Name: agentbridge.RecordRemove, Source: "claude-code", SessionID: "never"},
	})
	r.Apply([]RemoteRecord{{Name: agentbridge.RecordReset, Source: "claude-code", Sessions: []agentbridge.Snapshot{snap("r4")}}})
	got := rec.facts()
	want := []string{"devbox/claude-code/r1 session.stopped", "devbox/claude-code/r2 session.stopped",
		"devbox/claude-code/r3 session.stopped", "devbox/claude-code/r4 (whole)"}
	if diff := cmp.Diff(want, brief(got)); diff != "" {
		t.Fatalf("facts (-want +got):\n%s", diff)
	}
	if got[1].Event.OccurredAt != nowMs || got[1].Host != "devbox" || got[1].Status != agentbridge.StatusRunning {
		t.Errorf("r2's stop: %+v, want at the hub's clock with the session as held", got[1])
	}
	r.Leave()
	if got := rec.facts(); len(got) != 0 {
		t.Errorf("Leave told %v", brief(got))
	}
}

// TestRecorderRemovedAfterRestart: a session whose journal is read again
// (Restart) and removed before telling anything stops without being
// Fresh: nothing is told again, so a recorder must keep what it holds
// (and the fold counts from zero: Recount).
func TestRecorderRemovedAfterRestart(t *testing.T) {
	rec := &recorder{}
	_, s, _ := sinkOf(t, Options{Recorder: rec})
	mustFold(t, s, "s1", "a", agentbridge.Event{Kind: agentbridge.KindTurnStarted, TurnID: "t0", OccurredAt: 1})
	s.Flush()
	s.Restart("s1")
	if err := s.Remove("s1"); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"/src/s1 turn.started fresh", "/src/s1 session.stopped recount"}, brief(rec.facts())); diff != "" {
		t.Errorf("facts (-want +got):\n%s", diff)
	}
}

// TestRecorderLargeScanHandsOutAsItGoes: a scan holds at most maxScanFacts
// facts; beyond that it hands them out before its end (a start-up scan of
// a large home would otherwise hold them all), in order, each session's
// first one Fresh, and the publisher keeps no huge buffer after.
func TestRecorderLargeScanHandsOutAsItGoes(t *testing.T) {
	rec := &recorder{}
	_, s, _ := sinkOf(t, Options{Recorder: rec})
	p := s.(*publisher)
	const sessions, turns = 3, maxScanFacts // 3 × maxScanFacts turn.started + agent.done pairs
	s.Rescan()
	for i := range sessions {
		id := fmt.Sprintf("s%d", i)
		for n := range turns {
			mustFold(t, s, id, "a", agentbridge.Event{Kind: agentbridge.KindTurnStarted, TurnID: fmt.Sprint(n), OccurredAt: int64(2*n + 1)})
			mustFold(t, s, id, "", agentbridge.Event{Kind: agentbridge.KindAgentDone, Outcome: agentbridge.OutcomeSuccess, OccurredAt: int64(2*n + 2)})
		}
	}
	before := rec.facts()
	if len(before) < sessions*2*turns-maxScanFacts {
		t.Fatalf("the scan handed out %d facts before its end, want all but at most %d of %d", len(before), maxScanFacts, sessions*2*turns)
	}
	s.Flush()
	all := append(before, rec.facts()...)
	if len(all) != sessions*2*turns {
		t.Fatalf("the scan handed out %d facts in all, want %d", len(all), sessions*2*turns)
	}
	for i, f := range all {
		n := i % (2 * turns)
		if want := fmt.Sprintf("s%d", i/(2*turns)); f.SessionID != want || f.Event.OccurredAt != int64(n+1) || f.Fresh != (n == 0) {
			t.Fatalf("fact %d: %s at %d fresh %v, want %s at %d fresh %v", i, f.SessionID, f.Event.OccurredAt, f.Fresh, want, n+1, n == 0)
		}
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if c := cap(p.facts); c > 2*maxScanFacts {
		t.Errorf("the publisher keeps a buffer of %d facts after the scan, want at most about %d", c, maxScanFacts)
	}
}
