package claudecode

import (
	"bytes"
	"encoding/json"
	"strings"
)

// record is the part of a transcript line the mapper reads. Nested parts it
// may not need (message, toolUseResult) stay raw, so a long tool output is
// scanned once and never copied into strings.
type record struct {
	Type        string          `json:"type"`
	Subtype     string          `json:"subtype"`
	UUID        string          `json:"uuid"`
	PromptID    string          `json:"promptId"`
	SessionID   string          `json:"sessionId"`
	Cwd         string          `json:"cwd"`
	Timestamp   string          `json:"timestamp"`
	IsSidechain bool            `json:"isSidechain"`
	IsMeta      bool            `json:"isMeta"`
	IsCompact   bool            `json:"isCompactSummary"`
	IsVisibleTO bool            `json:"isVisibleInTranscriptOnly"`
	IsAPIError  bool            `json:"isApiErrorMessage"`
	Error       json.RawMessage `json:"error"`
	APIStatus   json.RawMessage `json:"apiErrorStatus"`
	Origin      *struct {
		Kind string `json:"kind"`
	} `json:"origin"`
	Message       json.RawMessage `json:"message"`
	ToolUseResult json.RawMessage `json:"toolUseResult"`
	Attachment    json.RawMessage `json:"attachment"`

	// metadata records
	CustomTitle string `json:"customTitle"`
	AITitle     string `json:"aiTitle"`
	Summary     string `json:"summary"`
}

// message is the inner API message of user and assistant records.
type message struct {
	Model      string          `json:"model"`
	StopReason string          `json:"stop_reason"`
	Content    json.RawMessage `json:"content"` // a string or an array of blocks
}

// block is one content block of a message.
type block struct {
	Type      string          `json:"type"`
	Text      string          `json:"text"`
	ID        string          `json:"id"`
	Name      string          `json:"name"`
	Input     json.RawMessage `json:"input"`
	ToolUseID string          `json:"tool_use_id"`
	IsError   bool            `json:"is_error"`
	Content   json.RawMessage `json:"content"`
}

// decodeMessage decodes m's message; a missing or non-object message gives
// a zero message and false.
func (r *record) decodeMessage() (message, bool) {
	var m message
	if len(r.Message) == 0 || r.Message[0] != '{' {
		return m, false
	}
	if err := json.Unmarshal(r.Message, &m); err != nil {
		return message{}, false
	}
	return m, true
}

// content returns the message content as blocks; a plain string becomes one
// text block.
func (m *message) blocks() []block {
	c := bytes.TrimSpace(m.Content)
	if len(c) == 0 {
		return nil
	}
	switch c[0] {
	case '"':
		var s string
		if json.Unmarshal(c, &s) != nil {
			return nil
		}
		return []block{{Type: "text", Text: s}}
	case '[':
		var raw []json.RawMessage
		if json.Unmarshal(c, &raw) != nil {
			return nil
		}
		out := make([]block, 0, len(raw))
		for _, r := range raw {
			var b block
			if len(r) == 0 || r[0] != '{' || json.Unmarshal(r, &b) != nil {
				continue // a malformed block is skipped, not the record
			}
			out = append(out, b)
		}
		return out
	}
	return nil
}

// Interrupt and denial markers Claude Code writes into user records.
const (
	interruptMarker = "[Request interrupted by user"
	denialMarker1   = "The user doesn't want to proceed with this tool use"
	denialMarker2   = "The user doesn't want to take this action right now"
)

// resultCancelled reports whether a tool_result's content says the user
// denied the tool or interrupted it.
func resultCancelled(raw json.RawMessage) bool {
	return bytes.Contains(raw, []byte(denialMarker1)) ||
		bytes.Contains(raw, []byte(denialMarker2)) ||
		bytes.Contains(raw, []byte(interruptMarker))
}

// notPromptPrefixes start user text that Claude Code injects, not a prompt
// the user typed.
var notPromptPrefixes = []string{
	"<command-", "<local-command-", "Caveat:", "<system-reminder>",
	"<task-notification>", "<bash-input>", "<bash-stdout>", "<bash-stderr>",
	"<user-prompt-submit-hook>",
}

// injected reports whether user text was written by Claude Code itself.
func injected(text string) bool {
	t := strings.TrimLeft(text, " \t\r\n")
	for _, p := range notPromptPrefixes {
		if strings.HasPrefix(t, p) {
			return true
		}
	}
	return false
}

// attachment is the part of an attachment record the mapper reads: a
// queued command carries a background agent's <task-notification>.
type attachment struct {
	Type        string `json:"type"`
	Prompt      string `json:"prompt"`
	CommandMode string `json:"commandMode"`
}

// agentInput is the part of an Agent/Task tool_use input the mapper reads.
type agentInput struct {
	Description  string `json:"description"`
	SubagentType string `json:"subagent_type"`
}

// agentResult is the part of an Agent/Task toolUseResult the mapper reads.
type agentResult struct {
	Status  string `json:"status"`
	AgentID string `json:"agentId"`
}

// taskNotification extracts the tool-use id and status of a background
// agent's <task-notification> text.
func taskNotification(text string) (toolUseID, status string) {
	return between(text, "<tool-use-id>", "</tool-use-id>"), between(text, "<status>", "</status>")
}

func between(s, open, close string) string {
	i := strings.Index(s, open)
	if i < 0 {
		return ""
	}
	s = s[i+len(open):]
	j := strings.Index(s, close)
	if j < 0 {
		return ""
	}
	return strings.TrimSpace(s[:j])
}
