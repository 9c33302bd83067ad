package api

import (
	"context"
	"encoding/csv"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/agentbridge/agentbridge"
	"github.com/agentbridge/agentbridge/history"
)

// historyNow is the clock of the history tests.
var historyNow = time.Date(2026, 12, 8, 10, 0, 0, 0, time.UTC)

// fakeHistory is a History with canned answers that records what it was
// asked.
type fakeHistory struct {
	mu       sync.Mutex
	sessions []agentbridge.HistorySession
	table    agentbridge.UsageTable
	err      error
	query    history.Query
	usage    history.UsageQuery
	before   time.Time
	answered []string // host/source/session of each answer through the bridge
}

func (h *fakeHistory) Sessions(_ context.Context, q history.Query) ([]agentbridge.HistorySession, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.query = q
	return h.sessions, h.err
}

func (h *fakeHistory) Usage(_ context.Context, q history.UsageQuery) (agentbridge.UsageTable, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.usage = q
	t := h.table
	t.By, t.Split = q.By, q.Split
	return t, h.err
}

func (h *fakeHistory) Prune(_ context.Context, before time.Time) (history.PruneResult, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.before = before
	return history.PruneResult{Sessions: 3, Turns: 12}, h.err
}

// Answered records an answer through the bridge.
func (h *fakeHistory) Answered(host, source, sessionID string, at int64) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.answered = append(h.answered, host+"/"+source+"/"+sessionID)
}

func (h *fakeHistory) asked() (history.Query, history.UsageQuery, time.Time) {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.query, h.usage, h.before
}

// sampleHistory is a fake history with one session of two turns (one of
// them waited for the user) and a session without turns.
func sampleHistory() *fakeHistory {
	ms := func(d time.Duration) int64 { return historyNow.Add(-d).UnixMilli() }
	cost := &agentbridge.Cost{USD: 0.125, Estimate: true, PricesAsOf: "2026-11-01"}
	return &fakeHistory{
		sessions: []agentbridge.HistorySession{{
			Source: "claude-code", ID: "sess-1", Harness: "claude-code", Title: "=HYPERLINK(\"http://evil\")", Model: "claude-sonnet-4-5",
			Cwd: "/home/u/p/sub", Project: "/home/u/p", StartedAt: ms(2 * time.Hour), LastAt: ms(time.Hour),
			Ended: &agentbridge.Ended{At: ms(time.Hour)}, Usage: agentbridge.Usage{InputTokens: 100, OutputTokens: 50}, Cost: cost,
			ActiveMs: 60000, WaitingMs: 5000,
			Turns: []agentbridge.HistoryTurn{
				{Index: 0, ID: "t1", StartedAt: ms(2 * time.Hour), EndedAt: ms(2*time.Hour - time.Minute), Outcome: agentbridge.OutcomeSuccess,
					Model: "claude-sonnet-4-5", Usage: agentbridge.Usage{InputTokens: 100, OutputTokens: 50}, Cost: cost, Tools: 2,
					Waits: []agentbridge.HistoryWait{{ID: "w1", State: agentbridge.StatusWaiting, Reason: "Approve Bash", StartedAt: ms(2 * time.Hour), EndedAt: ms(2*time.Hour) + 5000, Answered: agentbridge.WaitAnswered}}},
				{Index: 1, StartedAt: ms(time.Hour), Outcome: agentbridge.OutcomeCancelled},
			},
		}, {
			Source: "codex", Host: "laptop", ID: "c-1", Harness: "codex", Model: "mystery-1", Usage: agentbridge.Usage{OutputTokens: 7},
		}},
		table: agentbridge.UsageTable{From: ms(7 * 24 * time.Hour), To: historyNow.UnixMilli(), TZ: "UTC",
			Rows: []agentbridge.UsageRow{
				{Key: "2026-12-07", Usage: agentbridge.Usage{InputTokens: 100, OutputTokens: 50}, Tokens: 150, Cost: cost, Sessions: 1, Turns: 2, ActiveMs: 60000, WaitingMs: 5000},
				{Key: "2026-12-08", Usage: agentbridge.Usage{OutputTokens: 7}, Tokens: 7, Sessions: 1},
			},
			Total: agentbridge.UsageRow{Usage: agentbridge.Usage{InputTokens: 100, OutputTokens: 57}, Tokens: 157, Cost: &agentbridge.Cost{USD: 0.125, Estimate: true, PricesAsOf: "2026-11-01", UnpricedTokens: 7}, Sessions: 2, Turns: 2, ActiveMs: 60000, WaitingMs: 5000}},
	}
}

