package claudecode

import (
	"strings"

	"github.com/agentbridge/agentbridge/fold"
	"github.com/agentbridge/agentbridge/sources"
	"github.com/agentbridge/agentbridge/validate"
)

// HookAnswerWait is how long an answering PermissionRequest hook of Claude
// Code waits, in seconds (docs/answering.md): Claude Code keeps its own
// dialog usable while the hook runs, so a long wait costs nothing.
const HookAnswerWait = 300

// Hooks is Claude Code's hook vocabulary (its hooks documentation and the
// payloads its 2.1 CLI builds), installed in settings.json of its home.
// PermissionRequest names no tool id: it is matched to its call by the
// PreToolUse before it. Qwen Code takes the same vocabulary.
func Hooks() sources.Hooks {
	return sources.Hooks{
		Harness: Harness,
		Events: map[string]fold.HookKind{
			"PreToolUse":         fold.HookTool,
			"PermissionRequest":  fold.HookAsk,
			"Notification":       fold.HookAsk, // decoded by Notify
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
		Notify:     Notification,
		File:       "settings.json",
		AnswerWait: HookAnswerWait,
	}
}

// Notification maps a Notification: a permission prompt ("Claude needs
// your permission to use Bash") or an MCP server's question waits; the
// others (idle_prompt after a minute without input, auth_success, …)
// change nothing.
func Notification(n sources.HookNotification) (fold.HookKind, string) {
	switch n.Type {
	case "permission_prompt", "worker_permission_prompt":
		const lead = "permission to use "
		if i := strings.LastIndex(n.Message, lead); i >= 0 {
			if tool := validate.Label(strings.TrimSpace(n.Message[i+len(lead):])); tool != "" && !strings.ContainsAny(tool, " ") {
				return fold.HookAsk, "Approve " + tool
			}
		}
		return fold.HookAsk, "Approve a tool"
	case "elicitation_dialog", "elicitation_url_dialog", "agent_needs_input":
		return fold.HookAsk, "Answer a question"
	}
	return fold.HookNone, ""
}
