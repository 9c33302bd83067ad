// Package api is the bridge's HTTP surface (docs/contract.md section 3): the /v1
// REST routes, the stream route that it hands to the sse package, health,
// metrics, the dashboard and the OpenAPI document, behind the security rules
// of docs/contract.md section 6 (Host allow-list, Origin policy, token).
//
// Server depends on the hub and the stream only through the small
// interfaces declared here, so that its tests run against fakes.
package api

import (
	"context"
	"io/fs"
	"log/slog"
	"net"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/go-chi/chi/v5"
	"github.com/go-chi/chi/v5/middleware"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"golang.org/x/time/rate"

	"github.com/agentbridge/agentbridge"
	"github.com/agentbridge/agentbridge/answer"
	"github.com/agentbridge/agentbridge/hub"
	"github.com/agentbridge/agentbridge/validate"
	"github.com/agentbridge/agentbridge/web"
)

// MaxBody is the largest request body accepted (1 MiB); larger ones get 413.
const MaxBody = 1 << 20

// Hub is the ordered state the API reads and changes (implemented by
// *hub.Hub).
type Hub interface {
	// Sources lists every source with its harness switches.
	Sources() []agentbridge.SourceState
	// SetHarness switches one harness and returns the source's new state;
	// errors wrap hub.ErrUnknownSource or hub.ErrUnknownHarness.
	SetHarness(source, harness string, enabled bool) (agentbridge.SourceState, error)
	// Sessions returns the sessions f selects and the revision they are at.
	Sessions(f agentbridge.Filter) (uint64, []agentbridge.Entry)
	// Session returns one session; false when there is none.
	// SessionOn returns one session of host ("" for this bridge's own).
	SessionOn(host, source, id string) (agentbridge.Entry, bool)
	// Diagnostics returns the recent diagnostics, oldest first.
	Diagnostics() []agentbridge.DiagnosticEntry
	// Publish applies ops to a push source, all or nothing. Errors wrap
	// hub.ErrUnknownSource, hub.ErrNotPush or are an *hub.InvalidError
	// with paths from the array ("$[i]…").
	Publish(source string, ops []agentbridge.Op) error
	// Revision returns the current revision.
	Revision() uint64
}

// Checker is implemented by a Hub that can also validate publish
// operations without applying them (as *hub.Hub does): the publish route
// then reports the hub's issues too when some operations fail to decode,
// and answers an unknown or non-push source before looking at the body.
type Checker interface {
	// Check validates ops as Publish does and applies nothing; an op with
	// an empty Op is skipped. Check(source, nil) fails as Publish does
	// for a source that is unknown or not a push source.
	Check(source string, ops []agentbridge.Op) error
}

// Events serves GET /v1/events for the sessions f selects (implemented by
// *sse.Handler). It returns when the client goes away or r's context ends.
type Events interface {
	Serve(w http.ResponseWriter, r *http.Request, f agentbridge.Filter)
}

// EventsFunc adapts a function to Events.
type EventsFunc func(w http.ResponseWriter, r *http.Request, f agentbridge.Filter)

// Serve calls fn.
func (fn EventsFunc) Serve(w http.ResponseWriter, r *http.Request, f agentbridge.Filter) { fn(w, r, f) }

// Server is the HTTP API. Set its fields, then call Handler once; the
// fields must not change afterwards.
type Server struct {
	// Hub holds the state. Required.
	Hub Hub
	// Events serves the stream. Required.
	Events Events
	// Addr is the address actually listened on (host:port, after port 0 is
	// resolved). Its port is the one the Host check accepts. Required.
	Addr string
	// Token is the bearer token; empty turns authentication off.
	Token string
	// AllowedHosts are Host names ("name" or "name:port") accepted besides
	// localhost and loopback IPs; a name without a port takes Addr's port.
	AllowedHosts []string
	// AllowedOrigins are exact origins allowed cross-origin; they get CORS
	// headers. Nil sends no CORS headers at all.
	AllowedOrigins []string
	// Gatherer is what GET /metrics exposes; nil exposes nothing but the
	// process's Go metrics of an empty registry.
	Gatherer prometheus.Gatherer
	// Dashboard is the dashboard's file tree served at "/"; nil means
	// web.FS().
	Dashboard fs.FS
	// OpenAPI is the document served at /openapi.yaml; nil means
	// agentbridge.OpenAPI.
	OpenAPI []byte
	// Version is reported by GET /healthz.
	Version string
	// BodyTimeout bounds the time to receive a request body, from the end
	// of its headers (408 after it); 0 means DefaultBodyTimeout.
	BodyTimeout time.Duration
	// Logger receives internal errors and, at debug level, one line per
	// request; nil discards.
	Logger *slog.Logger

	// Answers holds the permission prompts that hooks wait on (opt-in
	// answering); nil turns answering off: a hook that asks to wait gets
	// 202 at once, the answer route 403.
	Answers *answer.Waits
	// Audit logs every answer; nil logs none.
	Audit *answer.Audit
	// AnswerLinks serves the answer links webhooks carry (GET and POST
	// /answer/{link}: the link's secret is the credential) when Answers is
	// set too; off, those routes are 404.
	AnswerLinks bool

	// History is the bridge's history (GET /v1/history, GET /v1/usage,
	// POST /v1/history/prune); nil turns it off: those routes answer a 404
	// problem, history-off.
	History History

	now         func() time.Time // the clock of relative times; nil: time.Now
	answerLimit *rate.Limiter
	port        string
	cookie      string // SessionCookie(Token); empty without a token
	loopback    bool
	router      chi.Router
}

