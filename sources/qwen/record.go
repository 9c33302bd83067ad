package qwen

import (
	"slices"
	"strings"

	json "github.com/go-json-experiment/json"

	"github.com/go-json-experiment/json/jsontext"

	"github.com/agentbridge/agentbridge"
	"github.com/agentbridge/agentbridge/fold"
	"github.com/agentbridge/agentbridge/sources"
	"github.com/agentbridge/agentbridge/sources/internal/kit"
	"github.com/agentbridge/agentbridge/text"
	"github.com/agentbridge/agentbridge/validate"
)

// record holds the fields of a chat line that the mapping reads: a
// Claude-like envelope (uuid, sessionId, timestamp, type, cwd) around
// Gemini-style message parts.
type record struct {
	UUID      string `json:"uuid"`
	SessionID string `json:"sessionId"`
	Timestamp string `json:"timestamp"`
	Type      string `json:"type"`    // user, assistant, tool_result, system
	Subtype   string `json:"subtype"` // notification, ui_telemetry, attribution_snapshot…
	Cwd       string `json:"cwd"`
	Model     string `json:"model"`
	Message   struct {
		Parts []struct {
			Text         *string `json:"text"`
			Thought      bool    `json:"thought"`
			FunctionCall *struct {
				ID   string         `json:"id"`
				Name string         `json:"name"`
				Args jsontext.Value `json:"args"`
			} `json:"functionCall"`
			FunctionResponse *struct {
				Response struct {
					Output string `json:"output"`
				} `json:"response"`
			} `json:"functionResponse"`
		} `json:"parts"`
	} `json:"message"`
	SystemPayload struct {
		DisplayText string `json:"displayText"` // what the user typed, when hook context was added
		// UIEvent is a ui_telemetry record's event: qwen-code.tool_call is
		// written once a tool has run (or was refused), with the user's
		// decision, just before its tool_result.
		UIEvent struct {
			Name   string `json:"event.name"`
			CallID string `json:"call_id"`
		} `json:"uiEvent"`
	} `json:"systemPayload"`
	ToolCallResult struct {
		CallID string `json:"callId"`
		Status string `json:"status"` // success, error, cancelled
	} `json:"toolCallResult"`
	// UsageMetadata is an assistant record's token counts, as the Gemini
	// API gives them: the prompt includes the cached tokens, thoughts are
	// counted apart from the candidates.
	UsageMetadata *struct {
		Prompt     int64 `json:"promptTokenCount"`
		Candidates int64 `json:"candidatesTokenCount"`
		Thoughts   int64 `json:"thoughtsTokenCount"`
		Cached     int64 `json:"cachedContentTokenCount"`
	} `json:"usageMetadata"`
}

// State is what the mapping carries from one line of a chat to the next:
// what the chat's format needs. Whether a turn is open and which tools
// and subagents run come from the session's fold (fold.View), loaded
// into the scratch fields at each line.
type State struct {
	started bool
	meta    kit.Meta // the title from the first prompt, the model last reported
	// waits are the tools that wait for the user's approval. They stay
	// here (the fold's waits are also the hooks', which the hub folds from
	// another goroutine), kept to the tools the fold has open.
	waits []string
	mode  string // the approval mode (mode.go); "" is unknown: no approvals inferred

	// scratch, loaded from the view at each line (load)
	open  bool     // a turn is open
	tools []string // started, not finished
	subs  []string // the tools of tools that are subagents (the agent tool), running
	bg    []string // subagents launched in the background, running past their turn
}

// load loads what the fold knows into the scratch fields and drops the
// waits of tools the fold closed (an agent.exited closes them all).
func (st *State) load(v fold.View) {
	st.open = v.InTurn()
	st.tools = v.OpenTools(st.tools[:0])
	st.waits = slices.DeleteFunc(st.waits, func(w string) bool { return !st.has(w) })
	st.subs, st.bg = st.subs[:0], v.RunningSubagents(st.bg[:0])
	st.bg = slices.DeleteFunc(st.bg, func(a string) bool {
		if st.has(a) {
			st.subs = append(st.subs, a)
			return true
		}
		return false
	})
}

