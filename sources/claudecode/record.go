package claudecode

import (
	"bytes"
	"encoding/json"
	"strings"

	"github.com/agentbridge/agentbridge"
)

// record is the part of a transcript line the mapper reads (see decoder).
// Raw fields are slices of the line, valid while the line is.
type record struct {
	Type        string
	Subtype     string
	UUID        string
	PromptID    string
	SessionID   string
	Cwd         string
	Timestamp   string
	Version     string // the Claude Code version that wrote it
	IsSidechain bool
	IsMeta      bool
	IsCompact   bool
	IsVisibleTO bool
	IsAPIError  bool
	Error       json.RawMessage
	APIStatus   json.RawMessage
	Origin      *struct {
		Kind string `json:"kind"`
	}
	ToolUseResult json.RawMessage
	Attachment    json.RawMessage
	attQueued     bool // the attachment may be a queued command (see attachmentField)

	// metadata records
	CustomTitle string
	AITitle     string
	Summary     string

	hasMsg bool    // message was an object
	msg    message // its fields
}

// message is the inner API message of user and assistant records.
type message struct {
	ID         string // the API message id; every block record of one reply shares it
	Model      string
	StopReason string
	usage      []byte  // the raw "usage" object, a slice of the line
	content    []block // a string content is one text block
}

// apiUsage is the part of an assistant message's usage the bridge counts.
type apiUsage struct {
	Input      int64 `json:"input_tokens"`
	Output     int64 `json:"output_tokens"`
	CacheRead  int64 `json:"cache_read_input_tokens"`
	CacheWrite int64 `json:"cache_creation_input_tokens"`
}

// tokens returns the message's token counts; ok is false when it has none
// (or they do not decode as counts).
func (m *message) tokens() (u agentbridge.Usage, ok bool) {
	if len(m.usage) == 0 || m.usage[0] != '{' {
		return u, false
	}
	a, ok := usageOf(m.usage)
	if !ok || a.Input < 0 || a.Output < 0 || a.CacheRead < 0 || a.CacheWrite < 0 {
		return u, false
	}
	return agentbridge.Usage{InputTokens: a.Input, OutputTokens: a.Output, CacheReadTokens: a.CacheRead, CacheWriteTokens: a.CacheWrite}, true
}

// block is one content block of a message.
type block struct {
	Type      string
	textRaw   []byte // the raw JSON string of "text"
	ID        string
	Name      string
	Input     json.RawMessage
	ToolUseID string
	IsError   bool
	Content   json.RawMessage
}

// text returns the block's text.
func (b *block) text() string { return unquote(b.textRaw) }

// blocks returns the message content as blocks.
func (m *message) blocks() []block { return m.content }

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

// detailKeys are the tool_use input fields that say what a tool acts on,
// in the order they are preferred: what a permission prompt asks about.
var detailKeys = []string{"command", "file_path", "notebook_path", "url", "pattern", "path", "query", "description", "prompt"}

// toolDetail returns the first of detailKeys that the tool_use input holds
// as a non-empty string, raw (display bounds, redacts and shortens it).
func toolDetail(input json.RawMessage) string {
	if len(input) == 0 || input[0] != '{' {
		return ""
	}
	var in map[string]json.RawMessage
	if json.Unmarshal(input, &in) != nil {
		return ""
	}
	for _, k := range detailKeys {
		if v := in[k]; len(v) > 0 && v[0] == '"' {
			if s := strings.TrimSpace(unquote(v)); s != "" {
				return s
			}
		}
	}
	return ""
}
