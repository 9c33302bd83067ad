package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"image"
	"image/color"
	"image/png"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
	_ "time/tzdata" // the zones the fake bridge counts days in, on any machine

	"github.com/chromedp/cdproto/emulation"
	"github.com/chromedp/chromedp"
	"github.com/google/go-cmp/cmp"

	"github.com/agentbridge/agentbridge"
	"github.com/agentbridge/agentbridge/web"
)

// historyZone is the browser's time zone in the History tests: days are
// counted in it, by the page and by the fake bridge alike.
const historyZone = "Europe/Berlin"

// fakeHistory is a bridge as the History view sees it: the dashboard's
// files (web.Handler), the sources, a stream that stays quiet, and GET
// /v1/usage and /v1/history answering known data for whatever range the
// page asks (or 404 history-off, or nothing recorded).
type fakeHistory struct {
	mu      sync.Mutex
	mode    string       // "data", "empty" or "off"
	queries []url.Values // the /v1/usage queries, in order
	stop    chan struct{}
}

// A row of the fake usage: ago days before the range's last day.
type fakeUsage struct {
	ago       int
	harness   string
	tokens    int64
	usd       float64 // < 0: no known price
	waitingMs int64
}

var fakeUsageRows = []fakeUsage{
	{0, "claude-code", 12_300, 0.42, 62 * 60_000},
	{0, "codex", 4_000, 0.10, 0},
	{2, "claude-code", 8_000, 0.30, 15 * 60_000},
	{2, "gemini", 2_500, -1, 0},
	{5, "codex", 20_000, 0.80, 5 * 60_000},
}

const fakePricesAsOf = "2026-11-20"

func startFakeHistory(t *testing.T) (*fakeHistory, string) {
	t.Helper()
	f := &fakeHistory{mode: "data", stop: make(chan struct{})}
	mux := http.NewServeMux()
	mux.Handle("/", web.Handler())
	harness := func(id, name string) map[string]any {
		return map[string]any{"id": id, "displayName": name, "harnesses": []map[string]any{{"id": id, "displayName": name, "enabled": true}}}
	}
	mux.HandleFunc("GET /v1/sources", func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, http.StatusOK, map[string]any{"sources": []any{harness("claude-code", "Claude Code"), harness("codex", "Codex"), harness("gemini", "Gemini CLI")}})
	})
	mux.HandleFunc("GET /v1/diagnostics", func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, http.StatusOK, map[string]any{"diagnostics": []any{}})
	})
	mux.HandleFunc("GET /v1/events", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		w.WriteHeader(http.StatusOK)
		fmt.Fprint(w, ": ping\n\n")
		w.(http.Flusher).Flush()
		select {
		case <-r.Context().Done():
		case <-f.stop:
		}
	})
	mux.HandleFunc("GET /v1/usage", func(w http.ResponseWriter, r *http.Request) {
		q := r.URL.Query()
		if !onlyParams(w, q, "from", "to", "by", "split", "tz") {
			return
		}
		f.mu.Lock()
		f.queries = append(f.queries, q)
		mode := f.mode
		f.mu.Unlock()
		days, loc, err := fakeRange(q)
		if err != nil {
			writeJSON(w, http.StatusBadRequest, map[string]any{"type": "urn:agentbridge:problem:invalid-request", "title": "Invalid request", "status": 400, "detail": err.Error()})
			return
		}
		if mode == "off" {
			writeHistoryOff(w)
			return
		}
		from, _ := time.Parse(time.RFC3339Nano, q.Get("from"))
		to, _ := time.Parse(time.RFC3339Nano, q.Get("to"))
		table := fakeTable(from, to, loc, days, q.Get("by"), q.Get("split"))
		if mode == "empty" {
			table.Rows = []agentbridge.UsageRow{}
		}
		writeJSON(w, http.StatusOK, table)
	})
	mux.HandleFunc("GET /v1/history", func(w http.ResponseWriter, r *http.Request) {
		if !onlyParams(w, r.URL.Query(), "from", "to", "limit") {
			return
		}
		f.mu.Lock()
		mode := f.mode
		f.mu.Unlock()
		if mode == "off" {
			writeHistoryOff(w)
			return
		}
		sessions := []agentbridge.HistorySession{}
		if mode == "data" {
			to, err := time.Parse(time.RFC3339Nano, r.URL.Query().Get("to"))
			if err != nil {
				writeJSON(w, http.StatusBadRequest, map[string]any{"status": 400, "detail": "to"})
				return
			}
			// Today's midnight in the page's zone (a day of 23 or 25 hours included).
			loc, err := time.LoadLocation(historyZone)
			if err != nil {
				writeJSON(w, http.StatusInternalServerError, map[string]any{"status": 500, "detail": err.Error()})
				return
			}
			end := to.In(loc)
			sessions = fakeSessions(time.Date(end.Year(), end.Month(), end.Day()-1, 0, 0, 0, 0, loc).UnixMilli())
		}
		writeJSON(w, http.StatusOK, map[string]any{"sessions": sessions})
	})
	srv := httptest.NewServer(mux)
	t.Cleanup(func() {
		close(f.stop)
		srv.Close()
	})
	return f, srv.URL
}

