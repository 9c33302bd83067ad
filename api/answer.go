package api

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strconv"
	"time"

	"github.com/go-chi/chi/v5"
	"golang.org/x/time/rate"

	"github.com/agentbridge/agentbridge"
	"github.com/agentbridge/agentbridge/answer"
	"github.com/agentbridge/agentbridge/fold"
	"github.com/agentbridge/agentbridge/hooks"
	"github.com/agentbridge/agentbridge/text"
	"github.com/agentbridge/agentbridge/validate"
)

// WaitHeader is sent by `agentbridge hook --answer` with a PermissionRequest:
// how many seconds the hook waits for an answer. With answering on, the
// bridge then answers 200 at once and writes the verdict
// (answer.Verdict) when the wait closes; with answering off it answers 202
// as for any hook.
const WaitHeader = "Agentbridge-Wait"

// MaxWait bounds what WaitHeader may ask.
const MaxWait = 10 * time.Minute

// Answer rate: answers (accepted or not) per second and burst, for the
// whole bridge.
const (
	AnswerRate  = 2
	AnswerBurst = 10
)

// AnswerRequest is the body of POST /v1/sessions/{source}/{id}/waits/{waitId}/answer.
type AnswerRequest struct {
	Decision string `json:"decision"`          // allow or deny
	Message  string `json:"message,omitempty"` // the reason of a deny, shown to the agent
}

// AnswerResponse is the 200 body of the answer route.
type AnswerResponse struct {
	WaitID   string `json:"waitId"`
	State    string `json:"state"` // always answered
	Decision string `json:"decision"`
}

// WaitConflict is the 409 body of the answer route: a problem document
// with the wait's state and the wait open now, if any.
type WaitConflict struct {
	Problem
	State   string             `json:"state"`
	Current *answer.Answerable `json:"current,omitempty"`
}

// EntryView is a session entry as the REST routes show it: the hub's entry
// and, while its permission prompt waits for an answer, Answerable.
type EntryView struct {
	agentbridge.Entry
	Answerable *answer.Answerable `json:"answerable,omitempty"`
}

// view adds what answering knows to an entry (a remote's session never
// has it: its waits are its own bridge's; nor has an ended session: its
// wait is closed, see endedWait).
func (s *Server) view(e agentbridge.Entry) EntryView {
	v := EntryView{Entry: e}
	if s.Answers != nil && e.Host == "" && !s.endedWait(e) {
		v.Answerable = s.Answers.Answerable(e.Source, e.Snapshot.ID)
	}
	return v
}

// endedWait closes the wait of a session that has ended (its process is
// gone, yet a hook of it may still hold its wait): nobody may answer it.
// It reports whether the session has ended.
func (s *Server) endedWait(e agentbridge.Entry) bool {
	if e.Ended == nil {
		return false
	}
	s.Answers.End(e.Source, e.Snapshot.ID)
	return true
}

// settles reports the call a hook says is over (its tool's later hook),
// "" for the end of a turn; ok is false for a hook that settles nothing.
func settles(sig hooks.Signal) (call string, ok bool) {
	switch sig.Hook.Kind {
	case fold.HookAnswered:
		return sig.Hook.Key, true
	case fold.HookTurnEnd:
		return "", true
	}
	return "", false
}

// openWait opens a wait for a PermissionRequest whose hook asks for one,
// nil when it asks for none or answering is off.
func (s *Server) openWait(r *http.Request, source string, sig hooks.Signal) *answer.Wait {
	if s.Answers == nil || sig.Event != "PermissionRequest" || sig.Hook.Kind != fold.HookAsk {
		return nil
	}
	secs, err := strconv.Atoi(r.Header.Get(WaitHeader))
	if err != nil || secs <= 0 {
		return nil
	}
	d := min(time.Duration(secs)*time.Second, MaxWait)
	w, err := s.Answers.Open(source, sig.SessionID, sig.Hook.Key, sig.Tool, sig.Request, d)
	if err != nil {
		return nil
	}
	return w
}

// awaitVerdict answers a waiting hook: 200 at once, so that the hook knows
// the bridge holds its prompt, then the verdict when the wait closes; no
// body at all when the request ends first (the bridge is stopping).
func (s *Server) awaitVerdict(w http.ResponseWriter, r *http.Request, wt *answer.Wait, until time.Time) {
	defer wt.Leave()
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(http.StatusOK)
	_ = http.NewResponseController(w).Flush()
	ctx, cancel := context.WithDeadline(r.Context(), until)
	defer cancel()
	var v answer.Verdict
	select {
	case v = <-wt.Done():
	case <-ctx.Done():
		if r.Context().Err() != nil {
			return
		}
		v = answer.Verdict{Decision: answer.None}
	}
	b, _ := json.Marshal(v)
	w.Write(append(b, '\n'))
}

