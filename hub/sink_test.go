package hub

import (
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/agentbridge/agentbridge"
)

// sinkOf runs a hub with one running source of harnesses a and b and
// returns its Sink and a subscription opened after its start.
func sinkOf(t *testing.T, o Options) (*Hub, Sink, *Subscription) {
	t.Helper()
	h := newHub(t, o)
	f := newFake(info("src", "a", "b"))
	f.deaf = true
	st := running(t, h, f)[0]
	sub := h.Subscribe(h.Revision(), true, agentbridge.Filter{})
	t.Cleanup(sub.Close)
	return h, st.Publisher, sub
}

func mustFold(t *testing.T, s Sink, id, harness string, e agentbridge.Event) {
	t.Helper()
	if err := s.Fold(id, harness, e); err != nil {
		t.Fatalf("fold %s %s: %v", id, e.Kind, err)
	}
}

// recordSession returns the session a record is about ("" for a reset).
func recordSession(t *testing.T, r Record) string {
	t.Helper()
	var d struct {
		SessionID string `json:"sessionId"`
		Snapshot  struct {
			ID string `json:"id"`
		} `json:"snapshot"`
	}
	mustDecode(t, r, &d)
	return d.SessionID + d.Snapshot.ID
}

// noRecord checks that nothing was committed.
func noRecord(t *testing.T, h *Hub, rev uint64, what string) {
	t.Helper()
	if got := h.Revision(); got != rev {
		t.Errorf("%s: revision moved from %d to %d before Flush", what, rev, got)
	}
}

// exact checks that the stream applied so far gives GET /v1/sessions.
func exact(t *testing.T, h *Hub, c client) {
	t.Helper()
	_, want := h.Sessions(agentbridge.Filter{})
	if diff := cmp.Diff(want, c.entries()); diff != "" {
		t.Errorf("stream applied differs from Sessions (-sessions +stream):\n%s", diff)
	}
}

func TestFoldCoalescesUpserts(t *testing.T) {
	h, s, sub := sinkOf(t, Options{})
	c := client{}
	for _, r := range sub.Initial {
		c.apply(t, r)
	}
	rev := h.Revision()
	mustFold(t, s, "s1", "a", agentbridge.Event{Kind: agentbridge.KindSessionStarted, Title: "Fix tests"})
	mustFold(t, s, "s1", "", agentbridge.Event{Kind: agentbridge.KindTurnStarted, TurnID: "t1"})
	for i := range 3 {
		mustFold(t, s, "s1", "", agentbridge.Event{Kind: agentbridge.KindToolStarted, ToolID: fmt.Sprint("x", i), Name: "Bash"})
		mustFold(t, s, "s1", "", agentbridge.Event{Kind: agentbridge.KindToolFinished, ToolID: fmt.Sprint("x", i)})
	}
	mustFold(t, s, "s2", "b", agentbridge.Event{Kind: agentbridge.KindSessionStarted})
	noRecord(t, h, rev, "folded events")
	if _, list := h.Sessions(agentbridge.Filter{}); len(list) != 0 {
		t.Errorf("folded sessions are visible before Flush: %v", list)
	}
	s.Flush()
	got := drain(t, sub, h.Revision())
	want := []string{"lifecycle", "lifecycle", "lifecycle", "lifecycle", "lifecycle", "lifecycle", "lifecycle", "lifecycle", "lifecycle", "upsert", "upsert"}
	if diff := cmp.Diff(want, names(got)); diff != "" {
		t.Errorf("records (-want +got):\n%s", diff)
	}
	for _, r := range got {
		c.apply(t, r)
	}
	exact(t, h, c)
	var up upsertData
	mustDecode(t, got[9], &up)
	if up.Snapshot.Status != agentbridge.StatusRunning || up.Snapshot.Title != "Fix tests" {
		t.Errorf("upsert = %+v, want the session after all its events", up.Snapshot)
	}

	// A read that changes nothing shown sends the lifecycle records only.
	mustFold(t, s, "s1", "", agentbridge.Event{Kind: agentbridge.KindToolStarted, ToolID: "y", Name: "Read"})
	mustFold(t, s, "s1", "", agentbridge.Event{Kind: agentbridge.KindToolFinished, ToolID: "y"})
	s.Flush()
	if diff := cmp.Diff([]string{"lifecycle", "lifecycle"}, names(drain(t, sub, h.Revision()))); diff != "" {
		t.Errorf("records of a read that changes nothing shown (-want +got):\n%s", diff)
	}
}

