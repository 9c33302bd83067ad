package api

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/agentbridge/agentbridge"
	"github.com/agentbridge/agentbridge/history"
	"github.com/agentbridge/agentbridge/validate"
)

// History is the bridge's history of sessions (implemented by
// *history.Store): what GET /v1/history lists, GET /v1/usage sums and POST
// /v1/history/prune removes.
type History interface {
	// Sessions lists the sessions q selects, newest first.
	Sessions(ctx context.Context, q history.Query) ([]agentbridge.HistorySession, error)
	// Usage sums the usage of the sessions q selects.
	Usage(ctx context.Context, q history.UsageQuery) (agentbridge.UsageTable, error)
	// Prune removes the sessions whose last event is before before.
	Prune(ctx context.Context, before time.Time) (history.PruneResult, error)
	// Answered notes that the open wait of a session was answered through
	// the bridge (POST …/answer) at at (epoch ms); it must not block.
	Answered(host, source, sessionID string, at int64)
}

// HistoryResponse is the body of GET /v1/history.
type HistoryResponse struct {
	Sessions []agentbridge.HistorySession `json:"sessions"`
}

// PruneRequest is the body of POST /v1/history/prune: one of OlderThan (a
// length of time before now: "90d", "12h") or Before (epoch ms).
type PruneRequest struct {
	OlderThan string `json:"olderThan,omitempty"`
	Before    *int64 `json:"before,omitempty"`
}

// DefaultHistoryRange is how far back GET /v1/history and GET /v1/usage
// look without a from.
const DefaultHistoryRange = 7 * 24 * time.Hour

// maxEpochMs is the last millisecond of the year 9999: later times are
// refused.
const maxEpochMs = 253402300799999

// The parameters of the history's routes.
var (
	historyFilterParams = []string{"from", "to", "project", "harness", "source", "host", "outcome", "format"}
	historyParams       = append(slices.Clip(historyFilterParams), "limit", "turns")
	usageParams         = append(slices.Clip(historyFilterParams), "by", "split", "tz")
	historyOutcomes     = []string{string(agentbridge.OutcomeSuccess), string(agentbridge.OutcomeError), string(agentbridge.OutcomeCancelled), "running"}
)

// badParam is the 400 problem of a bad query parameter, which it names.
func badParam(name, format string, a ...any) *Error {
	e := errorf(http.StatusBadRequest, "bad-query", format, a...)
	e.Detail = name + ": " + e.Detail
	return e
}

// one returns the single value of a query parameter ("" when absent); a
// parameter given twice is an error.
func one(q url.Values, name string) (string, error) {
	if len(q[name]) > 1 {
		return "", badParam(name, "give it once")
	}
	return q.Get(name), nil
}

// parseWhen reads a point in time: epoch milliseconds, RFC 3339, or a
// length of time ("7d", "12h") meaning that long before now.
func parseWhen(v string, now time.Time) (time.Time, bool) {
	if v != "" && strings.Trim(v, "0123456789") == "" {
		ms, err := strconv.ParseInt(v, 10, 64)
		if err != nil || ms > maxEpochMs {
			return time.Time{}, false
		}
		return time.UnixMilli(ms), true
	}
	if t, err := time.Parse(time.RFC3339Nano, v); err == nil {
		if t.Year() < 1970 || t.UnixMilli() > maxEpochMs {
			return time.Time{}, false
		}
		return t, true
	}
	d, err := history.ParseAge(v)
	if err != nil {
		return time.Time{}, false
	}
	t := now.Add(-d)
	if t.Before(time.UnixMilli(0)) || t.After(now) { // overflowed, or before 1970: from the start
		t = time.UnixMilli(0)
	}
	return t, true
}

