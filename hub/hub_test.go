package hub

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/agentbridge/agentbridge"
	"github.com/agentbridge/agentbridge/fold"
	"github.com/agentbridge/agentbridge/validate"
)

func TestRevisionsStartAtClockAndGrowByOne(t *testing.T) {
	h := newHub(t, Options{})
	if err := h.AddPush(info("p", "a")); err != nil {
		t.Fatal(err)
	}
	start := uint64(t0.UnixMicro())
	if got := h.Revision(); got != start {
		t.Fatalf("Revision() = %d before any record, want the start time in µs %d", got, start)
	}
	sub := h.Subscribe(start, true, agentbridge.Filter{})
	defer sub.Close()
	err := h.Publish("p", []agentbridge.Op{
		{Op: agentbridge.OpUpsert, Session: snap("s1", "a", agentbridge.StatusIdle)},
		{Op: agentbridge.OpUpsert, Session: snap("s2", "a", agentbridge.StatusRunning)},
		{Op: agentbridge.OpRemove, SessionID: "s1"},
	})
	if err != nil {
		t.Fatal(err)
	}
	got := drain(t, sub, start+3)
	want := []Record{
		{Rev: start + 1, Name: agentbridge.RecordUpsert, Data: []byte(`{"source":"p","snapshot":{"id":"s1","harness":"a","status":"idle"}}`)},
		{Rev: start + 2, Name: agentbridge.RecordUpsert, Data: []byte(`{"source":"p","snapshot":{"id":"s2","harness":"a","status":"running"}}`)},
		{Rev: start + 3, Name: agentbridge.RecordRemove, Data: []byte(`{"source":"p","sessionId":"s1"}`)},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("records mismatch (-want +got):\n%s", diff)
	}
	if start+3 >= 1<<53 {
		t.Errorf("revision %d does not fit a JavaScript number", start+3)
	}
}

func TestPublishAllOrNothing(t *testing.T) {
	long := strings.Repeat("x", validate.MaxTitle+1)
	tests := []struct {
		name string
		ops  []agentbridge.Op
		want []string
	}{
		{"bad harness in upsert", []agentbridge.Op{
			{Op: agentbridge.OpUpsert, Session: snap("s1", "a", agentbridge.StatusIdle)},
			{Op: agentbridge.OpUpsert, Session: snap("s2", "nope", agentbridge.StatusIdle)},
		}, []string{"$[1].session.harness harness_not_enabled"}},
		{"every issue, not the first", []agentbridge.Op{
			{Op: agentbridge.OpUpsert, Session: agentbridge.Snapshot{ID: "bad id", Harness: "a", Status: "sleeping"}},
			{Op: agentbridge.OpDiagnostic, Diagnostic: agentbridge.Diagnostic{Code: "Bad_Code", Message: "m"}},
		}, []string{"$[0].session.id invalid_id", "$[0].session.status invalid_enum", "$[1].diagnostic.code invalid_id"}},
		{"wait.finished needs the wait the earlier op opened", []agentbridge.Op{
			{Op: agentbridge.OpEvent, SessionID: "s1", Harness: "a", Event: agentbridge.Event{Kind: agentbridge.KindWaitStarted, WaitID: "w1", State: agentbridge.StatusWaiting}},
			{Op: agentbridge.OpEvent, SessionID: "s1", Event: agentbridge.Event{Kind: agentbridge.KindWaitFinished, WaitID: "w2"}},
			{Op: agentbridge.OpEvent, SessionID: "s1", Event: agentbridge.Event{Kind: agentbridge.KindWaitFinished, WaitID: "w1"}},
			{Op: agentbridge.OpUpsert, Session: agentbridge.Snapshot{ID: "s3", Harness: "a", Status: agentbridge.StatusIdle, Title: long}},
		}, []string{"$[1].event.waitId invalid_id", "$[3].session.title invalid_string"}},
		{"event for a new session needs a harness", []agentbridge.Op{
			{Op: agentbridge.OpEvent, SessionID: "s9", Event: agentbridge.Event{Kind: agentbridge.KindSessionStarted}},
			{Op: agentbridge.OpEvent, SessionID: "s8", Harness: "off", Event: agentbridge.Event{Kind: agentbridge.KindSessionStarted}},
		}, []string{"$[0].harness missing_field", "$[1].harness harness_not_enabled"}},
		{"reset over the limit and duplicates", []agentbridge.Op{
			{Op: agentbridge.OpReset, Sessions: []agentbridge.Snapshot{snap("d", "a", agentbridge.StatusIdle), snap("d", "a", agentbridge.StatusIdle)}},
		}, []string{"$[0].sessions[1] duplicate"}},
		{"unknown op and bad remove id", []agentbridge.Op{
			{Op: "patch"},
			{Op: agentbridge.OpRemove, SessionID: ""},
		}, []string{"$[0].op invalid_enum", "$[1].sessionId invalid_id"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := newHub(t, Options{})
			in := info("p", "a", "off")
			if err := h.AddPush(in); err != nil {
				t.Fatal(err)
			}
			if _, err := h.SetHarness("p", "off", false); err != nil {
				t.Fatal(err)
			}
			if err := h.Publish("p", []agentbridge.Op{{Op: agentbridge.OpUpsert, Session: snap("keep", "a", agentbridge.StatusIdle)}}); err != nil {
				t.Fatal(err)
			}
			rev0, before := h.Sessions(agentbridge.Filter{})
			err := h.Publish("p", tt.ops)
			if !errors.Is(err, ErrInvalid) {
				t.Fatalf("Publish = %v, want ErrInvalid", err)
			}
			if diff := cmp.Diff(tt.want, issuePaths(t, err)); diff != "" {
				t.Errorf("issues mismatch (-want +got):\n%s", diff)
			}
			rev1, after := h.Sessions(agentbridge.Filter{})
			if rev1 != rev0 {
				t.Errorf("revision moved from %d to %d on a rejected publish", rev0, rev1)
			}
			if diff := cmp.Diff(before, after); diff != "" {
				t.Errorf("rejected publish changed the sessions (-before +after):\n%s", diff)
			}
		})
	}
}

func TestPublishResetLimit(t *testing.T) {
	h := newHub(t, Options{})
	if err := h.AddPush(info("p", "a")); err != nil {
		t.Fatal(err)
	}
	var many []agentbridge.Snapshot
	for i := range validate.MaxResetSessions + 1 {
		many = append(many, snap(fmt.Sprintf("s%d", i), "a", agentbridge.StatusIdle))
	}
	err := h.Publish("p", []agentbridge.Op{{Op: agentbridge.OpReset, Sessions: many}})
	if diff := cmp.Diff([]string{"$[0].sessions invalid_array"}, issuePaths(t, err)); diff != "" {
		t.Errorf("issues mismatch (-want +got):\n%s", diff)
	}
}

