package e2e

import (
	"context"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/chromedp"
	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/agentbridge/agentbridge"
)

// TestHistoryViewOfReplay opens the dashboard's History view, signed in as
// a user is, on a real bridge that the recorded sessions of
// TestHistoryReplayMatchesJournalsAcrossKill were replayed through, and
// checks that its charts plot what the bridge recorded: the tokens, cost
// and waiting per day and agent of GET /v1/usage for the range and zone the
// page asked (and those tokens are the journals' own sums), the sessions of
// GET /v1/history, and one session's timeline, its turns and waits as the
// bridge has them. The recordings are of 2026-04-08 … 2026-05-28 and
// 2026-12-01 and the view offers the last 7, 30 or 90 days, so the
// browser's clock is set (its Date, nothing else) to two days the ranges
// of which hold them: 30 days as of 2026-12-08 (the live suite's runs of
// December 1st) and 90 days as of 2026-06-01 (the older recordings); the
// page is in UTC, the zone the journals' sums are taken in. With
// AGENTBRIDGE_SCREENSHOT=1 it writes docs/history.png of the second.
func TestHistoryViewOfReplay(t *testing.T) {
	chromiumPath(t) // before the replay: without a browser there is nothing to do
	r := replayDay(t, 0)
	want := journalUsage(t, r.journals)
	r.waitJournals(t, want) // the history is whole before the page reads it

	for _, v := range []struct {
		name  string
		asOf  string
		days  int
		agent []string // the agents the range holds, at least
	}{
		{"30 days as of 2026-12-08: the live suite's runs", "2026-12-08T12:00:00Z", 30, []string{"claude-code", "pi", "qwen-code"}},
		{"90 days as of 2026-06-01: the older recordings", "2026-06-01T12:00:00Z", 90, []string{"claude-code", "codex", "pi"}},
	} {
		t.Run(v.name, func(t *testing.T) {
			at, err := time.Parse(time.RFC3339, v.asOf)
			if err != nil {
				t.Fatal(err)
			}
			ctx, asked := openHistoryAt(t, r, at, v.days)
			q := asked.last(t, "/v1/usage")
			if q.Get("by") != agentbridge.UsageByDay || q.Get("split") != agentbridge.UsageByHarness || !slices.Contains([]string{"UTC", "Etc/UTC"}, q.Get("tz")) {
				t.Fatalf("the page asked GET /v1/usage?%s, want by=day, split=harness and the zone UTC", q.Encode())
			}
			var usage agentbridge.UsageTable
			if err := r.c.GetJSON(context.Background(), "/v1/usage", q, &usage); err != nil {
				t.Fatal(err)
			}
			days := dayList(time.UnixMilli(usage.From), time.UnixMilli(usage.To), time.UTC)
			if len(days) != v.days || days[len(days)-1] != at.Format(time.DateOnly) {
				t.Fatalf("the page asked for the days %v, want %d days to %s", days, v.days, at.Format(time.DateOnly))
			}

			t.Run("the bridge's usage of the range is the journals' sums", func(t *testing.T) {
				inRange := map[rowKey]expectedRow{}
				for k, row := range want {
					if slices.Contains(days, k.day) {
						inRange[k] = row
					}
				}
				if d := usageDiff(inRange, usage); d != "" {
					t.Errorf("GET /v1/usage?%s:\n%s", q.Encode(), d)
				}
				var agents []string
				for _, row := range usage.Rows {
					agents = append(agents, row.SplitKey)
				}
				for _, a := range v.agent {
					if !slices.Contains(agents, a) {
						t.Errorf("no row of %s in the range: %v", a, usage.Rows)
					}
				}
				t.Logf("%d rows of %d days", len(usage.Rows), countDays(usage))
			})

			t.Run("tokens, cost and waiting per day and agent are the bridge's rows", func(t *testing.T) {
				tokens, cost, waiting := usageSeries(usage, days)
				checkSeries(t, "tokens per day", readChart(t, ctx, "chart-tokens"), days, tokens, 0)
				checkSeries(t, "estimated cost per day", readChart(t, ctx, "chart-cost"), days, cost, 1e-6) // the page keeps micro-dollars
				checkSeries(t, "minutes waiting per day", readChart(t, ctx, "chart-waiting"), days, waiting, 1e-9)
				// A day with tokens no price covers is marked on the cost chart.
				var unpriced []float64
				for _, d := range days {
					mark := -1.0 // no mark
					for _, row := range usage.Rows {
						if row.Key == d && (row.Cost == nil && row.Tokens > 0 || row.Cost != nil && row.Cost.UnpricedTokens > 0) {
							mark = 0
						}
					}
					unpriced = append(unpriced, mark)
				}
				var marks []float64
				for _, ds := range readChart(t, ctx, "chart-cost").Datasets {
					if ds.Label == "price unknown" {
						marks = ds.Data
					}
				}
				if !slices.Contains(unpriced, 0) {
					unpriced = nil
				}
				if diff := cmp.Diff(unpriced, marks, cmpopts.EquateEmpty()); diff != "" {
					t.Errorf("the days marked price unknown (-the bridge's rows +the chart):\n%s", diff)
				}
			})

			h := asked.last(t, "/v1/history")
			var hist struct {
				Sessions []agentbridge.HistorySession `json:"sessions"`
			}
			if err := r.c.GetJSON(context.Background(), "/v1/history", h, &hist); err != nil {
				t.Fatal(err)
			}

			t.Run("the sessions table lists the bridge's sessions of the range", func(t *testing.T) {
				var want []string
				for _, s := range hist.Sessions {
					want = append(want, s.Host+"\x00"+s.Source+"\x00"+s.ID)
				}
				got := evalJS[[]string](t, ctx, `[...document.querySelectorAll('#hist-rows tr')].map(tr => tr.dataset.key)`)
				if len(want) == 0 || !cmp.Equal(want, got, cmpopts.SortSlices(func(a, b string) bool { return a < b })) {
					t.Errorf("the table's sessions %q, GET /v1/history?%s has %q", got, h.Encode(), want)
				}
			})

			t.Run("a session's timeline is its turns and waits", func(t *testing.T) {
				s := timelineSession(t, hist.Sessions)
				key := jsString(s.Host + "\x00" + s.Source + "\x00" + s.ID)
				evalJS[bool](t, ctx, `[...document.querySelectorAll('#hist-rows tr')].find(tr => tr.dataset.key === `+key+`).querySelector('button').click() || true`)
				title := s.Title
				if title == "" {
					title = s.ID
				}
				waitJS(t, ctx, "the timeline of "+s.ID, `!document.getElementById('hist-timeline').hidden && !!Chart.getChart(document.getElementById('chart-timeline')) && document.getElementById('timeline-title').textContent === `+jsString(title))
				// What has no end yet is drawn to the end of the axis (the
				// session's end, or the page's now while it may go on).
				end := evalJS[float64](t, ctx, `Chart.getChart(document.getElementById('chart-timeline')).options.scales.x.max`)
				bar := func(start, ended int64) []float64 {
					if ended == 0 {
						return []float64{float64(start), end}
					}
					return []float64{float64(start), float64(ended)}
				}
				want := map[string][]float64{}
				words := map[agentbridge.Outcome]string{agentbridge.OutcomeSuccess: "completed", agentbridge.OutcomeError: "failed", agentbridge.OutcomeCancelled: "cancelled"}
				turns, waits := 0, 0
				for _, tr := range s.Turns {
					w, ok := words[tr.Outcome]
					switch {
					case !ok && tr.EndedAt == 0:
						w = "running"
					case !ok:
						w = "completed" // an ended turn of another outcome
					}
					want["turn "+w] = append(want["turn "+w], bar(tr.StartedAt, tr.EndedAt)...)
					turns++
					for _, wt := range tr.Waits {
						want["waiting for you"] = append(want["waiting for you"], bar(wt.StartedAt, wt.EndedAt)...)
						waits++
					}
				}
				if diff := cmp.Diff(want, readChart(t, ctx, "chart-timeline").series()); diff != "" {
					t.Errorf("the timeline of %s session %s (-GET /v1/history +the chart):\n%s", s.Source, s.ID, diff)
				}
				t.Logf("the timeline of %s session %s: %d turns, %d waits", s.Source, s.ID, turns, waits)
			})

			if v.days != 90 {
				return
			}
			t.Run("the charts are drawn", func(t *testing.T) {
				if err := chromedp.Do(ctx, chromedp.Evaluate[chromedp.Void](`window.scrollTo(0, 0)`)); err != nil {
					t.Fatal(err)
				}
				var all []string
				for _, id := range []string{"chart-tokens", "chart-cost", "chart-waiting", "chart-timeline"} {
					d := readChart(t, ctx, id)
					var colors []string
					for _, ds := range d.Datasets {
						if ds.Color != "" && ds.Label != "price unknown" && slices.ContainsFunc(ds.Data, func(x float64) bool { return x > 0 }) {
							colors = append(colors, ds.Color)
						}
					}
					b := shot(t, ctx, chromedp.Screenshot(chromedp.CSS(`#`+id)), fmt.Sprintf("history-replay-%d-%s.png", v.days, id))
					checkDrawn(t, b, colors, false)
					for _, c := range colors {
						if !slices.Contains(all, c) {
							all = append(all, c)
						}
					}
				}
				writeDocsScreenshot(t, ctx, all)
			})
		})
	}
}

