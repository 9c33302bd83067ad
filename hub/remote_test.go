package hub

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/agentbridge/agentbridge"
)

// hostClient applies a stream as a client that keys sessions by host and
// source.
type hostClient map[[2]string]map[string]agentbridge.Snapshot

func (c hostClient) apply(tb testing.TB, r Record) {
	tb.Helper()
	var d struct {
		Source    string                 `json:"source"`
		Host      string                 `json:"host"`
		Sessions  []agentbridge.Snapshot `json:"sessions"`
		Snapshot  agentbridge.Snapshot   `json:"snapshot"`
		SessionID string                 `json:"sessionId"`
	}
	mustDecode(tb, r, &d)
	k := [2]string{d.Host, d.Source}
	switch r.Name {
	case agentbridge.RecordReset:
		c[k] = map[string]agentbridge.Snapshot{}
		for _, s := range d.Sessions {
			c[k][s.ID] = s
		}
	case agentbridge.RecordUpsert:
		if c[k] == nil {
			c[k] = map[string]agentbridge.Snapshot{}
		}
		c[k][d.Snapshot.ID] = d.Snapshot
	case agentbridge.RecordRemove:
		delete(c[k], d.SessionID)
	}
}

func (c hostClient) entries() []agentbridge.Entry {
	out := []agentbridge.Entry{}
	for k, m := range c {
		for _, s := range m {
			out = append(out, agentbridge.Entry{Host: k[0], Source: k[1], Snapshot: s})
		}
	}
	sortEntries(out)
	return out
}

func sortEntries(es []agentbridge.Entry) {
	key := func(e agentbridge.Entry) string { return e.Host + "\x00" + e.Source + "\x00" + e.Snapshot.ID }
	for i := 1; i < len(es); i++ {
		for j := i; j > 0 && key(es[j]) < key(es[j-1]); j-- {
			es[j], es[j-1] = es[j-1], es[j]
		}
	}
}

func remoteHub(t *testing.T) (*Hub, *Remote, Start) {
	t.Helper()
	h := newHub(t, Options{})
	starts := running(t, h, newFake(info("claude-code", "claude-code", "claude-desktop")))
	r, err := h.AddRemote("devbox")
	if err != nil {
		t.Fatal(err)
	}
	return h, r, starts[0]
}

func TestAddRemoteRefusesBadIDs(t *testing.T) {
	h := newHub(t, Options{})
	for _, id := range []string{"", "local", "Dev", "dev box", strings.Repeat("a", 65)} {
		if _, err := h.AddRemote(id); err == nil {
			t.Errorf("AddRemote(%q) = nil error", id)
		}
	}
	if _, err := h.AddRemote("devbox"); err != nil {
		t.Fatal(err)
	}
	if _, err := h.AddRemote("devbox"); err == nil {
		t.Error("a second remote devbox was taken")
	}
}

