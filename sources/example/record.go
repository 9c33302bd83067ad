package example

import (
	"strings"

	json "github.com/go-json-experiment/json"

	"github.com/agentbridge/agentbridge"
	"github.com/agentbridge/agentbridge/sources"
	"github.com/agentbridge/agentbridge/text"
	"github.com/agentbridge/agentbridge/validate"
)

// record holds the fields of a journal line that the mapping reads; every
// other field is skipped by the decoder (go-json-experiment/json: one pass,
// about twice as fast as encoding/json into a struct, and several times
// faster than into a map).
type record struct {
	Type string `json:"type"`
	TS   string `json:"ts"` // RFC 3339; the agent's own clock, so trusted

	// session
	Title string `json:"title"`
	Model string `json:"model"`
	Cwd   string `json:"cwd"`
	PID   int    `json:"pid"`

	// prompt
	TurnID string `json:"turnId"`
	Text   string `json:"text"`

	// tool_started, tool_finished
	ToolID string `json:"toolId"`
	Name   string `json:"name"`

	// approval_needed, approval_resolved
	RequestID string `json:"requestId"`
	Reason    string `json:"reason"`

	// complete, tool_finished, subagent_done
	OK        *bool  `json:"ok"`
	Cancelled bool   `json:"cancelled"`
	Summary   string `json:"summary"`

	// subagent_started, subagent_done
	SubagentID string `json:"subagentId"`
	ParentID   string `json:"parentId"`
	AgentType  string `json:"agentType"`

	// exit
	Code   *int   `json:"code"`
	Signal string `json:"signal"`
}

// mapRecord maps one journal line of session id to its lifecycle event, as
// the host's publish-lifecycle-events example does, extended with
// tool_finished, subagent_started, subagent_done and exit. ok is false when
// the line yields no event: code is then "" for a record type the mapping
// does not use (kept for forward compatibility), sources.CodeInvalidJSON
// for a line that is not a JSON object, and sources.CodeInvalidRecord for a
// known record without a usable id.
//
// r is scratch space, reused across calls to save an allocation per line;
// nil allocates one.
func mapRecord(id string, line []byte, r *record) (e agentbridge.Event, ok bool, code string) {
	if len(line) == 0 || line[0] != '{' {
		return e, false, sources.CodeInvalidJSON
	}
	if r == nil {
		r = new(record)
	} else {
		*r = record{}
	}
	if err := json.Unmarshal(line, r); err != nil {
		return e, false, sources.CodeInvalidJSON
	}
	switch r.Type {
	case "session":
		e = agentbridge.Event{
			Kind:  agentbridge.KindSessionStarted,
			Title: text.Display(r.Title, validate.MaxTitle),
			Model: validate.Model(r.Model),
			Cwd:   validate.CleanCwd(r.Cwd),
		}
		if r.PID > 0 && r.PID <= validate.MaxPID {
			e.PID = r.PID
		}
	case "prompt":
		if !validate.ValidID(r.TurnID) {
			return e, false, sources.CodeInvalidRecord
		}
		e = agentbridge.Event{Kind: agentbridge.KindTurnStarted, TurnID: r.TurnID, PromptText: text.Display(r.Text, validate.MaxText)}
	case "tool_started":
		if !validate.ValidID(r.ToolID) {
			return e, false, sources.CodeInvalidRecord
		}
		e = agentbridge.Event{Kind: agentbridge.KindToolStarted, ToolID: r.ToolID, Name: displayOr(r.Name, validate.MaxText, "Tool")}
	case "tool_finished":
		if !validate.ValidID(r.ToolID) {
			return e, false, sources.CodeInvalidRecord
		}
		e = agentbridge.Event{Kind: agentbridge.KindToolFinished, ToolID: r.ToolID}
		if r.OK != nil || r.Cancelled {
			e.Outcome = outcome(r.OK, r.Cancelled)
		}
	case "approval_needed":
		if !validate.ValidID(r.RequestID) {
			return e, false, sources.CodeInvalidRecord
		}
		reason := displayOr(r.Reason, validate.MaxWaitingFor, "Approval requested")
		e = agentbridge.Event{Kind: agentbridge.KindWaitStarted, WaitID: r.RequestID, State: agentbridge.StatusWaiting, Reason: reason}
	case "approval_resolved":
		if !validate.ValidID(r.RequestID) {
			return e, false, sources.CodeInvalidRecord
		}
		e = agentbridge.Event{Kind: agentbridge.KindWaitFinished, WaitID: r.RequestID}
	case "complete":
		e = agentbridge.Event{Kind: agentbridge.KindAgentDone, Outcome: outcome(r.OK, r.Cancelled), Summary: validate.ErrorText(r.Summary)}
	case "subagent_started":
		parent := r.ParentID
		if parent == "" {
			parent = id // the session's own agent started it
		}
		if !validate.ValidID(r.SubagentID) || !validate.ValidID(parent) {
			return e, false, sources.CodeInvalidRecord
		}
		e = agentbridge.Event{
			Kind: agentbridge.KindSubagentStarted, SubagentID: r.SubagentID, ParentAgentID: parent,
			Title: text.Display(r.Title, validate.MaxTitle), Type: text.Display(r.AgentType, validate.MaxText),
		}
	case "subagent_done":
		if !validate.ValidID(r.SubagentID) {
			return e, false, sources.CodeInvalidRecord
		}
		e = agentbridge.Event{Kind: agentbridge.KindSubagentDone, SubagentID: r.SubagentID, Outcome: outcome(r.OK, r.Cancelled), Summary: text.Display(r.Summary, validate.MaxText)}
	case "exit":
		e = agentbridge.Event{Kind: agentbridge.KindAgentExited, Signal: signal(r.Signal)}
		if r.Code != nil && *r.Code >= 0 && *r.Code <= 255 {
			c := *r.Code
			e.ExitCode = &c
		}
	default:
		return e, false, ""
	}
	if ms := sources.Millis(r.TS); ms > 0 {
		e.OccurredAt = ms
	}
	return e, true, ""
}

// outcome reads ok/cancelled the way the host example reads complete.ok:
// only an explicit false is an error.
func outcome(ok *bool, cancelled bool) agentbridge.Outcome {
	switch {
	case cancelled:
		return agentbridge.OutcomeCancelled
	case ok != nil && !*ok:
		return agentbridge.OutcomeError
	}
	return agentbridge.OutcomeSuccess
}

// displayOr is text.Display, or fallback when nothing printable is
// left.
func displayOr(s string, limit int, fallback string) string {
	if d := text.Display(s, limit); d != "" {
		return d
	}
	return fallback
}

// signal keeps a signal name of the form SIGxxx.
func signal(s string) string {
	if len(s) < 4 || len(s) > 16 || !strings.HasPrefix(s, "SIG") {
		return ""
	}
	for _, c := range s[3:] {
		if (c < 'A' || c > 'Z') && (c < '0' || c > '9') && c != '+' && c != '-' {
			return ""
		}
	}
	return s
}
