package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"net/url"
	"os"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/agentbridge/agentbridge"
	"github.com/agentbridge/agentbridge/client"
	"github.com/agentbridge/agentbridge/history"
)

// historyConfig is the configuration of the replayed bridges: the
// recordings are months old, older than the default retention, and must
// not be pruned.
const historyConfig = `history:
  enabled: true
  retention: 87600h
`

// historyFrom is before every recording's date.
const historyFrom = "2026-01-01T00:00:00Z"

// TestHistoryReplayMatchesJournalsAcrossKill replays several days of
// recorded sessions of four agents through real bridges, their journals
// growing record by record as the agents wrote them, and checks what the
// issue's "done when" asks of the history: GET /v1/usage?by=day equals the
// sums taken from the journals themselves (tokens exact per day and
// harness, the estimated cost those tokens × the built-in price table), and
// a bridge killed (SIGKILL) midway, while records are appended and its
// history written, and started again on the same home and state, loses no
// session, turn or wait: its history equals that of a bridge that ran the
// same replay without the kill. So does one stopped (SIGTERM) and started
// again.
func TestHistoryReplayMatchesJournalsAcrossKill(t *testing.T) {
	ref := replayDay(t, 0)
	killed := replayDay(t, syscall.SIGKILL)
	restarted := replayDay(t, syscall.SIGTERM)

	// Both bridges counted exactly what the journals record, per day and
	// harness, and priced it with the table; every journal's session is in
	// their history, with the tokens its journal records.
	want := journalUsage(t, ref.journals)
	for _, r := range []*replayed{ref, killed, restarted} {
		r.waitJournals(t, want)
	}

	// The killed bridge, and the restarted one, have the same turns and
	// waits as the one without a stop (which has long finished: what it
	// shows is all it will).
	// Only what comes from the journals is compared: the times a bridge
	// stamps itself (an agent.done without a time, a session's start the
	// journal does not date, the ends of a turn or wait that came with such
	// an event) and the durations made of them differ between two runs,
	// and so do the sessions' directories (each run has its own).
	h, err := ref.getHistory()
	if err != nil {
		t.Fatal(err)
	}
	turns, waits := 0, 0
	for _, s := range h {
		turns += len(s.Turns)
		for _, tr := range s.Turns {
			waits += len(tr.Waits)
		}
	}
	t.Logf("%d sessions, %d turns, %d waits", len(h), turns, waits)
	if turns < len(recordings) || waits == 0 {
		t.Fatalf("the replay without a stop has %d turns and %d waits: too few to compare", turns, waits)
	}
	for _, r := range []*replayed{killed, restarted} {
		retry(t, "GET /v1/history and /v1/usage "+r.name+" equal to the run without a stop (-without +"+r.name+")", func() string {
			var diffs []string
			for _, get := range []func(*replayed) (any, error){
				func(r *replayed) (any, error) { h, err := r.getHistory(); return r.comparable(h), err },
				func(r *replayed) (any, error) { u, err := r.getUsage(); return comparableRows(u), err },
			} {
				a, err := get(ref)
				if err != nil {
					return err.Error()
				}
				b, err := get(r)
				if err != nil {
					return err.Error()
				}
				if d := cmp.Diff(a, b); d != "" {
					diffs = append(diffs, d)
				}
			}
			return strings.Join(diffs, "\n")
		})
	}
}

// replayed is a bridge a replay ran through.
type replayed struct {
	name     string
	b        *bridge
	c        *client.Client
	journals []*journal
	work     string // the directory the agents' directories are under
}