func newHistoryFixture(t *testing.T, h History) *fixture {
	t.Helper()
	return newFixture(t, func(s *Server) {
		if h != nil {
			s.History = h
		}
		s.now = func() time.Time { return historyNow }
	})
}

// TestHistoryQueryRules: every rule of the history routes' parameters;
// a bad one is a 400 problem whose detail starts with the parameter's
// name, never a 500; a good one reaches the store as the query it means.
func TestHistoryQueryRules(t *testing.T) {
	t.Parallel()
	h := sampleHistory()
	f := newHistoryFixture(t, h)
	week := historyNow.Add(-7 * 24 * time.Hour)
	tests := []struct {
		path  string
		bad   string        // the parameter a 400 names; "" for a 200
		query history.Query // the query of a 200 (History or the usage's embedded one)
	}{
		{"/v1/history", "", history.Query{From: week, To: historyNow}},
		{"/v1/history?from=12h", "", history.Query{From: historyNow.Add(-12 * time.Hour), To: historyNow}},
		{"/v1/history?from=30d&to=1d", "", history.Query{From: historyNow.Add(-30 * 24 * time.Hour), To: historyNow.Add(-24 * time.Hour)}},
		{"/v1/history?from=1764547200000&to=2026-12-02T00:00:00Z", "", history.Query{From: time.UnixMilli(1764547200000), To: time.Date(2026, 12, 2, 0, 0, 0, 0, time.UTC)}},
		{"/v1/history?from=2026-12-01T01:00:00%2B01:00", "", history.Query{From: time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC), To: historyNow}},
		{"/v1/history?from=100000d", "", history.Query{From: time.UnixMilli(0), To: historyNow}},
		{"/v1/history?project=/home/u/p&harness=codex&source=codex&host=local&outcome=running&limit=5000&turns=1", "",
			history.Query{From: week, To: historyNow, Project: "/home/u/p", Harness: "codex", Source: "codex", Host: "local", Outcome: "running", Limit: 5000, Turns: 1}},
		{"/v1/history?outcome=cancelled&format=csv", "", history.Query{From: week, To: historyNow, Outcome: "cancelled"}},
		{"/v1/history?from=yesterday", "from", history.Query{}},
		{"/v1/history?from=7", "", history.Query{From: time.UnixMilli(7), To: historyNow}},
		{"/v1/history?from=-7d", "from", history.Query{}},
		{"/v1/history?from=99999999999999999999", "from", history.Query{}},
		{"/v1/history?from=253402300800000", "from", history.Query{}},
		{"/v1/history?from=1969-12-31T00:00:00Z", "from", history.Query{}},
		{"/v1/history?from=", "from", history.Query{}},
		{"/v1/history?from=1d&from=2d", "from", history.Query{}},
		{"/v1/history?to=soon", "to", history.Query{}},
		{"/v1/history?from=1d&to=2d", "from", history.Query{}},
		{"/v1/history?from=0d", "from", history.Query{}},
		{"/v1/history?project=relative/dir", "project", history.Query{}},
		{"/v1/history?project=/a/../b", "project", history.Query{}},
		{"/v1/history?harness=Codex", "harness", history.Query{}},
		{"/v1/history?harness=a,b", "harness", history.Query{}},
		{"/v1/history?source=", "source", history.Query{}},
		{"/v1/history?host=x&host=y", "host", history.Query{}},
		{"/v1/history?outcome=done", "outcome", history.Query{}},
		{"/v1/history?limit=0", "limit", history.Query{}},
		{"/v1/history?limit=5001", "limit", history.Query{}},
		{"/v1/history?limit=ten", "limit", history.Query{}},
		{"/v1/history?turns=-1", "turns", history.Query{}},
		{"/v1/history?turns=501", "turns", history.Query{}},
		{"/v1/history?format=xml", "format", history.Query{}},
		{"/v1/history?by=day", "by", history.Query{}},
		{"/v1/history?sinse=7d", "sinse", history.Query{}},
		{"/v1/usage?by=day", "", history.Query{From: week, To: historyNow}},
		{"/v1/usage?by=model&split=harness&from=1d&project=/home/u&format=csv", "", history.Query{From: historyNow.Add(-24 * time.Hour), To: historyNow, Project: "/home/u"}},
		{"/v1/usage", "by", history.Query{}},
		{"/v1/usage?by=week", "by", history.Query{}},
		{"/v1/usage?by=day&split=day", "split", history.Query{}},
		{"/v1/usage?by=day&split=tool", "split", history.Query{}},
		{"/v1/usage?by=day&tz=Mars/Olympus", "tz", history.Query{}},
		{"/v1/usage?by=day&tz=../../etc/passwd", "tz", history.Query{}},
		{"/v1/usage?by=day&tz=", "tz", history.Query{}},
		{"/v1/usage?by=day&tz=Local", "tz", history.Query{}},
		{"/v1/usage?by=day&limit=5", "limit", history.Query{}},
		{"/v1/usage?by=day&turns=5", "turns", history.Query{}},
		{"/v1/usage?by=day&outcome=nope", "outcome", history.Query{}},
		{"/v1/usage?by=day&to=x", "to", history.Query{}},
	}
	for _, tt := range tests {
		t.Run(tt.path, func(t *testing.T) {
			resp, body := f.do(t, req{path: tt.path})
			if tt.bad != "" {
				p := problemOf(t, resp, body, http.StatusBadRequest)
				if p.Type != ProblemTypePrefix+"bad-query" || !strings.HasPrefix(p.Detail, tt.bad+": ") {
					t.Errorf("problem %s %q, want bad-query naming %s", p.Type, p.Detail, tt.bad)
				}
				return
			}
			if resp.StatusCode != http.StatusOK {
				t.Fatalf("status %d: %s", resp.StatusCode, body)
			}
			q, uq, _ := h.asked()
			if strings.HasPrefix(tt.path, "/v1/usage") {
				q = uq.Query
			}
			if !q.From.Equal(tt.query.From) || !q.To.Equal(tt.query.To) {
				t.Errorf("range [%v, %v), want [%v, %v)", q.From, q.To, tt.query.From, tt.query.To)
			}
			q.From, q.To, tt.query.From, tt.query.To = time.Time{}, time.Time{}, time.Time{}, time.Time{}
			if diff := cmp.Diff(tt.query, q); diff != "" {
				t.Errorf("query (-want +got):\n%s", diff)
			}
		})
	}
}

