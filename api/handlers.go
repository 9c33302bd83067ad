package api

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"maps"
	"net/http"
	"os"
	"slices"
	"strconv"
	"strings"

	"github.com/go-chi/chi/v5"

	"github.com/agentbridge/agentbridge"
	"github.com/agentbridge/agentbridge/hub"
	"github.com/agentbridge/agentbridge/sse"
	"github.com/agentbridge/agentbridge/validate"
)

// SourcesResponse is the body of GET /v1/sources.
type SourcesResponse struct {
	Sources []agentbridge.SourceState `json:"sources"`
}

// SessionsResponse is the body of GET /v1/sessions.
type SessionsResponse struct {
	Revision uint64      `json:"revision"`
	Sessions []EntryView `json:"sessions"`
}

// DiagnosticsResponse is the body of GET /v1/diagnostics.
type DiagnosticsResponse struct {
	Diagnostics []agentbridge.DiagnosticEntry `json:"diagnostics"`
}

// ValidationResult is the body of POST /v1/validate/{kind}. Issues lists
// at most validate.MaxIssues issues; IssuesOmitted counts the others.
type ValidationResult struct {
	Valid         bool             `json:"valid"`
	Issues        []validate.Issue `json:"issues"`
	IssuesOmitted int              `json:"issuesOmitted,omitempty"`
}

// PublishResult is the body of a successful publish: the hub's revision
// once the operations are applied (their last record, or later).
type PublishResult struct {
	Revision uint64 `json:"revision"`
}

// HarnessSwitch is the body of POST /v1/sources/{source}/harnesses/{harness}.
type HarnessSwitch struct {
	Enabled *bool `json:"enabled"`
}

// orEmpty returns l, or an empty list when l is nil: a list is [] in a
// response, never null.
func orEmpty[T any](l []T) []T {
	if l == nil {
		return []T{}
	}
	return l
}

func (s *Server) handleSources(w http.ResponseWriter, r *http.Request) {
	if err := onlyParams(r); err != nil {
		s.problem(w, r, err)
		return
	}
	s.writeJSON(w, http.StatusOK, SourcesResponse{Sources: orEmpty(s.Hub.Sources())})
}

func (s *Server) handleSetHarness(w http.ResponseWriter, r *http.Request) {
	source, harness := chi.URLParam(r, "source"), chi.URLParam(r, "harness")
	if !validate.ValidHarnessID(source) {
		s.problem(w, r, errorf(http.StatusNotFound, "unknown-source", "no source has this id"))
		return
	}
	if !validate.ValidHarnessID(harness) {
		s.problem(w, r, errorf(http.StatusNotFound, "unknown-harness", "the source declares no harness with this id"))
		return
	}
	body, err := readJSON(r)
	if err != nil {
		s.problem(w, r, err)
		return
	}
	var sw HarnessSwitch
	if err := decodeStrict(body, &sw); err != nil || sw.Enabled == nil {
		e := errorf(http.StatusUnprocessableEntity, "invalid-request", `the body must be {"enabled": true} or {"enabled": false}`)
		e.Issues = harnessSwitchIssues(body)
		s.problem(w, r, e)
		return
	}
	st, err := s.Hub.SetHarness(source, harness, *sw.Enabled)
	if err != nil {
		s.problem(w, r, err)
		return
	}
	s.writeJSON(w, http.StatusOK, st)
}

// harnessSwitchIssues explains what is wrong with a harness switch body.
func harnessSwitchIssues(body []byte) []validate.Issue {
	var m map[string]json.RawMessage
	if err := json.Unmarshal(body, &m); err != nil {
		return []validate.Issue{{Path: "$", Code: validate.InvalidType, Message: "must be an object"}}
	}
	var is []validate.Issue
	for _, k := range slices.Sorted(maps.Keys(m)) {
		if k != "enabled" {
			is = append(is, validate.Issue{Path: fieldPath("$", k), Code: validate.UnknownField, Message: "unknown field"})
		}
	}
	if v, ok := m["enabled"]; !ok {
		is = append(is, validate.Issue{Path: "$.enabled", Code: validate.MissingField, Message: "required"})
	} else if s := string(bytes.TrimSpace(v)); s != "true" && s != "false" {
		is = append(is, validate.Issue{Path: "$.enabled", Code: validate.InvalidType, Message: "must be a boolean"})
	}
	return is
}