func TestFoldRejectsAndCommitsNothing(t *testing.T) {
	h, s, _ := sinkOf(t, Options{})
	rev := h.Revision()
	if err := s.Fold("s1", "a", agentbridge.Event{Kind: agentbridge.KindToolFinished, ToolID: "nope"}); err == nil {
		t.Fatal("a tool.finished for no open tool was taken")
	}
	if err := s.Fold("s1", "zz", agentbridge.Event{Kind: agentbridge.KindSessionStarted}); err == nil {
		t.Fatal("an undeclared harness was taken")
	}
	s.Flush()
	noRecord(t, h, rev, "rejected events")
	if s.Session("s1") != nil {
		t.Error("a rejected event made a session")
	}
}

func TestLongReadIsCommittedInParts(t *testing.T) {
	h, s, sub := sinkOf(t, Options{})
	c := client{}
	mustFold(t, s, "s1", "a", agentbridge.Event{Kind: agentbridge.KindSessionStarted})
	for i := range maxPending {
		mustFold(t, s, "s1", "", agentbridge.Event{Kind: agentbridge.KindTurnStarted, TurnID: fmt.Sprint("t", i)})
	}
	if len(sub.C) == 0 {
		t.Fatalf("%d lifecycle records held before Flush, want them committed at %d", maxPending+1, maxPending)
	}
	s.Flush()
	for _, r := range drain(t, sub, h.Revision()) {
		c.apply(t, r)
	}
	exact(t, h, c)
}

// TestScanIsOneReset: a scan is built aside (Session answers from it) and
// committed as one reset at Flush, even when a session is removed during
// it; no lifecycle record is sent for it.
func TestScanIsOneReset(t *testing.T) {
	h, s, sub := sinkOf(t, Options{})
	mustFold(t, s, "old", "a", agentbridge.Event{Kind: agentbridge.KindSessionStarted})
	s.Flush()
	drain(t, sub, h.Revision())
	rev := h.Revision()

	s.Rescan()
	if s.Session("old") != nil {
		t.Error("a scan sees the sessions from before it")
	}
	mustFold(t, s, "x", "a", agentbridge.Event{Kind: agentbridge.KindSessionStarted})
	mustFold(t, s, "x", "", agentbridge.Event{Kind: agentbridge.KindTurnStarted, TurnID: "t"})
	mustFold(t, s, "gone", "a", agentbridge.Event{Kind: agentbridge.KindSessionStarted})
	if err := s.Remove("gone"); err != nil {
		t.Fatal(err)
	}
	mustFold(t, s, "y", "b", agentbridge.Event{Kind: agentbridge.KindSessionStarted})
	if s.Session("x") == nil {
		t.Error("Session does not answer from the scan")
	}
	noRecord(t, h, rev, "a scan")
	s.Flush()
	got := drain(t, sub, h.Revision())
	if diff := cmp.Diff([]string{"reset"}, names(got)); diff != "" {
		t.Fatalf("records of a scan (-want +got):\n%s", diff)
	}
	var d resetData
	mustDecode(t, got[0], &d)
	var ids []string
	for _, sn := range d.Sessions {
		ids = append(ids, sn.ID+"/"+string(sn.Status))
	}
	if diff := cmp.Diff([]string{"x/running", "y/idle"}, ids); diff != "" {
		t.Errorf("reset (-want +got):\n%s", diff)
	}
}

// TestRestartIsOneUpsert: a journal read again is built aside, with no
// lifecycle records, and upserted whole once.
func TestRestartIsOneUpsert(t *testing.T) {
	h, s, sub := sinkOf(t, Options{})
	c := client{}
	mustFold(t, s, "s1", "a", agentbridge.Event{Kind: agentbridge.KindSessionStarted, Title: "first"})
	mustFold(t, s, "s1", "", agentbridge.Event{Kind: agentbridge.KindTurnStarted, TurnID: "t"})
	s.Flush()
	for _, r := range drain(t, sub, h.Revision()) {
		c.apply(t, r)
	}
	s.Restart("s1")
	mustFold(t, s, "s1", "a", agentbridge.Event{Kind: agentbridge.KindSessionStarted, Title: "second"})
	mustFold(t, s, "s2", "a", agentbridge.Event{Kind: agentbridge.KindSessionStarted})
	for i := range maxPending { // a long read commits s2's records in parts, never s1's
		mustFold(t, s, "s2", "", agentbridge.Event{Kind: agentbridge.KindTurnStarted, TurnID: fmt.Sprint("t", i)})
		mustFold(t, s, "s1", "", agentbridge.Event{Kind: agentbridge.KindTurnStarted, TurnID: fmt.Sprint("t", i)})
	}
	if e, ok := h.Session("src", "s1"); !ok || e.Snapshot.Title != "first" {
		t.Errorf("a session being built again is visible half built: %+v", e.Snapshot)
	}
	s.Flush()
	var s1 []string
	for _, r := range drain(t, sub, h.Revision()) {
		c.apply(t, r)
		if recordSession(t, r) == "s1" {
			s1 = append(s1, r.Name)
		}
	}
	if diff := cmp.Diff([]string{"upsert"}, s1); diff != "" {
		t.Errorf("records of the restarted session (-want +got):\n%s", diff)
	}
	exact(t, h, c)
}

