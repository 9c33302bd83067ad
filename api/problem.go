package api

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"runtime/debug"
	"strings"

	"github.com/go-chi/chi/v5"

	"github.com/agentbridge/agentbridge/hub"
	"github.com/agentbridge/agentbridge/validate"
)

// ProblemTypePrefix starts the type URI of every problem; the slug after
// it (e.g. "not-found") names the kind of problem, as listed in openapi.yaml.
const ProblemTypePrefix = "urn:agentbridge:problem:"

// Problem is an RFC 9457 problem document. Issues is set when validation
// failed: at most validate.MaxIssues of them, IssuesOmitted counting the
// others.
type Problem struct {
	Type          string           `json:"type"`
	Title         string           `json:"title"`
	Status        int              `json:"status"`
	Detail        string           `json:"detail"`
	Issues        []validate.Issue `json:"issues,omitempty"`
	IssuesOmitted int              `json:"issuesOmitted,omitempty"`
}

// Error is a failure with its HTTP form: the status, the problem slug and a
// detail that is safe to show (no paths, prompt text or tokens).
type Error struct {
	Status  int
	Slug    string
	Detail  string
	Issues  []validate.Issue
	Omitted int // issues counted but not in Issues
}

// Error returns the slug and the detail.
func (e *Error) Error() string { return e.Slug + ": " + e.Detail }

// errorf makes an *Error.
func errorf(status int, slug, format string, a ...any) *Error {
	return &Error{Status: status, Slug: slug, Detail: fmt.Sprintf(format, a...)}
}

// hubErrors maps the hub's sentinel errors to their HTTP form, in one place.
var hubErrors = []struct {
	err    error
	status int
	slug   string
}{
	{hub.ErrUnknownSource, http.StatusNotFound, "unknown-source"},
	{hub.ErrUnknownHarness, http.StatusNotFound, "unknown-harness"},
	{hub.ErrNotPush, http.StatusConflict, "not-a-push-source"},
	{hub.ErrInvalid, http.StatusUnprocessableEntity, "invalid-operation"},
}

// titles are the problem titles by slug.
var titles = map[string]string{
	"bad-query":              "Bad query parameter",
	"invalid-json":           "Malformed JSON",
	"unsupported-media-type": "Unsupported media type",
	"body-too-large":         "Request body too large",
	"body-timeout":           "Request body timed out",
	"not-found":              "Not found",
	"unknown-source":         "Unknown source",
	"unknown-harness":        "Unknown harness",
	"unknown-session":        "Unknown session",
	"method-not-allowed":     "Method not allowed",
	"unauthorized":           "Unauthorized",
	"forbidden-host":         "Host not allowed",
	"forbidden-origin":       "Cross-origin request refused",
	"invalid-operation":      "Invalid operation",
	"invalid-request":        "Invalid request",
	"invalid-hook":           "Hook payload refused",
	"not-a-push-source":      "Not a push source",
	"internal":               "Internal error",
	"answering-off":          "Answering is off",
	"remote-wait":            "A remote's prompt",
	"unknown-wait":           "Unknown wait",
	"too-many-answers":       "Too many answers",
	"wait-closed":            "The wait is closed",
	"history-off":            "The history is off",
	"history-unavailable":    "The history is unavailable",
}

// problem writes err as a problem document. An *Error is written as is; a
// hub sentinel is mapped by hubErrors (its detail is the sentinel's text
// without the package prefix); anything else is a 500 whose detail
// reveals nothing, and is logged.
func (s *Server) problem(w http.ResponseWriter, r *http.Request, err error) {
	var e *Error
	if !errors.As(err, &e) {
		e = s.fromHub(err)
	}
	if e == nil {
		s.Logger.Error("internal error", "method", r.Method, "route", routePattern(r), "err", err)
		e = errorf(http.StatusInternalServerError, "internal", "the bridge failed to answer; see its log")
	}
	writeProblem(w, e)
}

