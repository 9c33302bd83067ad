package cursor

import (
	"strconv"
	"strings"

	json "github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"

	"github.com/agentbridge/agentbridge"
	"github.com/agentbridge/agentbridge/fold"
	"github.com/agentbridge/agentbridge/sources"
	"github.com/agentbridge/agentbridge/validate"
)

// record is a transcript line: {"role", "message": {"content": [blocks]}},
// or the roleless {"type":"turn_ended","status"}. Lines carry no ids and no
// times.
type record struct {
	Role    string `json:"role"`
	Type    string `json:"type"`
	Status  string `json:"status"`
	Message struct {
		Content jsontext.Value `json:"content"` // an array of blocks, or a string
	} `json:"message"`
}

// block is one content block; the fields the mapping reads.
type block struct {
	Type      string `json:"type"`
	Text      string `json:"text"`
	Name      string `json:"name"`
	ID        string `json:"id"`
	ToolUseID string `json:"tool_use_id"`
	IsError   bool   `json:"is_error"`
}

var decodeOptions = []json.Options{
	jsontext.AllowDuplicateNames(true), // the last one wins, as with encoding/json
	jsontext.AllowInvalidUTF8(true),    // text is bounded and cleaned later
}

// maxBlocks bounds the content blocks of one line that are looked at.
const maxBlocks = 256

// mapper maps the lines of one transcript, in order, to lifecycle events:
// the pure part of the source (bytes, the line's number, the view of the
// session's fold and this small state in; events out). Cursor's lines
// carry no ids and no times: turn and tool ids are made from the line's
// number ("L12", "L12.2"), which is the same every time the file is read,
// and no event has an occurredAt (the hub takes its own clock). Whether a
// turn is open and which tools are comes from the fold (fold.View).
type mapper struct {
	cwd     string // from the project directory's name, when unambiguous
	started bool   // session.started was mapped (the transcript's first line)
	rec     record
	blocks  []block
	tools   []string // scratch: the open tools while one line is mapped, oldest first
}

// Map maps line number n (1-based) of the transcript to its events,
// appended to out; v is the view of the session's fold as the lines
// before left it. code is "" for a line used or deliberately ignored,
// sources.CodeInvalidJSON for a line that is not a JSON object of the
// transcript's shape.
func (m *mapper) Map(v fold.View, n int, line []byte, out []agentbridge.Event) ([]agentbridge.Event, string) {
	m.rec = record{}
	if len(line) == 0 || line[0] != '{' || json.Unmarshal(line, &m.rec, decodeOptions...) != nil {
		return out, sources.CodeInvalidJSON
	}
	if !m.started {
		m.started = true
		out = append(out, agentbridge.Event{Kind: agentbridge.KindSessionStarted, Cwd: m.cwd})
	}
	r := &m.rec
	if r.Role == "" {
		if r.Type == "turn_ended" && v.InTurn() {
			return append(out, agentbridge.Event{Kind: agentbridge.KindAgentDone, Outcome: Outcome(r.Status)}), ""
		}
		return out, "" // another roleless record: nothing known
	}
	m.tools = v.OpenTools(m.tools[:0])
	text, ok := m.content()
	if !ok {
		return out, sources.CodeInvalidRecord
	}
	switch strings.ToLower(r.Role) {
	case "user", "human":
		out = m.results(out)
		if text = Prompt(text); text == "" {
			return out, "" // only tool results
		}
		// A prompt starts a turn; in a transcript without turn_ended the
		// last one is still open and simply goes on as this one.
		out = m.finishTools(out, agentbridge.OutcomeSuccess)
		return append(out, agentbridge.Event{Kind: agentbridge.KindTurnStarted, TurnID: "L" + strconv.Itoa(n), PromptText: validate.Title(text)}), ""
	case "assistant", "model":
		if !v.InTurn() { // an answer with no prompt before it (e.g. the file begins mid-conversation)
			out = append(out, agentbridge.Event{Kind: agentbridge.KindTurnStarted, TurnID: "L" + strconv.Itoa(n)})
		}
		out = m.results(out)
		// The agent wrote again: the tools it ran before have finished.
		out = m.finishTools(out, agentbridge.OutcomeSuccess)
		k := 0
		for i := range m.blocks {
			b := &m.blocks[i]
			if b.Type != "tool_use" || len(m.tools) >= fold.MaxOpenTools {
				continue
			}
			k++
			id := "L" + strconv.Itoa(n) + "." + strconv.Itoa(k)
			if b.ID != "" && validate.ValidID(b.ID) {
				id = b.ID
			}
			name := validate.Label(b.Name)
			if name == "" {
				name = "tool"
			}
			if m.open(id) {
				continue
			}
			m.tools = append(m.tools, id)
			out = append(out, agentbridge.Event{Kind: agentbridge.KindToolStarted, ToolID: id, Name: name})
		}
	}
	return out, ""
}