func (s *Server) handleSessions(w http.ResponseWriter, r *http.Request) {
	f, err := parseFilter(r)
	if err != nil {
		s.problem(w, r, err)
		return
	}
	rev, entries := s.Hub.Sessions(f)
	if entries == nil {
		entries = []agentbridge.Entry{}
	}
	views := make([]EntryView, len(entries))
	for i, e := range entries {
		views[i] = s.view(e)
	}
	s.writeJSON(w, http.StatusOK, SessionsResponse{Revision: rev, Sessions: views})
}

func (s *Server) handleSession(w http.ResponseWriter, r *http.Request) {
	if err := onlyParams(r, "host"); err != nil {
		s.problem(w, r, err)
		return
	}
	source, id := chi.URLParam(r, "source"), chi.URLParam(r, "id")
	if !validate.ValidHarnessID(source) || !validate.ValidID(id) {
		s.problem(w, r, errorf(http.StatusNotFound, "unknown-session", "no session with this source and id"))
		return
	}
	// ?host= names the remote of the session; none (or "local"): this
	// bridge's own.
	host := r.URL.Query().Get("host")
	if host == agentbridge.LocalHost {
		host = ""
	}
	if len(r.URL.Query()["host"]) > 1 || (host != "" && !validate.ValidHarnessID(host)) {
		s.problem(w, r, errorf(http.StatusBadRequest, "bad-query", "host must be one remote id, or local"))
		return
	}
	e, ok := s.Hub.SessionOn(host, source, id)
	if !ok && host != "" {
		s.problem(w, r, errorf(http.StatusNotFound, "unknown-session", "no session with this source and id on this host"))
		return
	}
	if !ok && !s.sourceExists(source) {
		s.problem(w, r, errorf(http.StatusNotFound, "unknown-source", "no source has this id"))
		return
	}
	if !ok {
		s.problem(w, r, errorf(http.StatusNotFound, "unknown-session", "no session with this source and id"))
		return
	}
	s.writeJSON(w, http.StatusOK, s.view(e))
}

func (s *Server) handleDiagnostics(w http.ResponseWriter, r *http.Request) {
	if err := onlyParams(r); err != nil {
		s.problem(w, r, err)
		return
	}
	s.writeJSON(w, http.StatusOK, DiagnosticsResponse{Diagnostics: orEmpty(s.Hub.Diagnostics())})
}

func (s *Server) handleEvents(w http.ResponseWriter, r *http.Request) {
	f, err := parseFilter(r, "since", "format")
	if err != nil {
		s.problem(w, r, err)
		return
	}
	if v := r.URL.Query().Get("since"); v != "" {
		if _, err := strconv.ParseUint(v, 10, 64); err != nil {
			s.problem(w, r, errorf(http.StatusBadRequest, "bad-query", "since must be a revision (a non-negative integer)"))
			return
		}
	}
	if v := r.URL.Query().Get("format"); v != "" && v != "ndjson" && v != "sse" {
		s.problem(w, r, errorf(http.StatusBadRequest, "bad-query", "format must be ndjson or sse"))
		return
	}
	if r.Method == http.MethodHead { // the headers of a stream, without one
		w.Header().Set("Content-Type", "text/event-stream")
		if sse.WantsNDJSON(r) {
			w.Header().Set("Content-Type", "application/x-ndjson")
		}
		w.Header().Set("Cache-Control", "no-store")
		w.WriteHeader(http.StatusOK)
		return
	}
	s.Events.Serve(w, r, f)
}

// handleValidate answers POST /v1/validate/{kind}: 200 with every issue.
// ?harnesses=a,b names the switched-on harnesses to check snapshots
// against; without it the harness check is skipped; an empty list switches
// every harness off. ?profile=host checks by the Terminay host's own rules
// (pid and cwd required, nothing stricter); the default, bridge, is the
// bridge's snapshot.
func (s *Server) handleValidate(kind string) http.HandlerFunc {
	check := validate.Kinds[kind]
	return func(w http.ResponseWriter, r *http.Request) {
		if err := onlyParams(r, "harnesses", "profile"); err != nil {
			s.problem(w, r, err)
			return
		}
		q := r.URL.Query()
		prof, ok := validate.ParseProfile(q.Get("profile"))
		if !ok || len(q["profile"]) > 1 {
			s.problem(w, r, errorf(http.StatusBadRequest, "bad-query", "profile must be bridge or host"))
			return
		}
		var hs validate.Harnesses // nil: the harness check is skipped
		if q.Has("harnesses") {
			hs = validate.Harnesses{}
			ids, err := idList(q, "harnesses", validate.ValidHarnessID)
			if err != nil {
				s.problem(w, r, err)
				return
			}
			for _, id := range ids {
				hs[id] = true
			}
		}
		body, err := readJSON(r)
		if err != nil {
			s.problem(w, r, err)
			return
		}
		all := check(body, hs, prof)
		issues, omitted := validate.Cap(all, validate.MaxIssues)
		s.writeJSON(w, http.StatusOK, ValidationResult{Valid: len(all) == 0, Issues: issues, IssuesOmitted: omitted})
	}
}

