package client_test

import (
	"context"
	"encoding/csv"
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/agentbridge/agentbridge"
	"github.com/agentbridge/agentbridge/client"
	"github.com/agentbridge/agentbridge/history"
	"github.com/agentbridge/agentbridge/internal/bridgetest"
)

var histSessions = []agentbridge.HistorySession{{
	Source: "codex", ID: "s-1", Harness: "codex", Title: "fix it", Model: "gpt-5", Project: "/home/u/p", StartedAt: 1764547200000,
	Usage: agentbridge.Usage{InputTokens: 10, OutputTokens: 5}, Cost: &agentbridge.Cost{USD: 0.5, Estimate: true, PricesAsOf: "2026-11-01"},
	Turns: []agentbridge.HistoryTurn{{Index: 0, StartedAt: 1764547200000, EndedAt: 1764547260000, Outcome: agentbridge.OutcomeSuccess,
		Usage: agentbridge.Usage{InputTokens: 10, OutputTokens: 5}, Waits: []agentbridge.HistoryWait{}}},
}}

var histTable = agentbridge.UsageTable{TZ: "UTC", Rows: []agentbridge.UsageRow{{Key: "2026-12-01", Tokens: 15, Turns: 1, Sessions: 1}}, Total: agentbridge.UsageRow{Tokens: 15, Turns: 1, Sessions: 1}}

// TestHistoryAgainstABridge: the client's history calls against a real
// API server: the queries reach the store as meant, the answers decode,
// the CSV is the bridge's, a prune sends its age, and a bridge without a
// history is a 404 *StatusError.
func TestHistoryAgainstABridge(t *testing.T) {
	h := bridgetest.NewHistory(histSessions, histTable, history.PruneResult{Sessions: 2, Turns: 9})
	b := bridgetest.Start(t, bridgetest.Options{History: h})
	c := b.Client()
	ctx := context.Background()
	from := time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)
	got, err := c.History(ctx, client.HistoryQuery{
		HistoryFilter: client.HistoryFilter{From: from, Project: "/home/u/p", Harness: "codex", Source: "codex", Host: "local", Outcome: "success"},
		Limit:         10, Turns: 3,
	})
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(histSessions, got); diff != "" {
		t.Errorf("sessions (-want +got):\n%s", diff)
	}
	q := h.Queries()[0]
	if !q.From.Equal(from) || q.Project != "/home/u/p" || q.Harness != "codex" || q.Source != "codex" || q.Host != "local" || q.Outcome != "success" || q.Limit != 10 || q.Turns != 3 {
		t.Errorf("query %+v", q)
	}
	before := time.Now()
	if _, err := c.History(ctx, client.HistoryQuery{HistoryFilter: client.HistoryFilter{Since: 36 * time.Hour}}); err != nil {
		t.Fatal(err)
	}
	after := time.Now()
	if q := h.Queries()[1]; q.From.Before(before.Add(-36*time.Hour)) || q.From.After(after.Add(-36*time.Hour)) {
		t.Errorf("since 36h: from %v, want 36h before the call", q.From)
	}

	tab, err := c.Usage(ctx, client.UsageQuery{By: "model", Split: "day", TZ: "Europe/Paris"})
	if err != nil {
		t.Fatal(err)
	}
	if tab.By != "model" || tab.Split != "day" || len(tab.Rows) != 1 || tab.Total.Tokens != 15 {
		t.Errorf("table %+v", tab)
	}
	if uq := h.UsageQueries()[0]; uq.Loc == nil || uq.Loc.String() != "Europe/Paris" {
		t.Errorf("usage query %+v", uq)
	}

	raw, err := c.HistoryCSV(ctx, client.HistoryQuery{})
	if err != nil {
		t.Fatal(err)
	}
	rows, err := csv.NewReader(strings.NewReader(string(raw))).ReadAll()
	if err != nil || len(rows) != 2 || rows[0][0] != "host" || rows[1][2] != "s-1" {
		t.Errorf("history CSV %v:\n%s", err, raw)
	}
	raw, err = c.UsageCSV(ctx, client.UsageQuery{By: "day"})
	if err != nil || !strings.HasPrefix(string(raw), "day,") {
		t.Errorf("usage CSV %v:\n%s", err, raw)
	}

	res, err := c.PruneHistory(ctx, 90*24*time.Hour)
	if err != nil || res != (client.PruneResult{Sessions: 2, Turns: 9}) {
		t.Errorf("prune = %+v, %v", res, err)
	}
	if p := h.Prunes(); len(p) != 1 || p[0].After(time.Now().Add(-90*24*time.Hour)) {
		t.Errorf("pruned before %v, want 90 days ago", p)
	}
	if _, err := c.PruneHistory(ctx, 0); err == nil {
		t.Error("a prune of everything younger than 0 was sent")
	}

	if _, err := c.Usage(ctx, client.UsageQuery{By: "week"}); !isStatus(err, http.StatusBadRequest) || !strings.Contains(err.Error(), "by:") {
		t.Errorf("usage by week: %v, want a 400 naming by", err)
	}
	h.Fail(errors.New("disk I/O error"))
	if _, err := c.History(ctx, client.HistoryQuery{}); !isStatus(err, http.StatusServiceUnavailable) {
		t.Errorf("a failing store: %v, want 503", err)
	}
	off := bridgetest.Start(t, bridgetest.Options{}).Client()
	if _, err := off.History(ctx, client.HistoryQuery{}); !isStatus(err, http.StatusNotFound) || !strings.Contains(err.Error(), "history is off") {
		t.Errorf("history off: %v, want a 404 saying so", err)
	}
}

func isStatus(err error, status int) bool {
	var se *client.StatusError
	return errors.As(err, &se) && se.Status == status
}

// TestHistoryFromBeforeTheEpoch: a range that starts before 1970 (the
// CLI's --since 36500d, "all of it") asks from the epoch, which the
// bridge takes, instead of negative milliseconds, which it refuses.
func TestHistoryFromBeforeTheEpoch(t *testing.T) {
	h := bridgetest.NewHistory(histSessions, histTable, history.PruneResult{})
	c := bridgetest.Start(t, bridgetest.Options{History: h}).Client()
	from := time.Date(1926, 12, 8, 0, 0, 0, 0, time.UTC)
	if _, err := c.History(context.Background(), client.HistoryQuery{HistoryFilter: client.HistoryFilter{From: from}}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Usage(context.Background(), client.UsageQuery{HistoryFilter: client.HistoryFilter{From: from}, By: "day"}); err != nil {
		t.Fatal(err)
	}
	if q := h.Queries()[0]; q.From.UnixMilli() != 0 {
		t.Errorf("from %v, want the epoch", q.From)
	}
}