func (f *fakeHistory) setMode(m string) {
	f.mu.Lock()
	f.mode = m
	f.mu.Unlock()
}

// count is how many usage queries the page made.
func (f *fakeHistory) count() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.queries)
}

func (f *fakeHistory) lastQuery() url.Values {
	f.mu.Lock()
	defer f.mu.Unlock()
	if len(f.queries) == 0 {
		return nil
	}
	return f.queries[len(f.queries)-1]
}

// fakeRange reads a usage query's range as the page sends it: from and to
// RFC 3339 midnights of the zone tz. It returns the days of [from, to).
func fakeRange(q url.Values) ([]string, *time.Location, error) {
	loc, err := time.LoadLocation(q.Get("tz"))
	if err != nil || q.Get("tz") == "" {
		return nil, nil, fmt.Errorf("tz %q: %v", q.Get("tz"), err)
	}
	from, err := time.Parse(time.RFC3339Nano, q.Get("from"))
	if err != nil {
		return nil, nil, fmt.Errorf("from: %w", err)
	}
	to, err := time.Parse(time.RFC3339Nano, q.Get("to"))
	if err != nil {
		return nil, nil, fmt.Errorf("to: %w", err)
	}
	if f := from.In(loc); f.Hour() != 0 || f.Minute() != 0 {
		return nil, nil, fmt.Errorf("from %s is not a midnight in %s", f, loc)
	}
	days := dayList(from, to, loc)
	if len(days) == 0 {
		return nil, nil, fmt.Errorf("empty range %s–%s", from, to)
	}
	return days, loc, nil
}

// dayList is the dates (2006-01-02) in loc of the days [from, to) starts.
func dayList(from, to time.Time, loc *time.Location) []string {
	var days []string
	for d := from.In(loc); d.Before(to); d = d.AddDate(0, 0, 1) {
		days = append(days, d.Format("2006-01-02"))
	}
	return days
}

// fakeTable is the usage of fakeUsageRows over [from, to), whose days in
// loc are days.
func fakeTable(from, to time.Time, loc *time.Location, days []string, by, split string) agentbridge.UsageTable {
	table := agentbridge.UsageTable{By: by, Split: split, From: from.UnixMilli(), To: to.UnixMilli(), TZ: loc.String(), Rows: []agentbridge.UsageRow{}}
	for _, u := range fakeUsageRows {
		row := agentbridge.UsageRow{Key: days[len(days)-1-u.ago], SplitKey: u.harness, Usage: agentbridge.Usage{InputTokens: u.tokens}, Tokens: u.tokens, Sessions: 1, Turns: 2, WaitingMs: u.waitingMs}
		if u.usd >= 0 {
			row.Cost = &agentbridge.Cost{USD: u.usd, Estimate: true, PricesAsOf: fakePricesAsOf}
		}
		table.Rows = append(table.Rows, row)
	}
	return table
}