func (s *Server) handlePublish(w http.ResponseWriter, r *http.Request) {
	source := chi.URLParam(r, "source")
	if !validate.ValidHarnessID(source) {
		s.problem(w, r, errorf(http.StatusNotFound, "unknown-source", "no source has this id"))
		return
	}
	if err := onlyParams(r); err != nil {
		s.problem(w, r, err)
		return
	}
	body, err := readJSON(r)
	if err != nil {
		s.problem(w, r, err)
		return
	}
	checker, _ := s.Hub.(Checker)
	// An unknown or non-push source is answered as such, whatever the body.
	if checker != nil {
		if err := checker.Check(source, nil); err != nil {
			s.problem(w, r, err)
			return
		}
	}
	ops, single, counted := decodeOps(body, s.enabledHarnesses(source))
	issues := counted.Issues
	if len(issues) > 0 && checker != nil && len(ops) > 0 {
		// Report every issue: also those the hub finds in the operations
		// that decoded before the first one that did not (an unknown wait,
		// a missing harness), each checked against the state the earlier
		// ones leave. After an operation that could not be decoded that
		// state is unknown, so later operations are not checked against it.
		var inv *hub.InvalidError
		if err := checker.Check(source, ops); errors.As(err, &inv) {
			hubIssues, more := validate.Cap(inv.Issues, validate.MaxIssues)
			issues = mergeIssues(issues, hubIssues)
			counted.Omitted += more
		}
	}
	if len(issues) > 0 {
		if single {
			issues = unnestSingle(issues)
		}
		e := errorf(http.StatusUnprocessableEntity, "invalid-operation", "the operations were rejected; nothing was applied")
		e.Issues, e.Omitted = issues, counted.Omitted
		s.problem(w, r, e)
		return
	}
	if err := s.Hub.Publish(source, ops); err != nil {
		var inv *hub.InvalidError
		if single && errors.As(err, &inv) {
			inv = &hub.InvalidError{Issues: unnestSingle(inv.Issues)}
			err = inv
		}
		s.problem(w, r, err)
		return
	}
	s.writeJSON(w, http.StatusOK, PublishResult{Revision: s.Hub.Revision()})
}

// sourceExists reports whether a source has this id.
func (s *Server) sourceExists(id string) bool {
	for _, st := range s.Hub.Sources() {
		if st.ID == id {
			return true
		}
	}
	return false
}

// enabledHarnesses returns the switched-on harnesses of a source (nil when
// there is no such source).
func (s *Server) enabledHarnesses(source string) validate.Harnesses {
	for _, st := range s.Hub.Sources() {
		if st.ID != source {
			continue
		}
		hs := validate.Harnesses{}
		for _, h := range st.Harnesses {
			hs[h.ID] = h.Enabled
		}
		return hs
	}
	return nil
}

// mergeIssues merges two lists of issues of an array of operations, each in
// operation order, into one in operation order ("$[2]…" after "$[1]…").
func mergeIssues(a, b []validate.Issue) []validate.Issue {
	out := append(slices.Clone(a), b...)
	slices.SortStableFunc(out, func(x, y validate.Issue) int { return opIndex(x.Path) - opIndex(y.Path) })
	return out
}

// opIndex is the operation index i of a path "$[i]…"; -1 for any other.
func opIndex(path string) int {
	rest, ok := strings.CutPrefix(path, "$[")
	if !ok {
		return -1
	}
	n, _, ok := strings.Cut(rest, "]")
	i, err := strconv.Atoi(n)
	if !ok || err != nil {
		return -1
	}
	return i
}

// unnestSingle rewrites "$[0]…" paths to "$…" for a request that sent one
// op object rather than an array.
func unnestSingle(is []validate.Issue) []validate.Issue {
	out := make([]validate.Issue, len(is))
	for i, x := range is {
		if rest, ok := strings.CutPrefix(x.Path, "$[0]"); ok {
			x.Path = "$" + rest
		}
		out[i] = x
	}
	return out
}

// readJSON reads a request body (already limited by requireJSON) and checks
// that it is one well-formed JSON value: 413 over the limit, 400 otherwise.
// decodeStrict decodes the JSON body into v, a field v does not have
// being an error.
func decodeStrict(body []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	return dec.Decode(v)
}