func TestPublishErrors(t *testing.T) {
	h := newHub(t, Options{})
	f := newFake(info("run", "a"))
	if err := h.Add(f); err != nil {
		t.Fatal(err)
	}
	if err := h.Publish("run", nil); !errors.Is(err, ErrNotPush) {
		t.Errorf("Publish to a running source = %v, want ErrNotPush", err)
	}
	if err := h.Publish("nope", nil); !errors.Is(err, ErrUnknownSource) {
		t.Errorf("Publish to an unknown source = %v, want ErrUnknownSource", err)
	}
	if err := h.Add(f); err == nil {
		t.Error("Add of a duplicate id succeeded")
	}
	if _, err := h.SetHarness("nope", "a", false); !errors.Is(err, ErrUnknownSource) {
		t.Errorf("SetHarness(unknown source) = %v", err)
	}
	if _, err := h.SetHarness("run", "zz", false); !errors.Is(err, ErrUnknownHarness) {
		t.Errorf("SetHarness(unknown harness) = %v", err)
	}
}

func TestEventRecords(t *testing.T) {
	h := newHub(t, Options{})
	if err := h.AddPush(info("p", "a")); err != nil {
		t.Fatal(err)
	}
	sub := h.Subscribe(h.Revision(), true, agentbridge.Filter{})
	defer sub.Close()
	ev := func(id, harness string, e agentbridge.Event) {
		t.Helper()
		if err := h.Publish("p", []agentbridge.Op{{Op: agentbridge.OpEvent, SessionID: id, Harness: harness, Event: e}}); err != nil {
			t.Fatal(err)
		}
	}
	ev("s1", "a", agentbridge.Event{Kind: agentbridge.KindSessionStarted, Title: "Fix tests"})
	ev("s1", "", agentbridge.Event{Kind: agentbridge.KindToolStarted, ToolID: "t1", Name: "Bash"})
	ev("s1", "", agentbridge.Event{Kind: agentbridge.KindToolFinished, ToolID: "t1"})
	ev("s1", "", agentbridge.Event{Kind: agentbridge.KindAgentDone, Outcome: agentbridge.OutcomeSuccess})
	ev("s1", "", agentbridge.Event{Kind: agentbridge.KindSessionStopped, Reason: "closed"})
	ev("ghost", "a", agentbridge.Event{Kind: agentbridge.KindSessionStopped})
	got := drain(t, sub, h.Revision())
	want := []string{
		"lifecycle", "upsert", // started: new session
		"lifecycle", "upsert", // tool.started: idle → running
		"lifecycle", "upsert", // tool.finished: the running tool is gone from the activity
		"lifecycle", "upsert", // agent.done
		"lifecycle", "remove", // session.stopped
	}
	if diff := cmp.Diff(want, names(got)); diff != "" {
		t.Errorf("record names mismatch (-want +got):\n%s", diff)
	}
	var done upsertData
	mustDecode(t, got[7], &done)
	if done.Snapshot.LastTurnEndedAt != t0.UnixMilli() {
		t.Errorf("agent.done without occurredAt: lastTurnEndedAt = %d, want the hub clock %d", done.Snapshot.LastTurnEndedAt, t0.UnixMilli())
	}
	var lc lifecycleData
	mustDecode(t, got[6], &lc)
	if lc.Event.OccurredAt != 0 {
		t.Errorf("lifecycle event occurredAt = %d, want it absent as the source gave it", lc.Event.OccurredAt)
	}
	if _, ok := h.Session("p", "s1"); ok {
		t.Error("session.stopped left the session in place")
	}
}

func TestRedactsBeforePublishing(t *testing.T) {
	h := newHub(t, Options{})
	if err := h.AddPush(info("p", "a")); err != nil {
		t.Fatal(err)
	}
	secret := "sk-ant-api03-" + strings.Repeat("A", 40)
	err := h.Publish("p", []agentbridge.Op{
		{Op: agentbridge.OpEvent, SessionID: "s1", Harness: "a", Event: agentbridge.Event{Kind: agentbridge.KindSessionStarted, Title: "use " + secret}},
		{Op: agentbridge.OpDiagnostic, Diagnostic: agentbridge.Diagnostic{Code: "bad-key", Message: "key " + secret + " rejected"}},
	})
	if err != nil {
		t.Fatal(err)
	}
	sub := h.Subscribe(0, false, agentbridge.Filter{})
	defer sub.Close()
	e, _ := h.Session("p", "s1")
	all, _ := json.Marshal([]any{e, h.Diagnostics(), sub.Initial})
	if strings.Contains(string(all), secret) {
		t.Errorf("a credential reached clients: %s", all)
	}
}

func TestResetOverflowBecomesUpserts(t *testing.T) {
	h := newHub(t, Options{})
	f := newFake(info("run", "a"))
	st := running(t, h, f)[0]
	sub := h.Subscribe(h.Revision(), true, agentbridge.Filter{})
	defer sub.Close()
	var ss []*fold.Session
	for i := range 1500 {
		ss = append(ss, sessionOf(snap(fmt.Sprintf("s%04d", i), "a", agentbridge.StatusIdle)))
	}
	if err := st.Publisher.Reset(ss); err != nil {
		t.Fatal(err)
	}
	got := drain(t, sub, h.Revision())
	if len(got) != 1+476 || got[0].Name != agentbridge.RecordReset {
		t.Fatalf("got %d records starting with %q, want a reset and 476 upserts", len(got), got[0].Name)
	}
	var r resetData
	mustDecode(t, got[0], &r)
	if len(r.Sessions) != validate.MaxResetSessions {
		t.Errorf("reset carries %d sessions, want %d", len(r.Sessions), validate.MaxResetSessions)
	}
	// A new client gets the same split.
	fresh := h.Subscribe(0, false, agentbridge.Filter{})
	defer fresh.Close()
	if n := len(fresh.Initial); n != 477 {
		t.Errorf("initial records = %d, want 477", n)
	}
	c := client{}
	for _, r := range fresh.Initial {
		c.apply(t, r)
	}
	if n := len(c["run"]); n != 1500 {
		t.Errorf("client holds %d sessions, want 1500", n)
	}
}

