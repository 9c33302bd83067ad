// Package live runs the real agent CLIs (Claude Code, Codex, opencode,
// Gemini CLI, Qwen Code, Pi, GitHub Copilot CLI), installed at
// pinned versions from npm, against a scripted model server on 127.0.0.1
// and a real agentbridge process, and checks what the bridge reports
// against what each CLI shows in its terminal (driven in tmux) and writes on
// disk, step by step. Qwen Code's TUI scenarios (qwen_test.go) are those of
// Claude Code: a prompt, a shell command approved and denied, an Escape
// before output, a subagent, two sessions, quit and resume, kill -9.
//
// Gemini CLI 0.61.0 runs every scenario in its TUI (gemini_test.go):
// prompt answered (and headless -p), a shell command approved and denied
// with the bridge's hooks installed (Gemini CLI writes nothing of a
// pending confirmation to its chat), Escape before any output, a
// generalist subagent, two sessions in one directory, /quit and --resume
// latest, and kill -9 (the session is bound to the process running in
// its project, so its death shows as exited).
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
// "bridge restart" (opencode, Qwen Code, Pi, Gemini CLI): one TUI runs,
// another has quit; the bridge is stopped and started again, and must show
// the running session with the same pid and the other ended at once (never
// alive). opencode and Qwen Code run both TUIs in one directory (opencode's
// log and Qwen Code's runtime files tell them apart); Pi and Gemini CLI,
// whose files cannot say which of two processes in one directory was a
// session's once one has quit, run the quit one in another directory.
//
// Copilot CLI 1.0.102 runs offline in its own-provider mode
// (COPILOT_PROVIDER_BASE_URL to the Chat Completions server,
// COPILOT_OFFLINE=true: nothing goes to GitHub, no login or token exchange).
// Cursor Agent, Kiro CLI and Mistral Vibe have columns that skip, with the
// reason (unavailable_test.go): Cursor Agent and Kiro CLI are published only
// on their vendors' download sites and send every model call to their
// vendors' servers under a login, with no setting for another endpoint;
// Mistral Vibe is on PyPI only, which this machine cannot reach.
//
// Codex's subagent scenario calls the multi-agent tools in their Responses
// API namespace (ToolCall.Namespace), takes the spawned agent's id from the
// parent's next request (ToolCall.InputFrom) and holds the subagent's reply
// (Step.Gate) until the bridge has shown it running.
//
// TestHooks runs Claude Code and Codex again with the bridge's hooks
// installed by `agentbridge hooks install` into the throwaway home (the
// CLI runs the real `agentbridge hook`): a permission dialog must show as
// waiting, naming the command, within 100 ms of appearing on screen, and
// end when it is approved, denied or interrupted. The other scenarios run
// without hooks: they are what "without hooks, behaviour is as today"
// means. AGENTBRIDGE_LIVE_HOOKDUMP=dir also saves each payload the CLIs
// send (how the fixtures in hooks/testdata were captured).
//
// TestTwoAgentsOneWorkspace runs Claude Code and Codex side by side in one
// project directory under one bridge, their turns overlapping: each
// session shows its own turns, bound to its own process. Codex also runs
// several turns then /exit; Pi a shell escape (!cmd) and slash commands
// that call no model, which open no turn.
//
// Where the bridge must do nothing (an idle opencode source runs no query
// while its database does not change), a scenario reads the bridge's own
// counters from GET /metrics before and after a quiet interval.
package live