func readJSON(r *http.Request) ([]byte, error) {
	b, err := io.ReadAll(r.Body)
	if err != nil {
		var mbe *http.MaxBytesError
		if errors.As(err, &mbe) {
			return nil, tooLarge()
		}
		if errors.Is(err, os.ErrDeadlineExceeded) {
			return nil, errorf(http.StatusRequestTimeout, "body-timeout", "the body did not arrive in time")
		}
		return nil, errorf(http.StatusBadRequest, "invalid-json", "the body could not be read")
	}
	if len(bytes.TrimSpace(b)) == 0 {
		return nil, errorf(http.StatusBadRequest, "invalid-json", "the body is empty; send a JSON value")
	}
	if !json.Valid(b) {
		return nil, errorf(http.StatusBadRequest, "invalid-json", "the body is not well-formed JSON: %s", syntaxDetail(b))
	}
	return b, nil
}

// syntaxDetail says where JSON breaks, without repeating the input.
func syntaxDetail(b []byte) string {
	var v any
	err := json.Unmarshal(b, &v)
	var se *json.SyntaxError
	if errors.As(err, &se) {
		return "syntax error at byte " + strconv.FormatInt(se.Offset, 10)
	}
	return "unexpected end or trailing data"
}

// filterParams are the query parameters of the session filter.
var filterParams = []string{"source", "harness", "status", "host", "project", "ancestorPid"}

// parseFilter reads the session filter from the query and refuses unknown
// parameters (extra names the route also takes). Lists are comma-separated
// and may also repeat the parameter.
func parseFilter(r *http.Request, extra ...string) (agentbridge.Filter, error) {
	var f agentbridge.Filter
	if err := onlyParams(r, append(filterParams, extra...)...); err != nil {
		return f, err
	}
	q := r.URL.Query()
	var err error
	if f.Sources, err = idList(q, "source", validate.ValidHarnessID); err != nil {
		return f, err
	}
	if f.Harnesses, err = idList(q, "harness", validate.ValidHarnessID); err != nil {
		return f, err
	}
	if f.Hosts, err = idList(q, "host", validate.ValidHarnessID); err != nil {
		return f, err
	}
	for _, st := range list(q, "status") {
		if !validStatus(st) {
			return f, errorf(http.StatusBadRequest, "bad-query", "status must be a comma list of running, waiting, blocked, idle")
		}
		f.Statuses = append(f.Statuses, agentbridge.Status(st))
	}
	if q.Has("project") {
		p := q.Get("project")
		if len(q["project"]) > 1 || !validate.ValidCwd(p) { // a project is named as a cwd is
			return f, errorf(http.StatusBadRequest, "bad-query", "project must be one absolute, clean path")
		}
		f.Project = p
	}
	if q.Has("ancestorPid") {
		n, err := strconv.Atoi(q.Get("ancestorPid"))
		if len(q["ancestorPid"]) > 1 || err != nil || n < 1 || n > validate.MaxPID {
			return f, errorf(http.StatusBadRequest, "bad-query", "ancestorPid must be one process id from 1 to %d", validate.MaxPID)
		}
		f.AncestorPID = n
	}
	return f, nil
}

func validStatus(s string) bool {
	for _, v := range agentbridge.Statuses {
		if string(v) == s {
			return true
		}
	}
	return false
}

// list splits every value of name on commas, dropping empty items.
func list(q map[string][]string, name string) []string {
	var out []string
	for _, v := range q[name] {
		for _, p := range strings.Split(v, ",") {
			if p = strings.TrimSpace(p); p != "" {
				out = append(out, p)
			}
		}
	}
	return out
}

func idList(q map[string][]string, name string, valid func(string) bool) ([]string, error) {
	ids := list(q, name)
	for _, id := range ids {
		if !valid(id) {
			return nil, errorf(http.StatusBadRequest, "bad-query", "%s must be a comma list of ids ([a-z][a-z0-9-]{0,63})", name)
		}
	}
	return ids, nil
}

// onlyParams refuses query parameters other than allowed, so that a typo
// ("stauts=running") is an error rather than a silently wider answer.
func onlyParams(r *http.Request, allowed ...string) error {
	for name := range r.URL.Query() {
		ok := false
		for _, a := range allowed {
			if name == a {
				ok = true
				break
			}
		}
		if !ok {
			if len(allowed) == 0 {
				return errorf(http.StatusBadRequest, "bad-query", "this route takes no query parameters")
			}
			return errorf(http.StatusBadRequest, "bad-query", "unknown query parameter; this route takes %s", strings.Join(allowed, ", "))
		}
	}
	return nil
}