// fakeSessions are three sessions around today's midnight (epoch ms).
func fakeSessions(today int64) []agentbridge.HistorySession {
	const m = int64(60_000)
	t0 := today + 9*60*m
	exit := 0
	return []agentbridge.HistorySession{
		{
			Source: "claude-code", ID: "c-1", Harness: "claude-code", Title: "Fix flaky settlement tests", Model: "claude-sonnet-4-5",
			Cwd: "/home/ana/src/payments/api", Project: "/home/ana/src/payments", StartedAt: t0, LastAt: t0 + 40*m,
			Ended: &agentbridge.Ended{At: t0 + 40*m, ExitCode: &exit},
			Usage: agentbridge.Usage{InputTokens: 9_000, OutputTokens: 3_300}, Cost: &agentbridge.Cost{USD: 0.42, Estimate: true, PricesAsOf: fakePricesAsOf},
			ActiveMs: 37 * m, WaitingMs: 62 * m,
			Turns: []agentbridge.HistoryTurn{
				{Index: 0, StartedAt: t0, EndedAt: t0 + 10*m, Outcome: agentbridge.OutcomeSuccess, Tools: 4,
					Waits: []agentbridge.HistoryWait{{ID: "w1", State: agentbridge.StatusWaiting, Reason: "Approve shell command: make test", StartedAt: t0 + 2*m, EndedAt: t0 + 5*m, Answered: agentbridge.WaitAnswered}}},
				{Index: 1, StartedAt: t0 + 12*m, EndedAt: t0 + 30*m, Outcome: agentbridge.OutcomeError, Tools: 2,
					Waits: []agentbridge.HistoryWait{{ID: "w2", State: agentbridge.StatusWaiting, Reason: "Answer a question: keep the CSV format?", StartedAt: t0 + 15*m, EndedAt: t0 + 27*m, Answered: agentbridge.WaitFromBridge}}},
				{Index: 2, StartedAt: t0 + 31*m, EndedAt: t0 + 40*m, Outcome: agentbridge.OutcomeCancelled,
					Waits: []agentbridge.HistoryWait{{ID: "w3", State: agentbridge.StatusBlocked, Reason: "Rate limit reached", StartedAt: t0 + 35*m}}},
			},
		},
		{
			Source: "gemini", Host: "devbox", ID: "g-7f3a", Harness: "gemini", Cwd: "/srv/site",
			StartedAt: today - 2*24*60*m + 11*60*m, LastAt: today - 2*24*60*m + 12*60*m,
			Usage: agentbridge.Usage{InputTokens: 2_500}, ActiveMs: 20 * m,
			Turns: []agentbridge.HistoryTurn{{Index: 0, StartedAt: today - 2*24*60*m + 11*60*m, EndedAt: today - 2*24*60*m + 11*60*m + 20*m, Outcome: agentbridge.OutcomeSuccess}},
		},
		{
			Source: "codex", ID: "x-9", Harness: "codex", Title: "Refactor ledger export", Project: "/home/ana/src/ledger",
			StartedAt: today - 5*24*60*m + 14*60*m, LastAt: today - 5*24*60*m + 15*60*m,
			Usage: agentbridge.Usage{InputTokens: 15_000, OutputTokens: 5_000}, Cost: &agentbridge.Cost{USD: 0.8, Estimate: true, PricesAsOf: fakePricesAsOf, UnpricedTokens: 0},
			ActiveMs: 55 * m, WaitingMs: 5 * m,
			Turns: []agentbridge.HistoryTurn{{Index: 0, StartedAt: today - 5*24*60*m + 14*60*m, EndedAt: today - 5*24*60*m + 15*60*m, Outcome: agentbridge.OutcomeSuccess}},
		},
	}
}

// onlyParams answers 400, as the bridge does, to a query with a parameter
// the route does not take (the page's, out of all it could).
func onlyParams(w http.ResponseWriter, q url.Values, allowed ...string) bool {
	for name := range q {
		if !slices.Contains(allowed, name) {
			writeJSON(w, http.StatusBadRequest, map[string]any{"type": "urn:agentbridge:problem:bad-query", "title": "Bad query", "status": 400, "detail": name + ": unknown query parameter"})
			return false
		}
	}
	return true
}

func writeHistoryOff(w http.ResponseWriter) {
	w.Header().Set("Content-Type", "application/problem+json")
	w.WriteHeader(http.StatusNotFound)
	json.NewEncoder(w).Encode(map[string]any{"type": "urn:agentbridge:problem:history-off", "title": "History is off", "status": 404, "detail": "this bridge keeps no history (history.enabled is false)"})
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	json.NewEncoder(w).Encode(v)
}

// chartData is what a chart shows: its labels and each dataset's label,
// key (the agent's harness, "" for none) and numbers (a floating bar's
// [start, end] pairs flattened, no point -1).
type chartData struct {
	Labels   []string
	Datasets []struct {
		Label string
		Key   string
		Data  []float64
		Color string
	}
}

// readChart reads Chart.getChart(canvas).data of a canvas.
func readChart(t *testing.T, ctx context.Context, canvas string) chartData {
	t.Helper()
	var d chartData
	js := `(() => { const c = Chart.getChart(document.getElementById(` + jsString(canvas) + `)); if (!c) return null;
	  return { labels: c.data.labels.map(String), datasets: c.data.datasets.map(ds => ({ label: ds.label, key: ds.key ?? '',
	    data: ds.data.flatMap(p => p === null ? [-1] : typeof p === 'object' ? p.x : [p]),
	    color: typeof ds.backgroundColor === 'string' ? ds.backgroundColor : '' })) }; })()`
	raw, err := chromedp.Run(ctx, chromedp.Evaluate[json.RawMessage](js))
	if err != nil {
		t.Fatalf("read chart %s: %v", canvas, err)
	}
	if err := json.Unmarshal(raw, &d); err != nil {
		t.Fatalf("chart %s: %v (%s)", canvas, err, raw)
	}
	return d
}

// series returns the chart's datasets as label → numbers.
func (d chartData) series() map[string][]float64 {
	out := map[string][]float64{}
	for _, ds := range d.Datasets {
		out[ds.Label] = ds.Data
	}
	return out
}