// parseHistoryQuery reads the range and filters every history route
// takes, and the format (json or csv).
func parseHistoryQuery(q url.Values, now time.Time) (history.Query, string, error) {
	var hq history.Query
	hq.To = now
	hq.From = now.Add(-DefaultHistoryRange)
	for _, name := range []string{"from", "to"} {
		v, err := one(q, name)
		if err != nil {
			return hq, "", err
		}
		if !q.Has(name) {
			continue
		}
		t, ok := parseWhen(v, now)
		if !ok {
			return hq, "", badParam(name, "give epoch milliseconds, an RFC 3339 time or a length of time before now (7d, 12h)")
		}
		if name == "from" {
			hq.From = t
		} else {
			hq.To = t
		}
	}
	if !hq.From.Before(hq.To) {
		return hq, "", badParam("from", "must be before to (the range is [from, to); to defaults to now)")
	}
	ids := []struct {
		name string
		dst  *string
	}{{"harness", &hq.Harness}, {"source", &hq.Source}, {"host", &hq.Host}}
	for _, p := range ids {
		v, err := one(q, p.name)
		if err != nil {
			return hq, "", err
		}
		if q.Has(p.name) && !validate.ValidHarnessID(v) {
			return hq, "", badParam(p.name, "must be one id ([a-z][a-z0-9-]{0,63})")
		}
		*p.dst = v
	}
	v, err := one(q, "project")
	if err != nil {
		return hq, "", err
	}
	if q.Has("project") && !validate.ValidCwd(v) {
		return hq, "", badParam("project", "must be one absolute, clean path")
	}
	hq.Project = v
	if hq.Outcome, err = one(q, "outcome"); err != nil {
		return hq, "", err
	}
	if q.Has("outcome") && !slices.Contains(historyOutcomes, hq.Outcome) {
		return hq, "", badParam("outcome", "must be one of %s", strings.Join(historyOutcomes, ", "))
	}
	format, err := one(q, "format")
	if err != nil {
		return hq, "", err
	}
	switch format {
	case "":
		format = "json"
	case "json", "csv":
	default:
		return hq, "", badParam("format", "must be json or csv")
	}
	return hq, format, nil
}

