package vibe

import (
	"cmp"
	"strings"

	json "github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"

	"github.com/agentbridge/agentbridge"
	"github.com/agentbridge/agentbridge/sources"
	"github.com/agentbridge/agentbridge/sources/internal/kit"
	"github.com/agentbridge/agentbridge/text"
	"github.com/agentbridge/agentbridge/validate"
)

// record is one line of messages.jsonl: a chat message as Vibe sends it
// to the model (OpenAI shape), with Vibe's message_id and injected flag.
// The records carry no timestamps.
type record struct {
	Role       string         `json:"role"`
	Content    jsontext.Value `json:"content"` // a string (or absent on a tool call)
	Injected   bool           `json:"injected"`
	MessageID  string         `json:"message_id"`
	ToolCalls  []toolCall     `json:"tool_calls"`
	Name       string         `json:"name"`         // tool
	ToolCallID string         `json:"tool_call_id"` // tool
}

type toolCall struct {
	ID       string `json:"id"`
	Function struct {
		Name      string         `json:"name"`
		Arguments jsontext.Value `json:"arguments"` // a JSON string holding the arguments
	} `json:"function"`
}

// taskArgs are the arguments of the task tool, which runs a subagent.
type taskArgs struct {
	Task  string `json:"task"`
	Agent string `json:"agent"`
}

// The tags Vibe wraps tool results and cancellations in.
const (
	tagToolError    = "<tool_error>"
	tagCancellation = "<user_cancellation>"
)

// taskTool is the tool that runs a subagent and waits for it.
const taskTool = "task"

// session is what the mapping remembers of one session between records:
// its id (the parent of its subagents), whether a turn is open, the tools
// and subagents still open, and what meta.json said last.
type session struct {
	id                string
	turn              bool
	open              map[string]bool // tool call ids
	subs              map[string]bool // task call ids
	cwd, title, model string
	usage             *agentbridge.Usage // the token totals meta.json said last
	rec               record             // decode scratch
}

// newSession returns the mapping state of session id read from its start.
func newSession(id string) *session {
	return &session{id: id, open: map[string]bool{}, subs: map[string]bool{}}
}

// mapRecord maps one line of messages.jsonl to its lifecycle events
// (appended to out). code is "" for a line that is used or deliberately
// ignored (system messages, injected context), sources.CodeInvalidJSON for
// a line that is not a JSON object, and sources.CodeInvalidRecord for one
// of the wrong shape or a prompt without a message_id.
func (s *session) mapRecord(line []byte, out []agentbridge.Event) ([]agentbridge.Event, string) {
	r := &s.rec
	if code := kit.Decode(line, r); code != "" {
		return out, code
	}
	content := str(r.Content)
	switch r.Role {
	case "user":
		switch {
		case r.Injected:
			// context Vibe adds itself (a "!" command's output): no turn
		case strings.HasPrefix(strings.TrimSpace(content), tagCancellation):
			if s.turn {
				out = s.done(agentbridge.OutcomeCancelled, out)
			}
		case r.MessageID == "":
			return out, sources.CodeInvalidRecord
		default:
			s.turn = true
			out = append(out, agentbridge.Event{Kind: agentbridge.KindTurnStarted, TurnID: validate.SafeID(r.MessageID), PromptText: text.Display(content, validate.MaxText)})
		}
	case "assistant":
		if len(r.ToolCalls) == 0 {
			// the turn's answer: an assistant message that calls no tool
			if s.turn {
				out = s.done(agentbridge.OutcomeSuccess, out)
			}
			return out, ""
		}
		for _, c := range r.ToolCalls {
			out = s.toolStarted(c, out)
		}
	case "tool":
		id := validate.SafeID(r.ToolCallID)
		o := outcome(content)
		if s.open[id] {
			delete(s.open, id)
			out = append(out, agentbridge.Event{Kind: agentbridge.KindToolFinished, ToolID: id, Outcome: o})
		}
		if s.subs[id] {
			delete(s.subs, id)
			if o == agentbridge.OutcomeSuccess && strings.Contains(content, "completed: False") {
				o = agentbridge.OutcomeError
			}
			out = append(out, agentbridge.Event{Kind: agentbridge.KindSubagentDone, SubagentID: id, Outcome: o})
		}
	}
	return out, ""
}