// daysAgo is an n-day series with the values at the given days ago.
func daysAgo(n int, v map[int]float64) []float64 {
	out := make([]float64, n)
	for ago, x := range v {
		out[n-1-ago] = x
	}
	return out
}

func emulateZone(t *testing.T, ctx context.Context, zone string) {
	t.Helper()
	_, err := chromedp.Run(ctx, chromedp.Func(func(ctx context.Context, _ *chromedp.Target) error {
		_, err := chromedp.Call(ctx, emulation.SetTimezoneOverride, emulation.SetTimezoneOverrideParams{TimezoneID: zone})
		return err
	}))
	if err != nil {
		t.Fatalf("emulate the time zone %s: %v", zone, err)
	}
}

// evalJS evaluates expr in the page, failing the test on an error.
func evalJS[T any](t *testing.T, ctx context.Context, expr string) T {
	t.Helper()
	v, err := chromedp.Run(ctx, chromedp.Evaluate[T](expr))
	if err != nil {
		t.Fatalf("%s: %v", expr, err)
	}
	return v
}

func evalString(t *testing.T, ctx context.Context, expr string) string {
	t.Helper()
	return evalJS[string](t, ctx, expr)
}

// TestHistoryView opens the dashboard's History view against a bridge
// answering known usage and sessions, and checks what the charts plot,
// the sessions table, a session's timeline, the range picker, the dark
// theme, a narrow screen, and the empty and history-off states; its
// screenshots must show the charts (not a blank page). (docs/history.png
// is TestHistoryViewOfReplay's, of a real bridge's history.)
func TestHistoryView(t *testing.T) {
	ctx := newTab(t)
	f, base := startFakeHistory(t)
	emulateZone(t, ctx, historyZone)
	colorScheme(t, ctx, "light")
	if err := chromedp.Do(ctx, chromedp.EmulateViewport(1360, 860), chromedp.Navigate(base+"/#history")); err != nil {
		t.Fatalf("open the History view: %v", err)
	}
	drawn := `(() => { const c = window.Chart && Chart.getChart(document.getElementById('chart-tokens')); return !!c && c.data.labels.length === %d && document.querySelectorAll('#hist-rows tr').length === 3 && !!Chart.getChart(document.getElementById('chart-waiting')); })()`
	waitJS(t, ctx, "the charts of 7 days", fmt.Sprintf(drawn, 7))

	t.Run("the bridge is asked for usage by day split by agent, in the page's zone", func(t *testing.T) {
		q := f.lastQuery()
		if q.Get("by") != "day" || q.Get("split") != "harness" || q.Get("tz") != historyZone {
			t.Errorf("GET /v1/usage?%s, want by=day, split=harness, tz=%s", q.Encode(), historyZone)
		}
		if days, _, err := fakeRange(q); err != nil || len(days) != 7 {
			t.Errorf("the range asked for is %d days (%v), want 7", len(days), err)
		}
	})

	t.Run("tokens per day, stacked by agent, every day a point", func(t *testing.T) {
		d := readChart(t, ctx, "chart-tokens")
		if len(d.Labels) != 7 {
			t.Fatalf("labels %q, want 7 days", d.Labels)
		}
		want := map[string][]float64{
			"Codex":       daysAgo(7, map[int]float64{0: 4000, 5: 20000}),
			"Claude Code": daysAgo(7, map[int]float64{0: 12300, 2: 8000}),
			"Gemini CLI":  daysAgo(7, map[int]float64{2: 2500}),
		}
		if diff := cmp.Diff(want, d.series()); diff != "" {
			t.Errorf("tokens per day (-want +got):\n%s", diff)
		}
		var order []string
		for _, ds := range d.Datasets {
			order = append(order, ds.Label)
		}
		if strings.Join(order, ",") != "Codex,Claude Code,Gemini CLI" {
			t.Errorf("agents in order %q, want most tokens first", order)
		}
		stacked, _ := chromedp.Run(ctx, chromedp.Evaluate[bool](`Chart.getChart(document.getElementById('chart-tokens')).options.scales.y.stacked === true`))
		if !stacked {
			t.Error("the tokens chart is not stacked")
		}
	})

	t.Run("estimated cost per day, the prices' date, a day with an unknown price marked", func(t *testing.T) {
		d := readChart(t, ctx, "chart-cost")
		want := map[string][]float64{
			"Codex":       daysAgo(7, map[int]float64{0: 0.10, 5: 0.80}),
			"Claude Code": daysAgo(7, map[int]float64{0: 0.42, 2: 0.30}),
			"Gemini CLI":  daysAgo(7, nil),
			// A mark on the axis for the day with unpriced tokens, no point elsewhere.
			"price unknown": {-1, -1, -1, -1, 0, -1, -1},
		}
		if diff := cmp.Diff(want, d.series()); diff != "" {
			t.Errorf("cost per day (-want +got):\n%s", diff)
		}
		for i, l := range d.Labels {
			if marked := strings.HasSuffix(l, " *"); marked != (i == 4) {
				t.Errorf("day %d is labelled %q; only the day with Gemini's unpriced tokens (2 days ago) is marked", i, l)
			}
		}
		note := evalString(t, ctx, `document.getElementById('cost-note').textContent`)
		for _, w := range []string{"estimate", "prices of " + fakePricesAsOf, "no known price", "2.5k"} {
			if !strings.Contains(note, w) {
				t.Errorf("the cost chart's note %q lacks %q", note, w)
			}
		}
		if h := evalString(t, ctx, `document.querySelector('#chart-cost').closest('figure').querySelector('h3').textContent`); !strings.Contains(h, "Estimated") {
			t.Errorf("the cost chart is titled %q, not as an estimate", h)
		}
	})

	t.Run("time waiting for you per day, in minutes", func(t *testing.T) {
		d := readChart(t, ctx, "chart-waiting")
		want := map[string][]float64{
			"Codex":       daysAgo(7, map[int]float64{5: 5}),
			"Claude Code": daysAgo(7, map[int]float64{0: 62, 2: 15}),
			"Gemini CLI":  daysAgo(7, nil),
		}
		if diff := cmp.Diff(want, d.series()); diff != "" {
			t.Errorf("waiting per day (-want +got):\n%s", diff)
		}
	})

	t.Run("the sessions table, newest first, numbers formatted", func(t *testing.T) {
		rows, err := chromedp.Run(ctx, chromedp.Evaluate[[][]string](`[...document.querySelectorAll('#hist-rows tr')].map(tr => [...tr.cells].map(td => td.textContent))`))
		if err != nil {
			t.Fatal(err)
		}
		if len(rows) != 3 {
			t.Fatalf("%d rows, want 3", len(rows))
		}
		// Started is local time; the rest is fixed.
		var got [][]string
		for _, r := range rows {
			got = append(got, r[1:])
		}
		want := [][]string{
			{"Claude Code", "payments", "3", "37m 00s", "1h 02m", "12.3k", "~$0.42", "Fix flaky settlement tests"},
			{"Gemini CLI on devbox", "site", "1", "20m 00s", "0s", "2.5k", "—", "g-7f3a"},
			{"Codex", "ledger", "1", "55m 00s", "5m 00s", "20k", "~$0.80", "Refactor ledger export"},
		}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("sessions table (-want +got):\n%s", diff)
		}
		if h := evalString(t, ctx, `document.getElementById('hist-sessions-heading').textContent`); h != "Sessions (3)" {
			t.Errorf("the table's heading reads %q", h)
		}
		if !strings.Contains(rows[0][0], "09:00") {
			t.Errorf("the first session started %q, want 09:00 in %s", rows[0][0], historyZone)
		}
	})

	t.Run("a session's timeline: turns by outcome, waits on their own row", func(t *testing.T) {
		if err := chromedp.Do(ctx, chromedp.Click(chromedp.CSS(`#hist-rows tr:first-child td:nth-child(3)`))); err != nil {
			t.Fatal(err)
		}
		waitJS(t, ctx, "the timeline", `!document.getElementById('hist-timeline').hidden && !!Chart.getChart(document.getElementById('chart-timeline'))`)
		hash := evalString(t, ctx, `location.hash`)
		if !strings.Contains(hash, "source=claude-code") || !strings.Contains(hash, "id=c-1") {
			t.Errorf("the address does not name the open session: %s", hash)
		}
		d := readChart(t, ctx, "chart-timeline")
		t0 := evalJS[float64](t, ctx, `Chart.getChart(document.getElementById('chart-timeline')).options.scales.x.min`)
		const m = 60_000.0
		want := map[string][]float64{
			"turn completed":  {t0, t0 + 10*m},
			"turn failed":     {t0 + 12*m, t0 + 30*m},
			"turn cancelled":  {t0 + 31*m, t0 + 40*m},
			"waiting for you": {t0 + 2*m, t0 + 5*m, t0 + 15*m, t0 + 27*m, t0 + 35*m, t0 + 40*m},
		}
		if diff := cmp.Diff(want, d.series()); diff != "" {
			t.Errorf("timeline bars (-want +got):\n%s", diff)
		}
		rowsOf, err := chromedp.Run(ctx, chromedp.Evaluate[[]string](`Chart.getChart(document.getElementById('chart-timeline')).data.datasets.map(ds => [...new Set(ds.data.map(p => p.y))].join('+'))`))
		if err != nil {
			t.Fatal(err)
		}
		if strings.Join(rowsOf, ",") != "Turns,Turns,Turns,Waits" {
			t.Errorf("the bars' rows: %q, want turns on one row and waits on their own", rowsOf)
		}
		if title := evalString(t, ctx, `document.getElementById('timeline-title').textContent`); title != "Fix flaky settlement tests" {
			t.Errorf("timeline title %q", title)
		}
		const says = "The timeline of Fix flaky settlement tests: 3 turns (1 completed, 1 failed, 1 cancelled), 3 waits for you"
		if label := evalString(t, ctx, `document.getElementById('chart-timeline').getAttribute('aria-label')`); label != says {
			t.Errorf("the timeline's text alternative is %q, want %q", label, says)
		}
		pngTimeline := shot(t, ctx, chromedp.Screenshot(chromedp.CSS(`#chart-timeline`)), "history-timeline.png")
		// Each outcome's colour is drawn.
		for name, c := range map[string]string{"completed": "#2ea55a", "failed": "#d93a32", "waiting": "#e59a1c"} {
			if n := countColor(pngTimeline, c); n < 30 {
				t.Errorf("the timeline shows %d pixels of the %s colour %s", n, name, c)
			}
		}
	})

	t.Run("the light charts are drawn", func(t *testing.T) {
		b := shot(t, ctx, chromedp.Screenshot(chromedp.CSS(`#chart-tokens`)), "history-tokens-light.png")
		checkDrawn(t, b, []string{"#2f6fd6", "#d9731a", "#16937f"}, false)
	})

	t.Run("dark mode: the charts' colours, grid and text follow the theme", func(t *testing.T) {
		light := readTheme(t, ctx)
		colorScheme(t, ctx, "dark")
		waitJS(t, ctx, "the charts to take the dark colours", `Chart.getChart(document.getElementById('chart-tokens')).data.datasets[0].backgroundColor === '#6ea8ff'`)
		dark := readTheme(t, ctx)
		want := chartTheme{Tick: "#9aa4b0", Grid: "#2c333d", Legend: "#e6eaef", Series: []string{"#6ea8ff", "#ffa04d", "#3cc9b5"}, Timeline: "#3fb96a"}
		if diff := cmp.Diff(want, dark); diff != "" {
			t.Errorf("dark theme of the charts (-want +got):\n%s", diff)
		}
		if light.Tick == dark.Tick || light.Grid == dark.Grid || light.Legend == dark.Legend {
			t.Errorf("the text and grid colours did not change: light %+v, dark %+v", light, dark)
		}
		b := shot(t, ctx, chromedp.Screenshot(chromedp.CSS(`#chart-tokens`)), "history-tokens-dark.png")
		checkDrawn(t, b, want.Series, true)
		shot(t, ctx, chromedp.CaptureScreenshot(), "history-dark.png")
		colorScheme(t, ctx, "light")
		waitJS(t, ctx, "the charts to take the light colours again", `Chart.getChart(document.getElementById('chart-tokens')).data.datasets[0].backgroundColor === '#2f6fd6'`)
	})

	t.Run("a narrow screen: charts stack, the table scrolls", func(t *testing.T) {
		if err := chromedp.Do(ctx, chromedp.EmulateViewport(390, 844, chromedp.EmulateScale(1))); err != nil {
			t.Fatal(err)
		}
		waitJS(t, ctx, "the charts to fit 390 px", `Chart.getChart(document.getElementById('chart-tokens')).width <= 390`)
		type box struct{ Left, Top, Width float64 }
		boxes, err := chromedp.Run(ctx, chromedp.Evaluate[[]box](`[...document.querySelectorAll('.charts .chart-card')].map(e => { const r = e.getBoundingClientRect(); return {left: r.left, top: r.top, width: r.width}; })`))
		if err != nil {
			t.Fatal(err)
		}
		if len(boxes) != 3 {
			t.Fatalf("%d chart cards", len(boxes))
		}
		for i := 1; i < len(boxes); i++ {
			if boxes[i].Left != boxes[0].Left || boxes[i].Top <= boxes[i-1].Top {
				t.Errorf("the charts do not stack: %+v", boxes)
			}
		}
		for _, b := range boxes {
			if b.Width > 390 || b.Width < 300 {
				t.Errorf("a chart is %.0f px wide on a 390 px screen", b.Width)
			}
		}
		page, err := chromedp.Run(ctx, chromedp.Evaluate[[]float64](`[document.documentElement.scrollWidth, document.querySelector('.table-scroll').scrollWidth, document.querySelector('.table-scroll').clientWidth]`))
		if err != nil {
			t.Fatal(err)
		}
		if page[0] > 390 {
			t.Errorf("the page scrolls sideways: %.0f px wide", page[0])
		}
		if page[1] <= page[2] {
			t.Errorf("the sessions table does not scroll inside its box (%.0f ≤ %.0f)", page[1], page[2])
		}
		shot(t, ctx, chromedp.FullScreenshot(100), "history-narrow-page.png")
		b := shot(t, ctx, chromedp.CaptureScreenshot(), "history-narrow.png")
		img := decodePNG(t, b)
		if w := img.Bounds().Dx(); w != 390 {
			t.Errorf("the narrow screenshot is %d px wide", w)
		}
		checkDrawn(t, shot(t, ctx, chromedp.Screenshot(chromedp.CSS(`#chart-tokens`)), "history-tokens-narrow.png"), []string{"#2f6fd6", "#d9731a"}, false)
		if err := chromedp.Do(ctx, chromedp.EmulateViewport(1360, 860)); err != nil {
			t.Fatal(err)
		}
	})

	t.Run("the range picker asks for 30 days and links them", func(t *testing.T) {
		// From the top: the header is sticky, and a click scrolled to under it would land on it.
		if err := chromedp.Do(ctx, chromedp.Evaluate[chromedp.Void](`window.scrollTo(0, 0)`), chromedp.Click(chromedp.CSS(`#hist-ranges button[data-days="30"]`))); err != nil {
			t.Fatal(err)
		}
		waitJS(t, ctx, "the charts of 30 days", fmt.Sprintf(drawn, 30))
		if days, _, err := fakeRange(f.lastQuery()); err != nil || len(days) != 30 {
			t.Errorf("the range asked for is %d days (%v), want 30", len(days), err)
		}
		d := readChart(t, ctx, "chart-tokens")
		if got := d.series()["Codex"]; len(got) != 30 || got[24] != 20000 || got[29] != 4000 {
			t.Errorf("Codex over 30 days: %v", got)
		}
		if hash := evalString(t, ctx, `location.hash`); !strings.Contains(hash, "days=30") {
			t.Errorf("the address does not keep the range: %s", hash)
		}
		pressed := evalString(t, ctx, `document.querySelector('#hist-ranges [aria-pressed="true"]').textContent`)
		if pressed != "30 days" {
			t.Errorf("the pressed range reads %q", pressed)
		}
		// The link opens the same view.
		if err := chromedp.Do(ctx, chromedp.Reload()); err != nil {
			t.Fatal(err)
		}
		waitJS(t, ctx, "the linked 30 days", fmt.Sprintf(drawn, 30))
	})

	t.Run("nothing recorded: no history yet", func(t *testing.T) {
		f.setMode("empty")
		if err := chromedp.Do(ctx, chromedp.Click(chromedp.CSS(`#hist-refresh`))); err != nil {
			t.Fatal(err)
		}
		waitJS(t, ctx, "the empty state", `document.getElementById('hist-empty').dataset.state === 'empty' && !document.getElementById('hist-empty').hidden`)
		if txt := evalString(t, ctx, `document.getElementById('hist-empty').innerText`); !strings.Contains(txt, "No history yet") {
			t.Errorf("empty state reads %q", txt)
		}
		if v := evalString(t, ctx, `String(document.getElementById('hist-body').hidden)`); v != "true" {
			t.Error("the charts stay shown with nothing recorded")
		}
	})

	t.Run("history off: the page says so and how to turn it on", func(t *testing.T) {
		f.setMode("off")
		if err := chromedp.Do(ctx, chromedp.Click(chromedp.CSS(`#hist-refresh`))); err != nil {
			t.Fatal(err)
		}
		waitJS(t, ctx, "the history-off state", `document.getElementById('hist-empty').dataset.state === 'off'`)
		txt := evalString(t, ctx, `document.getElementById('hist-empty').innerText`)
		if !strings.Contains(txt, "History is off") || !strings.Contains(txt, "history.enabled") || !strings.Contains(txt, "this bridge keeps no history (history.enabled is false)") {
			t.Errorf("history-off state reads %q", txt)
		}
		shot(t, ctx, chromedp.CaptureScreenshot(), "history-off.png")
		f.setMode("data")
	})

	t.Run("the Live tab goes back to the sessions", func(t *testing.T) {
		if err := chromedp.Do(ctx, chromedp.Click(chromedp.CSS(`#tab-live`))); err != nil {
			t.Fatal(err)
		}
		waitJS(t, ctx, "the live view", `!document.getElementById('live-view').hidden && document.getElementById('history-view').hidden && document.getElementById('tab-live').getAttribute('aria-current') === 'page'`)
	})

	t.Run("coming back to History asks the bridge again", func(t *testing.T) {
		before := f.count()
		if err := chromedp.Do(ctx, chromedp.Click(chromedp.CSS(`#tab-history`))); err != nil {
			t.Fatal(err)
		}
		waitJS(t, ctx, "the charts again", fmt.Sprintf(drawn, 30))
		if f.count() <= before {
			t.Error("the History view showed what it had, not what the bridge has now")
		}
	})
}

