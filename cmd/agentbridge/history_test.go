package main

import (
	"context"
	"encoding/csv"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/agentbridge/agentbridge"
	"github.com/agentbridge/agentbridge/history"
	"github.com/agentbridge/agentbridge/internal/bridgetest"
)

var histStart = time.Date(2026, 12, 7, 9, 30, 0, 0, time.UTC)

func histMs(d time.Duration) int64 { return histStart.Add(d).UnixMilli() }

// cliHistory is the history the CLI tests' bridge answers.
func cliHistory() *bridgetest.History {
	cost := &agentbridge.Cost{USD: 1.2345, Estimate: true, PricesAsOf: "2026-11-01"}
	sessions := []agentbridge.HistorySession{{
		Source: "claude-code", ID: "s1", Harness: "claude-code", Title: "Fix the \x1b[31mparser", Model: "claude-sonnet-4-5",
		Cwd: "/home/u/src/parser/sub", Project: "/home/u/src/parser", StartedAt: histMs(0), LastAt: histMs(time.Hour),
		Usage: agentbridge.Usage{InputTokens: 1200, OutputTokens: 300000, CacheReadTokens: 900000, CacheWriteTokens: 50000}, Cost: cost,
		ActiveMs: (62*60 + 5) * 1000, WaitingMs: 185 * 1000,
		Turns: []agentbridge.HistoryTurn{{Index: 0, StartedAt: histMs(0), Waits: []agentbridge.HistoryWait{}}, {Index: 1, StartedAt: histMs(time.Hour), Waits: []agentbridge.HistoryWait{}}},
	}, {
		Source: "codex", ID: "c1", Harness: "codex", Model: "mystery", StartedAt: histMs(-26 * time.Hour),
		Usage: agentbridge.Usage{OutputTokens: 950}, ActiveMs: 42000,
		Turns: []agentbridge.HistoryTurn{{Index: 0, StartedAt: histMs(-26 * time.Hour), Waits: []agentbridge.HistoryWait{}}},
	}}
	table := agentbridge.UsageTable{TZ: "UTC", Rows: []agentbridge.UsageRow{
		{Key: "/home/u/src/parser", SplitKey: "claude-code", Tokens: 1451200, Cost: cost, Sessions: 1, Turns: 2, ActiveMs: (62*60 + 5) * 1000, WaitingMs: 185 * 1000},
		{Key: "/srv/x", SplitKey: "codex", Tokens: 950, Sessions: 1, Turns: 1, ActiveMs: 42000},
	}, Total: agentbridge.UsageRow{Tokens: 1452150, Cost: &agentbridge.Cost{USD: 1.2345, Estimate: true, PricesAsOf: "2026-11-01", UnpricedTokens: 950}, Sessions: 2, Turns: 3, ActiveMs: (62*60+5)*1000 + 42000, WaitingMs: 185 * 1000}}
	return bridgetest.NewHistory(sessions, table, history.PruneResult{Sessions: 4, Turns: 17})
}

// runHistoryCLI runs one command line against the bridge at addr.
func runHistoryCLI(t *testing.T, addr string, env []string, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	var out, errb strings.Builder
	a := &app{env: env, stdin: strings.NewReader(""), stdout: &out, stderr: &errb, backoff: fastBackoff}
	code = a.exitCode(a.execute(context.Background(), append(args, "--addr", addr)))
	return out.String(), errb.String(), code
}

