package notify

import (
	"encoding/json"
	"errors"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/agentbridge/agentbridge"
)

func upsert(src string, s agentbridge.Snapshot) (string, []byte) {
	b, _ := json.Marshal(map[string]any{"source": src, "snapshot": s})
	return "upsert", b
}

// upsertEnded is an upsert of a session that has ended.
func upsertEnded(src string, s agentbridge.Snapshot, at int64) (string, []byte) {
	b, _ := json.Marshal(map[string]any{"source": src, "snapshot": s, "ended": agentbridge.Ended{At: at}})
	return "upsert", b
}

func reset(src string, ss ...agentbridge.Snapshot) (string, []byte) {
	if ss == nil {
		ss = []agentbridge.Snapshot{}
	}
	b, _ := json.Marshal(map[string]any{"source": src, "sessions": ss})
	return "reset", b
}

func TestTracker(t *testing.T) {
	running := agentbridge.Snapshot{ID: "s1", Harness: "claude-code", Title: "Fix tests", Status: "running"}
	waiting := running
	waiting.Status, waiting.WaitingFor = "waiting", "approve Bash"
	waiting2 := waiting
	waiting2.WaitingFor = "approve Edit"
	blocked := running
	blocked.Status, blocked.WaitingFor = "blocked", "rate limited"
	done := running
	done.Status, done.LastTurn, done.LastTurnEndedAt = "idle", "completed", 10
	failed := done
	failed.LastTurn, failed.LastTurnEndedAt, failed.Error = "failed", 20, "API Error: 401"
	ended := done
	idle := running
	idle.Status = "idle"

	type rec struct {
		name string
		data []byte
	}
	r := func(n string, d []byte) rec { return rec{n, d} }
	for _, tt := range []struct {
		name string
		recs []rec
		want []string // statuses told, in order
	}{
		{"the first reset is the baseline", []rec{r(reset("c", waiting))}, nil},
		{"a wait is told once", []rec{r(reset("c", running)), r(upsert("c", waiting)), r(upsert("c", waiting)), r(upsert("c", waiting))}, []string{"waiting"}},
		{"a new wait is told", []rec{r(reset("c", running)), r(upsert("c", waiting)), r(upsert("c", waiting2))}, []string{"waiting", "waiting"}},
		{"waiting, running, waiting again", []rec{r(reset("c")), r(upsert("c", waiting)), r(upsert("c", running)), r(upsert("c", waiting))}, []string{"waiting", "waiting"}},
		{"blocked", []rec{r(reset("c", running)), r(upsert("c", blocked))}, []string{"blocked"}},
		{"done, then failed", []rec{r(reset("c", running)), r(upsert("c", done)), r(upsert("c", done)), r(upsert("c", running)), r(upsert("c", failed))}, []string{"done", "failed"}},
		{"exited once", []rec{r(reset("c", running)), r(upsertEnded("c", ended, 30)), r(upsertEnded("c", ended, 30))}, []string{"exited"}},
		{"exited, resumed, exited again", []rec{r(reset("c", running)), r(upsertEnded("c", ended, 30)), r(upsert("c", done)), r(upsertEnded("c", ended, 40))}, []string{"exited", "exited"}},
		{"idle without a turn is nothing", []rec{r(reset("c", running)), r(upsert("c", idle))}, nil},
		{"a new session that waits", []rec{r(reset("c")), r(upsert("c", waiting))}, []string{"waiting"}},
		{"a later reset tells what changed meanwhile", []rec{r(reset("c", running)), r(reset("c", waiting)), r(reset("c", waiting))}, []string{"waiting"}},
		{"removed and back", []rec{r(reset("c", waiting)), r("remove", []byte(`{"source":"c","sessionId":"s1"}`)), r(upsert("c", waiting))}, []string{"waiting"}},
		{"each source has its baseline", []rec{r(reset("c", running)), r(reset("d", waiting))}, nil},
		{"other records and bad data", []rec{r("lifecycle", []byte(`{}`)), r("upsert", []byte(`{`)), r("upsert", []byte(`{"source":"c"}`))}, nil},
	} {
		t.Run(tt.name, func(t *testing.T) {
			tr := Tracker{Host: "box", Now: func() int64 { return 42 }}
			var got []string
			for _, rc := range tt.recs {
				for _, x := range tr.Apply(rc.name, rc.data) {
					got = append(got, x.Status)
					if x.Host != "box" || x.At != 42 || x.Source == "" || x.SessionID != "s1" || x.Text == "" {
						t.Errorf("transition %+v lacks a field", x)
					}
				}
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("told (-want +got):\n%s", diff)
			}
		})
	}
}