// chartTheme is the colours the charts were drawn with.
type chartTheme struct {
	Tick, Grid, Legend string
	Series             []string
	Timeline           string // the completed turns' colour
}

func readTheme(t *testing.T, ctx context.Context) chartTheme {
	t.Helper()
	raw, err := chromedp.Run(ctx, chromedp.Evaluate[json.RawMessage](`(() => { const c = Chart.getChart(document.getElementById('chart-tokens'));
	  const tl = Chart.getChart(document.getElementById('chart-timeline'));
	  return { tick: c.options.scales.y.ticks.color, grid: c.options.scales.y.grid.color, legend: c.options.plugins.legend.labels.color,
	    series: c.data.datasets.map(d => d.backgroundColor), timeline: tl ? tl.data.datasets[0].borderColor : '' }; })()`))
	if err != nil {
		t.Fatal(err)
	}
	var th chartTheme
	if err := json.Unmarshal(raw, &th); err != nil {
		t.Fatal(err)
	}
	return th
}

// shot runs a screenshot action, saves it under artifacts/ and returns it.
func shot(t *testing.T, ctx context.Context, a chromedp.Action[[]byte], name string) []byte {
	t.Helper()
	b, err := chromedp.Run(ctx, a)
	if err != nil {
		t.Fatalf("screenshot %s: %v", name, err)
	}
	dir := filepath.Join(repoRoot, "artifacts")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, name), b, 0o644); err != nil {
		t.Fatal(err)
	}
	return b
}