func (s *Server) fromHub(err error) *Error {
	for _, m := range hubErrors {
		if errors.Is(err, m.err) {
			e := &Error{Status: m.status, Slug: m.slug, Detail: titles[m.slug]}
			switch m.slug {
			case "unknown-source":
				e.Detail = "no source has this id"
			case "unknown-harness":
				e.Detail = "the source declares no harness with this id"
			case "not-a-push-source":
				e.Detail = "this source reports on its own and takes no published operations"
			case "invalid-operation":
				e.Detail = "the operations were rejected; nothing was applied"
				var inv *hub.InvalidError
				if errors.As(err, &inv) {
					e.Issues = inv.Issues
				}
				if e.Issues == nil {
					e.Issues = []validate.Issue{}
				}
			}
			return e
		}
	}
	return nil
}

func writeProblem(w http.ResponseWriter, e *Error) {
	title := titles[e.Slug]
	if title == "" {
		title = http.StatusText(e.Status)
	}
	var issues []validate.Issue
	omitted := e.Omitted
	if e.Issues != nil {
		var more int
		issues, more = validate.Cap(e.Issues, validate.MaxIssues)
		omitted += more
	}
	b, err := json.Marshal(Problem{Type: ProblemTypePrefix + e.Slug, Title: title, Status: e.Status, Detail: e.Detail, Issues: issues, IssuesOmitted: omitted})
	if err != nil { // cannot happen: every field is plain data
		b = []byte(`{"type":"urn:agentbridge:problem:internal","title":"Internal error","status":500,"detail":"encoding failed"}`)
	}
	h := w.Header()
	h.Set("Content-Type", "application/problem+json")
	h.Set("X-Content-Type-Options", "nosniff")
	h.Del("Content-Length")
	w.WriteHeader(e.Status)
	w.Write(append(b, '\n'))
}

// writeJSON writes v as the JSON body with status.
func (s *Server) writeJSON(w http.ResponseWriter, status int, v any) {
	s.writeTyped(w, status, "application/json", v)
}

// writeTyped writes v as the JSON body with status and content type ctype.
func (s *Server) writeTyped(w http.ResponseWriter, status int, ctype string, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		s.Logger.Error("encode response", "err", err)
		writeProblem(w, errorf(http.StatusInternalServerError, "internal", "the bridge failed to encode its answer"))
		return
	}
	w.Header().Set("Content-Type", ctype)
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(status)
	w.Write(append(b, '\n'))
}

// handleNotFound answers unknown paths.
func (s *Server) handleNotFound(w http.ResponseWriter, r *http.Request) {
	writeProblem(w, errorf(http.StatusNotFound, "not-found", "no route for this path"))
}

// handleMethodNotAllowed answers a known path with the wrong method, with
// the Allow header RFC 9110 asks for.
func (s *Server) handleMethodNotAllowed(w http.ResponseWriter, r *http.Request) {
	if s.router != nil {
		var allow []string
		if s.router.Match(chi.NewRouteContext(), http.MethodGet, r.URL.Path) {
			allow = append(allow, http.MethodGet, http.MethodHead) // HEAD goes wherever GET does
		}
		if s.router.Match(chi.NewRouteContext(), http.MethodPost, r.URL.Path) {
			allow = append(allow, http.MethodPost)
		}
		if len(allow) > 0 {
			w.Header().Set("Allow", strings.Join(allow, ", "))
		}
	}
	writeProblem(w, errorf(http.StatusMethodNotAllowed, "method-not-allowed", "this path does not take %s", r.Method))
}

// recoverer turns a panic into a 500 problem and a log line. It re-panics
// http.ErrAbortHandler, which ends the connection on purpose.
func (s *Server) recoverer(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		defer func() {
			v := recover()
			if v == nil {
				return
			}
			if v == http.ErrAbortHandler {
				panic(v)
			}
			s.Logger.Error("panic", "method", r.Method, "route", routePattern(r), "panic", fmt.Sprint(v), "stack", string(debug.Stack()))
			if r.Header.Get("Connection") != "Upgrade" {
				writeProblem(w, errorf(http.StatusInternalServerError, "internal", "the bridge failed to answer; see its log"))
			}
		}()
		next.ServeHTTP(w, r)
	})
}
