package api

import (
	"html/template"
	"mime"
	"net/http"

	"github.com/go-chi/chi/v5"

	"github.com/agentbridge/agentbridge/answer"
	"github.com/agentbridge/agentbridge/text"
)

// maxLinkForm bounds the body of an answer link's form.
const maxLinkForm = 8 << 10

// linkPage is the page of an answer link: what the prompt asks and a form
// that answers it, or what became of the answer. It holds no script; its
// one form posts to the page's own address.
var linkPage = template.Must(template.New("link").Parse(`<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="referrer" content="no-referrer"><title>agentbridge: {{.Heading}}</title>
<style>body{font:16px system-ui,sans-serif;max-width:40rem;margin:2rem auto;padding:0 1rem}pre{white-space:pre-wrap;word-break:break-all;background:#f3f3f3;padding:.75rem}button{font-size:1rem;padding:.5rem 1.25rem;margin-right:.5rem}textarea{width:100%}</style>
</head><body><h1>{{.Heading}}</h1>
{{if .Tool}}<p>{{.Agent}} asks to use <strong>{{.Tool}}</strong>:</p>{{end}}
{{if .Request}}<pre>{{.Request}}</pre>{{end}}
{{if .Text}}<p>{{.Text}}</p>{{end}}
{{if .Form}}<form method="post">
<p><label>If you deny, the reason the agent is told (optional):<br><textarea name="message" rows="2" maxlength="1024"></textarea></label></p>
<p><button name="decision" value="allow">Approve</button><button name="decision" value="deny">Deny</button></p>
</form>{{end}}
</body></html>
`))

type linkView struct {
	Heading, Agent, Tool, Request, Text string
	Form                                bool
}

// writeLinkPage answers with the link page: never cached, never framed,
// no script, its form posting only to itself.
func writeLinkPage(w http.ResponseWriter, r *http.Request, status int, v linkView) {
	h := w.Header()
	h.Set("Content-Type", "text/html; charset=utf-8")
	h.Set("Cache-Control", "no-store")
	h.Set("Referrer-Policy", "no-referrer")
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Content-Security-Policy", "default-src 'none'; style-src 'unsafe-inline'; form-action 'self'; base-uri 'none'; frame-ancestors 'none'")
	w.WriteHeader(status)
	if r.Method != http.MethodHead {
		_ = linkPage.Execute(w, v)
	}
}

// closedLink is the page of a link whose prompt is no longer open.
var closedLink = linkView{Heading: "This prompt is closed",
	Text: "It was answered, answered at the terminal, given up or replaced, or the link is not this bridge's. Nothing was answered."}

// linked resolves an answer link's secret to its open wait; answer links
// are off (404) unless the bridge offers them (a webhook with answerUrl).
func (s *Server) linked(w http.ResponseWriter, r *http.Request) (source, session string, a answer.Answerable, ok bool) {
	if s.Answers == nil || !s.AnswerLinks {
		s.handleNotFound(w, r)
		return "", "", a, false
	}
	source, session, a, ok = s.Answers.Linked(chi.URLParam(r, "link"))
	if !ok {
		writeLinkPage(w, r, http.StatusGone, closedLink)
	}
	return source, session, a, ok
}

// handleLinkPage shows what an answer link's prompt asks, and the form
// that answers it. A GET never answers: link previews and prefetchers
// fetch it.
func (s *Server) handleLinkPage(w http.ResponseWriter, r *http.Request) {
	source, _, a, ok := s.linked(w, r)
	if !ok {
		return
	}
	writeLinkPage(w, r, http.StatusOK, linkView{Heading: "Answer the prompt", Agent: source, Tool: a.Tool, Request: a.Request, Form: true})
}

// handleLinkAnswer answers an answer link's prompt with the form's
// decision: the link is the credential (no token, no cookie), the
// cross-origin protection and the rate limit apply, and the answer is
// audited as the API's are.
func (s *Server) handleLinkAnswer(w http.ResponseWriter, r *http.Request) {
	source, session, a, ok := s.linked(w, r)
	if !ok {
		return
	}
	if mt, _, err := mime.ParseMediaType(r.Header.Get("Content-Type")); err != nil || mt != "application/x-www-form-urlencoded" {
		writeProblem(w, errorf(http.StatusUnsupportedMediaType, "unsupported-media-type", "the body must be the page's form (application/x-www-form-urlencoded)"))
		return
	}
	if !s.answerLimit.Allow() {
		w.Header().Set("Retry-After", "1")
		writeLinkPage(w, r, http.StatusTooManyRequests, linkView{Heading: "Too many answers at once", Text: "Try again in a second."})
		return
	}
	r.Body = http.MaxBytesReader(w, r.Body, maxLinkForm)
	decision, message := r.PostFormValue("decision"), r.PostFormValue("message")
	if (decision != answer.Allow && decision != answer.Deny) || len(message) > answer.MaxMessage {
		writeLinkPage(w, r, http.StatusUnprocessableEntity, linkView{Heading: "Not answered", Text: "Choose Approve or Deny; a reason is at most 1,024 bytes."})
		return
	}
	msg := ""
	if decision == answer.Deny {
		msg = text.Display(message, answer.MaxMessage)
	}
	rec := answer.Record{Client: client(r, false), Source: source, SessionID: session, WaitID: a.WaitID,
		Decision: decision, Message: msg}
	rec.Client.Auth = "link"
	_, err := s.answerWait(rec)
	if err != nil {
		writeLinkPage(w, r, http.StatusConflict, closedLink)
		return
	}
	done := linkView{Heading: "Approved", Agent: source, Tool: a.Tool, Request: a.Request, Text: "The agent runs it now."}
	if decision == answer.Deny {
		done.Heading, done.Text = "Denied", "The agent was told not to run it."
	}
	writeLinkPage(w, r, http.StatusOK, done)
}