// SetApprovalMode sets the approval mode the session runs in (ModeDefault
// and the others), which decides which tool calls wait for the user.
func (st *State) SetApprovalMode(mode string) { st.mode = mode }

// Map maps one chat line of session id to its events; v is the view of
// the session's fold as the lines before left it. code is a
// sources.Code* for a line that was skipped.
func Map(id string, v fold.View, line []byte, st *State) (events []agentbridge.Event, code string) {
	if len(line) == 0 || line[0] != '{' {
		return nil, sources.CodeInvalidJSON
	}
	var r record
	if err := json.Unmarshal(line, &r); err != nil {
		return nil, sources.CodeInvalidJSON
	}
	if r.Type == "" || (r.SessionID != "" && r.SessionID != id) {
		return nil, sources.CodeInvalidRecord
	}
	at := sources.Millis(r.Timestamp)
	st.load(v)
	add := func(e agentbridge.Event) { events = append(events, e) }
	if !st.started {
		st.started = true
		add(agentbridge.Event{Kind: agentbridge.KindSessionStarted, OccurredAt: at, Cwd: validate.CleanCwd(r.Cwd)})
	}
	switch r.Type {
	case "user":
		if r.Subtype == "notification" {
			// A background subagent's end: Qwen Code tells the model in a
			// new turn of its own.
			call, status, ok := taskNotification(&r)
			i := slices.Index(st.bg, call)
			if !ok || i < 0 || !validate.ValidID(r.UUID) {
				break
			}
			st.bg = append(st.bg[:i], st.bg[i+1:]...)
			add(agentbridge.Event{Kind: agentbridge.KindSubagentDone, SubagentID: call, Outcome: status, OccurredAt: at})
			if !st.open {
				st.open = true
				add(agentbridge.Event{Kind: agentbridge.KindTurnStarted, TurnID: r.UUID, OccurredAt: at})
			}
			break
		}
		if r.Subtype != "" {
			break // other CLI-made user records
		}
		text, prompt := promptText(&r)
		if !prompt || !validate.ValidID(r.UUID) {
			break
		}
		st.finishTools(add, agentbridge.OutcomeCancelled)
		if st.open {
			// The turn before got no answer: Escape before the model's reply
			// writes nothing at all, and Qwen Code sends a prompt typed while
			// it works only once the turn is over. It ended, cancelled, by
			// this prompt at the latest.
			add(agentbridge.Event{Kind: agentbridge.KindAgentDone, Outcome: agentbridge.OutcomeCancelled, OccurredAt: at})
		}
		st.open = true
		st.meta.StartTurn(add, r.UUID, at, text)
	case "assistant":
		if e, ok := st.meta.Model(r.Model); ok {
			add(e)
		}
		if u := r.UsageMetadata; u != nil && u.Prompt >= 0 && u.Candidates >= 0 && u.Thoughts >= 0 && u.Cached >= 0 {
			cached := min(u.Cached, u.Prompt)
			add(agentbridge.Event{Kind: agentbridge.KindAgentMetadata, OccurredAt: at, Usage: &agentbridge.UsageReport{
				Usage:     agentbridge.Usage{InputTokens: u.Prompt - cached, OutputTokens: u.Candidates + u.Thoughts, CacheReadTokens: cached},
				MessageID: validate.SafeID(r.UUID)}})
		}
		if !st.open {
			break
		}
		calls, text := 0, false
		for _, p := range r.Message.Parts {
			switch {
			case p.FunctionCall != nil:
				calls++
				if !validate.ValidID(p.FunctionCall.ID) || st.has(p.FunctionCall.ID) {
					continue
				}
				name := validate.Label(p.FunctionCall.Name)
				if name == "" {
					name = "tool"
				}
				call := p.FunctionCall.ID
				st.tools = append(st.tools, call)
				add(agentbridge.Event{Kind: agentbridge.KindToolStarted, ToolID: call, Name: name, OccurredAt: at})
				if asks(p.FunctionCall.Name, st.mode) {
					st.waits = append(st.waits, call)
					add(agentbridge.Event{Kind: agentbridge.KindWaitStarted, WaitID: call, State: agentbridge.StatusWaiting, OccurredAt: at,
						Reason: approvalReason(name, p.FunctionCall.Args)})
				}
				if p.FunctionCall.Name == toolAgent {
					var in struct {
						Description  string `json:"description"`
						SubagentType string `json:"subagent_type"`
					}
					_ = json.Unmarshal(p.FunctionCall.Args, &in)
					st.subs = append(st.subs, call)
					add(agentbridge.Event{Kind: agentbridge.KindSubagentStarted, SubagentID: call, ParentAgentID: id, OccurredAt: at,
						Title: validate.Title(in.Description), Type: validate.Label(in.SubagentType)})
				}
			case p.Text != nil && !p.Thought && strings.TrimSpace(*p.Text) != "":
				text = true
			}
		}
		// A reply with text and no tool call ends the turn; one that calls
		// tools is followed by their results and another reply.
		if calls == 0 && text {
			st.finishTools(add, agentbridge.OutcomeSuccess)
			st.open = false
			add(agentbridge.Event{Kind: agentbridge.KindAgentDone, Outcome: agentbridge.OutcomeSuccess, OccurredAt: at})
		}
	case "system":
		// The tool has run or was refused: whatever it waited for is over.
		if ev := r.SystemPayload.UIEvent; r.Subtype == "ui_telemetry" && ev.Name == "qwen-code.tool_call" && st.open {
			st.endWait(add, ev.CallID, at)
		}
	case "tool_result":
		id := r.ToolCallResult.CallID
		if !st.open || !st.has(id) {
			break
		}
		out := agentbridge.OutcomeSuccess
		switch r.ToolCallResult.Status {
		case "error":
			out = agentbridge.OutcomeError
		case "cancelled":
			out = agentbridge.OutcomeCancelled
		}
		st.endWait(add, id, at)
		st.drop(id)
		add(agentbridge.Event{Kind: agentbridge.KindToolFinished, ToolID: id, Outcome: out})
		if i := slices.Index(st.subs, id); i >= 0 {
			st.subs = append(st.subs[:i], st.subs[i+1:]...)
			if out == agentbridge.OutcomeSuccess && backgroundLaunch(&r) && len(st.bg) < validate.MaxSubagents {
				st.bg = append(st.bg, id) // it runs on; a notification ends it
			} else {
				add(agentbridge.Event{Kind: agentbridge.KindSubagentDone, SubagentID: id, Outcome: out, OccurredAt: at})
			}
		}
		if out == agentbridge.OutcomeCancelled {
			// A denied (or cancelled) tool ends the turn: the CLI is back at
			// its prompt without asking the model again.
			st.finishTools(add, agentbridge.OutcomeCancelled)
			st.open = false
			add(agentbridge.Event{Kind: agentbridge.KindAgentDone, Outcome: agentbridge.OutcomeCancelled, OccurredAt: at})
		}
	}
	return events, ""
}

