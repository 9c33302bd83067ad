package validate

import "github.com/agentbridge/agentbridge"

// Bound is the bounded-text helper: it folds newlines and tabs to spaces,
// drops other control characters and invalid UTF-8, and cuts s to at most
// max characters on a character boundary, ending with "…" when it cut.
// Producers use it on display text before publishing; identity values are
// never bounded (they are rejected instead).
func Bound(s string, max int) string { panic("todo") }

// Redact replaces text that looks like a credential (API keys of Anthropic,
// OpenAI, GitHub, AWS, Slack; bearer tokens; private-key blocks;
// password=/token=/secret= pairs; …) with "[redacted]".
func Redact(s string) string { panic("todo") }

// RedactSnapshot redacts every display text of s in place.
func RedactSnapshot(s *agentbridge.Snapshot) { panic("todo") }

// RedactEvent redacts every display text of e in place.
func RedactEvent(e *agentbridge.Event) { panic("todo") }

// RedactDiagnostic redacts the message of d in place.
func RedactDiagnostic(d *agentbridge.Diagnostic) { panic("todo") }