// TestHideAndComeBack: a hidden session leaves the stream and comes back
// whole with its next event.
func TestHideAndComeBack(t *testing.T) {
	h, s, sub := sinkOf(t, Options{})
	c := client{}
	mustFold(t, s, "s1", "a", agentbridge.Event{Kind: agentbridge.KindSessionStarted, Title: "quiet"})
	s.Flush()
	s.Hide("s1")
	s.Flush()
	for _, r := range drain(t, sub, h.Revision()) {
		c.apply(t, r)
	}
	if _, ok := h.Session("src", "s1"); ok {
		t.Fatal("a hidden session is visible")
	}
	if s.Session("s1") == nil {
		t.Fatal("a hidden session's fold is gone")
	}
	mustFold(t, s, "s1", "", agentbridge.Event{Kind: agentbridge.KindTurnStarted, TurnID: "t"})
	s.Flush()
	got := drain(t, sub, h.Revision())
	if diff := cmp.Diff([]string{"lifecycle", "upsert"}, names(got)); diff != "" {
		t.Errorf("records (-want +got):\n%s", diff)
	}
	for _, r := range got {
		c.apply(t, r)
	}
	exact(t, h, c)
	if e, _ := h.Session("src", "s1"); e.Snapshot.Title != "quiet" {
		t.Errorf("the session came back without what it had: %+v", e.Snapshot)
	}
}

// TestStampsAreRemembered: an agent.done without occurredAt gets the hub's
// clock once; building the session again (a scan, a restart) gives it the
// same stamp, although the clock moved on.
func TestStampsAreRemembered(t *testing.T) {
	var mu sync.Mutex
	now := t0
	clock := func() time.Time {
		mu.Lock()
		defer mu.Unlock()
		now = now.Add(time.Minute)
		return now
	}
	h, s, sub := sinkOf(t, Options{Now: clock})
	events := []agentbridge.Event{
		{Kind: agentbridge.KindSessionStarted},
		{Kind: agentbridge.KindTurnStarted, TurnID: "t1"},
		{Kind: agentbridge.KindAgentDone, Outcome: agentbridge.OutcomeSuccess},
		{Kind: agentbridge.KindTurnStarted, TurnID: "t2"},
		{Kind: agentbridge.KindAgentDone, Outcome: agentbridge.OutcomeSuccess},
	}
	feed := func() {
		for _, e := range events {
			mustFold(t, s, "s1", "a", e)
		}
		s.Flush()
	}
	feed()
	recs := drain(t, sub, h.Revision())
	for _, r := range recs {
		if r.Name != agentbridge.RecordLifecycle {
			continue
		}
		var lc lifecycleData
		mustDecode(t, r, &lc)
		if lc.Event.OccurredAt != 0 {
			t.Errorf("lifecycle %s carries occurredAt %d, want the event as given", lc.Event.Kind, lc.Event.OccurredAt)
		}
	}
	first, _ := h.Session("src", "s1")
	if first.Snapshot.LastTurnEndedAt == 0 {
		t.Fatal("agent.done without occurredAt left lastTurnEndedAt unset")
	}
	s.Rescan()
	feed()
	afterScan, _ := h.Session("src", "s1")
	s.Restart("s1")
	feed()
	afterRestart, _ := h.Session("src", "s1")
	if afterScan.Snapshot.LastTurnEndedAt != first.Snapshot.LastTurnEndedAt || afterRestart.Snapshot.LastTurnEndedAt != first.Snapshot.LastTurnEndedAt {
		t.Errorf("lastTurnEndedAt live %d, after a scan %d, after a restart %d: want one stamp",
			first.Snapshot.LastTurnEndedAt, afterScan.Snapshot.LastTurnEndedAt, afterRestart.Snapshot.LastTurnEndedAt)
	}
	// A third turn is new: it gets a new stamp.
	mustFold(t, s, "s1", "", agentbridge.Event{Kind: agentbridge.KindTurnStarted, TurnID: "t3"})
	mustFold(t, s, "s1", "", agentbridge.Event{Kind: agentbridge.KindAgentDone, Outcome: agentbridge.OutcomeSuccess})
	s.Flush()
	if e, _ := h.Session("src", "s1"); e.Snapshot.LastTurnEndedAt <= first.Snapshot.LastTurnEndedAt {
		t.Errorf("a new turn's end %d is not after the last one %d", e.Snapshot.LastTurnEndedAt, first.Snapshot.LastTurnEndedAt)
	}
}