// TestHistoryCommand: `agentbridge history` against a real API server: the
// table in local time (TZ), escapes defused, costs marked as estimates
// with a footnote; --json and --csv print the bridge's answers; the flags
// reach the query.
func TestHistoryCommand(t *testing.T) {
	h := cliHistory()
	b := bridgetest.Start(t, bridgetest.Options{History: h})
	env := testEnv(t, "AGENTBRIDGE_TOKEN="+bridgetest.Token, "TZ=Europe/Paris")
	before := time.Now()
	out, errs, code := runHistoryCLI(t, b.Addr, env, "history", "--since", "2d", "--project", "/home/u/src/parser", "--harness", "claude-code", "--host", "local", "--outcome", "error", "--limit", "20")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	want := strings.Join([]string{
		"STARTED           AGENT        PROJECT  TURNS  ACTIVE  WAITING  TOKENS  EST. COST  TITLE",
		"2026-12-07 10:30  claude-code  parser   2      1h02m   3m05s    1.3M    ~$1.23     Fix the  [31mparser",
		"2026-12-06 08:30  codex        -        1      42s     0s       950     -          -",
		"",
		"~ costs are estimates from the price table of 2026-11-01, not a bill; - where a model's price is unknown",
		"",
	}, "\n")
	if diff := cmp.Diff(want, out); diff != "" {
		t.Errorf("table (-want +got):\n%s", diff)
	}
	q := h.Queries()[0]
	if q.Project != "/home/u/src/parser" || q.Harness != "claude-code" || q.Host != "local" || q.Outcome != "error" || q.Limit != 20 ||
		q.From.Before(before.Add(-48*time.Hour-time.Second)) || q.From.After(time.Now().Add(-48*time.Hour)) {
		t.Errorf("query %+v", q)
	}

	out, errs, code = runHistoryCLI(t, b.Addr, env, "history", "--json")
	var body struct {
		Sessions []agentbridge.HistorySession `json:"sessions"`
	}
	if code != 0 || json.Unmarshal([]byte(out), &body) != nil || len(body.Sessions) != 2 || strings.Contains(out, "\x1b") {
		t.Errorf("--json: exit %d %s\n%s", code, errs, out)
	}
	out, errs, code = runHistoryCLI(t, b.Addr, env, "history", "--csv")
	if rows, err := csv.NewReader(strings.NewReader(out)).ReadAll(); code != 0 || err != nil || len(rows) != 4 {
		t.Errorf("--csv: exit %d %s %v\n%s", code, errs, err, out)
	}
	if q := h.Queries()[1]; q.From.After(time.Now().Add(-7*24*time.Hour)) || q.From.Before(before.Add(-7*24*time.Hour-time.Second)) {
		t.Errorf("default range from %v, want 7 days ago", q.From)
	}
}

// TestHistoryExportAndPrune: export writes the bridge's CSV (or JSON) to a
// file of mode 0600, the whole retention by default; prune sends
// --older-than, else the configured retention.
func TestHistoryExportAndPrune(t *testing.T) {
	h := cliHistory()
	b := bridgetest.Start(t, bridgetest.Options{History: h})
	env := testEnv(t, "AGENTBRIDGE_TOKEN="+bridgetest.Token, "AGENTBRIDGE_HISTORY_RETENTION=30d")
	file := filepath.Join(t.TempDir(), "h.csv")
	if _, errs, code := runHistoryCLI(t, b.Addr, env, "history", "export", "--output", file); code != 0 {
		t.Fatalf("export: exit %d: %s", code, errs)
	}
	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	if rows, err := csv.NewReader(strings.NewReader(string(data))).ReadAll(); err != nil || len(rows) != 4 || rows[0][0] != "host" {
		t.Errorf("export: %v\n%s", err, data)
	}
	if fi, err := os.Stat(file); err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("export's mode %v, %v; want 0600", fi.Mode(), err)
	}
	if q := h.Queries()[0]; q.Limit != history.MaxLimit || q.From.After(time.Now().Add(-30*24*time.Hour)) || q.From.Before(time.Now().Add(-30*24*time.Hour-time.Minute)) {
		t.Errorf("export's query %+v, want the 30 days retained and the most sessions", q)
	}
	out, errs, code := runHistoryCLI(t, b.Addr, env, "history", "export", "--format", "json", "--since", "1d")
	if code != 0 || !strings.HasPrefix(out, `{"sessions":[`) {
		t.Errorf("export --format json: exit %d %s\n%.200s", code, errs, out)
	}
	if strings.Contains(errs, "stopped at") {
		t.Errorf("an export under its limit says it stopped: %s", errs)
	}
	// an export that reached its limit says so (the bridge's fake has 2)
	for _, format := range []string{"csv", "json"} {
		_, errs, code = runHistoryCLI(t, b.Addr, env, "history", "export", "--format", format, "--limit", "2")
		if code != 0 || !strings.Contains(errs, "stopped at 2 sessions") {
			t.Errorf("export --format %s --limit 2: exit %d, stderr %q; want it to say it stopped at 2 sessions", format, code, errs)
		}
	}

	out, errs, code = runHistoryCLI(t, b.Addr, env, "history", "prune")
	if code != 0 || out != "removed 4 sessions and 17 turns older than 30d\n" {
		t.Errorf("prune: exit %d %q %s", code, out, errs)
	}
	if _, _, code := runHistoryCLI(t, b.Addr, env, "history", "prune", "--older-than", "36h"); code != 0 {
		t.Errorf("prune --older-than 36h: exit %d", code)
	}
	p := h.Prunes()
	if len(p) != 2 || p[0].After(time.Now().Add(-30*24*time.Hour)) || p[1].After(time.Now().Add(-36*time.Hour)) || p[1].Before(time.Now().Add(-37*time.Hour)) {
		t.Errorf("pruned before %v, want 30 days then 36 hours ago", p)
	}
}

