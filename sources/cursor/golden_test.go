package cursor

import (
	"flag"
	"path/filepath"
	"testing"

	"github.com/agentbridge/agentbridge"
	"github.com/agentbridge/agentbridge/fold"
	"github.com/agentbridge/agentbridge/sources/sourcestest"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata/golden")

// TestGolden maps each transcript in testdata/journals (the corpus's,
// corpus-*, and ones written for this package), line by line, and
// compares the events of every line and the final snapshot with
// testdata/golden/<name>.json (-update rewrites them).
func TestGolden(t *testing.T) {
	sourcestest.GoldenDir(t, filepath.Join("testdata", "journals"), Harness, nil, func(string) sourcestest.Mapper {
		m, n := &mapper{cwd: "/home/ana/shop"}, 0
		return sourcestest.Mapper{Viewed: func(v fold.View, line []byte, out []agentbridge.Event) ([]agentbridge.Event, string) {
			n++
			return m.Map(v, n, line, out)
		}}
	}, *update)
}

func TestOutcome(t *testing.T) {
	for status, want := range map[string]agentbridge.Outcome{
		"success": agentbridge.OutcomeSuccess, "completed": agentbridge.OutcomeSuccess,
		"aborted": agentbridge.OutcomeCancelled, "cancelled": agentbridge.OutcomeCancelled, "Canceled": agentbridge.OutcomeCancelled,
		"interrupted": agentbridge.OutcomeCancelled,
		"error":       agentbridge.OutcomeError, "failed": agentbridge.OutcomeError, "": agentbridge.OutcomeError, "weird": agentbridge.OutcomeError,
	} {
		if got := Outcome(status); got != want {
			t.Errorf("Outcome(%q) = %s, want %s", status, got, want)
		}
	}
}

func TestPrompt(t *testing.T) {
	for in, want := range map[string]string{
		"List the files.": "List the files.",
		"<user_info>OS: linux</user_info>\n<user_query>\nFix it\n</user_query>": "Fix it",
		"<user_query>unclosed":      "unclosed",
		"  padded  ":                "padded",
		"<user_query></user_query>": "",
	} {
		if got := Prompt(in); got != want {
			t.Errorf("Prompt(%q) = %q, want %q", in, got, want)
		}
	}
}