// replayDay lays the recordings' first records into a new bridge's home,
// starts the bridge, and appends the rest record by record, the journals
// interleaved, the old ones made a day old once a quarter of the rest is
// appended and they are in the history; with a signal, the bridge is
// sent it (SIGKILL, SIGTERM) soon after, while the appending goes on, a
// quarter more is appended while it is down, and it is started again on
// the same home and state directory for the last quarter.
func replayDay(t *testing.T, stop syscall.Signal) *replayed {
	t.Helper()
	r := &replayed{name: "without a stop"}
	switch stop {
	case syscall.SIGKILL:
		r.name = "killed"
	case syscall.SIGTERM:
		r.name = "restarted"
	}
	b := newBridge(t, historyConfig)
	r.b, r.c = b, client.New(b.addr, b.token)
	r.work = t.TempDir()
	r.journals = loadJournals(t, b.home(), r.work)
	for _, j := range r.journals {
		j.write(t, j.pre)
	}
	b.start()

	// The rest, record by record, the journals taking turns.
	var order []*journal
	left := map[*journal]int{}
	for _, j := range r.journals {
		left[j] = len(j.lines) - j.pre
	}
	for more := true; more; {
		more = false
		for _, j := range r.journals {
			if left[j] > 0 {
				order = append(order, j)
				left[j]--
				more = true
			}
		}
	}
	write := func(from, to int) {
		for _, j := range order[from:to] {
			j.write(t, 1)
		}
	}
	n := len(order)
	write(0, n/4)
	// Once the bridge has them in its history, the old journals are made
	// a day old.
	var old []*journal
	for _, j := range r.journals {
		if j.old {
			old = append(old, j)
		}
	}
	retry(t, r.name+": the old sessions in the history", func() string {
		h, err := r.getHistory()
		if err != nil {
			return err.Error()
		}
		return sessionsDiff(t, old, h)
	})
	dayAgo := time.Now().Add(-24 * time.Hour)
	for _, j := range old {
		if err := os.Chtimes(j.path, dayAgo, dayAgo); err != nil {
			t.Fatal(err)
		}
	}
	if stop == 0 {
		write(n/4, n)
		return r
	}
	// A burst of records, and the signal while the bridge reads them and
	// writes its history; the appending goes on.
	write(n/4, n/4+n/16)
	if err := b.proc.Cmd.Process.Signal(stop); err != nil {
		t.Fatal(err)
	}
	write(n/4+n/16, n/2)
	<-b.done
	write(n/2, 3*n/4) // while it is down
	b.start()
	write(3*n/4, n)
	return r
}

// waitJournals waits until r's GET /v1/usage?by=day&split=harness equals
// the journals' sums want, and its GET /v1/history has every journal's
// session with the tokens its journal records.
func (r *replayed) waitJournals(t *testing.T, want map[rowKey]expectedRow) {
	t.Helper()
	retry(t, r.name+": GET /v1/usage?by=day&split=harness equal to the journals' sums", func() string {
		u, err := r.getUsage()
		if err != nil {
			return err.Error()
		}
		return usageDiff(want, u)
	})
	retry(t, r.name+": GET /v1/history with every journal's session and its tokens", func() string {
		h, err := r.getHistory()
		if err != nil {
			return err.Error()
		}
		return sessionsDiff(t, r.journals, h)
	})
}

// getUsage returns GET /v1/usage?by=day&split=harness&tz=UTC.
func (r *replayed) getUsage() (agentbridge.UsageTable, error) {
	q := url.Values{"by": {agentbridge.UsageByDay}, "split": {agentbridge.UsageByHarness}, "from": {historyFrom}, "tz": {"UTC"}}
	var u agentbridge.UsageTable
	err := r.c.GetJSON(context.Background(), "/v1/usage", q, &u)
	return u, err
}

// getHistory returns GET /v1/history's sessions.
func (r *replayed) getHistory() ([]agentbridge.HistorySession, error) {
	var h struct {
		Sessions []agentbridge.HistorySession `json:"sessions"`
	}
	err := r.c.GetJSON(context.Background(), "/v1/history", url.Values{"from": {historyFrom}}, &h)
	return h.Sessions, err
}

// deadline bounds each wait for a bridge's history: far more than a
// loaded machine needs, so that only a history that never comes right
// fails.
const deadline = 2 * time.Minute

// retry calls try until it returns "", a moment apart, failing the test
// with its last answer after deadline. (A bridge writes its history after
// it publishes what it folded, so no record of its stream tells when a
// GET will show it.)
func retry(t *testing.T, what string, try func() string) {
	t.Helper()
	end := time.Now().Add(deadline)
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	for {
		msg := try()
		if msg == "" {
			return
		}
		if time.Now().After(end) {
			t.Fatalf("%s: not within %v:\n%s", what, deadline, msg)
		}
		<-tick.C
	}
}

// rowKey is a row of a usage table by day, split by harness.
type rowKey struct{ day, harness string }

// expectedRow is what the journals say of a row: its tokens, by model.
type expectedRow map[string]agentbridge.Usage

// journalUsage sums the journals' model calls by day (UTC) and harness,
// keeping each model's tokens apart for the cost.
func journalUsage(t *testing.T, js []*journal) map[rowKey]expectedRow {
	t.Helper()
	out := map[rowKey]expectedRow{}
	for _, j := range js {
		for _, c := range j.calls(t) {
			k := rowKey{day(c.at), c.harness}
			if out[k] == nil {
				out[k] = expectedRow{}
			}
			out[k][c.model] = out[k][c.model].Add(c.usage)
		}
	}
	return out
}