// TestUsageCommand: the table by a key and a split, projects under HOME
// as ~, a TOTAL row and the footnote; --by and --tz reach the query.
func TestUsageCommand(t *testing.T) {
	h := cliHistory()
	b := bridgetest.Start(t, bridgetest.Options{History: h})
	env := testEnv(t, "AGENTBRIDGE_TOKEN="+bridgetest.Token, "HOME=/home/u")
	out, errs, code := runHistoryCLI(t, b.Addr, env, "usage", "--by", "project", "--split", "harness", "--tz", "UTC", "--since", "7d")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	want := strings.Join([]string{
		"PROJECT       HARNESS      TOKENS  EST. COST  SESSIONS  TURNS  ACTIVE  WAITING",
		"~/src/parser  claude-code  1.5M    ~$1.23     1         2      1h02m   3m05s",
		"/srv/x        codex        950     -          1         1      42s     0s",
		"TOTAL         -            1.5M    ~$1.23     2         3      1h02m   3m05s",
		"",
		"~ costs are estimates from the price table of 2026-11-01, not a bill; - where a model's price is unknown",
		"",
	}, "\n")
	if diff := cmp.Diff(want, out); diff != "" {
		t.Errorf("table (-want +got):\n%s", diff)
	}
	uq := h.UsageQueries()[0]
	if uq.By != "project" || uq.Split != "harness" || uq.Loc == nil || uq.Loc.String() != "UTC" {
		t.Errorf("usage query %+v", uq)
	}
	if out, _, code := runHistoryCLI(t, b.Addr, env, "usage", "--csv"); code != 0 || !strings.HasPrefix(out, "day,input_tokens") {
		t.Errorf("usage --csv: exit %d\n%s", code, out)
	}
	if q := h.UsageQueries()[1]; q.By != "day" || q.From.After(time.Now().Add(-30*24*time.Hour)) {
		t.Errorf("default usage query %+v, want by day over 30 days", q)
	}
}

