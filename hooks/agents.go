package hooks

import (
	"maps"
	"strings"

	"github.com/agentbridge/agentbridge/fold"

	"github.com/agentbridge/agentbridge/validate"
)

// claudeCode is Claude Code's hook vocabulary (its hooks documentation and
// the payloads its 2.1 CLI builds). PermissionRequest names no tool id: it
// is matched to its call by the PreToolUse before it.
var claudeCode = agent{
	events: map[string]fold.HookKind{
		"PreToolUse":         fold.HookTool,
		"PermissionRequest":  fold.HookAsk,
		"Notification":       fold.HookAsk, // decoded by notify
		"PostToolUse":        fold.HookAnswered,
		"PostToolUseFailure": fold.HookAnswered,
		"PermissionDenied":   fold.HookAnswered,
		"Stop":               fold.HookTurnEnd,
		"StopFailure":        fold.HookTurnEnd,
		"UserPromptSubmit":   fold.HookTurnEnd,
		"SessionStart":       fold.HookTurnEnd,
		"SessionEnd":         fold.HookTurnEnd,
		"SubagentStop":       fold.HookNone, // a subagent's end: its prompts end with their answers
	},
	notify: claudeNotification,
}

// claudeNotification maps a Notification: a permission prompt ("Claude
// needs your permission to use Bash") or an MCP server's question waits;
// the others (idle_prompt after a minute without input, auth_success, …)
// change nothing.
func claudeNotification(p *payload) (fold.HookKind, string) {
	switch p.NotificationType {
	case "permission_prompt", "worker_permission_prompt":
		const lead = "permission to use "
		if i := strings.LastIndex(p.Message, lead); i >= 0 {
			if tool := validate.Label(strings.TrimSpace(p.Message[i+len(lead):])); tool != "" && !strings.ContainsAny(tool, " ") {
				return fold.HookAsk, "Approve " + tool
			}
		}
		return fold.HookAsk, "Approve a tool"
	case "elicitation_dialog", "elicitation_url_dialog", "agent_needs_input":
		return fold.HookAsk, "Answer a question"
	}
	return fold.HookNone, ""
}

// codex is Codex's hook vocabulary (its hooks documentation and the JSON
// schemas of its 0.1xx CLI: *.command.input). Codex's shell tools are
// reported as tool_name "Bash"; PermissionRequest carries turn_id but no
// tool id. Interrupt runs when the user interrupts a turn.
var codex = agent{
	events: map[string]fold.HookKind{
		"PreToolUse":        fold.HookTool,
		"PermissionRequest": fold.HookAsk,
		"PostToolUse":       fold.HookAnswered,
		"Stop":              fold.HookTurnEnd,
		"Interrupt":         fold.HookTurnEnd,
		"UserPromptSubmit":  fold.HookTurnEnd,
		"SessionStart":      fold.HookTurnEnd,
		"SessionEnd":        fold.HookTurnEnd,
		"SubagentStop":      fold.HookNone,
	},
}

// gemini is Gemini CLI's hook vocabulary (its hooks reference, and the
// payloads its 0.61 CLI builds). Its tools carry no call id, and a
// confirmation is a Notification of type ToolPermission whose details
// say what is asked; the tool's AfterTool, the turn's AfterAgent or the
// next prompt's BeforeAgent ends it.
var gemini = agent{
	events: map[string]fold.HookKind{
		"Notification": fold.HookAsk, // decoded by notify
		"AfterTool":    fold.HookAnswered,
		"AfterAgent":   fold.HookTurnEnd,
		"BeforeAgent":  fold.HookTurnEnd,
		"SessionStart": fold.HookTurnEnd,
		"SessionEnd":   fold.HookTurnEnd,
		"BeforeTool":   fold.HookNone, // no call id to bind
	},
	notify: geminiNotification,
}

// geminiDetails is the part of a ToolPermission notification's details the
// bridge reads (the serialized confirmation: type exec, edit, mcp, info).
type geminiDetails struct {
	Type            string `json:"type"`
	Title           string `json:"title"`
	Command         string `json:"command"`
	FilePath        string `json:"filePath"`
	FileName        string `json:"fileName"`
	ServerName      string `json:"serverName"`
	ToolDisplayName string `json:"toolDisplayName"`
}

func geminiNotification(p *payload) (fold.HookKind, string) {
	if p.NotificationType != "ToolPermission" {
		return fold.HookNone, ""
	}
	d := p.Details
	if d == nil {
		return fold.HookAsk, "Approve a tool"
	}
	var r string
	switch d.Type {
	case "exec":
		r = "Approve shell: " + d.Command
	case "edit":
		f := d.FilePath
		if f == "" {
			f = d.FileName
		}
		r = "Approve edit: " + f
	case "mcp":
		r = "Approve " + strings.TrimSpace(d.ServerName+" "+d.ToolDisplayName)
	default:
		r = "Approve: " + d.Title
	}
	if r = validate.Title(r); r == "" || strings.HasSuffix(r, ":") {
		r = "Approve a tool"
	}
	return fold.HookAsk, r
}

// qwen is Qwen Code's hook vocabulary: the events and payloads of Claude
// Code (as its 0.24 CLI builds them: PermissionRequest without a tool id,
// a Notification "Qwen Code needs your permission to use X" of type
// permission_prompt), without StopFailure.
var qwen = agent{events: without(claudeCode.events, "StopFailure"), notify: claudeNotification}

func without(events map[string]fold.HookKind, name string) map[string]fold.HookKind {
	out := maps.Clone(events)
	delete(out, name)
	return out
}