func TestRemoteSessionsCarryTheirHost(t *testing.T) {
	h, r, st := remoteHub(t)
	if err := st.Publisher.Upsert(sessionOf(agentbridge.Snapshot{ID: "a", Harness: "claude-code", Status: agentbridge.StatusIdle, Cwd: "/work"})); err != nil {
		t.Fatal(err)
	}
	sub := h.Subscribe(0, false, agentbridge.Filter{})
	defer sub.Close()
	rev := h.Revision()
	r.Apply([]RemoteRecord{
		{Name: agentbridge.RecordReset, Source: "claude-code", Sessions: []agentbridge.Snapshot{{ID: "a", Harness: "claude-code", Status: agentbridge.StatusRunning, Cwd: "/work"}}},
		{Name: agentbridge.RecordUpsert, Source: "codex", Snapshot: agentbridge.Snapshot{ID: "b", Harness: "codex", Status: agentbridge.StatusWaiting, WaitingFor: "Approve Bash"}},
	})
	recs := drain(t, sub, h.Revision())
	var hosts []string
	for _, rc := range recs {
		if rc.Rev <= rev {
			continue
		}
		var d struct{ Host string }
		mustDecode(t, rc, &d)
		hosts = append(hosts, rc.Name+"@"+d.Host)
	}
	if diff := cmp.Diff([]string{"reset@devbox", "upsert@devbox"}, hosts); diff != "" {
		t.Errorf("records (-want +got):\n%s", diff)
	}

	_, all := h.Sessions(agentbridge.Filter{})
	var got []string
	for _, e := range all {
		got = append(got, e.Host+"/"+e.Source+"/"+e.Snapshot.ID)
	}
	// The same session id on two hosts is two sessions; local ones first.
	if diff := cmp.Diff([]string{"/claude-code/a", "devbox/claude-code/a", "devbox/codex/b"}, got); diff != "" {
		t.Errorf("sessions (-want +got):\n%s", diff)
	}
	b, _ := json.Marshal(all[0])
	if strings.Contains(string(b), `"host"`) {
		t.Errorf("a local entry carries a host: %s", b)
	}
	b, _ = json.Marshal(all[1])
	if !strings.Contains(string(b), `"source":"claude-code","host":"devbox"`) {
		t.Errorf("a remote entry = %s, want its host", b)
	}

	for _, c := range []struct {
		name string
		f    agentbridge.Filter
		want int
	}{
		{"host local", agentbridge.Filter{Hosts: []string{agentbridge.LocalHost}}, 1},
		{"host devbox", agentbridge.Filter{Hosts: []string{"devbox"}}, 2},
		{"both hosts", agentbridge.Filter{Hosts: []string{"devbox", agentbridge.LocalHost}}, 3},
		{"unknown host", agentbridge.Filter{Hosts: []string{"nas"}}, 0},
		{"project: local only", agentbridge.Filter{Project: "/work"}, 1},
		{"ancestorPid: local only", agentbridge.Filter{AncestorPID: 1}, 0},
		{"source with host", agentbridge.Filter{Sources: []string{"codex"}, Hosts: []string{"devbox"}}, 1},
	} {
		if _, es := h.Sessions(c.f); len(es) != c.want {
			t.Errorf("%s: %d sessions, want %d: %v", c.name, len(es), c.want, es)
		}
	}
	if e, ok := h.SessionOn("devbox", "codex", "b"); !ok || e.Host != "devbox" {
		t.Errorf("SessionOn(devbox, codex, b) = %v, %v", e, ok)
	}
	if _, ok := h.Session("codex", "b"); ok {
		t.Error("Session finds a remote's session as a local one")
	}
	if _, ok := h.Source("devbox/codex"); ok {
		t.Error("a remote's source is listed as a local source")
	}
}

func TestRemoteLocalHarnessSwitchApplies(t *testing.T) {
	h, r, _ := remoteHub(t)
	r.Apply([]RemoteRecord{{Name: agentbridge.RecordReset, Source: "claude-code", Sessions: []agentbridge.Snapshot{
		snap("a", "claude-code", agentbridge.StatusIdle), snap("d", "claude-desktop", agentbridge.StatusIdle)}}})
	count := func() int { _, es := h.Sessions(agentbridge.Filter{Hosts: []string{"devbox"}}); return len(es) }
	if n := count(); n != 2 {
		t.Fatalf("%d remote sessions, want 2", n)
	}
	if _, err := h.SetHarness("claude-code", "claude-desktop", false); err != nil {
		t.Fatal(err)
	}
	if n := count(); n != 1 {
		t.Errorf("after the harness is switched off: %d remote sessions, want 1", n)
	}
	// A session of the switched-off harness that the remote reports now
	// is kept out of view as well.
	r.Apply([]RemoteRecord{{Name: agentbridge.RecordUpsert, Source: "claude-code", Snapshot: snap("e", "claude-desktop", agentbridge.StatusRunning)}})
	if n := count(); n != 1 {
		t.Errorf("a new session of a switched-off harness is shown: %d sessions", n)
	}
	if _, err := h.SetHarness("claude-code", "claude-desktop", true); err != nil {
		t.Fatal(err)
	}
	if n := count(); n != 3 {
		t.Errorf("after the harness is switched on again: %d remote sessions, want 3", n)
	}
}

func TestRemoteLeaveAndBounds(t *testing.T) {
	h, r, _ := remoteHub(t)
	var recs []RemoteRecord
	for i := range MaxRemoteSessions + 10 {
		recs = append(recs, RemoteRecord{Name: agentbridge.RecordUpsert, Source: "codex", Snapshot: snap(fmt.Sprintf("s%05d", i), "codex", agentbridge.StatusIdle)})
	}
	r.Apply(recs)
	if n := r.Sessions(); n != MaxRemoteSessions {
		t.Errorf("holds %d sessions, want the bound %d", n, MaxRemoteSessions)
	}
	var capped int
	for _, d := range h.Diagnostics() {
		if d.Diagnostic.Code == "remote-too-many-sessions" && d.Host == "devbox" && d.Source == RemoteSource {
			capped++
		}
	}
	if capped != 1 {
		t.Errorf("%d too-many-sessions diagnostics, want 1: %v", capped, h.Diagnostics())
	}
	r.Leave()
	if _, es := h.Sessions(agentbridge.Filter{}); len(es) != 0 || r.Sessions() != 0 {
		t.Errorf("after Leave: %d sessions listed, %d held", len(es), r.Sessions())
	}
	r.Apply(recs[:1])
	if _, es := h.Sessions(agentbridge.Filter{}); len(es) != 1 {
		t.Errorf("a remote back after Leave: %d sessions, want 1", len(es))
	}
}

