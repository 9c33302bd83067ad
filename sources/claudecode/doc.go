// Package claudecode is the session source for Claude Code, Anthropic's
// coding agent CLI. It follows the transcripts under
// $CLAUDE_CONFIG_DIR/projects (default ~/.claude/projects) and the live
// process registry $CLAUDE_CONFIG_DIR/sessions/<pid>.json, and maps them to
// lifecycle events (see Mapper for the record-by-record rules and
// README.md in this directory for the mapping table).
//
// Transcripts are not always append-in-order. Claude Code (2.1.242 seen
// doing it) appends batches of records from several threads, so a batch
// can land after a later one (a prompt after its own reply; a subagent's
// transcript before its .meta.json sidecar), and its code can remove a
// record it wrote by truncating the file at that record and writing the
// records after it back, on the same inode. The mapper names a turn by a
// prompt written late instead of starting a second one; the handler waits
// briefly for a subagent's sidecar; and the shared tailer reads a
// transcript rewritten in place again from the start (Handler.Truncated),
// into a fresh mapper that ends where a fresh read of the file would.
package claudecode

// Identity of the source and its one harness.
const (
	SourceID    = "claude-code"
	Harness     = "claude-code"
	DisplayName = "Claude Code"
	// EnvConfigDir relocates Claude Code's whole ~/.claude tree.
	EnvConfigDir = "CLAUDE_CONFIG_DIR"
)