// Handler builds the router. Middleware order, outermost first: panic
// recovery, the body guard (guardBody), request id, Host check; then per route group the Origin policy,
// the token, and for POSTs cross-origin protection, content type and body
// size.
func (s *Server) Handler() http.Handler {
	if s.Logger == nil {
		s.Logger = slog.New(slog.DiscardHandler)
	}
	if s.Dashboard == nil {
		s.Dashboard = web.FS()
	}
	if s.OpenAPI == nil {
		s.OpenAPI = agentbridge.OpenAPI
	}
	if s.Gatherer == nil {
		s.Gatherer = prometheus.NewRegistry()
	}
	host, port, err := net.SplitHostPort(s.Addr)
	if err != nil {
		panic("api: Server.Addr must be host:port: " + err.Error())
	}
	if p, err := strconv.Atoi(port); err != nil || p <= 0 {
		panic("api: Server.Addr needs the real port, not " + strconv.Quote(port))
	}
	s.port = port
	if s.Token != "" {
		s.cookie = SessionCookie(s.Token)
	}
	s.loopback = isLoopbackName(host)
	s.answerLimit = newAnswerLimit()

	r := chi.NewRouter()
	s.router = r
	r.NotFound(s.handleNotFound)
	r.MethodNotAllowed(s.handleMethodNotAllowed)
	// HEAD is answered wherever GET is (GetHead), after the Host check.
	r.Use(noFraming, s.recoverer, s.guardBody, middleware.RequestID, s.logRequests, s.checkHost, middleware.GetHead)

	r.Get("/healthz", s.handleHealthz)
	r.Get("/openapi.yaml", s.handleOpenAPI)
	r.With(s.checkOrigin, s.authenticate).Get("/metrics", s.handleMetrics)

	r.Route("/v1", func(r chi.Router) {
		r.Use(s.checkOrigin, s.cors, s.authenticate, middleware.NoCache)
		r.Get("/sources", s.handleSources)
		r.Get("/sessions", s.handleSessions)
		r.Get("/sessions/{source}/{id}", s.handleSession)
		r.Get("/diagnostics", s.handleDiagnostics)
		r.Get("/events", s.handleEvents)
		r.Get("/history", s.handleHistory)
		r.Get("/usage", s.handleUsage)
		r.Group(func(r chi.Router) {
			r.Use(s.crossOriginProtection(), s.requireJSON)
			r.Post("/sources/{source}/harnesses/{harness}", s.handleSetHarness)
			r.Post("/sources/{source}/publish", s.handlePublish)
			r.Post("/history/prune", s.handlePrune)
			for kind := range validate.Kinds {
				r.Post("/validate/"+kind, s.handleValidate(kind))
			}
		})
		r.Group(func(r chi.Router) {
			r.Use(s.crossOriginProtection(), s.noteOversizedHook, s.requireJSON)
			r.Post("/hooks/{source}", s.handleHook)
		})
		r.Group(func(r chi.Router) {
			r.Use(s.crossOriginProtection(), s.requireJSON)
			r.Post("/sessions/{source}/{id}/waits/{waitId}/answer", s.handleAnswer)
		})
	})

	r.Get("/answer/{link}", s.handleLinkPage)
	r.With(s.crossOriginProtection()).Post("/answer/{link}", s.handleLinkAnswer)

	r.Get("/", s.handleDashboard)
	r.Get("/*", s.handleDashboard)
	return r
}

// noFraming forbids every page of the bridge to be framed, by any origin
// (CSP frame-ancestors, and X-Frame-Options for older browsers): cookies
// ignore the port, so a page on another local port could otherwise frame
// the signed-in dashboard and have its switches clicked.
func noFraming(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Security-Policy", "frame-ancestors 'none'")
		w.Header().Set("X-Frame-Options", "DENY")
		next.ServeHTTP(w, r)
	})
}

// Health is the body of GET /healthz.
type Health struct {
	Status  string `json:"status"` // always "ok"
	Version string `json:"version,omitempty"`
}

// handleHealthz answers liveness without authentication.
func (s *Server) handleHealthz(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Cache-Control", "no-store")
	s.writeJSON(w, http.StatusOK, Health{Status: "ok", Version: s.Version})
}

// handleOpenAPI serves the API's own description.
func (s *Server) handleOpenAPI(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "application/yaml")
	w.Write(s.OpenAPI)
}

// handleMetrics serves Prometheus metrics (behind the token).
func (s *Server) handleMetrics(w http.ResponseWriter, r *http.Request) {
	promhttp.HandlerFor(s.Gatherer, promhttp.HandlerOpts{ErrorLog: slog.NewLogLogger(s.Logger.Handler(), slog.LevelError)}).ServeHTTP(w, r)
}

// logRequests logs each request at debug level (never the query: it may
// carry the one-time token; nor the token where a path holds it, pasted
// into the wrong place of a URL).
func (s *Server) logRequests(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !s.Logger.Enabled(r.Context(), slog.LevelDebug) {
			next.ServeHTTP(w, r)
			return
		}
		ww := middleware.NewWrapResponseWriter(w, r.ProtoMajor)
		start := time.Now()
		next.ServeHTTP(ww, r)
		p := r.URL.Path
		if s.Token != "" {
			p = strings.ReplaceAll(p, s.Token, "[token]")
		}
		s.Logger.LogAttrs(context.Background(), slog.LevelDebug, "request",
			slog.String("method", r.Method), slog.String("path", p),
			slog.Int("status", ww.Status()), slog.Duration("took", time.Since(start)),
			slog.String("id", middleware.GetReqID(r.Context())))
	})
}

var (
	_ Hub     = (*hub.Hub)(nil)
	_ Checker = (*hub.Hub)(nil)
	_ Hooker  = (*hub.Hub)(nil)
)
