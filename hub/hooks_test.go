package hub

import (
	"errors"
	"strconv"
	"testing"
	"time"

	"github.com/agentbridge/agentbridge"
	"github.com/agentbridge/agentbridge/fold"
)

func hookAsk(at int64) fold.Hook {
	return fold.Hook{Kind: fold.HookAsk, Key: "k1", Reason: "Approve Bash: git push", At: at}
}

func statusOf(tb testing.TB, h *Hub, id string) agentbridge.Snapshot {
	tb.Helper()
	e, ok := h.Session("claude-code", id)
	if !ok {
		tb.Fatalf("session %s missing", id)
	}
	return e.Snapshot
}

func TestHookFoldsBesideTheJournal(t *testing.T) {
	h := newHub(t, Options{})
	f := newFake(info("claude-code", "claude-code"))
	st := running(t, h, f)[0]
	pub := st.Publisher
	if err := pub.Event("s1", "claude-code", agentbridge.Event{Kind: agentbridge.KindTurnStarted, TurnID: "t1", OccurredAt: 10}); err != nil {
		t.Fatal(err)
	}
	sub := h.Subscribe(h.Revision(), true, agentbridge.Filter{})
	defer sub.Close()
	if err := h.Hook("claude-code", "s1", hookAsk(12)); err != nil {
		t.Fatal(err)
	}
	if got := statusOf(t, h, "s1"); got.Status != agentbridge.StatusWaiting || got.WaitingFor != "Approve Bash: git push" {
		t.Fatalf("after the prompt: %+v", got)
	}
	recs := []Record{next(t, sub), next(t, sub)}
	if got := names(recs); got[0] != agentbridge.RecordLifecycle || got[1] != agentbridge.RecordUpsert {
		t.Fatalf("records %v", got)
	}
	var lc lifecycleData
	mustDecode(t, recs[0], &lc)
	if lc.Event.Kind != agentbridge.KindWaitStarted || lc.Event.State != agentbridge.StatusWaiting {
		t.Fatalf("lifecycle %+v", lc.Event)
	}
	// a duplicate changes nothing and streams nothing
	rev := h.Revision()
	h.Hook("claude-code", "s1", hookAsk(12))
	if h.Revision() != rev {
		t.Fatal("a duplicated hook was streamed")
	}
	// the journal's turn end proves it over; a late hook does not bring it back
	if err := pub.Event("s1", "claude-code", agentbridge.Event{Kind: agentbridge.KindAgentDone, Outcome: agentbridge.OutcomeSuccess, OccurredAt: 20}); err != nil {
		t.Fatal(err)
	}
	h.Hook("claude-code", "s1", hookAsk(12))
	if got := statusOf(t, h, "s1"); got.Status != agentbridge.StatusIdle || got.LastTurn != agentbridge.LastTurnCompleted {
		t.Fatalf("a late hook resurrected the wait: %+v", got)
	}
	if err := h.Hook("pi", "s1", hookAsk(1)); !errors.Is(err, ErrUnknownSource) {
		t.Fatalf("unknown source: %v", err)
	}
}

func TestHookHeldUntilTheSessionAppears(t *testing.T) {
	now := t0
	h := newHub(t, Options{Now: func() time.Time { return now }})
	f := newFake(info("codex", "codex"))
	pub := running(t, h, f)[0].Publisher
	h.Hook("codex", "s1", hookAsk(now.UnixMilli()))
	h.Hook("codex", "old", hookAsk(now.UnixMilli()))
	if _, ok := h.Session("codex", "s1"); ok {
		t.Fatal("a hook made a session the journal has not shown")
	}
	now = now.Add(HookHold / 2)
	pub.Event("s1", "codex", agentbridge.Event{Kind: agentbridge.KindSessionStarted})
	if e, _ := h.Session("codex", "s1"); e.Snapshot.Status != agentbridge.StatusWaiting {
		t.Fatalf("the held hook was not folded: %+v", e.Snapshot)
	}
	now = now.Add(HookHold)
	pub.Event("old", "codex", agentbridge.Event{Kind: agentbridge.KindSessionStarted})
	if e, _ := h.Session("codex", "old"); e.Snapshot.Status != agentbridge.StatusIdle {
		t.Fatalf("a hook held too long was folded: %+v", e.Snapshot)
	}
	for i := 0; i < 10*MaxHeldHooks; i++ {
		h.Hook("codex", "nobody", hookAsk(now.UnixMilli()))
	}
	p := h.sources["codex"].pub
	p.mu.Lock()
	n := len(p.held)
	p.mu.Unlock()
	if n > MaxHeldHooks {
		t.Fatalf("%d held hooks", n)
	}
}

