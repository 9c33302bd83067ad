package live

import "testing"

// The agents the bridge has a source for that the live suite cannot run:
// each has a column in the table whose scenarios skip, with the reason
// (checked 2026-12-01; see docs/testing.md, "Not in the live suite"). Their sources
// are tested on recordings and hand-written journals instead.
var unavailable = []struct {
	column, reason string
}{
	{"cursor-agent", "Cursor Agent (cursor-agent) cannot be installed here: Cursor publishes it only " +
		"as a tarball on its own download site (its install script), not on npm (the npm package " +
		"named cursor-agent is an unrelated tool), Debian or the Go module proxy; nor can it run " +
		"offline: its agent has no setting for another model endpoint, every model call goes to " +
		"Cursor's servers under a Cursor login or CURSOR_API_KEY"},
	{"kiro-cli", "Kiro CLI cannot be installed here: it is published only on Kiro's own download " +
		"site (an install script, a zip or .deb), not on npm, Debian or the Go module proxy; nor can " +
		"it run offline: its models are Kiro's hosted ones behind an AWS Builder ID or IAM Identity " +
		"Center login, with no setting for another model endpoint"},
	{"mistral-vibe", "Mistral Vibe cannot be installed here: it is a Python package (mistral-vibe) " +
		"published on PyPI (and conda-forge), which this machine and CI cannot reach; it is not on " +
		"npm or Debian. It could run offline (it takes a custom OpenAI-compatible provider in " +
		"~/.vibe/config.toml): it is one install away from a live column"},
}

// The rows a runnable agent fills.
var standardRows = []string{
	"prompt answered", "approval: approve", "approval: deny", "interrupt before output",
	"subagent", "two sessions, one cwd", "quit, resume", "kill -9",
}

// TestUnavailableAgents skips once per agent, with the reason, and marks
// every row of its column "skip".
func TestUnavailableAgents(t *testing.T) {
	enabled(t)
	for _, a := range unavailable {
		for _, row := range standardRows {
			record(a.column, row, "skip")
		}
		t.Run(a.column, func(t *testing.T) { t.Skip(a.reason) })
	}
}