// TestUsageQuery: by, split and tz reach the store; the zone is the
// bridge's own without tz.
func TestUsageQuery(t *testing.T) {
	t.Parallel()
	h := sampleHistory()
	f := newHistoryFixture(t, h)
	resp, body := f.do(t, req{path: "/v1/usage?by=project&split=model&tz=Europe/Paris"})
	if resp.StatusCode != 200 {
		t.Fatalf("status %d: %s", resp.StatusCode, body)
	}
	_, uq, _ := h.asked()
	if uq.By != "project" || uq.Split != "model" || uq.Loc == nil || uq.Loc.String() != "Europe/Paris" {
		t.Errorf("usage query %+v, want by project split model in Europe/Paris", uq)
	}
	var tab agentbridge.UsageTable
	if err := json.Unmarshal(body, &tab); err != nil {
		t.Fatal(err)
	}
	if tab.By != "project" || len(tab.Rows) != 2 || tab.Total.Tokens != 157 || tab.Total.Cost == nil || !tab.Total.Cost.Estimate {
		t.Errorf("table %+v", tab)
	}
	if resp, _ := f.do(t, req{path: "/v1/usage?by=day"}); resp.StatusCode != 200 {
		t.Fatal(resp.Status)
	}
	if _, uq, _ := h.asked(); uq.Loc != localZone() {
		t.Errorf("without tz the store got zone %v, want the bridge's local zone %v", uq.Loc, localZone())
	}
}

