package api

import (
	"errors"
	"net/http"
	"strconv"
	"time"

	"github.com/go-chi/chi/v5"

	"github.com/agentbridge/agentbridge"
	"github.com/agentbridge/agentbridge/fold"
	"github.com/agentbridge/agentbridge/hooks"
	"github.com/agentbridge/agentbridge/validate"
)

// Hooker is implemented by a Hub that takes the agents' hooks (as
// *hub.Hub does); without it POST /v1/hooks/{source} answers 404.
type Hooker interface {
	// Hook folds a decoded hook into a session of source; errors wrap
	// hub.ErrUnknownSource.
	Hook(source, sessionID string, h fold.Hook) error
	// HookRefused records a typed diagnostic for a refused payload.
	HookRefused(source string, d agentbridge.Diagnostic)
}

// HookAtHeader carries when `agentbridge hook` ran (epoch ms), so that two
// hooks that race to the bridge are folded in the order the agent ran them.
// A value that is missing, in the future or over a minute old is replaced
// by the time the request arrived.
const HookAtHeader = "Agentbridge-Hook-At"

// maxHookAge bounds how far back a hook's own time is trusted.
const maxHookAge = time.Minute

// handleHook takes an agent's native hook payload: 202 when taken (also
// when it changes nothing: a duplicate, a late hook), a 4xx problem and a
// diagnostic for the source otherwise. Nothing of the payload is published
// raw.
func (s *Server) handleHook(w http.ResponseWriter, r *http.Request) {
	source := chi.URLParam(r, "source")
	hk, _ := s.Hub.(Hooker)
	if hk == nil || !validate.ValidHarnessID(source) || !hooksOf(source) {
		s.problem(w, r, errorf(http.StatusNotFound, "unknown-source", "no source with hooks has this id"))
		return
	}
	if err := onlyParams(r); err != nil {
		s.problem(w, r, err)
		return
	}
	refuse := func(e *Error, code string) {
		hk.HookRefused(source, agentbridge.Diagnostic{Code: code, Message: "a hook payload was refused: " + e.Detail})
		s.problem(w, r, e)
	}
	body, err := readJSON(r)
	if err != nil {
		var e *Error
		if errors.As(err, &e) {
			code := hooks.CodeInvalidJSON
			if e.Status == http.StatusRequestEntityTooLarge {
				code = hooks.CodeTooLarge
			}
			refuse(e, code)
			return
		}
		s.problem(w, r, err)
		return
	}
	sig, err := hooks.Decode(source, body)
	if err != nil {
		var he *hooks.Error
		if !errors.As(err, &he) {
			s.problem(w, r, err)
			return
		}
		status := http.StatusUnprocessableEntity
		if he.Code == hooks.CodeInvalidJSON {
			status = http.StatusBadRequest
		}
		refuse(&Error{Status: status, Slug: "invalid-hook", Detail: he.Message}, he.Code)
		return
	}
	now := time.Now()
	sig.Hook.At = hookAt(r, now)
	if call, ok := settles(sig); ok && s.Answers != nil {
		s.Answers.Settle(source, sig.SessionID, call)
	}
	// the wait opens before the fold, so that the entry the fold shows
	// waiting is answerable already
	wt := s.openWait(r, source, sig)
	if err := hk.Hook(source, sig.SessionID, sig.Hook); err != nil {
		if wt != nil {
			wt.Leave()
		}
		s.problem(w, r, err)
		return
	}
	if wt != nil {
		s.awaitVerdict(w, r, wt, wt.Until())
		return
	}
	w.WriteHeader(http.StatusAccepted)
}

func hooksOf(source string) bool {
	for _, id := range hooks.Sources() {
		if id == source {
			return true
		}
	}
	return false
}

// hookAt is the hook's own time when it is sane, else now.
func hookAt(r *http.Request, now time.Time) int64 {
	ms := now.UnixMilli()
	v, err := strconv.ParseInt(r.Header.Get(HookAtHeader), 10, 64)
	if err != nil || v > ms || v < ms-maxHookAge.Milliseconds() {
		return ms
	}
	return v
}

// noteOversizedHook records the diagnostic of a hook payload whose
// declared length is over MaxBody, before requireJSON refuses it (413).
func (s *Server) noteOversizedHook(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		source := chi.URLParam(r, "source")
		if hk, ok := s.Hub.(Hooker); ok && r.ContentLength > MaxBody && hooksOf(source) {
			hk.HookRefused(source, agentbridge.Diagnostic{Code: hooks.CodeTooLarge, Message: "a hook payload was refused: it is over 1 MiB"})
		}
		next.ServeHTTP(w, r)
	})
}