// TestHistoryUsageErrors: a bad flag is a usage error (exit 2) before any
// request; a bridge whose history is off or failing is exit 1 saying so.
func TestHistoryUsageErrors(t *testing.T) {
	h := cliHistory()
	b := bridgetest.Start(t, bridgetest.Options{History: h})
	env := testEnv(t, "AGENTBRIDGE_TOKEN="+bridgetest.Token)
	for _, tt := range []struct {
		args []string
		want string
	}{
		{[]string{"history", "--since", "yesterday"}, "--since"},
		{[]string{"history", "--outcome", "done"}, "--outcome"},
		{[]string{"history", "--limit", "5001"}, "--limit"},
		{[]string{"history", "--json", "--csv"}, "json"},
		{[]string{"history", "export", "--format", "xml"}, "--format"},
		{[]string{"history", "prune", "--older-than", "0d"}, "--older-than"},
		{[]string{"usage", "--by", "week"}, "--by"},
		{[]string{"usage", "--split", "day"}, "--split"},
		{[]string{"usage", "--tz", "Mars/Olympus"}, "--tz"},
		{[]string{"usage", "--json", "--csv"}, "json"},
	} {
		_, errs, code := runHistoryCLI(t, b.Addr, env, tt.args...)
		if code != 2 || !strings.Contains(errs, tt.want) {
			t.Errorf("%v: exit %d, %q; want 2 naming %s", tt.args, code, errs, tt.want)
		}
	}
	if n := len(h.Queries()) + len(h.UsageQueries()) + len(h.Prunes()); n != 0 {
		t.Errorf("%d requests reached the history", n)
	}
	off := bridgetest.Start(t, bridgetest.Options{})
	if _, errs, code := runHistoryCLI(t, off.Addr, env, "history"); code != 1 || !strings.Contains(errs, "history is off") {
		t.Errorf("history off: exit %d, %q", code, errs)
	}
	h.Fail(errors.New("disk I/O error"))
	if _, errs, code := runHistoryCLI(t, b.Addr, env, "usage"); code != 1 || !strings.Contains(errs, "503") {
		t.Errorf("a failing store: exit %d, %q", code, errs)
	}
}

// TestParseSince: --since reads digits as epoch ms (0 is all of the
// history, as the bridge's from reads it), else a length of time or an
// RFC 3339 time.
func TestParseSince(t *testing.T) {
	t.Parallel()
	now := time.UnixMilli(1_800_000_000_000)
	for in, want := range map[string]int64{
		"0":                    0,
		"1700000000000":        1_700_000_000_000,
		"7d":                   now.Add(-7 * 24 * time.Hour).UnixMilli(),
		"90m":                  now.Add(-90 * time.Minute).UnixMilli(),
		"2026-12-01T10:00:00Z": time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC).UnixMilli(),
	} {
		got, ok := parseSince(in, now)
		if !ok || got.UnixMilli() != want {
			t.Errorf("parseSince(%q) = %v, %v; want %d", in, got.UnixMilli(), ok, want)
		}
	}
	for _, in := range []string{"", "-5", "99999999999999999999", "soon"} {
		if _, ok := parseSince(in, now); ok {
			t.Errorf("parseSince(%q) accepted", in)
		}
	}
}

// TestHistoryProjectFromASubdirectory: --project names a directory of a
// project, not only its root: run from inside a repository (--project .),
// the filter is the repository's top, as the history keeps the sessions'
// projects, so it does not come back empty.
func TestHistoryProjectFromASubdirectory(t *testing.T) {
	repo := t.TempDir()
	if err := os.MkdirAll(filepath.Join(repo, ".git"), 0o700); err != nil {
		t.Fatal(err)
	}
	sub := filepath.Join(repo, "cmd", "tool")
	if err := os.MkdirAll(sub, 0o700); err != nil {
		t.Fatal(err)
	}
	h := cliHistory()
	b := bridgetest.Start(t, bridgetest.Options{History: h})
	env := testEnv(t, "AGENTBRIDGE_TOKEN="+bridgetest.Token, "TZ=UTC")
	for _, args := range [][]string{{"history", "--project", sub}, {"usage", "--project", sub}} {
		if _, errs, code := runHistoryCLI(t, b.Addr, env, args...); code != 0 {
			t.Fatalf("%v: exit %d: %s", args, code, errs)
		}
	}
	if q := h.Queries(); len(q) != 1 || q[0].Project != repo {
		t.Errorf("history queries %+v, want one for the project %s", q, repo)
	}
	if q := h.UsageQueries(); len(q) != 1 || q[0].Project != repo {
		t.Errorf("usage queries %+v, want one for the project %s", q, repo)
	}
}