func TestSubscribeResume(t *testing.T) {
	h := newHub(t, Options{RingSize: 8})
	for _, id := range []string{"p", "q"} {
		if err := h.AddPush(info(id, "a")); err != nil {
			t.Fatal(err)
		}
	}
	start := h.Revision()
	up := func(i int) {
		t.Helper()
		if err := h.Publish("p", []agentbridge.Op{{Op: agentbridge.OpUpsert, Session: snap(fmt.Sprintf("s%d", i), "a", agentbridge.StatusIdle)}}); err != nil {
			t.Fatal(err)
		}
	}
	for i := range 4 {
		up(i)
	}
	mid := h.Revision()
	for i := 4; i < 10; i++ { // 10 records: the first two leave the ring
		up(i)
	}
	// A client that dropped in the middle of its initial resets.
	partial := h.Subscribe(0, false, agentbridge.Filter{})
	partial.Close()
	if len(partial.Initial) != 2 {
		t.Fatalf("initial = %d records, want one reset per source", len(partial.Initial))
	}
	afterResets := partial.Initial[1].Rev
	now := h.Revision()

	tests := []struct {
		name     string
		since    uint64
		hasSince bool
		resumed  bool
		first    uint64 // first replayed revision
	}{
		{"no cursor", 0, false, false, 0},
		{"in the ring", mid, true, true, mid + 1},
		{"at the head", now, true, true, 0},
		{"evicted from the ring", start + 1, true, false, 0},
		{"earlier run", start - 5_000_000, true, false, 0},
		{"future", now + 1, true, false, 0},
		{"inside a partial initial batch", partial.Initial[0].Rev, true, false, 0},
		{"after a whole initial batch", afterResets, true, true, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			sub := h.Subscribe(tt.since, tt.hasSince, agentbridge.Filter{})
			defer sub.Close()
			if sub.Resumed != tt.resumed {
				t.Fatalf("Resumed = %v, want %v", sub.Resumed, tt.resumed)
			}
			if !tt.resumed {
				if diff := cmp.Diff([]string{"reset", "reset"}, names(sub.Initial)); diff != "" {
					t.Fatalf("initial mismatch (-want +got):\n%s", diff)
				}
				// Ids grow and never repeat, and all are above every
				// revision the client could have seen before.
				for i, r := range sub.Initial {
					if r.Rev <= now || (i > 0 && r.Rev <= sub.Initial[i-1].Rev) {
						t.Errorf("initial ids %d, %d: must grow past %d", sub.Initial[0].Rev, sub.Initial[1].Rev, now)
					}
				}
				return
			}
			if tt.first == 0 {
				if len(sub.Initial) != 0 {
					t.Errorf("replay = %d records, want none", len(sub.Initial))
				}
				return
			}
			var revs []uint64
			for _, r := range sub.Initial {
				revs = append(revs, r.Rev)
			}
			var want []uint64
			for r := tt.first; r <= start+10; r++ {
				want = append(want, r)
			}
			if diff := cmp.Diff(want, revs); diff != "" {
				t.Errorf("replayed revisions mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

func TestSlowSubscriberIsCutOff(t *testing.T) {
	h := newHub(t, Options{QueueSize: 4, Registry: prometheus.NewRegistry()})
	if err := h.AddPush(info("p", "a")); err != nil {
		t.Fatal(err)
	}
	slow := h.Subscribe(0, false, agentbridge.Filter{})
	defer slow.Close()
	fast := h.Subscribe(0, false, agentbridge.Filter{})
	defer fast.Close()
	slowFiltered := h.Subscribe(0, false, agentbridge.Filter{Statuses: []agentbridge.Status{agentbridge.StatusRunning}})
	defer slowFiltered.Close()

	// The publisher goroutine reads each record back from the fast client
	// before publishing the next, so only the slow ones fall behind; it
	// finishing at all proves that nothing blocked it.
	const n = 200
	published := make(chan error, 1)
	go func() {
		for i := range n {
			st := agentbridge.StatusIdle
			if i%2 == 1 {
				st = agentbridge.StatusRunning
			}
			if err := h.Publish("p", []agentbridge.Op{{Op: agentbridge.OpUpsert, Session: snap("s1", "a", st)}}); err != nil {
				published <- err
				return
			}
			select {
			case <-fast.C:
			case <-fast.Done:
				published <- errors.New("the reading subscriber was cut off")
				return
			}
		}
		published <- nil
	}()
	select {
	case err := <-published:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(wait):
		t.Fatal("the publisher blocked on a slow subscriber")
	}
	for _, s := range []*Subscription{slow, slowFiltered} {
		select {
		case <-s.Done:
		case <-time.After(wait):
			t.Fatal("slow subscriber not cut off")
		}
		if !s.CutOff() {
			t.Error("CutOff() = false for a subscriber that fell behind")
		}
	}
	if fast.CutOff() {
		t.Error("the reading subscriber was cut off")
	}
	if got := testutil.ToFloat64(h.met.cutoffs); got != 2 {
		t.Errorf("cut-off counter = %v, want 2", got)
	}
}

func TestFilteredStream(t *testing.T) {
	h := newHub(t, Options{})
	for _, id := range []string{"p", "q"} {
		if err := h.AddPush(info(id, "a", "b")); err != nil {
			t.Fatal(err)
		}
	}
	pub := func(src string, ops ...agentbridge.Op) {
		t.Helper()
		if err := h.Publish(src, ops); err != nil {
			t.Fatal(err)
		}
	}
	pub("p", agentbridge.Op{Op: agentbridge.OpUpsert, Session: snap("s1", "a", agentbridge.StatusRunning)},
		agentbridge.Op{Op: agentbridge.OpUpsert, Session: snap("s2", "a", agentbridge.StatusIdle)},
		agentbridge.Op{Op: agentbridge.OpUpsert, Session: snap("s3", "b", agentbridge.StatusRunning)})
	pub("q", agentbridge.Op{Op: agentbridge.OpUpsert, Session: snap("s1", "a", agentbridge.StatusRunning)})

	f := agentbridge.Filter{Sources: []string{"p"}, Harnesses: []string{"a"}, Statuses: []agentbridge.Status{agentbridge.StatusRunning}}
	sub := h.Subscribe(0, false, f)
	defer sub.Close()
	c := client{}
	for _, r := range sub.Initial {
		c.apply(t, r)
	}
	want := []agentbridge.Entry{{Source: "p", Snapshot: snap("s1", "a", agentbridge.StatusRunning)}}
	if diff := cmp.Diff(want, c.entries()); diff != "" {
		t.Fatalf("initial filtered state mismatch (-want +got):\n%s", diff)
	}

	pub("p", agentbridge.Op{Op: agentbridge.OpEvent, SessionID: "s1", Event: agentbridge.Event{Kind: agentbridge.KindAgentDone, Outcome: agentbridge.OutcomeSuccess}})
	pub("q", agentbridge.Op{Op: agentbridge.OpRemove, SessionID: "s1"})
	pub("p", agentbridge.Op{Op: agentbridge.OpUpsert, Session: snap("s2", "a", agentbridge.StatusRunning)})
	got := drain(t, sub, h.Revision())
	for _, r := range got {
		c.apply(t, r)
	}
	// agent.done takes s1 out of the filter: its event, then a remove; q is
	// not selected; s2 comes in.
	if diff := cmp.Diff([]string{"lifecycle", "remove", "upsert"}, names(got)); diff != "" {
		t.Errorf("filtered records mismatch (-want +got):\n%s", diff)
	}
	_, list := h.Sessions(f)
	if diff := cmp.Diff(list, c.entries()); diff != "" {
		t.Errorf("filtered client differs from Sessions (-sessions +client):\n%s", diff)
	}
}

func TestHarnessSwitchRunningSource(t *testing.T) {
	h := newHub(t, Options{})
	f := newFake(info("run", "a", "b"))
	f.live = []*fold.Session{sessionOf(snap("s1", "a", agentbridge.StatusIdle)), sessionOf(snap("s2", "b", agentbridge.StatusIdle))}
	st := running(t, h, f)[0]
	if diff := cmp.Diff([]string{"a", "b"}, st.Enabled); diff != "" {
		t.Fatalf("Start.Enabled mismatch:\n%s", diff)
	}
	if err := st.Publisher.Reset(f.live); err != nil {
		t.Fatal(err)
	}
	sub := h.Subscribe(h.Revision(), true, agentbridge.Filter{})
	defer sub.Close()

	state, err := h.SetHarness("run", "b", false)
	if err != nil {
		t.Fatal(err)
	}
	if state.Harnesses[1].Enabled {
		t.Error("SetHarness answered b still enabled")
	}
	if _, ok := h.Session("run", "s2"); ok {
		t.Error("the switched-off harness's session is still listed")
	}
	select {
	case set := <-f.resets:
		if diff := cmp.Diff([]string{"a"}, set); diff != "" {
			t.Errorf("Changes value mismatch:\n%s", diff)
		}
	case <-time.After(wait):
		t.Fatal("the source got no Changes value")
	}
	got := drain(t, sub, h.Revision())
	if diff := cmp.Diff([]string{"remove", "harnesses", "reset"}, names(got)); diff != "" {
		t.Errorf("records mismatch (-want +got):\n%s", diff)
	}
	var hr harnessesData
	mustDecode(t, got[1], &hr)
	if diff := cmp.Diff([]string{"a"}, hr.EnabledHarnesses); diff != "" {
		t.Errorf("harnesses record mismatch:\n%s", diff)
	}
	err = st.Publisher.Upsert(sessionOf(snap("s2", "b", agentbridge.StatusRunning)))
	if diff := cmp.Diff([]string{"$.harness harness_not_enabled"}, issuePaths(t, err)); diff != "" {
		t.Errorf("upsert naming a switched-off harness (-want +got):\n%s", diff)
	}
	if _, err := h.SetHarness("run", "b", true); err != nil {
		t.Fatal(err)
	}
	<-f.resets
	if _, ok := h.Session("run", "s2"); !ok {
		t.Error("switching back on did not report the live session again")
	}
}

func TestHarnessSwitchPushSource(t *testing.T) {
	h := newHub(t, Options{})
	if err := h.AddPush(info("p", "a", "b")); err != nil {
		t.Fatal(err)
	}
	if err := h.Publish("p", []agentbridge.Op{{Op: agentbridge.OpReset, Sessions: []agentbridge.Snapshot{snap("s1", "a", agentbridge.StatusIdle), snap("s2", "b", agentbridge.StatusIdle)}}}); err != nil {
		t.Fatal(err)
	}
	sub := h.Subscribe(h.Revision(), true, agentbridge.Filter{})
	defer sub.Close()
	if _, err := h.SetHarness("p", "b", false); err != nil {
		t.Fatal(err)
	}
	got := drain(t, sub, h.Revision())
	if diff := cmp.Diff([]string{"harnesses", "reset"}, names(got)); diff != "" {
		t.Fatalf("records mismatch (-want +got):\n%s", diff)
	}
	var r resetData
	mustDecode(t, got[1], &r)
	if diff := cmp.Diff([]agentbridge.Snapshot{snap("s1", "a", agentbridge.StatusIdle)}, r.Sessions); diff != "" {
		t.Errorf("reset mismatch (-want +got):\n%s", diff)
	}
	err := h.Publish("p", []agentbridge.Op{{Op: agentbridge.OpUpsert, Session: snap("s3", "b", agentbridge.StatusIdle)}})
	if diff := cmp.Diff([]string{"$[0].session.harness harness_not_enabled"}, issuePaths(t, err)); diff != "" {
		t.Errorf("issues mismatch (-want +got):\n%s", diff)
	}
	st := h.Sources()
	if st[0].Harnesses[1].Enabled || !st[0].Harnesses[0].Enabled || !st[0].Push {
		t.Errorf("Sources() = %+v", st)
	}
}

func TestFailingSourceIsRecorded(t *testing.T) {
	h := newHub(t, Options{})
	good := newFake(info("good", "a"))
	bad := newFake(info("bad", "a"))
	bad.err = errors.New("open /home/someone/.agent/x.jsonl: permission denied")
	starts := running(t, h, good, bad)
	if err := starts[0].Publisher.Upsert(sessionOf(snap("s1", "a", agentbridge.StatusIdle))); err != nil {
		t.Fatal(err)
	}
	deadline := time.After(wait)
	for {
		d := h.Diagnostics()
		if len(d) > 0 {
			if d[0].Source != "bad" || d[0].Diagnostic.Code != "source-failed" || strings.Contains(d[0].Diagnostic.Message, "/") {
				t.Errorf("diagnostic = %+v", d[0])
			}
			break
		}
		select {
		case <-deadline:
			t.Fatal("no diagnostic for the failed source")
		case <-time.After(time.Millisecond):
		}
	}
	if _, ok := h.Session("good", "s1"); !ok {
		t.Error("the other source's session is gone")
	}
}

func TestDiagnosticsBounded(t *testing.T) {
	h := newHub(t, Options{})
	if err := h.AddPush(info("p", "a")); err != nil {
		t.Fatal(err)
	}
	for i := range DefaultDiagnostics + 5 {
		if err := h.Publish("p", []agentbridge.Op{{Op: agentbridge.OpDiagnostic, Diagnostic: agentbridge.Diagnostic{Code: "c", Message: fmt.Sprint(i)}}}); err != nil {
			t.Fatal(err)
		}
	}
	d := h.Diagnostics()
	if len(d) != DefaultDiagnostics || d[0].Diagnostic.Message != "5" || d[len(d)-1].Revision != h.Revision() {
		t.Errorf("Diagnostics() = %d entries from %q, last rev %d (hub %d)", len(d), d[0].Diagnostic.Message, d[len(d)-1].Revision, h.Revision())
	}
}

func TestMetrics(t *testing.T) {
	reg := prometheus.NewRegistry()
	h := newHub(t, Options{Registry: reg})
	if err := h.AddPush(info("p", "a")); err != nil {
		t.Fatal(err)
	}
	sub := h.Subscribe(0, false, agentbridge.Filter{})
	if err := h.Publish("p", []agentbridge.Op{{Op: agentbridge.OpUpsert, Session: snap("s1", "a", agentbridge.StatusRunning)}}); err != nil {
		t.Fatal(err)
	}
	_ = h.Publish("p", []agentbridge.Op{{Op: agentbridge.OpRemove, SessionID: "bad id"}})
	want := `
# HELP agentbridge_publish_rejections_total Publish calls rejected by validation, by source.
# TYPE agentbridge_publish_rejections_total counter
agentbridge_publish_rejections_total{source="p"} 1
# HELP agentbridge_records_published_total Stream records published, by event name.
# TYPE agentbridge_records_published_total counter
agentbridge_records_published_total{event="upsert"} 1
# HELP agentbridge_stream_clients Stream clients connected.
# TYPE agentbridge_stream_clients gauge
agentbridge_stream_clients 1
`
	if err := testutil.GatherAndCompare(reg, strings.NewReader(want),
		"agentbridge_publish_rejections_total", "agentbridge_records_published_total", "agentbridge_stream_clients"); err != nil {
		t.Error(err)
	}
	sub.Close()
	if got := testutil.ToFloat64(h.met.clients); got != 0 {
		t.Errorf("clients after Close = %v", got)
	}
	n, err := testutil.GatherAndCount(reg, "agentbridge_sessions")
	if err != nil || n != len(agentbridge.Statuses) {
		t.Errorf("agentbridge_sessions series = %d (%v), want one per status", n, err)
	}
}

// countingSource is a source with an instrument of its own.
type countingSource struct {
	*fakeSource
	prometheus.Counter
}

// TestSourceMetrics: a source that is a prometheus.Collector has its
// instruments in the hub's registry; one that is not adds nothing.
func TestSourceMetrics(t *testing.T) {
	reg := prometheus.NewRegistry()
	h := newHub(t, Options{Registry: reg})
	c := prometheus.NewCounter(prometheus.CounterOpts{Name: "agentbridge_test_source_queries_total", Help: "Queries."})
	c.Add(3)
	if err := h.Add(countingSource{newFake(info("counting", "a")), c}); err != nil {
		t.Fatal(err)
	}
	if err := h.Add(newFake(info("plain", "a"))); err != nil {
		t.Fatal(err)
	}
	want := `
# HELP agentbridge_test_source_queries_total Queries.
# TYPE agentbridge_test_source_queries_total counter
agentbridge_test_source_queries_total 3
`
	if err := testutil.GatherAndCompare(reg, strings.NewReader(want), "agentbridge_test_source_queries_total"); err != nil {
		t.Error(err)
	}
}

// TestStreamFollowsSessions is the key property: a client that reads
// Sessions at revision N and applies the stream from N in order holds
// exactly what Sessions returns afterwards — unfiltered, filtered, and from
// resets — through hundreds of random operations.
func TestStreamFollowsSessions(t *testing.T) {
	for seed := range uint64(4) {
		t.Run(fmt.Sprint("seed", seed), func(t *testing.T) {
			rng := rand.New(rand.NewPCG(seed, 99))
			h := newHub(t, Options{RingSize: 100000, QueueSize: 100000})
			f := newFake(info("run", "a", "b"))
			st := running(t, h, f)[0]
			if err := h.AddPush(info("zpush", "a", "b")); err == nil {
				t.Fatal("AddPush after Run succeeded")
			}

			filters := []agentbridge.Filter{
				{},
				{Statuses: []agentbridge.Status{agentbridge.StatusRunning, agentbridge.StatusWaiting}},
				{Harnesses: []string{"b"}},
				{Sources: []string{"run"}, Statuses: []agentbridge.Status{agentbridge.StatusIdle}},
			}
			type follower struct {
				f   agentbridge.Filter
				sub *Subscription
				c   client
			}
			var fs []*follower
			for _, flt := range filters {
				rev, list := h.Sessions(flt)
				sub := h.Subscribe(rev, true, flt)
				t.Cleanup(sub.Close)
				fs = append(fs, &follower{flt, sub, fromEntries(list)})
				fresh := h.Subscribe(0, false, flt)
				t.Cleanup(fresh.Close)
				c := client{}
				for _, r := range fresh.Initial {
					c.apply(t, r)
				}
				fs = append(fs, &follower{flt, fresh, c})
			}

			ids := []string{"s1", "s2", "s3", "s4", "s5"}
			statuses := agentbridge.Statuses
			waits := map[string][]string{}
			for i := range 400 {
				id := ids[rng.IntN(len(ids))]
				harness := []string{"a", "b"}[rng.IntN(2)]
				var err error
				switch rng.IntN(10) {
				case 0:
					var ss []*fold.Session
					for _, sid := range ids[:rng.IntN(len(ids))] {
						ss = append(ss, sessionOf(snap(sid, harness, statuses[rng.IntN(len(statuses))])))
					}
					err = st.Publisher.Reset(ss)
					clear(waits)
				case 1, 2:
					err = st.Publisher.Upsert(sessionOf(snap(id, harness, statuses[rng.IntN(len(statuses))])))
					delete(waits, id)
				case 3:
					err = st.Publisher.Remove(id)
				case 4:
					w := fmt.Sprint("w", i)
					err = st.Publisher.Event(id, harness, agentbridge.Event{Kind: agentbridge.KindWaitStarted, WaitID: w, State: agentbridge.StatusWaiting, Reason: "approve"})
					if err == nil {
						waits[id] = append(waits[id], w)
					}
				case 5:
					if ws := waits[id]; len(ws) > 0 {
						err = st.Publisher.Event(id, harness, agentbridge.Event{Kind: agentbridge.KindWaitFinished, WaitID: ws[0]})
						waits[id] = ws[1:]
					}
				case 6:
					err = st.Publisher.Event(id, harness, agentbridge.Event{Kind: agentbridge.KindAgentDone, Outcome: agentbridge.OutcomeSuccess})
					delete(waits, id)
				case 7:
					err = st.Publisher.Event(id, harness, agentbridge.Event{Kind: agentbridge.KindTurnStarted, TurnID: fmt.Sprint("t", i)})
					delete(waits, id)
				case 8:
					err = st.Publisher.Event(id, harness, agentbridge.Event{Kind: agentbridge.KindSessionStopped})
					delete(waits, id)
				case 9:
					err = st.Publisher.Diagnostic(agentbridge.Diagnostic{Code: "note", Message: "something"})
				}
				if err != nil && !errors.Is(err, ErrInvalid) {
					t.Fatal(err)
				}
			}
			// A diagnostic every follower sees marks the end.
			if err := st.Publisher.Diagnostic(agentbridge.Diagnostic{Code: "end", Message: "end"}); err != nil {
				t.Fatal(err)
			}
			rev := h.Revision()
			for i, fl := range fs {
				for _, r := range drain(t, fl.sub, rev) {
					fl.c.apply(t, r)
				}
				_, want := h.Sessions(fl.f)
				if diff := cmp.Diff(want, fl.c.entries()); diff != "" {
					t.Errorf("follower %d (filter %+v) differs from Sessions (-sessions +client):\n%s", i, fl.f, diff)
				}
			}
		})
	}
}

func TestSessionsSortedAndCopied(t *testing.T) {
	h := newHub(t, Options{})
	for _, id := range []string{"q", "p"} {
		if err := h.AddPush(info(id, "a")); err != nil {
			t.Fatal(err)
		}
	}
	sub := agentbridge.Subagent{ID: "x", Type: "explore", Status: agentbridge.SubagentRunning}
	withSub := snap("b", "a", agentbridge.StatusRunning)
	withSub.Subagents = []agentbridge.Subagent{sub}
	for _, src := range []string{"q", "p"} {
		if err := h.Publish(src, []agentbridge.Op{{Op: agentbridge.OpUpsert, Session: withSub}, {Op: agentbridge.OpUpsert, Session: snap("a", "a", agentbridge.StatusIdle)}}); err != nil {
			t.Fatal(err)
		}
	}
	_, list := h.Sessions(agentbridge.Filter{})
	var got []string
	for _, e := range list {
		got = append(got, e.Source+"/"+e.Snapshot.ID)
	}
	if diff := cmp.Diff([]string{"p/a", "p/b", "q/a", "q/b"}, got); diff != "" {
		t.Errorf("order mismatch (-want +got):\n%s", diff)
	}
	list[1].Snapshot.Subagents[0].Status = agentbridge.SubagentFailed
	if e, _ := h.Session("p", "b"); e.Snapshot.Subagents[0].Status != agentbridge.SubagentRunning {
		t.Error("changing a returned snapshot changed the hub")
	}
	if !slices.Equal([]string{"q", "p"}, []string{h.Sources()[0].ID, h.Sources()[1].ID}) {
		t.Error("Sources() not in the order added")
	}
}

// fakeProc writes /proc/<pid>/stat files for a process tree (pid → parent).
func fakeProc(t *testing.T, parents map[int]int) string {
	t.Helper()
	root := t.TempDir()
	for pid, ppid := range parents {
		dir := filepath.Join(root, fmt.Sprint(pid))
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		line := fmt.Sprintf("%d (agent) S %d 1 1 0 -1 0 0 0 0 0 0 0 0 20 0 1 0 100 0 0\n", pid, ppid)
		if err := os.WriteFile(filepath.Join(dir, "stat"), []byte(line), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return root
}

func TestProjectAndAncestorFilters(t *testing.T) {
	tmp := t.TempDir()
	proj := filepath.Join(tmp, "proj")
	// 10 is a terminal; 20 runs under it, 30 does not.
	h := newHub(t, Options{ProcRoot: fakeProc(t, map[int]int{1: 0, 10: 1, 11: 10, 20: 11, 30: 1})})
	if err := h.AddPush(info("p", "a")); err != nil {
		t.Fatal(err)
	}
	err := h.Publish("p", []agentbridge.Op{{Op: agentbridge.OpReset, Sessions: []agentbridge.Snapshot{
		placed("in-root", proj, 20),
		placed("below", filepath.Join(proj, "pkg", "x"), 30),
		placed("sibling", proj+"-other", 20),
		placed("no-cwd", "", 0),
	}}})
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		f    agentbridge.Filter
		want []string
	}{
		{"project", agentbridge.Filter{Project: proj}, []string{"below", "in-root"}},
		{"ancestor", agentbridge.Filter{AncestorPID: 10}, []string{"in-root", "sibling"}},
		{"both", agentbridge.Filter{Project: proj, AncestorPID: 10}, []string{"in-root"}},
		{"ancestor is the process itself", agentbridge.Filter{AncestorPID: 30}, []string{"below"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, list := h.Sessions(tt.f)
			var got []string
			for _, e := range list {
				got = append(got, e.Snapshot.ID)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("Sessions mismatch (-want +got):\n%s", diff)
			}
			sub := h.Subscribe(0, false, tt.f)
			defer sub.Close()
			c := client{}
			for _, r := range sub.Initial {
				c.apply(t, r)
			}
			if diff := cmp.Diff(list, c.entries()); diff != "" {
				t.Errorf("stream resets differ from Sessions (-sessions +stream):\n%s", diff)
			}
		})
	}
}

// TestProjectAndAncestorStream: a client filtered by project and ancestor
// follows a session as its cwd and pid take it in and out of the filter,
// by answers the hub has yet to look up (a new cwd or pid) and by ones it
// has already.
func TestProjectAndAncestorStream(t *testing.T) {
	tmp := t.TempDir()
	proj := filepath.Join(tmp, "proj")
	// 10 is a terminal; 20 runs under it, 30 does not.
	h := newHub(t, Options{ProcRoot: fakeProc(t, map[int]int{1: 0, 10: 1, 20: 10, 30: 1})})
	if err := h.AddPush(info("p", "a")); err != nil {
		t.Fatal(err)
	}
	f := agentbridge.Filter{Project: proj, AncestorPID: 10}
	sub := h.Subscribe(0, false, f)
	defer sub.Close()
	c := client{}
	for _, r := range sub.Initial {
		c.apply(t, r)
	}
	steps := []struct {
		cwd string
		pid int
		in  bool
	}{
		{proj, 20, true},
		{tmp, 20, false},
		{filepath.Join(proj, "x"), 20, true},
		{proj, 30, false},
		{proj, 20, true},
		{tmp, 30, false},
		{proj, 0, false},
		{filepath.Join(proj, "x"), 20, true},
	}
	for i, st := range steps {
		if err := h.Publish("p", []agentbridge.Op{{Op: agentbridge.OpUpsert, Session: placed("s1", st.cwd, st.pid)}}); err != nil {
			t.Fatal(err)
		}
		// A diagnostic, which the client sees, marks the end of the step.
		if err := h.Diagnose("p", agentbridge.Diagnostic{Code: "step", Message: "step"}); err != nil {
			t.Fatal(err)
		}
		for _, r := range drain(t, sub, h.Revision()) {
			c.apply(t, r)
		}
		_, want := h.Sessions(f)
		if got := len(want) == 1; got != st.in {
			t.Errorf("step %d (%+v): Sessions selects the session: %v", i, st, got)
		}
		if diff := cmp.Diff(want, c.entries()); diff != "" {
			t.Errorf("step %d (%+v): stream applied differs from Sessions (-sessions +stream):\n%s", i, st, diff)
		}
	}
}

func TestRingCaps(t *testing.T) {
	rec := func(rev uint64, size int) *entry {
		return &entry{rec: Record{Rev: rev, Data: make([]byte, size)}}
	}
	tests := []struct {
		name       string
		count, max int
		sizes      []int
		keep       []uint64
		evicted    uint64
	}{
		{"under both caps", 4, 100, []int{10, 10}, []uint64{1, 2}, 0},
		{"count cap", 2, 100, []int{10, 10, 10}, []uint64{2, 3}, 1},
		{"bytes cap", 10, 25, []int{10, 10, 10}, []uint64{2, 3}, 1},
		{"one over-large record stays", 10, 5, []int{3, 50}, []uint64{2}, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := newRing(tt.count, tt.max)
			var ev uint64
			for i, n := range tt.sizes {
				if e := r.push(rec(uint64(i+1), n)); e > ev {
					ev = e
				}
			}
			var got []uint64
			for _, e := range r.after(0) {
				got = append(got, e.rec.Rev)
			}
			if diff := cmp.Diff(tt.keep, got); diff != "" || ev != tt.evicted {
				t.Errorf("kept %v (evicted up to %d), want %v (%d)", got, ev, tt.keep, tt.evicted)
			}
		})
	}
}

func TestHarnessSwitchBeforeRun(t *testing.T) {
	h := newHub(t, Options{})
	f := newFake(info("run", "a", "b"))
	if err := h.Add(f); err != nil {
		t.Fatal(err)
	}
	if _, err := h.SetHarness("run", "a", false); err != nil {
		t.Fatal(err)
	}
	st := runningAdded(t, h, f)
	if diff := cmp.Diff([]string{"b"}, st.Enabled); diff != "" {
		t.Errorf("Start.Enabled mismatch (-want +got):\n%s", diff)
	}
	select {
	case set := <-st.Changes:
		t.Errorf("a switch made before Run reached Changes: %v", set)
	default:
	}
}

// runningAdded runs h, whose source f is already added.
func runningAdded(t *testing.T, h *Hub, f *fakeSource) Start {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { h.Run(ctx); close(done) }()
	t.Cleanup(func() { cancel(); <-done })
	select {
	case st := <-f.started:
		return st
	case <-time.After(wait):
		t.Fatal("source not started")
	}
	return Start{}
}

func TestRunWaitsForContext(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newHub(t, Options{})
		if err := h.AddPush(info("p", "a")); err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithCancel(t.Context())
		done := make(chan error, 1)
		go func() { done <- h.Run(ctx) }()
		synctest.Wait() // Run is running or has returned
		select {
		case <-done:
			t.Fatal("Run returned before its context ended")
		default:
		}
		cancel()
		synctest.Wait()
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("Run = %v", err)
			}
		default:
			t.Fatal("Run did not return after its context ended")
		}
		if err := h.Run(t.Context()); err == nil {
			t.Error("a second Run succeeded")
		}
	})
}

// memStore is a RevisionStore in memory that records every save.
type memStore struct {
	mark    uint64
	saves   []uint64
	loadErr error
	saveErr error
}

func (m *memStore) Load() (uint64, error) { return m.mark, m.loadErr }

func (m *memStore) Save(mark uint64) error {
	if m.saveErr != nil {
		return m.saveErr
	}
	m.saves = append(m.saves, mark)
	m.mark = mark
	return nil
}

// TestRevisionsGrowAcrossRestarts: a run that published more records than
// microseconds passed (here: the clock does not move at all) is followed by
// a run whose revisions are all above it, and whose stream does not resume
// from the earlier run's cursor. The mark is saved in blocks, before any
// revision of a block is seen, not once per record.
func TestRevisionsGrowAcrossRestarts(t *testing.T) {
	store := &memStore{}
	run := func() (*Hub, *Subscription) {
		h := newHub(t, Options{Revisions: store, RevisionBlock: 10})
		if err := h.AddPush(info("p", "a")); err != nil {
			t.Fatal(err)
		}
		return h, h.Subscribe(0, false, agentbridge.Filter{})
	}
	h1, sub1 := run()
	defer sub1.Close()
	for i := range 25 {
		if err := h1.Publish("p", []agentbridge.Op{{Op: agentbridge.OpUpsert, Session: snap(fmt.Sprint("s", i), "a", agentbridge.StatusIdle)}}); err != nil {
			t.Fatal(err)
		}
		if rev := h1.Revision(); rev > store.mark {
			t.Fatalf("revision %d handed out above the saved mark %d", rev, store.mark)
		}
	}
	last1 := h1.Revision()
	if n := len(store.saves); n < 3 || n > 4 {
		t.Errorf("%d saves for 26 revisions in blocks of 10, want 3 or 4: %v", n, store.saves)
	}

	h2, sub2 := run() // same microsecond
	defer sub2.Close()
	if len(sub2.Initial) == 0 || sub2.Initial[0].Rev <= last1 {
		t.Fatalf("the restarted hub's first revision %v is not above the last run's %d", sub2.Initial, last1)
	}
	resumed := h2.Subscribe(last1, true, agentbridge.Filter{})
	defer resumed.Close()
	if resumed.Resumed {
		t.Errorf("a cursor from the earlier run (%d) was resumed, want resets", last1)
	}
	if len(resumed.Initial) != 1 || resumed.Initial[0].Name != agentbridge.RecordReset {
		t.Errorf("initial records for an earlier run's cursor: %v, want a reset", resumed.Initial)
	}
}

// TestRevisionStoreFailuresAreNotFatal: a store that cannot be read or
// written leaves the hub working: from the ceiling (a mark it cannot read
// is one it cannot believe), growing by one.
func TestRevisionStoreFailuresAreNotFatal(t *testing.T) {
	store := &memStore{mark: 1 << 60, loadErr: errors.New("unreadable"), saveErr: errors.New("read-only")}
	h := newHub(t, Options{Revisions: store, RevisionBlock: 2, Logger: slog.New(slog.DiscardHandler)})
	if err := h.AddPush(info("p", "a")); err != nil {
		t.Fatal(err)
	}
	if got, want := h.Revision(), MaxStartRevision; got != want {
		t.Errorf("Revision() = %d, want the ceiling %d when the mark cannot be read", got, want)
	}
	for i := range 5 {
		if err := h.Publish("p", []agentbridge.Op{{Op: agentbridge.OpUpsert, Session: snap(fmt.Sprint("s", i), "a", agentbridge.StatusIdle)}}); err != nil {
			t.Fatal(err)
		}
	}
	if got, want := h.Revision(), MaxStartRevision+5; got != want {
		t.Errorf("Revision() = %d, want %d", got, want)
	}
}

// TestCheckAppliesNothing: Check reports what Publish would, skips ops
// with no kind (ones the caller could not decode) keeping the others'
// paths, and changes neither the state nor the revision.
func TestCheckAppliesNothing(t *testing.T) {
	h := newHub(t, Options{})
	if err := h.AddPush(info("p", "a")); err != nil {
		t.Fatal(err)
	}
	rev := h.Revision()
	ops := []agentbridge.Op{
		{},
		{Op: agentbridge.OpEvent, SessionID: "s1", Harness: "a", Event: agentbridge.Event{Kind: agentbridge.KindSessionStarted}},
		{Op: agentbridge.OpEvent, SessionID: "s1", Event: agentbridge.Event{Kind: agentbridge.KindWaitFinished, WaitID: "w1"}},
	}
	var inv *InvalidError
	if err := h.Check("p", ops); !errors.As(err, &inv) || len(inv.Issues) != 1 || inv.Issues[0].Path != "$[2].event.waitId" {
		t.Errorf("Check = %v, want one issue at $[2].event.waitId", err)
	}
	if err := h.Check("p", ops[:2]); err != nil {
		t.Errorf("Check of valid ops = %v", err)
	}
	if _, got := h.Sessions(agentbridge.Filter{}); len(got) != 0 || h.Revision() != rev {
		t.Errorf("Check changed the hub: %d sessions, revision %d (was %d)", len(got), h.Revision(), rev)
	}
	if err := h.Publish("p", ops[:1]); !errors.As(err, &inv) {
		t.Errorf("Publish of an op with no kind = %v, want it rejected", err)
	}
	if err := h.Check("nope", nil); !errors.Is(err, ErrUnknownSource) {
		t.Errorf("Check of an unknown source = %v", err)
	}
}

// TestTamperedRevisionMark: one rule for every mark that is not one an
// earlier run saved (too large for any run, up to the largest uint64, or
// not readable as a number at all): revisions start at the ceiling, above
// every honest earlier revision and far below 2^53, and only grow — also
// in the run after (which continues above the ceiling run's mark instead
// of falling back to the ceiling).
func TestTamperedRevisionMark(t *testing.T) {
	honest := uint64(t0.UnixMicro()) + 5_000_000
	for _, tc := range []struct {
		name string
		mark uint64
		err  error
	}{
		{"above the ceiling", MaxStartRevision + 1000, nil}, // an honest mark of a run that started at the ceiling: believed
		{"MaxMark", MaxMark, nil},
		{"2^53-1", 1<<53 - 1, nil},
		{"2^53", 1 << 53, nil},
		{"2^63-1", 1<<63 - 1, nil},
		{"2^63+7", 1<<63 + 7, nil},
		{"2^64-2", ^uint64(0) - 1, nil},
		{"2^64-1", ^uint64(0), nil},
		{"not a number (2^64, -1, garbage)", 0, errors.New("revision mark: not a number")},
		{"unreadable", 0, errors.New("read revision mark: permission denied")},
	} {
		t.Run(tc.name, func(t *testing.T) {
			store := &memStore{mark: tc.mark, loadErr: tc.err}
			want := MaxStartRevision
			if tc.err == nil && tc.mark < MaxMark {
				want = tc.mark + 1
			}
			prev := uint64(0)
			for run := range 3 {
				h := newHub(t, Options{Revisions: store, RevisionBlock: 10, Logger: slog.New(slog.DiscardHandler)})
				store.loadErr = nil // the run saved its own mark
				if err := h.AddPush(info("p", "a")); err != nil {
					t.Fatal(err)
				}
				first := h.Revision()
				switch {
				case run == 0 && first != want:
					t.Fatalf("first revision %d after a mark of %d (%v): want %d", first, tc.mark, tc.err, want)
				case first <= prev:
					t.Fatalf("run %d starts at %d, not above the last run's %d", run, first, prev)
				case first <= honest || first >= 1<<53-1_000_000:
					t.Fatalf("run %d starts at %d: want above an honest run's %d and far below 2^53", run, first, honest)
				}
				prev = first
				for i := range 25 {
					if err := h.Publish("p", []agentbridge.Op{{Op: agentbridge.OpUpsert, Session: snap(fmt.Sprint("s", i), "a", agentbridge.StatusIdle)}}); err != nil {
						t.Fatal(err)
					}
					rev := h.Revision()
					if rev <= prev || rev >= 1<<53 {
						t.Fatalf("revision went from %d to %d", prev, rev)
					}
					prev = rev
				}
				if store.mark >= MaxMark {
					t.Errorf("saved mark %d is not below MaxMark", store.mark)
				}
			}
		})
	}
	far := newHub(t, Options{Now: func() time.Time { return time.UnixMicro(1 << 62) }})
	if r := far.Revision(); r > MaxStartRevision {
		t.Errorf("a clock in the far future starts revisions at %d, above the ceiling %d", r, MaxStartRevision)
	}
}

// TestPublishedEventWithoutTimeHasItsArrival: a push source's event without
// occurredAt gives the session's activity the moment the hub took it; its
// lifecycle record still carries the event as published.
func TestPublishedEventWithoutTimeHasItsArrival(t *testing.T) {
	h := newHub(t, Options{})
	if err := h.AddPush(info("p", "a")); err != nil {
		t.Fatal(err)
	}
	if err := h.Publish("p", []agentbridge.Op{{Op: agentbridge.OpEvent, SessionID: "s1", Harness: "a", Event: agentbridge.Event{Kind: agentbridge.KindTurnStarted, TurnID: "t1"}}}); err != nil {
		t.Fatal(err)
	}
	_, es := h.Sessions(agentbridge.Filter{})
	if len(es) != 1 || es[0].Activity == nil || es[0].Activity.StatusSince != t0.UnixMilli() || es[0].Activity.TurnStartedAt != t0.UnixMilli() {
		t.Fatalf("entries %+v, want the activity at the hub's clock %d", es, t0.UnixMilli())
	}
}
