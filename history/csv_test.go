package history

import (
	"bytes"
	"encoding/csv"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/agentbridge/agentbridge"
)

var csvStart = time.Date(2026, 12, 7, 9, 30, 0, 0, time.FixedZone("CET", 3600))

func csvAt(d time.Duration) int64 { return csvStart.Add(d).UnixMilli() }

// TestWriteSessionsCSV: one row per turn with its session's columns, a
// session without turns on one row, times in RFC 3339 UTC, a cost empty
// where unknown, formula cells defused; the output is RFC 4180 (quotes,
// commas and line breaks survive a reader).
func TestWriteSessionsCSV(t *testing.T) {
	cost := &agentbridge.Cost{USD: 0.0375, Estimate: true, PricesAsOf: "2026-11-01", UnpricedTokens: 3}
	sessions := []agentbridge.HistorySession{{
		Source: "claude-code", ID: "s1", Harness: "claude-code", Title: "say \"hi\", then\nstop", Model: "claude-sonnet-4-5",
		Cwd: "/home/u/p", Project: "/home/u/p", StartedAt: csvAt(0), LastAt: csvAt(time.Hour), Ended: &agentbridge.Ended{At: csvAt(time.Hour)},
		ActiveMs: 120000, WaitingMs: 7000, Usage: agentbridge.Usage{InputTokens: 10, OutputTokens: 20, CacheReadTokens: 30, CacheWriteTokens: 40}, Cost: cost,
		Turns: []agentbridge.HistoryTurn{
			{Index: 0, ID: "t-1", StartedAt: csvAt(0), EndedAt: csvAt(2 * time.Minute), Outcome: agentbridge.OutcomeSuccess, Model: "claude-sonnet-4-5",
				Usage: agentbridge.Usage{InputTokens: 10, OutputTokens: 20, CacheReadTokens: 30, CacheWriteTokens: 40}, Cost: cost, Tools: 3,
				Waits: []agentbridge.HistoryWait{
					{State: agentbridge.StatusWaiting, StartedAt: csvAt(time.Minute), EndedAt: csvAt(time.Minute) + 7000, Answered: agentbridge.WaitAnswered},
					{State: agentbridge.StatusWaiting, StartedAt: csvAt(90 * time.Second)}, // open: not counted
				}},
			{Index: 1, StartedAt: csvAt(time.Hour)},
		},
	}, {
		Host: "laptop", Source: "codex", ID: "c1", Harness: "codex", Title: "-1+2", Cwd: "@home", Usage: agentbridge.Usage{OutputTokens: 5},
	}}
	var b bytes.Buffer
	if err := WriteSessionsCSV(&b, sessions); err != nil {
		t.Fatal(err)
	}
	rows, err := csv.NewReader(&b).ReadAll()
	if err != nil {
		t.Fatalf("not RFC 4180: %v", err)
	}
	want := [][]string{
		SessionsCSVHeader,
		{"", "claude-code", "s1", "claude-code", "say \"hi\", then\nstop", "claude-sonnet-4-5", "/home/u/p", "/home/u/p",
			"2026-12-07T08:30:00Z", "2026-12-07T09:30:00Z", "2026-12-07T09:30:00Z", "120000", "7000",
			"0", "t-1", "2026-12-07T08:30:00Z", "2026-12-07T08:32:00Z", "success", "claude-sonnet-4-5",
			"10", "20", "30", "40", "0.0375", "true", "2026-11-01", "3", "3", "2", "7000"},
		{"", "claude-code", "s1", "claude-code", "say \"hi\", then\nstop", "claude-sonnet-4-5", "/home/u/p", "/home/u/p",
			"2026-12-07T08:30:00Z", "2026-12-07T09:30:00Z", "2026-12-07T09:30:00Z", "120000", "7000",
			"1", "", "2026-12-07T09:30:00Z", "", "", "",
			"0", "0", "0", "0", "", "", "", "", "0", "0", "0"},
		{"laptop", "codex", "c1", "codex", "\t-1+2", "", "", "\t@home",
			"", "", "", "0", "0",
			"", "", "", "", "", "",
			"0", "5", "0", "0", "", "", "", "", "", "", ""},
	}
	if diff := cmp.Diff(want, rows); diff != "" {
		t.Errorf("rows (-want +got):\n%s", diff)
	}
	for _, r := range rows {
		if len(r) != len(SessionsCSVHeader) {
			t.Errorf("row of %d cells, header of %d", len(r), len(SessionsCSVHeader))
		}
	}
}