func TestRemoteRejectsWhatBreaksTheRules(t *testing.T) {
	h, r, _ := remoteHub(t)
	n := r.Apply([]RemoteRecord{
		{Name: agentbridge.RecordUpsert, Source: "codex", Snapshot: agentbridge.Snapshot{ID: "bad id", Harness: "codex", Status: agentbridge.StatusIdle}},
		{Name: agentbridge.RecordUpsert, Source: "Bad", Snapshot: snap("a", "codex", agentbridge.StatusIdle)},
		{Name: agentbridge.RecordUpsert, Source: "codex", Snapshot: agentbridge.Snapshot{ID: "b", Harness: "codex", Status: "asleep"}},
		{Name: agentbridge.RecordUpsert, Source: "codex", Snapshot: agentbridge.Snapshot{ID: "c", Harness: "codex", Status: agentbridge.StatusIdle, Title: "key sk-ant-api03-" + strings.Repeat("x", 40)}},
		{Name: agentbridge.RecordLifecycle, Source: "codex", SessionID: "c", Event: agentbridge.Event{Kind: "nonsense"}},
	})
	if n != 4 {
		t.Errorf("rejected %d records, want 4", n)
	}
	_, es := h.Sessions(agentbridge.Filter{})
	if len(es) != 1 || es[0].Snapshot.ID != "c" || strings.Contains(es[0].Snapshot.Title, "xxxxxxxx") {
		t.Errorf("sessions = %+v, want c alone, its title redacted", es)
	}
}

func TestRemoteBatchCoalesces(t *testing.T) {
	h, r, _ := remoteHub(t)
	sub := h.Subscribe(h.Revision(), true, agentbridge.Filter{})
	defer sub.Close()
	var recs []RemoteRecord
	for i := range 500 {
		s := snap("a", "codex", agentbridge.StatusRunning)
		s.Title = fmt.Sprintf("turn %d", i)
		recs = append(recs,
			RemoteRecord{Name: agentbridge.RecordLifecycle, Source: "codex", SessionID: "a", Event: agentbridge.Event{Kind: agentbridge.KindTurnStarted, TurnID: fmt.Sprint("t", i)}},
			RemoteRecord{Name: agentbridge.RecordUpsert, Source: "codex", Snapshot: s})
	}
	r.Apply(recs)
	got := drain(t, sub, h.Revision())
	var upserts, lifecycles int
	for _, rc := range got {
		switch rc.Name {
		case agentbridge.RecordUpsert:
			upserts++
		case agentbridge.RecordLifecycle:
			lifecycles++
		}
	}
	if upserts != 1 || lifecycles != 500 {
		t.Errorf("%d upserts and %d lifecycle records, want 1 and 500", upserts, lifecycles)
	}
	if e, _ := h.SessionOn("devbox", "codex", "a"); e.Snapshot.Title != "turn 499" {
		t.Errorf("title = %q, want the last one", e.Snapshot.Title)
	}
}

