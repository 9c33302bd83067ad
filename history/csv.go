package history

import (
	"encoding/csv"
	"fmt"
	"io"
	"slices"
	"strconv"
	"time"

	"github.com/agentbridge/agentbridge"
)

// The CSV exports (GET /v1/history?format=csv, GET /v1/usage?format=csv,
// `agentbridge history export`) are RFC 4180: a header row, then one row
// per record, fields quoted where they need it. Times are RFC 3339 in UTC,
// empty when unknown; lengths of time are milliseconds. A cost is empty
// where no token of the row has a known price; est_cost_usd is always an
// estimate (cost_is_estimate says so on each row that has one) from the
// price table dated prices_as_of.
//
// Spreadsheets run a cell that starts with = + - or @ as a formula (CSV
// injection): a title or a path an agent wrote could then reach the
// network or the user's other sheets. Every such cell, and one starting
// with a tab or a carriage return, is written with a tab before it, which
// spreadsheets show as blank space and never run (csvCell).

// SessionsCSVHeader are the columns of WriteSessionsCSV: the session's,
// then its turn's.
var SessionsCSVHeader = []string{
	"host", "source", "session_id", "harness", "title", "model", "project", "cwd",
	"session_started", "session_last", "session_ended", "session_active_ms", "session_waiting_ms",
	"turn_index", "turn_id", "turn_started", "turn_ended", "outcome", "turn_model",
	"input_tokens", "output_tokens", "cache_read_tokens", "cache_write_tokens",
	"est_cost_usd", "cost_is_estimate", "prices_as_of", "unpriced_tokens",
	"tools", "waits", "turn_waiting_ms",
}

// WriteSessionsCSV writes sessions as CSV: one row per turn, each with its
// session's columns; a session without turns has one row, its turn's
// columns empty. The token and cost columns are the turn's (the
// session's, on the row of a session without turns).
func WriteSessionsCSV(w io.Writer, sessions []agentbridge.HistorySession) error {
	cw := &csvOut{w: csv.NewWriter(w)}
	cw.write(slices.Clone(SessionsCSVHeader))
	for _, s := range sessions {
		var ended int64
		if s.Ended != nil {
			ended = s.Ended.At
		}
		head := []string{
			s.Host, s.Source, s.ID, s.Harness, s.Title, s.Model, s.Project, s.Cwd,
			csvTime(s.StartedAt), csvTime(s.LastAt), csvTime(ended), csvInt(s.ActiveMs), csvInt(s.WaitingMs),
		}
		if len(s.Turns) == 0 {
			row := append(head, "", "", "", "", "", "")
			row = append(row, usageCells(s.Usage, s.Cost)...)
			cw.write(append(row, "", "", ""))
			continue
		}
		for _, t := range s.Turns {
			var waiting int64
			for _, wt := range t.Waits {
				if wt.EndedAt > wt.StartedAt && wt.StartedAt > 0 {
					waiting += wt.EndedAt - wt.StartedAt
				}
			}
			row := append(head[:len(head):len(head)],
				strconv.Itoa(t.Index), t.ID, csvTime(t.StartedAt), csvTime(t.EndedAt), string(t.Outcome), t.Model)
			row = append(row, usageCells(t.Usage, t.Cost)...)
			cw.write(append(row, strconv.Itoa(t.Tools), strconv.Itoa(len(t.Waits)), csvInt(waiting)))
		}
	}
	return cw.done()
}

// UsageCSVHeader are the columns of WriteUsageCSV after the key (named by
// the table's By) and the split key (named by its Split, when it has one).
var UsageCSVHeader = []string{
	"input_tokens", "output_tokens", "cache_read_tokens", "cache_write_tokens",
	"est_cost_usd", "cost_is_estimate", "prices_as_of", "unpriced_tokens",
	"tokens", "sessions", "turns", "active_ms", "waiting_ms",
}

// WriteUsageCSV writes a usage table as CSV: one row per row of the table,
// its first column named by the table's By (day, project, model or
// harness), then one named by its Split when it has one. The total is not
// written (a sheet sums the rows).
func WriteUsageCSV(w io.Writer, t agentbridge.UsageTable) error {
	cw := &csvOut{w: csv.NewWriter(w)}
	head := []string{t.By}
	if t.Split != "" {
		head = append(head, t.Split)
	}
	cw.write(append(head, UsageCSVHeader...))
	for _, r := range t.Rows {
		row := []string{r.Key}
		if t.Split != "" {
			row = append(row, r.SplitKey)
		}
		row = append(row, usageCells(r.Usage, r.Cost)...)
		cw.write(append(row, csvInt(r.Tokens), strconv.Itoa(r.Sessions), strconv.Itoa(r.Turns), csvInt(r.ActiveMs), csvInt(r.WaitingMs)))
	}
	return cw.done()
}

// usageCells are the token and cost columns: the four counts, then the
// estimated cost, whether it is an estimate, the price table's date and
// the unpriced tokens (all four empty without a cost).
func usageCells(u agentbridge.Usage, c *agentbridge.Cost) []string {
	cells := []string{csvInt(u.InputTokens), csvInt(u.OutputTokens), csvInt(u.CacheReadTokens), csvInt(u.CacheWriteTokens)}
	if c == nil {
		return append(cells, "", "", "", "")
	}
	return append(cells, strconv.FormatFloat(c.USD, 'f', -1, 64), strconv.FormatBool(c.Estimate), c.PricesAsOf, csvInt(c.UnpricedTokens))
}

// csvOut writes rows, each cell through csvCell, keeping the first
// error.
type csvOut struct {
	w   *csv.Writer
	err error
}

// write writes one row (changing its cells in place).
func (c *csvOut) write(row []string) {
	if c.err != nil {
		return
	}
	for i, cell := range row {
		row[i] = csvCell(cell)
	}
	c.err = c.w.Write(row)
}

// done flushes the rows and returns the first error.
func (c *csvOut) done() error {
	c.w.Flush()
	if c.err == nil {
		c.err = c.w.Error()
	}
	if c.err != nil {
		return fmt.Errorf("write CSV: %w", c.err)
	}
	return nil
}

// csvCell defuses a cell a spreadsheet would run as a formula: one that
// starts with = + - @ (or a tab or carriage return, which some strip
// before looking) gets a tab before it.
func csvCell(s string) string {
	if s == "" {
		return s
	}
	switch s[0] {
	case '=', '+', '-', '@', '\t', '\r':
		return "\t" + s
	}
	return s
}

// csvTime is epoch ms as RFC 3339 in UTC; empty for 0 (unknown).
func csvTime(ms int64) string {
	if ms <= 0 {
		return ""
	}
	return time.UnixMilli(ms).UTC().Format(time.RFC3339Nano)
}

func csvInt(n int64) string { return strconv.FormatInt(n, 10) }