// TestSwitchedOffHarnessIsKept: events of a switched-off harness are
// folded out of view; Show brings the session back as it is now.
func TestSwitchedOffHarnessIsKept(t *testing.T) {
	h, s, sub := sinkOf(t, Options{})
	mustFold(t, s, "s1", "b", agentbridge.Event{Kind: agentbridge.KindSessionStarted})
	s.Flush()
	if _, err := h.SetHarness("src", "b", false); err != nil {
		t.Fatal(err)
	}
	mustFold(t, s, "s1", "", agentbridge.Event{Kind: agentbridge.KindTurnStarted, TurnID: "t"})
	mustFold(t, s, "s2", "b", agentbridge.Event{Kind: agentbridge.KindSessionStarted})
	s.Flush()
	if _, list := h.Sessions(agentbridge.Filter{}); len(list) != 0 {
		t.Errorf("sessions of a switched-off harness are visible: %v", list)
	}
	if _, err := h.SetHarness("src", "b", true); err != nil {
		t.Fatal(err)
	}
	s.Show([]string{"a", "b"})
	c := client{}
	for _, r := range drain(t, sub, h.Revision()) {
		c.apply(t, r)
	}
	exact(t, h, c)
	if e, ok := h.Session("src", "s1"); !ok || e.Snapshot.Status != agentbridge.StatusRunning {
		t.Errorf("s1 after the switch: %+v, want running", e.Snapshot)
	}
	if _, ok := h.Session("src", "s2"); !ok {
		t.Error("s2, made while its harness was off, is missing")
	}
}

// TestFilteredBatch: a filtered client of a running source sees a batch's
// lifecycle records by the snapshot the batch leaves, and applying what
// it gets yields the filtered sessions.
func TestFilteredBatch(t *testing.T) {
	h, s, _ := sinkOf(t, Options{})
	f := agentbridge.Filter{Statuses: []agentbridge.Status{agentbridge.StatusRunning}}
	sub := h.Subscribe(0, false, f)
	defer sub.Close()
	c := client{}
	for _, r := range sub.Initial {
		c.apply(t, r)
	}
	// s1 runs at the end of its read: shown; s2 runs and is done within
	// one read: never shown.
	mustFold(t, s, "s1", "a", agentbridge.Event{Kind: agentbridge.KindSessionStarted})
	mustFold(t, s, "s1", "", agentbridge.Event{Kind: agentbridge.KindTurnStarted, TurnID: "t"})
	mustFold(t, s, "s2", "a", agentbridge.Event{Kind: agentbridge.KindSessionStarted})
	mustFold(t, s, "s2", "", agentbridge.Event{Kind: agentbridge.KindTurnStarted, TurnID: "t"})
	mustFold(t, s, "s2", "", agentbridge.Event{Kind: agentbridge.KindAgentDone, Outcome: agentbridge.OutcomeSuccess, OccurredAt: 5})
	s.Flush()
	// s1 finishes: its client still learns of it, then loses it.
	mustFold(t, s, "s1", "", agentbridge.Event{Kind: agentbridge.KindAgentDone, Outcome: agentbridge.OutcomeSuccess, OccurredAt: 6})
	s.Flush()
	var got []string
	for _, r := range drain(t, sub, h.Revision()) {
		c.apply(t, r)
		got = append(got, r.Name+" "+recordSession(t, r))
	}
	want := []string{"lifecycle s1", "lifecycle s1", "upsert s1", "lifecycle s1", "remove s1"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("filtered records (-want +got):\n%s", diff)
	}
	_, list := h.Sessions(f)
	if diff := cmp.Diff(list, c.entries()); diff != "" {
		t.Errorf("filtered stream applied differs from Sessions (-sessions +stream):\n%s", diff)
	}
}