// TestNamedZone: the local zone is named as Go finds it: TZ when set
// (empty: UTC), else the zoneinfo file /etc/localtime links to; without a
// name, nil (the store then counts in time.Local).
func TestNamedZone(t *testing.T) {
	t.Parallel()
	link := func(target string) func() (string, error) {
		return func() (string, error) {
			if target == "" {
				return "", errors.New("not a link")
			}
			return target, nil
		}
	}
	for _, tt := range []struct {
		tz     string
		set    bool
		target string
		want   string // "" for nil
	}{
		{"Europe/Paris", true, "/usr/share/zoneinfo/Asia/Tokyo", "Europe/Paris"},
		{":America/New_York", true, "", "America/New_York"},
		{"", true, "/usr/share/zoneinfo/Asia/Tokyo", "UTC"},
		{"Mars/Olympus", true, "/usr/share/zoneinfo/Asia/Tokyo", ""},
		{"/etc/localtime", true, "", ""},
		{"", false, "/usr/share/zoneinfo/Asia/Tokyo", "Asia/Tokyo"},
		{"", false, "../usr/share/zoneinfo/Europe/Berlin", "Europe/Berlin"},
		{"", false, "/etc/mytime", ""},
		{"", false, "/usr/share/zoneinfo/Nowhere/Else", ""},
		{"", false, "", ""},
	} {
		got := namedZone(tt.tz, tt.set, link(tt.target))
		if (got == nil) != (tt.want == "") || (got != nil && got.String() != tt.want) {
			t.Errorf("namedZone(%q, %v, link to %q) = %v, want %q", tt.tz, tt.set, tt.target, got, tt.want)
		}
	}
}

// TestHistoryJSON: GET /v1/history answers {"sessions": [...]} with every
// list a list (never null), whatever the store left nil.
func TestHistoryJSON(t *testing.T) {
	t.Parallel()
	h := sampleHistory()
	f := newHistoryFixture(t, h)
	resp, body := f.do(t, req{path: "/v1/history"})
	if resp.StatusCode != 200 || resp.Header.Get("Content-Type") != "application/json" {
		t.Fatalf("status %d, type %q: %s", resp.StatusCode, resp.Header.Get("Content-Type"), body)
	}
	var got HistoryResponse
	if err := json.Unmarshal(body, &got); err != nil {
		t.Fatal(err)
	}
	if len(got.Sessions) != 2 || got.Sessions[0].ID != "sess-1" || len(got.Sessions[0].Turns) != 2 || got.Sessions[0].Turns[0].Waits[0].Answered != agentbridge.WaitAnswered {
		t.Errorf("sessions %+v", got.Sessions)
	}
	if strings.Contains(string(body), "null") {
		t.Errorf("a list is null: %s", body)
	}
	h.mu.Lock()
	h.sessions = nil
	h.mu.Unlock()
	if _, body := f.do(t, req{path: "/v1/history"}); strings.TrimSpace(string(body)) != `{"sessions":[]}` {
		t.Errorf("no sessions: %s, want an empty list", body)
	}
}

// TestHistoryCSV: format=csv is an attachment, one row per turn (a
// session without turns has one), formulas defused.
func TestHistoryCSV(t *testing.T) {
	t.Parallel()
	f := newHistoryFixture(t, sampleHistory())
	resp, body := f.do(t, req{path: "/v1/history?format=csv"})
	if resp.StatusCode != 200 || resp.Header.Get("Content-Type") != "text/csv; charset=utf-8" ||
		resp.Header.Get("Content-Disposition") != `attachment; filename="agentbridge-history.csv"` {
		t.Fatalf("status %d, headers %v", resp.StatusCode, resp.Header)
	}
	rows, err := csv.NewReader(strings.NewReader(string(body))).ReadAll()
	if err != nil {
		t.Fatalf("not CSV: %v\n%s", err, body)
	}
	if len(rows) != 4 || rows[0][0] != "host" || rows[1][2] != "sess-1" || rows[2][2] != "sess-1" || rows[3][2] != "c-1" {
		t.Fatalf("rows:\n%s", body)
	}
	if rows[1][4] != "\t=HYPERLINK(\"http://evil\")" || rows[2][4] != rows[1][4] {
		t.Errorf("title cell %q, want it tab-prefixed", rows[1][4])
	}
	resp, body = f.do(t, req{path: "/v1/usage?by=day&format=csv"})
	if resp.StatusCode != 200 || resp.Header.Get("Content-Disposition") != `attachment; filename="agentbridge-usage-by-day.csv"` {
		t.Fatalf("usage CSV: status %d, headers %v", resp.StatusCode, resp.Header)
	}
	if !strings.HasPrefix(string(body), "day,input_tokens,") || strings.Count(string(body), "\n") != 3 {
		t.Errorf("usage CSV:\n%s", body)
	}
}

