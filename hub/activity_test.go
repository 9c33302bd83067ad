package hub

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/agentbridge/agentbridge"
)

// TestActivityForLateClients: a client that connects after a tool started
// sees it (and the session's usage) in its reset, the same as a client
// that watched the upserts; the snapshot itself does not carry it, and
// usage-only events make no lifecycle record.
func TestActivityForLateClients(t *testing.T) {
	h, s, sub := sinkOf(t, Options{})
	watched := client{}
	for _, r := range sub.Initial {
		watched.apply(t, r)
	}
	mustFold(t, s, "s1", "a", agentbridge.Event{Kind: agentbridge.KindSessionStarted, OccurredAt: 1000})
	mustFold(t, s, "s1", "", agentbridge.Event{Kind: agentbridge.KindTurnStarted, OccurredAt: 2000, TurnID: "t1"})
	mustFold(t, s, "s1", "", agentbridge.Event{Kind: agentbridge.KindToolStarted, OccurredAt: 3000, ToolID: "x", Name: "Bash"})
	mustFold(t, s, "s1", "", agentbridge.Event{Kind: agentbridge.KindAgentMetadata,
		Usage: &agentbridge.UsageReport{Usage: agentbridge.Usage{InputTokens: 7, OutputTokens: 3, CacheReadTokens: 100, CacheWriteTokens: 20}, MessageID: "m1"}})
	s.Flush()
	want := &agentbridge.Activity{StatusSince: 2000, TurnStartedAt: 2000, Tool: &agentbridge.ToolActivity{Name: "Bash", Since: 3000},
		Usage: &agentbridge.Usage{InputTokens: 7, OutputTokens: 3, CacheReadTokens: 100, CacheWriteTokens: 20}}

	var lifecycles int
	for _, r := range drain(t, sub, h.Revision()) {
		watched.apply(t, r)
		if r.Name == agentbridge.RecordLifecycle {
			lifecycles++
		}
	}
	if lifecycles != 3 {
		t.Errorf("%d lifecycle records, want 3 (none for the usage-only event)", lifecycles)
	}
	e, ok := h.Session("src", "s1")
	if !ok {
		t.Fatal("no session")
	}
	if diff := cmp.Diff(want, e.Activity); diff != "" {
		t.Errorf("GET /v1/sessions activity (-want +got):\n%s", diff)
	}
	late := h.Subscribe(0, false, agentbridge.Filter{})
	defer late.Close()
	reloaded := client{}
	for _, r := range late.Initial {
		reloaded.apply(t, r)
	}
	if diff := cmp.Diff(watched.entries(), reloaded.entries()); diff != "" {
		t.Errorf("a client that loaded late differs from one that watched (-watched +late):\n%s", diff)
	}
	filtered := h.Subscribe(0, false, agentbridge.Filter{Statuses: []agentbridge.Status{agentbridge.StatusRunning}})
	defer filtered.Close()
	fc := client{}
	for _, r := range filtered.Initial {
		fc.apply(t, r)
	}
	if diff := cmp.Diff(watched.entries(), fc.entries()); diff != "" {
		t.Errorf("a filtered client differs (-watched +filtered):\n%s", diff)
	}

	// The tool ends: the activity changes though the snapshot does not.
	rev := h.Revision()
	mustFold(t, s, "s1", "", agentbridge.Event{Kind: agentbridge.KindToolFinished, OccurredAt: 4000, ToolID: "x"})
	s.Flush()
	recs := drain(t, sub, h.Revision())
	if len(recs) != 2 || recs[1].Name != agentbridge.RecordUpsert {
		t.Fatalf("after tool.finished: %v, want a lifecycle and an upsert (rev %d)", names(recs), rev)
	}
	var d upsertData
	mustDecode(t, recs[1], &d)
	if d.Activity == nil || d.Activity.Tool != nil || d.Activity.Usage == nil {
		t.Errorf("upsert activity = %+v, want no tool and the usage kept", d.Activity)
	}
}

// TestEndedBesideTheSnapshot: a session whose process is gone stays
// listed, idle, with its end beside the snapshot (the hub's clock when the
// event has no time), for a client that watched, one that loads late and
// GET /v1/sessions alike; a resumed process takes the end away.
func TestEndedBesideTheSnapshot(t *testing.T) {
	h, s, sub := sinkOf(t, Options{})
	watched := client{}
	for _, r := range sub.Initial {
		watched.apply(t, r)
	}
	mustFold(t, s, "s1", "a", agentbridge.Event{Kind: agentbridge.KindSessionStarted, OccurredAt: 1000, PID: 42, Cwd: "/w"})
	mustFold(t, s, "s1", "", agentbridge.Event{Kind: agentbridge.KindTurnStarted, OccurredAt: 2000, TurnID: "t1"})
	mustFold(t, s, "s1", "", agentbridge.Event{Kind: agentbridge.KindAgentExited, Signal: "SIGKILL"})
	s.Flush()
	for _, r := range drain(t, sub, h.Revision()) {
		watched.apply(t, r)
	}
	e, ok := h.Session("src", "s1")
	if !ok || e.Ended == nil || e.Ended.At <= 0 || e.Ended.Signal != "SIGKILL" || e.Snapshot.Status != agentbridge.StatusIdle {
		t.Fatalf("ended session %+v (ended %+v), want idle with its end (a time, the signal)", e.Snapshot, e.Ended)
	}
	if agentbridge.HostReady(&e.Snapshot, e.Ended) {
		t.Error("an ended session is host-ready")
	}
	late := h.Subscribe(0, false, agentbridge.Filter{})
	defer late.Close()
	reloaded := client{}
	for _, r := range late.Initial {
		reloaded.apply(t, r)
	}
	if diff := cmp.Diff(watched.entries(), reloaded.entries()); diff != "" {
		t.Errorf("a client that loaded late differs from one that watched (-watched +late):\n%s", diff)
	}
	if diff := cmp.Diff(fromEntries([]agentbridge.Entry{e}).entries(), watched.entries()); diff != "" {
		t.Errorf("the stream differs from GET /v1/sessions (-get +stream):\n%s", diff)
	}

	mustFold(t, s, "s1", "", agentbridge.Event{Kind: agentbridge.KindTurnStarted, OccurredAt: 5000, TurnID: "t2"})
	s.Flush()
	for _, r := range drain(t, sub, h.Revision()) {
		watched.apply(t, r)
	}
	if e, _ := h.Session("src", "s1"); e.Ended != nil || !agentbridge.HostReady(&e.Snapshot, e.Ended) {
		t.Errorf("resumed session still ended: %+v", e.Ended)
	}
	if got := watched.entries(); len(got) != 1 || got[0].Ended != nil {
		t.Errorf("the stream kept the end: %+v", got)
	}
}
