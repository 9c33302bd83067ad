package cursor

import (
	"bytes"
	"flag"
	"github.com/agentbridge/agentbridge/sources/sourcestest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentbridge/agentbridge"
	"github.com/agentbridge/agentbridge/validate"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata/golden")

// golden is what one transcript becomes: its lifecycle events in order,
// the codes of the lines it skipped, and the snapshot the events fold into.
type golden struct {
	Events   []agentbridge.Event  `json:"events"`
	Skipped  []string             `json:"skipped,omitempty"`
	Snapshot agentbridge.Snapshot `json:"snapshot"`
}

// replayTranscript maps every line and folds the events as Sessions does
// (redacted first), failing on an event the fold rejects.
func replayTranscript(t *testing.T, id, cwd string, data []byte) golden {
	t.Helper()
	g := golden{Events: []agentbridge.Event{}}
	s := validate.NewSession(id, Harness)
	m := mapper{cwd: cwd}
	var buf []agentbridge.Event
	for i, line := range bytes.Split(bytes.TrimRight(data, "\n"), []byte("\n")) {
		var code string
		buf, code = m.Map(i+1, line, buf[:0])
		if code != "" {
			g.Skipped = append(g.Skipped, code)
		}
		for _, e := range buf {
			validate.RedactEvent(&e)
			if issues := s.Apply(e); len(issues) > 0 {
				t.Fatalf("line %d: the fold rejected %s: %+v", i+1, e.Kind, issues)
			}
			g.Events = append(g.Events, e)
		}
	}
	g.Snapshot = s.Snapshot()
	if issues := validate.Snapshot(g.Snapshot, validate.Harnesses{Harness: true}); len(issues) > 0 {
		t.Fatalf("final snapshot invalid: %+v", issues)
	}
	return g
}

// TestGolden maps each transcript in testdata/journals (the corpus's,
// corpus-*, and ones written for this package) and compares the result
// with testdata/golden/<name>.json (-update rewrites them).
func TestGolden(t *testing.T) {
	files, _ := filepath.Glob(filepath.Join("testdata", "journals", "*.jsonl"))
	if len(files) < 4 {
		t.Fatalf("found %d transcripts", len(files))
	}
	for _, f := range files {
		name := strings.TrimSuffix(filepath.Base(f), ".jsonl")
		t.Run(name, func(t *testing.T) {
			data, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			got := replayTranscript(t, "s-"+name, "/home/ana/shop", data)
			path := filepath.Join("testdata", "golden", name+".json")
			sourcestest.Golden(t, path, got, *update)
		})
	}
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
