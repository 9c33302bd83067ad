// Package live runs the real agent CLIs (Claude Code, Codex, opencode,
// Gemini CLI, Qwen Code, Pi), installed at
// pinned versions from npm, against a scripted model server on 127.0.0.1
// and a real agentbridge process, and checks what the bridge reports
// against what each CLI shows in its terminal (driven in tmux) and writes on
// disk, step by step. Qwen Code's TUI scenarios (qwen_test.go) are those of
// Claude Code: a prompt, a shell command approved and denied, an Escape
// before output, a subagent, two sessions, quit and resume, kill -9.
//
// It runs only with AGENTBRIDGE_LIVE=1 (`make live`); without it every test
// skips. A CLI that cannot be installed (no npm, no registry) makes its
// scenarios skip; a scenario where the bridge says something other than the
// CLI did fails. The installed packages are cached under
// $AGENTBRIDGE_LIVE_CACHE (default $XDG_CACHE_HOME/agentbridge-live, else
// ~/.cache/agentbridge-live) and installed only when missing. Nothing here
// reaches beyond loopback once the packages are installed. At the end the
// suite prints a table of scenarios × agents.
//
// Codex's subagent scenario calls the multi-agent tools in their Responses
// API namespace (ToolCall.Namespace), takes the spawned agent's id from the
// parent's next request (ToolCall.InputFrom) and holds the subagent's reply
// (Step.Gate) until the bridge has shown it running.
package live
