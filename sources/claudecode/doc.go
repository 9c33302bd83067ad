// Package claudecode is the session source for Claude Code, Anthropic's
// coding agent CLI. It follows the transcripts under
// $CLAUDE_CONFIG_DIR/projects (default ~/.claude/projects) and the live
// process registry $CLAUDE_CONFIG_DIR/sessions/<pid>.json, and maps them to
// lifecycle events (see Mapper for the record-by-record rules and
// README.md in this directory for the mapping table).
package claudecode

// Identity of the source and its one harness.
const (
	SourceID    = "claude-code"
	Harness     = "claude-code"
	DisplayName = "Claude Code"
	// EnvConfigDir relocates Claude Code's whole ~/.claude tree.
	EnvConfigDir = "CLAUDE_CONFIG_DIR"
)
