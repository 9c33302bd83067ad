package client

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"time"

	"github.com/agentbridge/agentbridge"
)

// HistoryFilter selects the sessions of the bridge's history: those with
// an event in [From, To), of the project, harness, source, host and
// outcome given ("" for any).
type HistoryFilter struct {
	// From is the start of the range (one before 1970: the epoch); zero:
	// Since before now, else the bridge's default (7 days before now).
	From time.Time
	// Since is a length of time before now, as the bridge's clock tells
	// it; used when From is zero.
	Since time.Duration
	// To is the end of the range (excluded); zero: now.
	To      time.Time
	Project string // a project root (absolute)
	Harness string
	Source  string
	Host    string // a remote's id, or "local"
	// Outcome is success, error or cancelled (a turn ended so), or
	// running (a turn still open).
	Outcome string
}

// HistoryQuery is a query of GET /v1/history.
type HistoryQuery struct {
	HistoryFilter
	Limit int // sessions at most (the newest); 0: the bridge's default (200)
	Turns int // turns kept per session (the last); 0: the bridge's default (500)
}

// UsageQuery is a query of GET /v1/usage.
type UsageQuery struct {
	HistoryFilter
	By    string // day, project, model or harness (agentbridge.UsageKeys)
	Split string // "" or another of them
	TZ    string // the IANA zone days are counted in; "": the bridge's
}

// PruneResult is what a prune removed.
type PruneResult struct {
	Sessions int `json:"sessions"`
	Turns    int `json:"turns"`
}

// values is the filter as query parameters; a From before the epoch is
// the epoch (the bridge takes no earlier time).
func (f HistoryFilter) values() url.Values {
	q := url.Values{}
	switch {
	case !f.From.IsZero():
		q.Set("from", strconv.FormatInt(max(f.From.UnixMilli(), 0), 10))
	case f.Since > 0:
		q.Set("from", f.Since.String())
	}
	if !f.To.IsZero() {
		q.Set("to", strconv.FormatInt(f.To.UnixMilli(), 10))
	}
	for name, v := range map[string]string{"project": f.Project, "harness": f.Harness, "source": f.Source, "host": f.Host, "outcome": f.Outcome} {
		if v != "" {
			q.Set(name, v)
		}
	}
	return q
}

func (q HistoryQuery) values() url.Values {
	v := q.HistoryFilter.values()
	if q.Limit > 0 {
		v.Set("limit", strconv.Itoa(q.Limit))
	}
	if q.Turns > 0 {
		v.Set("turns", strconv.Itoa(q.Turns))
	}
	return v
}

func (q UsageQuery) values() url.Values {
	v := q.HistoryFilter.values()
	v.Set("by", q.By)
	if q.Split != "" {
		v.Set("split", q.Split)
	}
	if q.TZ != "" {
		v.Set("tz", q.TZ)
	}
	return v
}

// History fetches GET /v1/history: the sessions q selects, newest first,
// with their turns and waits. A bridge whose history is off answers a
// *StatusError with status 404.
func (c *Client) History(ctx context.Context, q HistoryQuery) ([]agentbridge.HistorySession, error) {
	var body struct {
		Sessions []agentbridge.HistorySession `json:"sessions"`
	}
	if err := c.GetJSON(ctx, "/v1/history", q.values(), &body); err != nil {
		return nil, err
	}
	if body.Sessions == nil {
		body.Sessions = []agentbridge.HistorySession{}
	}
	return body.Sessions, nil
}

// Usage fetches GET /v1/usage: the usage of the sessions q selects, summed
// by q.By.
func (c *Client) Usage(ctx context.Context, q UsageQuery) (agentbridge.UsageTable, error) {
	var t agentbridge.UsageTable
	err := c.GetJSON(ctx, "/v1/usage", q.values(), &t)
	return t, err
}

// HistoryCSV fetches GET /v1/history?format=csv: the export's bytes, as
// the bridge wrote them.
func (c *Client) HistoryCSV(ctx context.Context, q HistoryQuery) ([]byte, error) {
	v := q.values()
	v.Set("format", "csv")
	return c.getRaw(ctx, "/v1/history", v, "text/csv")
}

// HistoryJSON fetches GET /v1/history: the answer's bytes, as the bridge
// wrote them ({"sessions": [...]}).
func (c *Client) HistoryJSON(ctx context.Context, q HistoryQuery) ([]byte, error) {
	return c.getRaw(ctx, "/v1/history", q.values(), "application/json")
}

// UsageCSV fetches GET /v1/usage?format=csv: the table's rows as CSV.
func (c *Client) UsageCSV(ctx context.Context, q UsageQuery) ([]byte, error) {
	v := q.values()
	v.Set("format", "csv")
	return c.getRaw(ctx, "/v1/usage", v, "text/csv")
}

// PruneHistory asks the bridge to remove the history older than olderThan
// (POST /v1/history/prune), and returns what it removed.
func (c *Client) PruneHistory(ctx context.Context, olderThan time.Duration) (PruneResult, error) {
	var res PruneResult
	if olderThan <= 0 {
		return res, fmt.Errorf("prune the history older than %v: give a positive length of time", olderThan)
	}
	b, err := json.Marshal(map[string]string{"olderThan": olderThan.String()})
	if err != nil {
		return res, err
	}
	resp, err := c.Do(ctx, http.MethodPost, "/v1/history/prune", nil, bytes.NewReader(b), "application/json")
	if err != nil {
		return res, err
	}
	defer resp.Body.Close()
	if err := json.NewDecoder(resp.Body).Decode(&res); err != nil {
		return res, fmt.Errorf("agentbridge at %s: bad answer to /v1/history/prune: %w", c.Addr, err)
	}
	return res, nil
}

// maxExport bounds what getRaw reads (an export of MaxLimit sessions of
// DefaultTurns turns fits many times over).
const maxExport = 1 << 30

// getRaw returns the body of GET path.
func (c *Client) getRaw(ctx context.Context, path string, q url.Values, accept string) ([]byte, error) {
	resp, err := c.Do(ctx, http.MethodGet, path, q, nil, accept)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, maxExport+1))
	if err != nil {
		return nil, fmt.Errorf("agentbridge at %s: read %s: %w", c.Addr, path, err)
	}
	if len(b) > maxExport {
		return nil, fmt.Errorf("agentbridge at %s: the answer to %s is over %d bytes", c.Addr, path, maxExport)
	}
	return b, nil
}