// TestHistoryOff: without a History every history route answers 404
// history-off, after the token check.
func TestHistoryOff(t *testing.T) {
	t.Parallel()
	f := newHistoryFixture(t, nil)
	for _, q := range []req{
		{path: "/v1/history"},
		{path: "/v1/usage?by=day"},
		{method: "POST", path: "/v1/history/prune", body: `{"olderThan":"90d"}`},
	} {
		resp, body := f.do(t, q)
		if p := problemOf(t, resp, body, 404); p.Type != ProblemTypePrefix+"history-off" {
			t.Errorf("%s %s: %s, want history-off", q.method, q.path, p.Type)
		}
		q.noToken = true
		if resp, _ := f.do(t, q); resp.StatusCode != 401 {
			t.Errorf("%s %s without the token: %d, want 401", q.method, q.path, resp.StatusCode)
		}
	}
}

// TestHistoryStoreFails: a store error is a 503 that shows no path.
func TestHistoryStoreFails(t *testing.T) {
	t.Parallel()
	h := &fakeHistory{err: fmt.Errorf("query /home/u/.local/state/agentbridge/history.db: %w", errors.New("disk I/O error"))}
	f := newHistoryFixture(t, h)
	for _, q := range []req{
		{path: "/v1/history"},
		{path: "/v1/usage?by=day&format=csv"},
		{method: "POST", path: "/v1/history/prune", body: `{"before":0}`},
	} {
		resp, body := f.do(t, q)
		if p := problemOf(t, resp, body, 503); p.Type != ProblemTypePrefix+"history-unavailable" {
			t.Errorf("%s: %s, want history-unavailable", q.path, p.Type)
		}
		if strings.Contains(string(body), "/home") || strings.Contains(string(body), "history.db") {
			t.Errorf("%s: the problem shows a path: %s", q.path, body)
		}
	}
}