func decodePNG(t *testing.T, b []byte) image.Image {
	t.Helper()
	img, err := png.Decode(bytes.NewReader(b))
	if err != nil {
		t.Fatalf("decode the screenshot: %v", err)
	}
	return img
}

func hexColor(s string) color.RGBA {
	var c color.RGBA
	fmt.Sscanf(s, "#%02x%02x%02x", &c.R, &c.G, &c.B)
	c.A = 255
	return c
}

// near reports whether two colours differ by at most 6 in each channel
// (antialiasing and colour management shift them a little).
func near(a color.Color, b color.RGBA) bool {
	r, g, bl, _ := a.RGBA()
	d := func(x uint32, y uint8) bool { v := int(x>>8) - int(y); return v >= -6 && v <= 6 }
	return d(r, b.R) && d(g, b.G) && d(bl, b.B)
}

// countColor counts the pixels of a PNG near the colour hex.
func countColor(b []byte, hex string) int {
	img, err := png.Decode(bytes.NewReader(b))
	if err != nil {
		return 0
	}
	want := hexColor(hex)
	n := 0
	bounds := img.Bounds()
	for y := bounds.Min.Y; y < bounds.Max.Y; y++ {
		for x := bounds.Min.X; x < bounds.Max.X; x++ {
			if near(img.At(x, y), want) {
				n++
			}
		}
	}
	return n
}

