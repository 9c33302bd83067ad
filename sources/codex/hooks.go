package codex

import (
	// named so, as the package's golden test declares fold
	hookfold "github.com/agentbridge/agentbridge/fold"
	"github.com/agentbridge/agentbridge/sources"
)

// HookTimeout is the timeout written for Codex's handlers, in seconds:
// Codex clamps its SessionEnd and Interrupt hooks to 3 s and warns about
// it at every start ("clamping Interrupt hook timeout to 3s"), so every
// handler gets 3.
const HookTimeout = 3

// HookAnswerWait is how long an answering PermissionRequest hook of Codex
// waits, in seconds (docs/answering.md): Codex shows its own approval only
// once the hook has ended, so the wait is short.
const HookAnswerWait = 20

// hookVocabulary is Codex's hook vocabulary (its hooks documentation and
// the JSON schemas of its 0.1xx CLI: *.command.input), installed in
// hooks.json of its home, with the hooks feature on in its config.toml.
// Codex's shell tools are reported as tool_name "Bash"; PermissionRequest
// carries turn_id but no tool id. Interrupt runs when the user interrupts
// a turn.
var hookVocabulary = sources.Hooks{
	Harness: Harness,
	Events: map[string]hookfold.HookKind{
		"PreToolUse":        hookfold.HookTool,
		"PermissionRequest": hookfold.HookAsk,
		"PostToolUse":       hookfold.HookAnswered,
		"Stop":              hookfold.HookTurnEnd,
		"Interrupt":         hookfold.HookTurnEnd,
		"UserPromptSubmit":  hookfold.HookTurnEnd,
		"SessionStart":      hookfold.HookTurnEnd,
		"SessionEnd":        hookfold.HookTurnEnd,
		"SubagentStop":      hookfold.HookNone,
	},
	File:        "hooks.json",
	FeatureFlag: true,
	Timeout:     HookTimeout,
	AnswerWait:  HookAnswerWait,
}