// TestPruneBody: every rule of POST /v1/history/prune's body; a bad one
// is a 422 whose issue names the field (400 for JSON that is not JSON).
func TestPruneBody(t *testing.T) {
	t.Parallel()
	h := sampleHistory()
	f := newHistoryFixture(t, h)
	tests := []struct {
		body   string
		status int
		path   string    // the issue's path, for a 422
		before time.Time // for a 200
	}{
		{`{"olderThan":"90d"}`, 200, "", historyNow.Add(-90 * 24 * time.Hour)},
		{`{"olderThan":"36h"}`, 200, "", historyNow.Add(-36 * time.Hour)},
		{`{"olderThan":"100000d"}`, 200, "", time.UnixMilli(0)},
		{`{"before":1764547200000}`, 200, "", time.UnixMilli(1764547200000)},
		{`{"before":0}`, 200, "", time.UnixMilli(0)},
		{`{}`, 422, "$.olderThan", time.Time{}},
		{`[]`, 422, "$", time.Time{}},
		{`null`, 422, "$", time.Time{}},
		{`{"olderThan":"0d"}`, 422, "$.olderThan", time.Time{}},
		{`{"olderThan":"1000000d"}`, 422, "$.olderThan", time.Time{}},
		{`{"olderThan":"soon"}`, 422, "$.olderThan", time.Time{}},
		{`{"olderThan":"-5h"}`, 422, "$.olderThan", time.Time{}},
		{`{"olderThan":90}`, 422, "$.olderThan", time.Time{}},
		{`{"olderThan":null}`, 422, "$.olderThan", time.Time{}},
		{`{"before":"yesterday"}`, 422, "$.before", time.Time{}},
		{`{"before":1.5}`, 422, "$.before", time.Time{}},
		{`{"before":-1}`, 422, "$.before", time.Time{}},
		{`{"before":253402300800000}`, 422, "$.before", time.Time{}},
		{`{"before":null}`, 422, "$.before", time.Time{}},
		{`{"olderThan":"90d","before":1}`, 422, "$.before", time.Time{}},
		{`{"olderThan":"90d","all":true}`, 422, "$.all", time.Time{}},
		{`{"olderThan":`, 400, "", time.Time{}},
	}
	for _, tt := range tests {
		t.Run(tt.body, func(t *testing.T) {
			resp, body := f.do(t, req{method: "POST", path: "/v1/history/prune", body: tt.body})
			if tt.status != 200 {
				p := problemOf(t, resp, body, tt.status)
				if tt.path != "" && (len(p.Issues) != 1 || p.Issues[0].Path != tt.path) {
					t.Errorf("issues %+v, want one at %s", p.Issues, tt.path)
				}
				return
			}
			if resp.StatusCode != 200 {
				t.Fatalf("status %d: %s", resp.StatusCode, body)
			}
			if _, _, before := h.asked(); !before.Equal(tt.before) {
				t.Errorf("pruned before %v, want %v", before, tt.before)
			}
			if strings.TrimSpace(string(body)) != `{"sessions":3,"turns":12}` {
				t.Errorf("answer %s", body)
			}
		})
	}
	// The same checks as every state-changing route.
	if resp, _ := f.do(t, req{method: "POST", path: "/v1/history/prune", body: `{"olderThan":"1d"}`, ctype: "text/plain"}); resp.StatusCode != 415 {
		t.Errorf("text/plain: %d, want 415", resp.StatusCode)
	}
	if resp, _ := f.do(t, req{method: "POST", path: "/v1/history/prune", body: `{"olderThan":"1d"}`, headers: map[string]string{"Origin": "https://evil.example"}}); resp.StatusCode != 403 {
		t.Errorf("foreign origin: %d, want 403", resp.StatusCode)
	}
	if resp, _ := f.do(t, req{method: "POST", path: "/v1/history/prune?all=1", body: `{"olderThan":"1d"}`}); resp.StatusCode != 400 {
		t.Errorf("a query parameter: %d, want 400", resp.StatusCode)
	}
}

// FuzzHistoryQuery: any query of GET /v1/history or /v1/usage parses or
// is refused with a 400 naming a parameter, never a panic; an accepted one
// has a range that is not empty, within 1970 to 9999, and filters that are
// valid.
func FuzzHistoryQuery(f *testing.F) {
	f.Add("from=7d&to=1d&project=/home/u&harness=codex&limit=10")
	f.Add("from=1764547200000&to=2026-12-02T00:00:00Z&by=day&split=model&tz=Europe/Paris")
	f.Add("from=9223372036854775807d&outcome=running&format=csv")
	f.Add("from=1h30m&by=project&turns=500")
	f.Add("to=0&from=-1")
	f.Fuzz(func(t *testing.T, raw string) {
		q, err := url.ParseQuery(raw)
		if err != nil {
			return
		}
		check := func(hq history.Query, err error) {
			if err != nil {
				e, ok := err.(*Error)
				if !ok || e.Status != http.StatusBadRequest || e.Detail == "" {
					t.Fatalf("%q: %v, want a 400 *Error", raw, err)
				}
				return
			}
			if !hq.From.Before(hq.To) || hq.From.UnixMilli() < 0 || hq.To.UnixMilli() > maxEpochMs {
				t.Fatalf("%q: range [%v, %v)", raw, hq.From, hq.To)
			}
			if hq.Limit < 0 || hq.Limit > history.MaxLimit || hq.Turns < 0 || hq.Turns > history.DefaultTurns {
				t.Fatalf("%q: limit %d, turns %d", raw, hq.Limit, hq.Turns)
			}
			if hq.Project != "" && hq.Project[0] != '/' {
				t.Fatalf("%q: project %q", raw, hq.Project)
			}
		}
		hq, _, err := ParseHistoryQuery(q, historyNow)
		check(hq, err)
		uq, _, err := ParseUsageQuery(q, historyNow)
		check(uq.Query, err)
		if err == nil && (uq.By == "" || uq.By == uq.Split) {
			t.Fatalf("%q: by %q split %q", raw, uq.By, uq.Split)
		}
	})
}