// backgroundLaunch reports whether an agent tool's result says that the
// subagent was launched in the background (the default of a top-level
// agent call in 0.24): it is not done yet.
func backgroundLaunch(r *record) bool {
	for _, p := range r.Message.Parts {
		if f := p.FunctionResponse; f != nil && strings.HasPrefix(f.Response.Output, "Background agent launched") {
			return true
		}
	}
	return false
}

// taskNotification reads the <task-notification> a notification record
// carries: the agent call it is about and how the subagent ended.
func taskNotification(r *record) (call string, out agentbridge.Outcome, ok bool) {
	for _, p := range r.Message.Parts {
		if p.Text == nil || !strings.Contains(*p.Text, "<task-notification>") {
			continue
		}
		call, status := element(*p.Text, "tool-use-id"), element(*p.Text, "status")
		switch status {
		case "completed":
			out = agentbridge.OutcomeSuccess
		case "failed":
			out = agentbridge.OutcomeError
		case "cancelled":
			out = agentbridge.OutcomeCancelled
		default:
			return "", "", false
		}
		return call, out, call != ""
	}
	return "", "", false
}

// element returns the text of the first <name>…</name> in s.
func element(s, name string) string {
	_, rest, ok := strings.Cut(s, "<"+name+">")
	if !ok {
		return ""
	}
	v, _, ok := strings.Cut(rest, "</"+name+">")
	if !ok {
		return ""
	}
	return strings.TrimSpace(v)
}