func TestSummary(t *testing.T) {
	tr := Transition{Harness: "claude-code", Title: "Fix tests", Status: "waiting", WaitingFor: "approve Bash"}
	if got, want := tr.Summary("Claude Code"), "Claude Code: Fix tests — waiting: approve Bash"; got != want {
		t.Errorf("Summary = %q, want %q", got, want)
	}
}

func TestTrackerKeepsHostsApart(t *testing.T) {
	running := `{"id":"s1","harness":"codex","status":"running"}`
	waiting := `{"id":"s1","harness":"codex","status":"waiting","waitingFor":"Approve"}`
	tr := Tracker{Host: "laptop"}
	var got []string
	for _, r := range []struct{ name, data string }{
		{"reset", `{"source":"codex","sessions":[` + running + `]}`},
		{"reset", `{"source":"codex","host":"devbox","sessions":[` + waiting + `]}`}, // devbox's baseline: nothing told
		{"upsert", `{"source":"codex","snapshot":` + waiting + `}`},                  // the local s1, not devbox's
		{"upsert", `{"source":"codex","host":"devbox","snapshot":` + waiting + `}`},  // unchanged
	} {
		for _, x := range tr.Apply(r.name, []byte(r.data)) {
			got = append(got, x.Host+":"+x.SessionID+":"+string(x.Status))
		}
	}
	if diff := cmp.Diff([]string{"laptop:s1:waiting"}, got); diff != "" {
		t.Errorf("transitions (-want +got):\n%s", diff)
	}
}

// Paths are cut from what leaves the machine, directory names with spaces
// included.
func TestCutPaths(t *testing.T) {
	tests := []struct{ in, want string }{
		{"fix /home/u/My Projects/app/main.go now", "fix …/main.go now"},
		{"edit /home/u/a b/c d/e.txt", "edit …/e.txt"},
		{`C:\Users\me\My Documents\x\y.go`, `…/y.go`},
		{"open /home/u/My Documents", "open …/My Documents"},
		{"approve Bash: ls /srv/app and cat notes/today.md", "approve Bash: ls …/app and cat notes/today.md"},
		{"see https://example.com/a/b", "see https://example.com/a/b"},
		{"no path", "no path"},
	}
	for _, tt := range tests {
		if got := cutPaths(tt.in); got != tt.want {
			t.Errorf("cutPaths(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

// failing is a Notifier that fails while fail > 0.
type failing struct {
	fail  int
	shown []string
}

func (f *failing) Notify(tr Transition) error {
	if f.fail > 0 {
		f.fail--
		return errors.New("no server")
	}
	f.shown = append(f.shown, tr.SessionID+" "+tr.WaitingFor)
	return nil
}

// A Notify that fails keeps its transition for a try after a backoff that
// doubles; one session's newer transition replaces its older one; a try
// before the backoff ends tells nothing.
func TestTellerRetries(t *testing.T) {
	now := time.Unix(1000, 0)
	to := &failing{fail: 2}
	var errs []time.Time
	tl := Teller{To: to, Clock: func() time.Time { return now }, OnError: func(_ error, at time.Time) { errs = append(errs, at) }}
	snap := func(id, reason string) agentbridge.Snapshot {
		return agentbridge.Snapshot{ID: id, Harness: "h", Status: "waiting", WaitingFor: reason}
	}
	tl.Record(reset("c"))
	at := tl.Record(upsert("c", snap("s1", "approve A")))
	if !at.Equal(now.Add(time.Second)) || len(to.shown) != 0 {
		t.Fatalf("first failure: retry at %v, shown %v", at, to.shown)
	}
	at = tl.Record(upsert("c", snap("s1", "approve B"))) // before the retry: kept, not tried
	if !at.Equal(now.Add(time.Second)) || len(errs) != 1 {
		t.Fatalf("a record before the retry tried again: %v %v", at, errs)
	}
	tl.Record(upsert("c", snap("s2", "approve C")))
	now = now.Add(time.Second)
	if at = tl.Flush(); !at.Equal(now.Add(2 * time.Second)) {
		t.Fatalf("second failure: retry at %v, want the backoff doubled", at)
	}
	now = now.Add(2 * time.Second)
	if at = tl.Flush(); !at.IsZero() {
		t.Fatalf("after success: %v", at)
	}
	if want := []string{"s1 approve B", "s2 approve C"}; !slices.Equal(to.shown, want) {
		t.Fatalf("shown %v, want %v", to.shown, want)
	}
	for i := range MaxPending + 10 { // bounded while failing
		to.fail = 1 << 30
		tl.Record(upsert("c", snap("x"+strconv.Itoa(i), "r")))
	}
	if len(tl.pending) != MaxPending {
		t.Fatalf("%d pending, want %d", len(tl.pending), MaxPending)
	}
}