// checkDrawn checks a chart's screenshot for content: many distinct
// colours, a share of pixels that are not the background, each series'
// colour present, and a dark or light background as asked.
func checkDrawn(t *testing.T, b []byte, series []string, dark bool) {
	t.Helper()
	img := decodePNG(t, b)
	bounds := img.Bounds()
	counts := map[color.RGBA]int{}
	var lum float64
	for y := bounds.Min.Y; y < bounds.Max.Y; y++ {
		for x := bounds.Min.X; x < bounds.Max.X; x++ {
			r, g, bl, _ := img.At(x, y).RGBA()
			counts[color.RGBA{uint8(r >> 8), uint8(g >> 8), uint8(bl >> 8), 255}]++
			lum += (0.2126*float64(r>>8) + 0.7152*float64(g>>8) + 0.0722*float64(bl>>8)) / 255
		}
	}
	total := bounds.Dx() * bounds.Dy()
	bg, most := color.RGBA{}, 0
	for c, n := range counts {
		if n > most {
			bg, most = c, n
		}
	}
	if len(counts) < 20 {
		t.Errorf("the chart has %d distinct colours: blank?", len(counts))
	}
	if share := float64(total-most) / float64(total); share < 0.05 {
		t.Errorf("only %.1f%% of the chart is not its background %v: blank?", 100*share, bg)
	}
	for _, s := range series {
		if n := countColor(b, s); n < 50 {
			t.Errorf("the chart shows %d pixels of the series colour %s", n, s)
		}
	}
	if mean := lum / float64(total); dark != (mean < 0.4) {
		t.Errorf("the chart's mean luminance is %.2f; dark theme: %v", mean, dark)
	}
}
