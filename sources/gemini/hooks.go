package gemini

import (
	"strings"

	"github.com/agentbridge/agentbridge/fold"
	"github.com/agentbridge/agentbridge/sources"
	"github.com/agentbridge/agentbridge/validate"
)

// hookVocabulary is Gemini CLI's hook vocabulary (its hooks reference, and
// the payloads its 0.61 CLI builds), installed in settings.json of its
// .gemini directory, which may hold comments; it counts a handler's
// timeout in milliseconds. Its tools carry no call id, and a confirmation
// is a Notification of type ToolPermission whose details say what is
// asked; the tool's AfterTool, the turn's AfterAgent or the next prompt's
// BeforeAgent ends it. Antigravity CLI has no hooks.
var hookVocabulary = sources.Hooks{
	Harness: HarnessGemini,
	Events: map[string]fold.HookKind{
		"Notification": fold.HookAsk, // decoded by Notify
		"AfterTool":    fold.HookAnswered,
		"AfterAgent":   fold.HookTurnEnd,
		"BeforeAgent":  fold.HookTurnEnd,
		"SessionStart": fold.HookTurnEnd,
		"SessionEnd":   fold.HookTurnEnd,
		"BeforeTool":   fold.HookNone, // no call id to bind
	},
	Notify:   hookNotification,
	File:     "settings.json",
	Comments: true,
	Millis:   true,
}

// hookNotification maps a Notification: a ToolPermission asks what its
// details say; the others change nothing.
func hookNotification(n sources.HookNotification) (fold.HookKind, string) {
	if n.Type != "ToolPermission" {
		return fold.HookNone, ""
	}
	d := n.Details
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
