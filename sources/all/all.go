// Package all links every built-in source into a program: importing it
// runs each source package's init, which registers the source with
// package sources. Adding an agent to the bridge is one package under
// sources/ plus one line here; go generate (make manifest) then writes
// the agent's harnesses and variables into the Terminay extension's
// manifest.
package all

//go:generate go run ../../internal/cmd/genmanifest ../../extensions/terminay/package.json

import (
	_ "github.com/agentbridge/agentbridge/sources/claudecode" // claude-code
	_ "github.com/agentbridge/agentbridge/sources/codex"      // codex
	_ "github.com/agentbridge/agentbridge/sources/copilot"    // copilot: copilot-cli
	_ "github.com/agentbridge/agentbridge/sources/cursor"     // cursor: cursor-agent
	_ "github.com/agentbridge/agentbridge/sources/example"    // example
	_ "github.com/agentbridge/agentbridge/sources/gemini"     // gemini: gemini-cli, antigravity-cli
	_ "github.com/agentbridge/agentbridge/sources/kiro"       // kiro
	_ "github.com/agentbridge/agentbridge/sources/opencode"   // opencode
	_ "github.com/agentbridge/agentbridge/sources/pi"         // pi
	_ "github.com/agentbridge/agentbridge/sources/qwen"       // qwen
	_ "github.com/agentbridge/agentbridge/sources/vibe"       // vibe
)