// content decodes the message's content: its text blocks joined, and its
// blocks in m.blocks. A string content is one text block. false when the
// content has another shape.
func (m *mapper) content() (string, bool) {
	m.blocks = m.blocks[:0]
	c := m.rec.Message.Content
	switch {
	case len(c) == 0 || string(c) == "null":
		return "", true
	case c[0] == '"':
		var s string
		if json.Unmarshal(c, &s, decodeOptions...) != nil {
			return "", false
		}
		return s, true
	case c[0] != '[':
		return "", false
	}
	var raw []jsontext.Value
	if json.Unmarshal(c, &raw, decodeOptions...) != nil {
		return "", false
	}
	var text strings.Builder
	for i, v := range raw {
		if i >= maxBlocks {
			break
		}
		var b block
		if len(v) == 0 || v[0] != '{' || json.Unmarshal(v, &b, decodeOptions...) != nil {
			continue // an unreadable block: the others still count
		}
		if b.Type == "text" && b.Text != "" && text.Len() < 8<<10 {
			if text.Len() > 0 {
				text.WriteByte('\n')
			}
			text.WriteString(b.Text)
		}
		b.Text = "" // not kept
		m.blocks = append(m.blocks, b)
	}
	return text.String(), true
}

// results finishes the tools that tool_result blocks name (by tool_use_id,
// else the oldest open one): error when is_error.
func (m *mapper) results(out []agentbridge.Event) []agentbridge.Event {
	for i := range m.blocks {
		b := &m.blocks[i]
		if b.Type != "tool_result" || len(m.tools) == 0 {
			continue
		}
		id := m.tools[0]
		if b.ToolUseID != "" && m.open(b.ToolUseID) {
			id = b.ToolUseID
		}
		outcome := agentbridge.OutcomeSuccess
		if b.IsError {
			outcome = agentbridge.OutcomeError
		}
		m.tools = removeID(m.tools, id)
		out = append(out, agentbridge.Event{Kind: agentbridge.KindToolFinished, ToolID: id, Outcome: outcome})
	}
	return out
}

// finishTools finishes every open tool with outcome.
func (m *mapper) finishTools(out []agentbridge.Event, outcome agentbridge.Outcome) []agentbridge.Event {
	for _, id := range m.tools {
		out = append(out, agentbridge.Event{Kind: agentbridge.KindToolFinished, ToolID: id, Outcome: outcome})
	}
	m.tools = m.tools[:0]
	return out
}

func (m *mapper) open(id string) bool {
	for _, t := range m.tools {
		if t == id {
			return true
		}
	}
	return false
}

func removeID(ids []string, id string) []string {
	for i, t := range ids {
		if t == id {
			return append(ids[:i], ids[i+1:]...)
		}
	}
	return ids
}

// Outcome maps a turn_ended status: success (or completed) is success;
// aborted, cancelled, canceled, interrupted and stopped are cancelled;
// anything else (error, failed, …) is an error.
func Outcome(status string) agentbridge.Outcome {
	switch strings.ToLower(status) {
	case "success", "completed", "complete", "ok":
		return agentbridge.OutcomeSuccess
	case "aborted", "abort", "cancelled", "canceled", "interrupted", "stopped":
		return agentbridge.OutcomeCancelled
	}
	return agentbridge.OutcomeError
}

// Prompt returns what the user typed in a user line's text: the inside of
// its <user_query> element when it has one (Cursor wraps the typed text in
// it, beside context elements such as <user_info>), else the whole text.
func Prompt(text string) string {
	if i := strings.Index(text, "<user_query>"); i >= 0 {
		text = text[i+len("<user_query>"):]
		if j := strings.Index(text, "</user_query>"); j >= 0 {
			text = text[:j]
		}
	}
	return strings.TrimSpace(text)
}