// queries records the GET queries a page sent, by path.
type queries struct {
	mu   sync.Mutex
	seen map[string][]url.Values
}

// last is the last query the page sent to path.
func (q *queries) last(t *testing.T, path string) url.Values {
	t.Helper()
	q.mu.Lock()
	defer q.mu.Unlock()
	s := q.seen[path]
	if len(s) == 0 {
		t.Fatalf("the page did not ask %s", path)
	}
	return s[len(s)-1]
}

// openHistoryAt opens a tab in UTC whose clock reads at, signs it in to
// r's bridge with `agentbridge open --print`'s URL, and opens the History
// view of the last days days; it returns once the charts are drawn, with
// the queries the page sent.
func openHistoryAt(t *testing.T, r *replayed, at time.Time, days int) (context.Context, *queries) {
	t.Helper()
	ctx := newTab(t)
	asked := &queries{seen: map[string][]url.Values{}}
	err := chromedp.Listen(ctx, func(ev any) {
		if e, ok := ev.(*network.EventRequestWillBeSent); ok && e.Request != nil {
			if u, err := url.Parse(e.Request.URL); err == nil {
				asked.mu.Lock()
				asked.seen[u.Path] = append(asked.seen[u.Path], u.Query())
				asked.mu.Unlock()
			}
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	setClock(t, ctx, at)
	emulateZone(t, ctx, "UTC")
	colorScheme(t, ctx, "light")
	if err := chromedp.Do(ctx, chromedp.EmulateViewport(1360, 860), chromedp.Navigate(r.b.dashboardURL())); err != nil {
		t.Fatalf("open the dashboard: %v", err)
	}
	if err := chromedp.Do(ctx, chromedp.Navigate(fmt.Sprintf("%s/#history?days=%d", r.b.base, days))); err != nil {
		t.Fatalf("open the History view: %v", err)
	}
	waitJS(t, ctx, fmt.Sprintf("the charts of %d days", days), fmt.Sprintf(`(() => { const c = window.Chart && Chart.getChart(document.getElementById('chart-tokens')); return !!c && c.data.labels.length === %d && !!Chart.getChart(document.getElementById('chart-waiting')); })()`, days))
	return ctx, asked
}

// setClock makes the page's Date read at when a document starts (and run
// on from there), as if the browser were used that day: the History view's
// ranges end on the page's today.
func setClock(t *testing.T, ctx context.Context, at time.Time) {
	t.Helper()
	js := fmt.Sprintf(`(() => { const Real = Date, shift = %d - Real.now();
	  class At extends Real { constructor(...a) { if (a.length === 0) super(Real.now() + shift); else super(...a); } static now() { return Real.now() + shift; } }
	  globalThis.Date = At; })();`, at.UnixMilli())
	_, err := chromedp.Run(ctx, chromedp.Func(func(ctx context.Context, _ *chromedp.Target) error {
		_, err := chromedp.Call(ctx, page.AddScriptToEvaluateOnNewDocument, page.AddScriptToEvaluateOnNewDocumentParams{Source: js})
		return err
	}))
	if err != nil {
		t.Fatalf("set the page's clock: %v", err)
	}
}

// usageSeries is a usage table's tokens, cost (USD; 0 without a known
// price) and minutes waiting per agent (harness), a number per day of days.
func usageSeries(u agentbridge.UsageTable, days []string) (tokens, cost, waiting map[string][]float64) {
	tokens, cost, waiting = map[string][]float64{}, map[string][]float64{}, map[string][]float64{}
	for _, row := range u.Rows {
		i := slices.Index(days, row.Key)
		if i < 0 {
			continue // checkSeries reports the day the chart lacks
		}
		for _, m := range []map[string][]float64{tokens, cost, waiting} {
			if m[row.SplitKey] == nil {
				m[row.SplitKey] = make([]float64, len(days))
			}
		}
		tokens[row.SplitKey][i] += float64(row.Tokens)
		if row.Cost != nil {
			cost[row.SplitKey][i] += row.Cost.USD
		}
		waiting[row.SplitKey][i] += float64(row.WaitingMs) / 60_000
	}
	return tokens, cost, waiting
}

// checkSeries checks a chart by day against want, its bars by agent (the
// datasets' keys), each number within tol.
func checkSeries(t *testing.T, what string, d chartData, days []string, want map[string][]float64, tol float64) {
	t.Helper()
	var labels []string
	for _, day := range days {
		at, _ := time.Parse(time.DateOnly, day)
		labels = append(labels, at.Format("Jan 2"))
	}
	got := map[string][]float64{}
	for _, ds := range d.Datasets {
		if ds.Key != "" {
			got[ds.Key] = ds.Data
		}
	}
	var shown []string
	for _, l := range d.Labels {
		shown = append(shown, strings.TrimSuffix(l, " *")) // a day's mark of tokens with no known price
	}
	if diff := cmp.Diff(labels, shown); diff != "" {
		t.Errorf("%s: the days (-want +got):\n%s", what, diff)
	}
	if diff := cmp.Diff(want, got, cmpopts.EquateApprox(0, tol)); diff != "" {
		t.Errorf("%s (-GET /v1/usage +the chart):\n%s", what, diff)
	}
}

// countDays is how many days of a usage table have a row.
func countDays(u agentbridge.UsageTable) int {
	seen := map[string]bool{}
	for _, row := range u.Rows {
		seen[row.Key] = true
	}
	return len(seen)
}

// timelineSession picks the session of h whose timeline the test opens:
// one with waits and a start to every turn and wait of it (a start the
// bridge did not see the page draws from the session's), those whose turns
// and waits all ended first, then the most waits, the fewest turns, the
// newest.
func timelineSession(t *testing.T, h []agentbridge.HistorySession) agentbridge.HistorySession {
	t.Helper()
	type score struct {
		s            *agentbridge.HistorySession
		whole, waits int
	}
	better := func(a, b score) bool {
		if a.whole != b.whole {
			return a.whole > b.whole
		}
		if a.waits != b.waits {
			return a.waits > b.waits
		}
		if len(a.s.Turns) != len(b.s.Turns) {
			return len(a.s.Turns) < len(b.s.Turns)
		}
		return a.s.StartedAt > b.s.StartedAt
	}
	var best *score
	for i := range h {
		c := score{s: &h[i], whole: 1}
		started := true
		for _, tr := range c.s.Turns {
			started = started && tr.StartedAt > 0
			if tr.EndedAt == 0 {
				c.whole = 0
			}
			for _, w := range tr.Waits {
				started = started && w.StartedAt > 0
				if w.EndedAt == 0 {
					c.whole = 0
				}
				c.waits++
			}
		}
		if c.waits > 0 && started && (best == nil || better(c, *best)) {
			best = &c
		}
	}
	if best == nil {
		t.Fatalf("no session of the range has waits and a start to every turn and wait: %d sessions", len(h))
	}
	return *best.s
}

// writeDocsScreenshot writes docs/history.png with
// AGENTBRIDGE_SCREENSHOT=1: the whole page, 1360 px wide, checked for
// content as the charts are (series are the colours it must show).
func writeDocsScreenshot(t *testing.T, ctx context.Context, series []string) {
	t.Helper()
	if os.Getenv("AGENTBRIDGE_SCREENSHOT") == "" {
		return
	}
	if err := chromedp.Do(ctx, chromedp.EmulateViewport(1360, 940), chromedp.Evaluate[chromedp.Void](`window.scrollTo(0, 0)`)); err != nil {
		t.Fatal(err)
	}
	waitJS(t, ctx, "the charts to fit the taller window", `Chart.getChart(document.getElementById('chart-tokens')).height > 0 && window.innerHeight === 940`)
	b := shot(t, ctx, chromedp.FullScreenshot(100), "history-docs.png")
	checkDrawn(t, b, series, false)
	dst := filepath.Join(repoRoot, "docs", "history.png")
	if err := os.WriteFile(dst, b, 0o644); err != nil {
		t.Fatal(err)
	}
	t.Logf("wrote %s", dst)
}