func (s *session) toolStarted(c toolCall, out []agentbridge.Event) []agentbridge.Event {
	id := validate.SafeID(c.ID)
	if id == "" || s.open[id] {
		return out
	}
	name := cmp.Or(text.Display(c.Function.Name, validate.MaxText), "tool")
	s.open[id] = true
	out = append(out, agentbridge.Event{Kind: agentbridge.KindToolStarted, ToolID: id, Name: name})
	if c.Function.Name != taskTool || s.subs[id] || !validate.ValidID(s.id) {
		return out
	}
	// the task tool runs a subagent and waits for it: the subagent's own
	// record is this call (its id) and the result that ends it
	var a taskArgs
	if args := str(c.Function.Arguments); args != "" {
		_ = json.Unmarshal([]byte(args), &a)
	}
	s.subs[id] = true
	return append(out, agentbridge.Event{
		Kind: agentbridge.KindSubagentStarted, SubagentID: id, ParentAgentID: s.id,
		Type: text.Display(a.Agent, validate.MaxSubagentType), Title: text.Display(a.Task, validate.MaxTitle),
	})
}

// outcome reads a tool result: Vibe wraps a failure in <tool_error> and a
// user's refusal or interrupt in <user_cancellation>.
func outcome(text string) agentbridge.Outcome {
	t := strings.TrimSpace(text)
	switch {
	case strings.HasPrefix(t, tagCancellation):
		return agentbridge.OutcomeCancelled
	case strings.HasPrefix(t, tagToolError):
		return agentbridge.OutcomeError
	}
	return agentbridge.OutcomeSuccess
}

// done ends the open turn. Open tools close with it in the fold; a task
// still open leaves its subagent running (it may report later).
func (s *session) done(o agentbridge.Outcome, out []agentbridge.Event) []agentbridge.Event {
	s.turn = false
	clear(s.open)
	return append(out, agentbridge.Event{Kind: agentbridge.KindAgentDone, Outcome: o})
}

// str decodes a JSON string value; anything else is "".
func str(v jsontext.Value) string {
	if len(v) == 0 || v[0] != '"' {
		return ""
	}
	var t string
	if json.Unmarshal(v, &t) != nil {
		return ""
	}
	return t
}

// meta is what the mapping reads of meta.json, which Vibe rewrites (to a
// temporary file renamed over it) after each message it saves.
type meta struct {
	Title       string `json:"title"`
	TitleSource string `json:"title_source"` // "auto" (the first prompt, cut to 50) or "manual"
	Environment struct {
		WorkingDirectory string `json:"working_directory"`
	} `json:"environment"`
	Config struct {
		ActiveModel string `json:"active_model"`
	} `json:"config"`
	// Stats holds the session's token totals so far (no cache split).
	Stats *struct {
		Prompt     *int64 `json:"session_prompt_tokens"`
		Completion *int64 `json:"session_completion_tokens"`
	} `json:"stats"`
}

// mapMeta maps meta.json: session.started with cwd, model and (when the
// user named the session; the automatic title is the first prompt cut
// short, which the prompt itself gives whole) title, when one of them
// changed. code is sources.CodeInvalidJSON for a file that is not a JSON
// object of that shape.
func (s *session) mapMeta(data []byte, out []agentbridge.Event) ([]agentbridge.Event, string) {
	var m meta
	if err := json.Unmarshal(data, &m); err != nil {
		return out, sources.CodeInvalidJSON
	}
	cwd := validate.CleanCwd(m.Environment.WorkingDirectory)
	model := text.Display(m.Config.ActiveModel, validate.MaxModel)
	var title string
	if m.TitleSource == "manual" {
		title = text.Display(m.Title, validate.MaxTitle)
	}
	if (cwd != "" && cwd != s.cwd) || (title != "" && title != s.title) || (model != "" && model != s.model) {
		s.cwd, s.title, s.model = cmp.Or(cwd, s.cwd), cmp.Or(title, s.title), cmp.Or(model, s.model)
		out = append(out, agentbridge.Event{Kind: agentbridge.KindSessionStarted, Cwd: cwd, Title: title, Model: model})
	}
	if st := m.Stats; st != nil && st.Prompt != nil && st.Completion != nil && *st.Prompt >= 0 && *st.Completion >= 0 {
		u := agentbridge.Usage{InputTokens: *st.Prompt, OutputTokens: *st.Completion}
		if s.usage == nil || *s.usage != u {
			s.usage = &u
			// Totals: they replace the sum, however often meta.json is rewritten.
			out = append(out, agentbridge.Event{Kind: agentbridge.KindAgentMetadata, Usage: &agentbridge.UsageReport{Usage: u, Total: true}})
		}
	}
	return out, ""
}