// TestWriteUsageCSV: the key columns are named by the table's by and
// split; the total is left out.
func TestWriteUsageCSV(t *testing.T) {
	tab := agentbridge.UsageTable{By: "day", Split: "model", TZ: "UTC", Rows: []agentbridge.UsageRow{
		{Key: "2026-12-07", SplitKey: "=cmd|' /C calc'!A0", Usage: agentbridge.Usage{InputTokens: 1, OutputTokens: 2}, Tokens: 3,
			Cost: &agentbridge.Cost{USD: 1.5, Estimate: true, PricesAsOf: "config"}, Sessions: 1, Turns: 4, ActiveMs: 10, WaitingMs: 20},
		{Key: "2026-12-08", SplitKey: "gpt-5", Tokens: 0},
	}, Total: agentbridge.UsageRow{Tokens: 3}}
	var b bytes.Buffer
	if err := WriteUsageCSV(&b, tab); err != nil {
		t.Fatal(err)
	}
	want := "day,model,input_tokens,output_tokens,cache_read_tokens,cache_write_tokens,est_cost_usd,cost_is_estimate,prices_as_of,unpriced_tokens,tokens,sessions,turns,active_ms,waiting_ms\n" +
		"2026-12-07,\"\t=cmd|' /C calc'!A0\",1,2,0,0,1.5,true,config,0,3,1,4,10,20\n" +
		"2026-12-08,gpt-5,0,0,0,0,,,,,0,0,0,0,0\n"
	if diff := cmp.Diff(want, b.String()); diff != "" {
		t.Errorf("CSV (-want +got):\n%s", diff)
	}
	b.Reset()
	tab.Split = ""
	if err := WriteUsageCSV(&b, tab); err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(b.String(), "day,input_tokens,") {
		t.Errorf("without a split: %q", b.String())
	}
}

// TestCSVCell: exactly the cells a spreadsheet would run get a tab.
func TestCSVCell(t *testing.T) {
	for in, want := range map[string]string{
		"": "", "plain": "plain", "=1+1": "\t=1+1", "+1": "\t+1", "-1": "\t-1", "@SUM(A1)": "\t@SUM(A1)",
		"\tx": "\t\tx", "\rx": "\t\rx", "a=b": "a=b", "2026-12-07T08:30:00Z": "2026-12-07T08:30:00Z",
	} {
		if got := csvCell(in); got != want {
			t.Errorf("csvCell(%q) = %q, want %q", in, got, want)
		}
	}
}

// TestParseAge: Go durations and days; nothing else.
func TestParseAge(t *testing.T) {
	for in, want := range map[string]time.Duration{
		"7d": 7 * 24 * time.Hour, "0d": 0, "90d": 90 * 24 * time.Hour, "12h": 12 * time.Hour, "1h30m": 90 * time.Minute, "0": 0,
	} {
		if got, err := ParseAge(in); err != nil || got != want {
			t.Errorf("ParseAge(%q) = %v, %v; want %v", in, got, err, want)
		}
	}
	for _, in := range []string{"", "d", "7", "-1h", "-7d", "7 d", "1.5d", "7D", "1w", "106752d", "99999999999999999999d", "soon"} {
		if got, err := ParseAge(in); err == nil {
			t.Errorf("ParseAge(%q) = %v, want an error", in, got)
		}
	}
}