// usageDiff says how a usage table by day split by harness differs from the
// journals' sums: each row's tokens exactly, its cost within 1e-9 of the
// tokens × the built-in price table (none when no token of it has a
// price), the unpriced tokens exactly; "" when it does not.
func usageDiff(want map[rowKey]expectedRow, got agentbridge.UsageTable) string {
	var diffs []string
	seen := map[rowKey]bool{}
	for _, row := range got.Rows {
		k := rowKey{row.Key, row.SplitKey}
		seen[k] = true
		models, ok := want[k]
		if !ok {
			if row.Tokens != 0 {
				diffs = append(diffs, fmt.Sprintf("%v: %d tokens, the journals record none", k, row.Tokens))
			}
			continue
		}
		var sum agentbridge.Usage
		var usd float64
		var unpriced int64
		priced := false
		for model, u := range models {
			sum = sum.Add(u)
			p, ok := history.BuiltinPrice(model)
			if !ok {
				unpriced += tokens(u)
				continue
			}
			if tokens(u) > 0 {
				priced = true
			}
			usd += (float64(u.InputTokens)*p.Input + float64(u.OutputTokens)*p.Output +
				float64(u.CacheReadTokens)*p.CacheRead + float64(u.CacheWriteTokens)*p.CacheWrite) / 1e6
		}
		if row.Usage != sum || row.Tokens != tokens(sum) {
			diffs = append(diffs, fmt.Sprintf("%v: usage %+v (%d tokens), the journals record %+v (%d)", k, row.Usage, row.Tokens, sum, tokens(sum)))
		}
		switch {
		case !priced && row.Cost != nil:
			diffs = append(diffs, fmt.Sprintf("%v: cost %+v, but no token of it has a price", k, *row.Cost))
		case priced && row.Cost == nil:
			diffs = append(diffs, fmt.Sprintf("%v: no cost, the table prices it $%.9f", k, usd))
		case priced && (math.Abs(row.Cost.USD-usd) > 1e-9*usd || row.Cost.UnpricedTokens != unpriced || !row.Cost.Estimate):
			diffs = append(diffs, fmt.Sprintf("%v: cost %+v, the table prices it $%.12f with %d tokens unpriced", k, *row.Cost, usd, unpriced))
		}
	}
	for k := range want {
		if !seen[k] {
			diffs = append(diffs, fmt.Sprintf("%v: no row, the journals record %+v", k, want[k]))
		}
	}
	slices.Sort(diffs)
	return strings.Join(diffs, "\n")
}

func tokens(u agentbridge.Usage) int64 {
	return u.InputTokens + u.OutputTokens + u.CacheReadTokens + u.CacheWriteTokens
}

// sessionsDiff says which journal's session the history h lacks, or holds
// with other tokens than its journal records.
func sessionsDiff(t *testing.T, js []*journal, h []agentbridge.HistorySession) string {
	t.Helper()
	var diffs []string
	for _, j := range js {
		var want agentbridge.Usage
		for _, c := range j.calls(t) {
			want = want.Add(c.usage)
		}
		i := slices.IndexFunc(h, func(s agentbridge.HistorySession) bool {
			return s.Source == j.source && s.ID == j.session && s.Host == ""
		})
		switch {
		case i < 0:
			diffs = append(diffs, fmt.Sprintf("%s session %s (%s): missing", j.source, j.session, j.src))
		case h[i].Usage != want:
			diffs = append(diffs, fmt.Sprintf("%s session %s (%s): usage %+v, its journal records %+v", j.source, j.session, j.src, h[i].Usage, want))
		}
	}
	return strings.Join(diffs, "\n")
}

// comparable is the history h of r with only what comes from the journals: the
// sessions by source and id, each with its harness, title, model and
// tokens, and its turns (index, id, start, outcome, model, tokens, tools)
// with their waits (id, state, reason, start, how answered); the agents'
// directories (each run has its own) read "WORK".
func (r *replayed) comparable(h []agentbridge.HistorySession) []agentbridge.HistorySession {
	raw, err := json.Marshal(h)
	if err != nil {
		panic(err)
	}
	var out []agentbridge.HistorySession
	if err := json.Unmarshal([]byte(strings.ReplaceAll(string(raw), r.work, "WORK")), &out); err != nil {
		panic(err)
	}
	for i := range out {
		s := &out[i]
		s.Cwd, s.Project = "", ""
		s.StartedAt, s.LastAt, s.Ended = 0, 0, nil
		s.ActiveMs, s.WaitingMs = 0, 0
		for k := range s.Turns {
			tr := &s.Turns[k]
			tr.EndedAt = 0
			for w := range tr.Waits {
				tr.Waits[w].EndedAt = 0
			}
		}
	}
	slices.SortFunc(out, func(a, b agentbridge.HistorySession) int {
		return strings.Compare(a.Source+"/"+a.ID, b.Source+"/"+b.ID)
	})
	return out
}

// comparableRows is a usage table's rows without the durations (made of
// times a bridge may stamp itself).
func comparableRows(u agentbridge.UsageTable) []agentbridge.UsageRow {
	rows := slices.Clone(u.Rows)
	for i := range rows {
		rows[i].ActiveMs, rows[i].WaitingMs = 0, 0
	}
	return rows
}