// promptText returns the text the user typed and whether the record is a
// prompt at all (not a tool's functionResponse sent back as user).
func promptText(r *record) (string, bool) {
	var b strings.Builder
	for _, p := range r.Message.Parts {
		if p.FunctionResponse != nil {
			return "", false
		}
		if p.Text != nil && !strings.HasPrefix(strings.TrimSpace(*p.Text), "<qwen:") {
			b.WriteString(*p.Text)
		}
	}
	text := strings.TrimSpace(b.String())
	if d := strings.TrimSpace(r.SystemPayload.DisplayText); d != "" {
		text = d
	}
	return text, text != ""
}

// asksApproval names the tools that Qwen Code asks the user about before
// running them in its default approval mode (edits, shell commands, web
// fetches, subagents). On disk a pending approval is the tool's
// functionCall with nothing after it; a tool that runs without asking (a
// read-only shell command, an allow rule) writes nothing different, so its
// run shows as waiting too, until its result.
var asksApproval = map[string]bool{
	"run_shell_command": true,
	"edit":              true,
	"write_file":        true,
	"notebook_edit":     true,
	"web_fetch":         true,
	toolAgent:           true,
}

// toolAgent is the tool that runs a subagent.
const toolAgent = "agent"

// approvalDetail are the functionCall arguments that say what a tool acts
// on, in the order they are preferred: what the approval prompt shows.
var approvalDetail = []string{"command", "file_path", "notebook_path", "url", "description"}

// approvalReason is a wait's reason: "Approve run_shell_command: touch
// …/marker", bounded, redacted, paths shortened.
func approvalReason(name string, args jsontext.Value) string {
	var in map[string]jsontext.Value
	_ = json.Unmarshal(args, &in)
	reason := "Approve " + name
	for _, k := range approvalDetail {
		var v string
		if json.Unmarshal(in[k], &v) == nil && strings.TrimSpace(v) != "" {
			reason += ": " + v
			break
		}
	}
	return text.Display(reason, validate.MaxWaitingFor)
}

func (st *State) has(id string) bool { return slices.Index(st.tools, id) >= 0 }

func (st *State) drop(id string) {
	if i := slices.Index(st.tools, id); i >= 0 {
		st.tools = append(st.tools[:i], st.tools[i+1:]...)
	}
}

// endWait ends the wait of tool id, if it has one open.
func (st *State) endWait(add func(agentbridge.Event), id string, at int64) {
	if i := slices.Index(st.waits, id); i >= 0 {
		st.waits = append(st.waits[:i], st.waits[i+1:]...)
		add(agentbridge.Event{Kind: agentbridge.KindWaitFinished, WaitID: id, OccurredAt: at})
	}
}

// finishTools ends every open tool with out; their waits end with them
// and their subagents with the same outcome.
func (st *State) finishTools(add func(agentbridge.Event), out agentbridge.Outcome) {
	for _, w := range st.waits {
		add(agentbridge.Event{Kind: agentbridge.KindWaitFinished, WaitID: w})
	}
	for _, t := range st.tools {
		add(agentbridge.Event{Kind: agentbridge.KindToolFinished, ToolID: t, Outcome: out})
	}
	for _, a := range st.subs {
		add(agentbridge.Event{Kind: agentbridge.KindSubagentDone, SubagentID: a, Outcome: out})
	}
	st.tools, st.waits, st.subs = st.tools[:0], st.waits[:0], st.subs[:0]
}

// runtimeFile is <sessionId>.runtime.json, which the TUI writes at start
// beside its chat (and leaves behind when it exits).
type runtimeFile struct {
	PID       int     `json:"pid"`
	SessionID string  `json:"session_id"`
	WorkDir   string  `json:"work_dir"`
	StartedAt float64 `json:"started_at"` // epoch seconds
}
