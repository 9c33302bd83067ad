package sources

import "github.com/agentbridge/agentbridge"

// Tested gives, by harness id, the versions of the agent CLI that the live
// suite (e2e/live: the real CLIs against a scripted model server) runs the
// bridge against: its pinned npm versions, oldest to newest. A test there
// keeps it in step with the pins. GET /v1/sources shows it beside the
// versions the journals name (hub.Options.Tested). Harnesses the live
// suite cannot install (Cursor, Kiro CLI, Mistral Vibe, Antigravity) have
// none.
var Tested = map[string]agentbridge.VersionRange{
	"claude-code": {Min: "2.1.242", Max: "2.1.332"},
	"codex":       {Min: "0.165.0", Max: "0.171.0"},
	"copilot-cli": {Min: "1.0.102", Max: "1.0.102"},
	"gemini-cli":  {Min: "0.61.0", Max: "0.61.0"},
	"qwen-code":   {Min: "0.24.4", Max: "0.24.4"},
	"opencode":    {Min: "1.18.33", Max: "1.18.33"},
	"pi":          {Min: "0.73.1", Max: "0.73.1"},
}