// TestHookBridgeRestartedMidWait: a new hub rebuilt from the journal knows
// nothing of the prompt taken before; the answer that follows is taken
// and leaves the session running.
func TestHookBridgeRestartedMidWait(t *testing.T) {
	h := newHub(t, Options{})
	f := newFake(info("claude-code", "claude-code"))
	pub := running(t, h, f)[0].Publisher
	sf := fold.NewSession("s1", "claude-code")
	sf.Apply(agentbridge.Event{Kind: agentbridge.KindTurnStarted, TurnID: "t1", OccurredAt: 10})
	sf.Apply(agentbridge.Event{Kind: agentbridge.KindToolStarted, ToolID: "toolu_1", Name: "Bash"})
	if err := pub.Reset([]*fold.Session{sf}); err != nil {
		t.Fatal(err)
	}
	if err := h.Hook("claude-code", "s1", fold.Hook{Kind: fold.HookAnswered, Key: "k1", ToolID: "toolu_1", At: 30}); err != nil {
		t.Fatal(err)
	}
	if got := statusOf(t, h, "s1"); got.Status != agentbridge.StatusRunning {
		t.Fatalf("after a restart: %+v", got)
	}
	if err := pub.Event("s1", "claude-code", agentbridge.Event{Kind: agentbridge.KindToolFinished, ToolID: "toolu_1"}); err != nil {
		t.Fatalf("the journal's tool result after the late answer: %v", err)
	}
}

func TestHookObserves(t *testing.T) {
	now := t0
	h := newHub(t, Options{Now: func() time.Time { return now }})
	in := info("codex", "codex")
	in.Observes = map[string]agentbridge.Observe{"waiting": {How: agentbridge.Unavailable}}
	running(t, h, newFake(in))
	if s, _ := h.Source("codex"); s.Observes["waiting"].How != agentbridge.Unavailable {
		t.Fatalf("before any hook: %+v", s.Observes)
	}
	h.Hook("codex", "s1", hookAsk(1))
	if s, _ := h.Source("codex"); s.Observes["waiting"] != (agentbridge.Observe{How: agentbridge.Observed, From: "hooks"}) {
		t.Fatalf("with hooks: %+v", s.Observes)
	}
	if in.Observes["waiting"].How != agentbridge.Unavailable {
		t.Fatal("the source's own info changed")
	}
	now = now.Add(HookFresh)
	if s, _ := h.Source("codex"); s.Observes["waiting"].How != agentbridge.Unavailable {
		t.Fatalf("hooks gone quiet: %+v", s.Observes)
	}
}

// TestSessionReadWhileHooksFold reads a session's fold as a running source
// does (Sink.Session on the source's goroutine, then its snapshot, end and
// view, without the hub's locks) while an agent's hooks arrive over HTTP
// and fold into the same session (Hub.Hook on another goroutine). What the
// source reads must be a whole state, never one a hook is half-way through
// (a waiting status without its reason, or the reason of a closed prompt);
// under -race, any read of memory a hook writes fails the test.
func TestSessionReadWhileHooksFold(t *testing.T) {
	h := newHub(t, Options{})
	f := newFake(info("claude-code", "claude-code"))
	pub := running(t, h, f)[0].Publisher
	if err := pub.Event("s1", "claude-code", agentbridge.Event{Kind: agentbridge.KindTurnStarted, TurnID: "t1", OccurredAt: 10}); err != nil {
		t.Fatal(err)
	}
	const prompts = 200
	done := make(chan struct{})
	go func() { // the agent's hooks, as the HTTP handler hands them in
		defer close(done)
		for i := range prompts {
			key := "k" + strconv.Itoa(i)
			at := int64(100 + 2*i)
			if err := h.Hook("claude-code", "s1", fold.Hook{Kind: fold.HookAsk, Key: key, Reason: "Approve Bash: git push", At: at}); err != nil {
				t.Error(err)
				return
			}
			if err := h.Hook("claude-code", "s1", fold.Hook{Kind: fold.HookAnswered, Key: key, At: at + 1}); err != nil {
				t.Error(err)
				return
			}
		}
	}()
	reads := 0
	for { // the source's goroutine
		s := pub.Session("s1")
		if s == nil {
			t.Fatal("the source's session is missing")
		}
		snap := s.Snapshot()
		if (snap.Status == agentbridge.StatusWaiting) != (snap.WaitingFor != "") {
			t.Fatalf("read %d: a torn snapshot: status %q, waitingFor %q", reads, snap.Status, snap.WaitingFor)
		}
		if s.Ended() != nil || !fold.ViewOf(s).InTurn() {
			t.Fatalf("read %d: the turn in progress is not shown: ended %v, in turn %v", reads, s.Ended(), fold.ViewOf(s).InTurn())
		}
		reads++
		select {
		case <-done:
			if got := statusOf(t, h, "s1"); got.Status != agentbridge.StatusRunning {
				t.Fatalf("after every prompt was answered: %+v", got)
			}
			return
		default:
		}
	}
}
