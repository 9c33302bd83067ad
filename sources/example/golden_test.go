package example

import (
	"bytes"
	"flag"
	"io/fs"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentbridge/agentbridge"
	"github.com/agentbridge/agentbridge/fold"
	journals "github.com/agentbridge/agentbridge/sources/example/demo"
	"github.com/agentbridge/agentbridge/sources/sourcestest"
	"github.com/agentbridge/agentbridge/validate"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata/golden")

// golden is what one journal becomes: its lifecycle events, in order, and
// the snapshot they fold into.
type golden struct {
	Events   []agentbridge.Event  `json:"events"`
	Snapshot agentbridge.Snapshot `json:"snapshot"`
}

// replay maps every line of a journal and folds the events, failing on an
// event the fold rejects (the bundled journals are all valid).
func replay(t *testing.T, id string, data []byte) golden {
	t.Helper()
	g := golden{Events: []agentbridge.Event{}}
	s := fold.NewSession(id, Harness)
	for i, line := range bytes.Split(bytes.TrimRight(data, "\n"), []byte("\n")) {
		e, ok, code := mapRecord(id, line, nil)
		if code != "" {
			t.Fatalf("line %d: skipped with %s", i+1, code)
		}
		if !ok {
			continue
		}
		if issues := s.Apply(e); len(issues) > 0 {
			t.Fatalf("line %d: fold rejected %s: %+v", i+1, e.Kind, issues)
		}
		g.Events = append(g.Events, e)
	}
	g.Snapshot = s.Snapshot()
	if issues := validate.Snapshot(g.Snapshot, validate.Harnesses{Harness: true}); len(issues) > 0 {
		t.Fatalf("final snapshot invalid: %+v", issues)
	}
	return g
}

// TestGolden maps each bundled journal to its events and final snapshot and
// compares them with testdata/golden/<journal>.json.
func TestGolden(t *testing.T) {
	names, err := fs.Glob(journals.Journals, "*.jsonl")
	if err != nil || len(names) == 0 {
		t.Fatalf("no bundled journals: %v", err)
	}
	for _, name := range names {
		t.Run(name, func(t *testing.T) {
			data, err := fs.ReadFile(journals.Journals, name)
			if err != nil {
				t.Fatal(err)
			}
			got := replay(t, strings.TrimSuffix(name, ".jsonl"), data)
			path := filepath.Join("testdata", "golden", strings.TrimSuffix(name, ".jsonl")+".json")
			sourcestest.Golden(t, path, got, *update)
		})
	}
}
