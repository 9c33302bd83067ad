package pi

import (
	"strings"

	json "github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"

	"github.com/agentbridge/agentbridge"
	"github.com/agentbridge/agentbridge/sources"
	"github.com/agentbridge/agentbridge/sources/internal/kit"
	"github.com/agentbridge/agentbridge/text"
	"github.com/agentbridge/agentbridge/validate"
)

// record holds the fields of a Pi session entry that the mapping reads;
// the decoder skips the rest (message content is kept raw and only its
// block types, tool calls and the prompt text are decoded).
type record struct {
	Type      string `json:"type"`
	ID        string `json:"id"`
	Timestamp string `json:"timestamp"` // ISO 8601, the agent's own clock

	// session (the header)
	Cwd string `json:"cwd"`

	// model_change
	ModelID string `json:"modelId"`

	// session_info
	Name *string `json:"name"`

	// message
	Message *message `json:"message"`
}

type message struct {
	Role         string         `json:"role"`
	Content      jsontext.Value `json:"content"` // a string or an array of blocks
	Model        string         `json:"model"`
	StopReason   string         `json:"stopReason"`
	ErrorMessage string         `json:"errorMessage"`
	ToolCallID   string         `json:"toolCallId"`
	IsError      bool           `json:"isError"`
	Usage        *piUsage       `json:"usage"`
}

// piUsage is an assistant message's token counts: input excludes the
// cache reads, and input + output + cacheRead + cacheWrite = totalTokens.
type piUsage struct {
	Input      int64 `json:"input"`
	Output     int64 `json:"output"`
	CacheRead  int64 `json:"cacheRead"`
	CacheWrite int64 `json:"cacheWrite"`
}

type block struct {
	Type string `json:"type"`
	Text string `json:"text"`
	ID   string `json:"id"`   // toolCall
	Name string `json:"name"` // toolCall
}

// session is what the mapping remembers of one journal between records:
// the tool calls still open (a toolResult for any other id is not
// reported: the fold would refuse it) and the model last reported.
type session struct {
	open  map[string]bool
	turn  bool // a user message started a turn that no assistant message ended
	model string
	rec   record  // decode scratch
	blks  []block // decode scratch
}

// newSession returns the mapping state of a journal read from its start.
func newSession() *session { return &session{open: map[string]bool{}} }

// mapRecord maps one journal line to its lifecycle events (appended to
// out). code is "" for a line that is used or deliberately ignored (an
// entry type the mapping does not use: kept for forward compatibility),
// sources.CodeInvalidJSON for a line that is not a JSON object, and
// sources.CodeInvalidRecord for a known entry without the fields it needs.
func (s *session) mapRecord(line []byte, out []agentbridge.Event) ([]agentbridge.Event, string) {
	r := &s.rec
	if code := kit.Decode(line, r); code != "" {
		return out, code
	}
	at := sources.Millis(r.Timestamp)
	switch r.Type {
	case "session":
		out = append(out, agentbridge.Event{Kind: agentbridge.KindSessionStarted, Cwd: validate.CleanCwd(r.Cwd), OccurredAt: at})
	case "model_change":
		if m := text.Display(r.ModelID, validate.MaxModel); m != "" && m != s.model {
			s.model = m
			out = append(out, agentbridge.Event{Kind: agentbridge.KindAgentMetadata, Model: m, OccurredAt: at})
		}
	case "session_info":
		// the user's own name for the session (/name); a cleared name
		// leaves the title shown as it is
		if r.Name != nil {
			if t := text.Display(*r.Name, validate.MaxTitle); t != "" {
				out = append(out, agentbridge.Event{Kind: agentbridge.KindAgentMetadata, Title: t, OccurredAt: at})
			}
		}
	case "message":
		if r.Message == nil {
			return out, sources.CodeInvalidRecord
		}
		return s.mapMessage(r, at, out)
	case "compaction":
		// /compact (or Pi's own compaction between turns) summarised the
		// conversation with a model call; the entry is written when it is
		// done. Between turns it is a turn of its own, begun and ended at
		// once; inside a turn (a compaction on overflow) the turn covers it.
		turn := validate.SafeID(r.ID)
		if s.turn || turn == "" {
			return out, ""
		}
		out = append(out,
			agentbridge.Event{Kind: agentbridge.KindTurnStarted, TurnID: turn, OccurredAt: at},
			agentbridge.Event{Kind: agentbridge.KindAgentDone, Outcome: agentbridge.OutcomeSuccess, OccurredAt: at})
	}
	return out, ""
}

