package validate

import (
	"path"
	"strings"
	"unicode/utf8"

	"github.com/agentbridge/agentbridge"
	"github.com/agentbridge/agentbridge/text"
)

// The helpers that make a record's value fit a snapshot's or an event's
// field: the text toolkit (package text) with the contract's limits.

// Title is text.Display bounded to MaxTitle: a session's or subagent's title.
func Title(s string) string { return text.Display(s, MaxTitle) }

// ErrorText is text.Display bounded to MaxError: why a turn failed, from an
// agent's record of an API, quota or auth error.
func ErrorText(s string) string { return text.Display(s, MaxError) }

// Label is text.Display bounded to MaxText: a short label from a record (a
// tool name, an agent role or nickname).
func Label(s string) string { return text.Display(s, MaxText) }

// Model bounds a model name from a record for publishing (text.Name).
func Model(s string) string { return text.Name(s, MaxModel) }

// CleanCwd returns a working directory from a record as a snapshot
// carries it (ValidCwd), or "" when it cannot be one. It makes only the
// lexical repairs that name the same directory: a trailing "/", empty and
// "." segments ("/a/./b/" is "/a/b"). A path with a ".." segment is refused
// rather than resolved, since ".." after a symbolic link leaves it
// elsewhere; so is one that is relative, of another system ("C:\x"), too
// long, or holds NUL or invalid UTF-8. Every source cleans its cwds with it.
func CleanCwd(cwd string) string {
	if cwd == "" || cwd[0] != '/' || len(cwd) > MaxCwdBytes || strings.IndexByte(cwd, 0) >= 0 || !utf8.ValidString(cwd) {
		return ""
	}
	for seg := range strings.SplitSeq(cwd, "/") {
		if seg == ".." {
			return ""
		}
	}
	return path.Clean(cwd)
}

// redactText redacts *s and, when that changed it, bounds it again to max
// so that the field stays within its limit.
func redactText(s *string, max int) {
	if r := text.Redact(*s); r != *s {
		*s = text.Bound(r, max)
	}
}

// RedactSnapshot redacts every display text of s in place: title, model,
// waitingFor, tool, error and each subagent's type and title. A changed field is bounded
// again to its limit. Ids and cwd are left alone.
func RedactSnapshot(s *agentbridge.Snapshot) {
	redactText(&s.Title, MaxTitle)
	redactText(&s.Model, MaxModel)
	redactText(&s.WaitingFor, MaxWaitingFor)
	redactText(&s.Tool, MaxToolName)
	redactText(&s.Error, MaxError)
	for i := range s.Subagents {
		redactText(&s.Subagents[i].Type, MaxSubagentType)
		redactText(&s.Subagents[i].Title, MaxTitle)
	}
}

// RedactEvent redacts every display text of e in place: title, model,
// promptText, name, reason, summary, signal and type. A changed field is
// bounded again to its limit. Ids and cwd are left alone.
func RedactEvent(e *agentbridge.Event) {
	redactText(&e.Title, MaxTitle)
	redactText(&e.Model, MaxModel)
	redactText(&e.PromptText, MaxTitle)
	redactText(&e.Name, MaxText)
	redactText(&e.Reason, MaxWaitingFor)
	redactText(&e.Summary, MaxError)
	redactText(&e.Signal, MaxSignal)
	redactText(&e.Type, MaxSubagentType)
}

// RedactDiagnostic redacts the message of d in place.
func RedactDiagnostic(d *agentbridge.Diagnostic) {
	redactText(&d.Message, MaxDiagnosticText)
}
