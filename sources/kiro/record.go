package kiro

import (
	"cmp"
	"slices"
	"strings"

	json "github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"

	"github.com/agentbridge/agentbridge"
	"github.com/agentbridge/agentbridge/sources"
	"github.com/agentbridge/agentbridge/sources/internal/kit"
	"github.com/agentbridge/agentbridge/text"
	"github.com/agentbridge/agentbridge/validate"
)

// record is one line of a Kiro CLI journal: a versioned envelope whose
// payload is under data, its message parts under data.content.
type record struct {
	Version string `json:"version"`
	Kind    string `json:"kind"`
	Data    struct {
		MessageID string `json:"message_id"`
		Content   []part `json:"content"`
		Meta      struct {
			Timestamp float64 `json:"timestamp"` // epoch seconds; on Prompt only
		} `json:"meta"`
		// ToolResults: per tool use id, what the tool harness made of it
		Results map[string]struct {
			Result jsontext.Value `json:"result"`
		} `json:"results"`
	} `json:"data"`
}

// part is one message part: {"kind":"text","data":"…"},
// {"kind":"toolUse","data":{"toolUseId","name","input"}} or
// {"kind":"toolResult","data":{"toolUseId","status","content"}}.
type part struct {
	Kind string         `json:"kind"`
	Data jsontext.Value `json:"data"`
}

type toolPart struct {
	ToolUseID string `json:"toolUseId"`
	Name      string `json:"name"`
	Status    string `json:"status"`
}

// session is what the mapping remembers of one session between records:
// the open turn (its Prompt's message_id), the tools still open, and what
// the sidecar said last.
type session struct {
	turn              string
	open              map[string]bool
	cwd, title, model string
	rec               record // decode scratch
}

// newSession returns the mapping state of a session read from its start.
func newSession() *session { return &session{open: map[string]bool{}} }

// mapRecord maps one journal line to its lifecycle events (appended to
// out). code is "" for a line that is used or deliberately ignored (a kind
// the mapping does not use, e.g. Clear: /clear wipes the context but goes
// on in the same session), sources.CodeInvalidJSON for a line that is not
// a JSON object, and sources.CodeInvalidRecord for a Prompt without a
// message_id.
func (s *session) mapRecord(line []byte, out []agentbridge.Event) ([]agentbridge.Event, string) {
	r := &s.rec
	if code := kit.Decode(line, r); code != "" {
		return out, code
	}
	switch r.Kind {
	case "Prompt":
		if r.Data.MessageID == "" {
			return out, sources.CodeInvalidRecord
		}
		s.turn = r.Data.MessageID // as the sidecar names it
		out = append(out, agentbridge.Event{
			Kind: agentbridge.KindTurnStarted, TurnID: validate.SafeID(r.Data.MessageID),
			PromptText: text.Display(promptText(r.Data.Content), validate.MaxText),
			OccurredAt: kit.UnixSeconds(r.Data.Meta.Timestamp),
		})
	case "AssistantMessage":
		tools := false
		for _, p := range r.Data.Content {
			if p.Kind != "toolUse" {
				continue
			}
			tools = true
			var t toolPart
			if json.Unmarshal(p.Data, &t) != nil {
				continue
			}
			id := validate.SafeID(t.ToolUseID)
			if id == "" || s.open[id] {
				continue
			}
			name := text.Display(t.Name, validate.MaxText)
			if name == "" {
				name = "tool"
			}
			s.open[id] = true
			out = append(out, agentbridge.Event{Kind: agentbridge.KindToolStarted, ToolID: id, Name: name})
		}
		// no end-of-turn record exists: the turn's last message is the
		// one that calls no tool
		if !tools && s.turn != "" {
			out = s.done(agentbridge.OutcomeSuccess, 0, out)
		}
	case "ToolResults":
		for _, p := range r.Data.Content {
			var t toolPart
			if p.Kind != "toolResult" || json.Unmarshal(p.Data, &t) != nil {
				continue
			}
			id := validate.SafeID(t.ToolUseID)
			if !s.open[id] {
				continue
			}
			delete(s.open, id)
			out = append(out, agentbridge.Event{Kind: agentbridge.KindToolFinished, ToolID: id, Outcome: s.toolOutcome(t)})
		}
	}
	return out, ""
}

// toolOutcome reads a toolResult's status, the tool harness's verdict (a
// command that exits non-zero is still "success"): "error" is a failed
// tool, unless the harness's result for it is "Cancelled" (Esc).
func (s *session) toolOutcome(t toolPart) agentbridge.Outcome {
	if t.Status == "success" || t.Status == "" {
		return agentbridge.OutcomeSuccess
	}
	if res, ok := s.rec.Data.Results[t.ToolUseID]; ok && strings.Contains(string(res.Result), "Cancelled") {
		return agentbridge.OutcomeCancelled
	}
	return agentbridge.OutcomeError
}