func (s *session) mapMessage(r *record, at int64, out []agentbridge.Event) ([]agentbridge.Event, string) {
	m := r.Message
	switch m.Role {
	case "user":
		turn := validate.SafeID(r.ID)
		if turn == "" {
			return out, sources.CodeInvalidRecord
		}
		s.turn = true
		out = append(out, agentbridge.Event{
			Kind: agentbridge.KindTurnStarted, TurnID: turn,
			PromptText: text.Display(s.promptText(m.Content), validate.MaxText), OccurredAt: at,
		})
	case "assistant":
		if mod := text.Display(m.Model, validate.MaxModel); mod != "" && mod != s.model {
			s.model = mod
			out = append(out, agentbridge.Event{Kind: agentbridge.KindAgentMetadata, Model: mod, OccurredAt: at})
		}
		if u := m.Usage; u != nil && u.Input >= 0 && u.Output >= 0 && u.CacheRead >= 0 && u.CacheWrite >= 0 {
			out = append(out, agentbridge.Event{Kind: agentbridge.KindAgentMetadata, OccurredAt: at, Usage: &agentbridge.UsageReport{
				Usage:     agentbridge.Usage{InputTokens: u.Input, OutputTokens: u.Output, CacheReadTokens: u.CacheRead, CacheWriteTokens: u.CacheWrite},
				MessageID: validate.SafeID(r.ID)}})
		}
		for _, b := range s.blocks(m.Content) {
			id := validate.SafeID(b.ID)
			if b.Type != "toolCall" || id == "" || s.open[id] {
				continue
			}
			name := text.Display(b.Name, validate.MaxText)
			if name == "" {
				name = "tool"
			}
			s.open[id] = true
			out = append(out, agentbridge.Event{Kind: agentbridge.KindToolStarted, ToolID: id, Name: name, OccurredAt: at})
		}
		if e, ok := turnEnd(m); ok {
			s.turn = false
			clear(s.open) // the fold closes every tool at agent.done
			e.OccurredAt = at
			out = append(out, e)
		}
	case "toolResult":
		id := validate.SafeID(m.ToolCallID)
		if !s.open[id] {
			return out, ""
		}
		delete(s.open, id)
		o := agentbridge.OutcomeSuccess
		if m.IsError {
			o = agentbridge.OutcomeError
		}
		out = append(out, agentbridge.Event{Kind: agentbridge.KindToolFinished, ToolID: id, Outcome: o, OccurredAt: at})
	}
	// bashExecution (the user's own "!" command), custom, branchSummary and
	// compactionSummary messages are no turn of the agent's
	return out, ""
}

// turnEnd maps an assistant message's stopReason: "toolUse" goes on with
// the tools it called; "stop" and "length" end the turn; "error" ends it
// failed (errorMessage, bounded and scrubbed, as the summary); "aborted"
// is the user's interrupt (Esc).
func turnEnd(m *message) (agentbridge.Event, bool) {
	e := agentbridge.Event{Kind: agentbridge.KindAgentDone}
	switch m.StopReason {
	case "stop", "length":
		e.Outcome = agentbridge.OutcomeSuccess
	case "error":
		e.Outcome = agentbridge.OutcomeError
		e.Summary = validate.ErrorText(m.ErrorMessage)
	case "aborted":
		e.Outcome = agentbridge.OutcomeCancelled
	default:
		return e, false
	}
	return e, true
}

// blocks decodes a message's content blocks; a string content has none.
func (s *session) blocks(v jsontext.Value) []block {
	s.blks = s.blks[:0]
	if len(v) == 0 || v[0] != '[' {
		return nil
	}
	if err := json.Unmarshal(v, &s.blks); err != nil {
		return nil
	}
	return s.blks
}

// promptText is a user message's text: the string content, or its text
// blocks joined by spaces (images are left out).
func (s *session) promptText(v jsontext.Value) string {
	if len(v) > 0 && v[0] == '"' {
		var t string
		if json.Unmarshal(v, &t) == nil {
			return t
		}
		return ""
	}
	var b strings.Builder
	for _, blk := range s.blocks(v) {
		if blk.Type != "text" || blk.Text == "" {
			continue
		}
		if b.Len() > 0 {
			b.WriteByte(' ')
		}
		b.WriteString(blk.Text)
		if b.Len() > 4096 { // more than a prompt's display text needs
			break
		}
	}
	return b.String()
}