// handleAnswer answers the wait open now for a session's permission prompt.
func (s *Server) handleAnswer(w http.ResponseWriter, r *http.Request) {
	if s.Answers == nil {
		s.problem(w, r, errorf(http.StatusForbidden, "answering-off",
			"answering is off on this bridge: set hooks.answer: true in its config and install the hooks with 'agentbridge hooks install --answer'"))
		return
	}
	if r.URL.Query().Has("host") {
		s.problem(w, r, errorf(http.StatusForbidden, "remote-wait",
			"a remote's prompts are answered on that remote's own bridge, never through this one"))
		return
	}
	if err := onlyParams(r); err != nil {
		s.problem(w, r, err)
		return
	}
	source, id, waitID := chi.URLParam(r, "source"), chi.URLParam(r, "id"), chi.URLParam(r, "waitId")
	if !validate.ValidHarnessID(source) || !validate.ValidID(id) || !validate.ValidID(waitID) {
		s.problem(w, r, errorf(http.StatusNotFound, "unknown-wait", "no wait with this source, session and id"))
		return
	}
	if !s.answerLimit.Allow() {
		w.Header().Set("Retry-After", "1")
		s.problem(w, r, errorf(http.StatusTooManyRequests, "too-many-answers", "too many answers at once; try again in a second"))
		return
	}
	body, err := readJSON(r)
	if err != nil {
		s.problem(w, r, err)
		return
	}
	var req AnswerRequest
	if err := decodeStrict(body, &req); err != nil || (req.Decision != answer.Allow && req.Decision != answer.Deny) {
		s.problem(w, r, errorf(http.StatusUnprocessableEntity, "invalid-request", `the body must be {"decision": "allow"} or {"decision": "deny", "message": "why"}`))
		return
	}
	if len(req.Message) > answer.MaxMessage {
		s.problem(w, r, errorf(http.StatusUnprocessableEntity, "invalid-request", "the message is over %d bytes", answer.MaxMessage))
		return
	}
	msg := text.Display(req.Message, answer.MaxMessage)
	if req.Decision == answer.Allow {
		msg = ""
	}
	rec := answer.Record{Client: client(r, s.Token != ""), Source: source, SessionID: id, WaitID: waitID,
		Decision: req.Decision, Message: msg}
	conflict, err := s.answerWait(rec)
	switch {
	case err == nil:
		s.writeJSON(w, http.StatusOK, AnswerResponse{WaitID: waitID, State: answer.StateAnswered, Decision: req.Decision})
	case conflict != nil:
		s.writeConflict(w, conflict)
	case errors.Is(err, answer.ErrNoWait):
		s.problem(w, r, errorf(http.StatusNotFound, "unknown-wait", "this bridge has no such wait (never had, or has forgotten it)"))
	default:
		s.problem(w, r, err)
	}
}

// answerWait gives the wait rec names its verdict (rec's decision and
// message), unless its session has ended, and writes rec, with the
// wait's tool and request and the result, to the audit log. It returns
// the conflict of a wait that is not open.
func (s *Server) answerWait(rec answer.Record) (*answer.Conflict, error) {
	if e, ok := s.Hub.SessionOn("", rec.Source, rec.SessionID); ok {
		s.endedWait(e)
	}
	if cur := s.Answers.Answerable(rec.Source, rec.SessionID); cur != nil && cur.WaitID == rec.WaitID {
		rec.Tool, rec.Request = cur.Tool, cur.Request
	}
	err := s.Answers.Answer(rec.Source, rec.SessionID, rec.WaitID, answer.Verdict{Decision: rec.Decision, Message: rec.Message})
	var conflict *answer.Conflict
	switch {
	case err == nil:
		rec.Result = answer.ResultAccepted
		if s.History != nil {
			s.History.Answered("", rec.Source, rec.SessionID, s.clock().UnixMilli())
		}
	case errors.As(err, &conflict):
		rec.Result, rec.State = answer.ResultConflict, conflict.State
	case errors.Is(err, answer.ErrNoWait):
		rec.Result = answer.ResultNoWait
	}
	s.audit(rec)
	return conflict, err
}

func (s *Server) writeConflict(w http.ResponseWriter, c *answer.Conflict) {
	detail := "this wait is no longer open (" + c.State + "): its prompt was answered or closed"
	if c.Current != nil {
		detail += "; another prompt of the session is open now"
	}
	s.writeTyped(w, http.StatusConflict, "application/problem+json", WaitConflict{
		Problem: Problem{Type: ProblemTypePrefix + "wait-closed", Title: titles["wait-closed"], Status: http.StatusConflict, Detail: detail},
		State:   c.State, Current: c.Current,
	})
}

// audit writes an answer to the audit log; a failure is logged (without
// the record: it names what was asked).
func (s *Server) audit(rec answer.Record) {
	if s.Audit == nil {
		return
	}
	if err := s.Audit.Write(rec); err != nil {
		s.Logger.Error("the answers' audit log could not be written", "err", err)
	}
}

// client says who answered: how it signed in and what it said it is.
func client(r *http.Request, auth bool) answer.Client {
	c := answer.Client{Auth: "none", Addr: r.RemoteAddr,
		UserAgent: validate.Label(r.Header.Get("User-Agent")), Origin: validate.Label(r.Header.Get("Origin"))}
	if auth {
		c.Auth = "token"
		if r.Header.Get("Authorization") == "" {
			c.Auth = "cookie"
		}
	}
	return c
}

// newAnswerLimit is the answer route's limiter.
func newAnswerLimit() *rate.Limiter { return rate.NewLimiter(AnswerRate, AnswerBurst) }