// TestRemoteStreamEqualsSessions applies random remote batches, leaves and
// local harness switches, and checks after each that a client applying the
// stream in order (unfiltered, and filtered by host) holds exactly what
// Sessions lists.
func TestRemoteStreamEqualsSessions(t *testing.T) {
	h, r, _ := remoteHub(t)
	r2, err := h.AddRemote("nas")
	if err != nil {
		t.Fatal(err)
	}
	filters := []agentbridge.Filter{{}, {Hosts: []string{"devbox"}}, {Hosts: []string{agentbridge.LocalHost, "nas"}}, {Statuses: []agentbridge.Status{agentbridge.StatusRunning}}}
	subs := make([]*Subscription, len(filters))
	clients := make([]hostClient, len(filters))
	for i, f := range filters {
		subs[i] = h.Subscribe(0, false, f)
		defer subs[i].Close()
		clients[i] = hostClient{}
		for _, rc := range subs[i].Initial {
			clients[i].apply(t, rc)
		}
	}
	rng := rand.New(rand.NewPCG(1, 2))
	harnesses := []string{"claude-code", "claude-desktop"}
	statuses := []agentbridge.Status{agentbridge.StatusIdle, agentbridge.StatusRunning, agentbridge.StatusBlocked}
	for step := range 300 {
		rm := r
		if rng.IntN(2) == 0 {
			rm = r2
		}
		switch k := rng.IntN(20); {
		case k == 0:
			rm.Leave()
		case k == 1:
			if _, err := h.SetHarness("claude-code", harnesses[rng.IntN(2)], rng.IntN(2) == 0); err != nil {
				t.Fatal(err)
			}
		default:
			var batch []RemoteRecord
			for range 1 + rng.IntN(8) {
				id := fmt.Sprint("s", rng.IntN(6))
				s := snap(id, harnesses[rng.IntN(2)], statuses[rng.IntN(3)])
				switch rng.IntN(6) {
				case 0:
					batch = append(batch, RemoteRecord{Name: agentbridge.RecordReset, Source: "claude-code", Sessions: []agentbridge.Snapshot{s}})
				case 1:
					batch = append(batch, RemoteRecord{Name: agentbridge.RecordRemove, Source: "claude-code", SessionID: id})
				case 2:
					batch = append(batch, RemoteRecord{Name: agentbridge.RecordLifecycle, Source: "claude-code", SessionID: id, Event: agentbridge.Event{Kind: agentbridge.KindTurnStarted, TurnID: "t"}})
				default:
					batch = append(batch, RemoteRecord{Name: agentbridge.RecordUpsert, Source: "claude-code", Snapshot: s})
				}
			}
			rm.Apply(batch)
		}
		rev := h.Revision()
		for i, f := range filters {
			for _, rc := range drainTo(t, subs[i], rev) {
				clients[i].apply(t, rc)
			}
			_, want := h.Sessions(f)
			if diff := cmp.Diff(want, clients[i].entries()); diff != "" {
				t.Fatalf("step %d, filter %+v: stream != sessions (-sessions +stream):\n%s", step, f, diff)
			}
		}
	}
}

// drainTo reads what a subscriber gets up to rev (nothing when it saw rev).
func drainTo(tb testing.TB, s *Subscription, rev uint64) []Record {
	tb.Helper()
	var out []Record
	for {
		select {
		case rc := <-s.C:
			out = append(out, rc)
			if rc.Rev >= rev {
				return out
			}
		default:
			return out
		}
	}
}

// TestRemoteDiagnosticsKeepLocalOnes: 500 diagnostics from one remote (its
// own and its sources') never push this bridge's own out of the recent
// diagnostics: one remote keeps MaxRemoteDiagnostics, the newest; all
// remotes together at most half.
func TestRemoteDiagnosticsKeepLocalOnes(t *testing.T) {
	h := newHub(t, Options{})
	if err := h.AddPush(info("p", "a")); err != nil {
		t.Fatal(err)
	}
	for i := range 10 {
		if err := h.Diagnose("p", agentbridge.Diagnostic{Code: "local", Message: fmt.Sprint("local ", i)}); err != nil {
			t.Fatal(err)
		}
	}
	noisy, err := h.AddRemote("noisy")
	if err != nil {
		t.Fatal(err)
	}
	other, err := h.AddRemote("other")
	if err != nil {
		t.Fatal(err)
	}
	for i := range 250 {
		noisy.Apply([]RemoteRecord{{Name: agentbridge.RecordDiagnostic, Source: "x", Diagnostic: agentbridge.Diagnostic{Code: "flood", Message: fmt.Sprint("flood ", i)}}})
		noisy.Diagnostic("remote-failed", fmt.Sprint("failed ", i))
		if i%5 == 0 {
			other.Diagnostic("remote-failed", fmt.Sprint("other ", i))
		}
	}
	count := map[string]int{}
	last := ""
	for _, d := range h.Diagnostics() {
		count[d.Host]++
		if d.Host == "noisy" {
			last = d.Diagnostic.Message
		}
	}
	if count[""] != 10 {
		t.Errorf("%d of 10 local diagnostics kept after 500 from a remote: %v", count[""], count)
	}
	if count["noisy"] != MaxRemoteDiagnostics || last != "failed 249" {
		t.Errorf("the noisy remote keeps %d diagnostics (newest %q), want its newest %d", count["noisy"], last, MaxRemoteDiagnostics)
	}
	if count["other"] != 50 {
		t.Errorf("another remote keeps %d of its 50, want all", count["other"])
	}
	for range 300 {
		if err := h.Diagnose("p", agentbridge.Diagnostic{Code: "local", Message: "more"}); err != nil {
			t.Fatal(err)
		}
	}
	if n := len(h.Diagnostics()); n != DefaultDiagnostics {
		t.Errorf("%d diagnostics kept, want %d", n, DefaultDiagnostics)
	}
}