// intParam reads a whole number from 1 to most; absent, 0.
func intParam(q url.Values, name string, most int) (int, error) {
	v, err := one(q, name)
	if err != nil || !q.Has(name) {
		return 0, err
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 1 || n > most {
		return 0, badParam(name, "must be a whole number from 1 to %d", most)
	}
	return n, nil
}

// ParseHistoryQuery reads the query of GET /v1/history at now: the
// history.Query and the format (json or csv). A bad parameter is a 400
// *Error that names it.
func ParseHistoryQuery(q url.Values, now time.Time) (history.Query, string, error) {
	if err := onlyQuery(q, historyParams); err != nil {
		return history.Query{}, "", err
	}
	hq, format, err := parseHistoryQuery(q, now)
	if err != nil {
		return hq, "", err
	}
	if hq.Limit, err = intParam(q, "limit", history.MaxLimit); err != nil {
		return hq, "", err
	}
	if hq.Turns, err = intParam(q, "turns", history.DefaultTurns); err != nil {
		return hq, "", err
	}
	return hq, format, nil
}

// ParseUsageQuery reads the query of GET /v1/usage at now, as
// ParseHistoryQuery does.
func ParseUsageQuery(q url.Values, now time.Time) (history.UsageQuery, string, error) {
	if err := onlyQuery(q, usageParams); err != nil {
		return history.UsageQuery{}, "", err
	}
	hq, format, err := parseHistoryQuery(q, now)
	uq := history.UsageQuery{Query: hq}
	if err != nil {
		return uq, "", err
	}
	keys := strings.Join(agentbridge.UsageKeys, ", ")
	if uq.By, err = one(q, "by"); err != nil {
		return uq, "", err
	}
	if !slices.Contains(agentbridge.UsageKeys, uq.By) {
		return uq, "", badParam("by", "is required: one of %s", keys)
	}
	if uq.Split, err = one(q, "split"); err != nil {
		return uq, "", err
	}
	if q.Has("split") && (!slices.Contains(agentbridge.UsageKeys, uq.Split) || uq.Split == uq.By) {
		return uq, "", badParam("split", "must be one of %s other than by", keys)
	}
	tz, err := one(q, "tz")
	if err != nil {
		return uq, "", err
	}
	if q.Has("tz") {
		loc, err := time.LoadLocation(tz)
		if tz == "" || tz == "Local" || len(tz) > 64 || err != nil {
			return uq, "", badParam("tz", "must be an IANA time zone name (Europe/Paris, UTC)")
		}
		uq.Loc = loc
	}
	return uq, format, nil
}

// localZone is the bridge's local time zone under its IANA name (days are
// counted in it without tz, and the usage table names it), else
// time.Local, whose name is "Local".
var localZone = sync.OnceValue(func() *time.Location {
	tz, set := os.LookupEnv("TZ")
	return namedZone(tz, set, func() (string, error) { return os.Readlink("/etc/localtime") })
})

// namedZone finds the IANA name of the local zone as Go's time.Local
// finds the zone: TZ when it is set (":Europe/Paris" too; empty is UTC),
// else the zoneinfo file /etc/localtime links to (link); nil when it has
// no name.
func namedZone(tz string, set bool, link func() (string, error)) *time.Location {
	if tz = strings.TrimPrefix(tz, ":"); set { // LoadLocation(""): UTC
		if loc, err := time.LoadLocation(tz); err == nil && tz != "Local" && !filepath.IsAbs(tz) {
			return loc
		}
		return nil // TZ names a file or nothing Go knows: no name to give
	}
	target, err := link()
	if err != nil {
		return nil
	}
	_, name, ok := strings.Cut(target, "zoneinfo/")
	if !ok || name == "" {
		return nil
	}
	if loc, err := time.LoadLocation(name); err == nil {
		return loc
	}
	return nil
}

// onlyQuery refuses a parameter other than allowed, naming it when it is
// printable and short.
func onlyQuery(q url.Values, allowed []string) error {
	for name := range q {
		if !slices.Contains(allowed, name) {
			if len(name) <= 32 && validate.ValidHarnessID(strings.ToLower(name)) {
				return badParam(name, "unknown query parameter; this route takes %s", strings.Join(allowed, ", "))
			}
			return errorf(http.StatusBadRequest, "bad-query", "unknown query parameter; this route takes %s", strings.Join(allowed, ", "))
		}
	}
	return nil
}

// historyOff is the problem of a history route when the history is off.
func historyOff() *Error {
	return errorf(http.StatusNotFound, "history-off", "the history is off (history.enabled is false, or the bridge has no state directory)")
}

// storeFailed is the problem of a history that failed to answer: the
// cause is logged, never shown (it may name the database's path).
func (s *Server) storeFailed(r *http.Request, err error) *Error {
	if errors.Is(err, history.ErrQuery) { // the routes check first; a rule only the store knows
		return errorf(http.StatusBadRequest, "bad-query", "the history refused the query: %v", err)
	}
	if errors.Is(err, context.Canceled) && r.Context().Err() != nil {
		return errorf(http.StatusServiceUnavailable, "history-unavailable", "the request ended before the history answered")
	}
	s.Logger.Error("history failed", "route", routePattern(r), "err", err)
	return errorf(http.StatusServiceUnavailable, "history-unavailable", "the history could not be read or written; see the bridge's log")
}

// now is the server's clock.
func (s *Server) clock() time.Time {
	if s.now != nil {
		return s.now()
	}
	return time.Now()
}

func (s *Server) handleHistory(w http.ResponseWriter, r *http.Request) {
	if s.History == nil {
		s.problem(w, r, historyOff())
		return
	}
	hq, format, err := ParseHistoryQuery(r.URL.Query(), s.clock())
	if err != nil {
		s.problem(w, r, err)
		return
	}
	sessions, err := s.History.Sessions(r.Context(), hq)
	if err != nil {
		s.problem(w, r, s.storeFailed(r, err))
		return
	}
	sessions = orEmpty(sessions)
	for i := range sessions {
		sessions[i].Turns = orEmpty(sessions[i].Turns)
		for j := range sessions[i].Turns {
			sessions[i].Turns[j].Waits = orEmpty(sessions[i].Turns[j].Waits)
		}
	}
	if format == "csv" {
		s.writeCSV(w, r, "agentbridge-history.csv", func(b *bytes.Buffer) error { return history.WriteSessionsCSV(b, sessions) })
		return
	}
	s.writeJSON(w, http.StatusOK, HistoryResponse{Sessions: sessions})
}

func (s *Server) handleUsage(w http.ResponseWriter, r *http.Request) {
	if s.History == nil {
		s.problem(w, r, historyOff())
		return
	}
	uq, format, err := ParseUsageQuery(r.URL.Query(), s.clock())
	if err != nil {
		s.problem(w, r, err)
		return
	}
	if uq.Loc == nil {
		uq.Loc = localZone() // nil when it has no name: the store's time.Local
	}
	t, err := s.History.Usage(r.Context(), uq)
	if err != nil {
		s.problem(w, r, s.storeFailed(r, err))
		return
	}
	t.Rows = orEmpty(t.Rows)
	if format == "csv" {
		s.writeCSV(w, r, "agentbridge-usage-by-"+uq.By+".csv", func(b *bytes.Buffer) error { return history.WriteUsageCSV(b, t) })
		return
	}
	s.writeJSON(w, http.StatusOK, t)
}

// writeCSV answers 200 with the CSV write makes, as an attachment named
// name.
func (s *Server) writeCSV(w http.ResponseWriter, r *http.Request, name string, write func(*bytes.Buffer) error) {
	var b bytes.Buffer
	if err := write(&b); err != nil {
		s.problem(w, r, err)
		return
	}
	h := w.Header()
	h.Set("Content-Type", "text/csv; charset=utf-8")
	h.Set("Content-Disposition", `attachment; filename="`+name+`"`)
	h.Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(http.StatusOK)
	w.Write(b.Bytes())
}

// pruneIssue is the 422 problem of a prune body that is not one of its two
// forms.
func pruneIssue(path string, code validate.Code, msg string) *Error {
	e := errorf(http.StatusUnprocessableEntity, "invalid-request", `the body must be {"olderThan": "90d"} or {"before": <epoch ms>}`)
	e.Issues = []validate.Issue{{Path: path, Code: code, Message: msg}}
	return e
}

// ParsePruneRequest reads the body of POST /v1/history/prune at now: the
// time before which the history is removed. A body that is not one of its
// two forms is a 422 *Error whose issue names the field.
func ParsePruneRequest(body []byte, now time.Time) (time.Time, error) {
	var m map[string]json.RawMessage
	if err := json.Unmarshal(body, &m); err != nil || m == nil {
		return time.Time{}, pruneIssue("$", validate.InvalidType, "must be an object")
	}
	for k := range m {
		if k != "olderThan" && k != "before" {
			return time.Time{}, pruneIssue(fieldPath("$", k), validate.UnknownField, "unknown field")
		}
	}
	var olderThan string
	var before int64
	rawOlder, hasOlder := m["olderThan"]
	rawBefore, hasBefore := m["before"]
	if hasOlder && (string(rawOlder) == "null" || json.Unmarshal(rawOlder, &olderThan) != nil) {
		return time.Time{}, pruneIssue("$.olderThan", validate.InvalidType, "must be a string: 90d, 12h")
	}
	if hasBefore && (string(rawBefore) == "null" || json.Unmarshal(rawBefore, &before) != nil) {
		return time.Time{}, pruneIssue("$.before", validate.InvalidType, "must be a whole number of epoch milliseconds")
	}
	switch {
	case hasOlder && hasBefore:
		return time.Time{}, pruneIssue("$.before", validate.Duplicate, "give olderThan or before, not both")
	case hasOlder:
		d, err := history.ParseAge(olderThan)
		if err != nil || d <= 0 {
			return time.Time{}, pruneIssue("$.olderThan", validate.InvalidString, "a positive length of time: 90d, 12h")
		}
		t := now.Add(-d)
		if t.Before(time.UnixMilli(0)) || t.After(now) {
			t = time.UnixMilli(0)
		}
		return t, nil
	case hasBefore:
		if before < 0 || before > maxEpochMs {
			return time.Time{}, pruneIssue("$.before", validate.InvalidInteger, "epoch milliseconds from 0 to the year 9999")
		}
		return time.UnixMilli(before), nil
	}
	return time.Time{}, pruneIssue("$.olderThan", validate.MissingField, "give olderThan or before")
}

func (s *Server) handlePrune(w http.ResponseWriter, r *http.Request) {
	if err := onlyParams(r); err != nil {
		s.problem(w, r, err)
		return
	}
	if s.History == nil {
		s.problem(w, r, historyOff())
		return
	}
	body, err := readJSON(r)
	if err != nil {
		s.problem(w, r, err)
		return
	}
	before, err := ParsePruneRequest(body, s.clock())
	if err != nil {
		s.problem(w, r, err)
		return
	}
	res, err := s.History.Prune(r.Context(), before)
	if err != nil {
		s.problem(w, r, s.storeFailed(r, err))
		return
	}
	s.writeJSON(w, http.StatusOK, res)
}