func (s *session) done(o agentbridge.Outcome, at int64, out []agentbridge.Event) []agentbridge.Event {
	s.turn = ""
	clear(s.open) // the fold closes every tool at agent.done
	return append(out, agentbridge.Event{Kind: agentbridge.KindAgentDone, Outcome: o, OccurredAt: at})
}

// promptText is a Prompt's text parts joined by spaces.
func promptText(parts []part) string {
	var b strings.Builder
	for _, p := range parts {
		if p.Kind != "text" || len(p.Data) == 0 || p.Data[0] != '"' {
			continue
		}
		var t string
		if json.Unmarshal(p.Data, &t) != nil || t == "" {
			continue
		}
		if b.Len() > 0 {
			b.WriteByte(' ')
		}
		b.WriteString(t)
		if b.Len() > 4096 {
			break
		}
	}
	return b.String()
}

// sidecar is what the mapping reads of <uuid>.json, the metadata Kiro CLI
// rewrites beside the journal at each turn's end.
type sidecar struct {
	Cwd          string `json:"cwd"`
	Title        string `json:"title"`
	SessionState struct {
		ConversationMetadata struct {
			UserTurnMetadatas []turnMeta `json:"user_turn_metadatas"`
		} `json:"conversation_metadata"`
		RTSModelState struct {
			ModelInfo struct {
				ModelID string `json:"model_id"`
			} `json:"model_info"`
		} `json:"rts_model_state"`
	} `json:"session_state"`
}

// turnMeta is one finished turn: the ids of its messages (its Prompt's
// first), why it ended and when, and its result (Ok or Err).
type turnMeta struct {
	MessageIDs   []string                  `json:"message_ids"`
	EndReason    string                    `json:"end_reason"`
	EndTimestamp string                    `json:"end_timestamp"`
	Result       map[string]jsontext.Value `json:"result"`
}

// mapSidecar maps the sidecar's content: session.started with cwd, title
// and model when one of them changed, and agent.done for the open turn
// when the sidecar lists it as ended while the journal has not shown its
// last message (an interrupted or failed turn writes none). code is
// sources.CodeInvalidJSON for a sidecar that is not a JSON object.
func (s *session) mapSidecar(data []byte, out []agentbridge.Event) ([]agentbridge.Event, string) {
	var sc sidecar
	if err := json.Unmarshal(data, &sc); err != nil {
		return out, sources.CodeInvalidJSON
	}
	cwd := validate.CleanCwd(sc.Cwd)
	title := text.Display(sc.Title, validate.MaxTitle)
	model := text.Display(sc.SessionState.RTSModelState.ModelInfo.ModelID, validate.MaxModel)
	if (cwd != "" && cwd != s.cwd) || (title != "" && title != s.title) || (model != "" && model != s.model) {
		s.cwd, s.title, s.model = cmp.Or(cwd, s.cwd), cmp.Or(title, s.title), cmp.Or(model, s.model)
		out = append(out, agentbridge.Event{Kind: agentbridge.KindSessionStarted, Cwd: cwd, Title: title, Model: model})
	}
	if s.turn == "" {
		return out, ""
	}
	for _, m := range sc.SessionState.ConversationMetadata.UserTurnMetadatas {
		if m.EndReason != "" && slices.Contains(m.MessageIDs, s.turn) {
			return s.done(turnOutcome(m), sources.Millis(m.EndTimestamp), out), ""
		}
	}
	return out, ""
}

// turnOutcome reads a finished turn: "UserTurnEnd" is a turn that ended
// normally; an end reason that names a cancellation, interrupt or
// rejection is the user's; an Err result is a failure.
func turnOutcome(m turnMeta) agentbridge.Outcome {
	r := strings.ToLower(m.EndReason)
	switch {
	case m.EndReason == "UserTurnEnd" && m.Result["Err"] == nil:
		return agentbridge.OutcomeSuccess
	case strings.Contains(r, "cancel") || strings.Contains(r, "interrupt") || strings.Contains(r, "abort") || strings.Contains(r, "reject"):
		return agentbridge.OutcomeCancelled
	case m.Result["Err"] != nil || strings.Contains(r, "err") || strings.Contains(r, "fail"):
		return agentbridge.OutcomeError
	}
	return agentbridge.OutcomeSuccess
}
