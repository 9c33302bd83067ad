package pi

import (
	"bytes"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/agentbridge/agentbridge"
	"github.com/agentbridge/agentbridge/validate"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata/golden")

// golden is what one journal becomes: per line, the events it maps to or
// the code it is skipped with, and the snapshot the events fold into.
type golden struct {
	Lines    []goldenLine         `json:"lines"`
	Snapshot agentbridge.Snapshot `json:"snapshot"`
}

type goldenLine struct {
	Line    int                 `json:"line"`
	Skipped string              `json:"skipped,omitempty"`
	Events  []agentbridge.Event `json:"events,omitempty"`
}

// replay maps every line of a journal and folds the events, failing on an
// event the fold rejects: a mapping must only say what the fold accepts.
func replay(t *testing.T, id string, data []byte) golden {
	t.Helper()
	var g golden
	st := newSession()
	s := validate.NewSession(id, Harness)
	for i, line := range bytes.Split(bytes.TrimRight(data, "\n"), []byte("\n")) {
		evs, code := st.mapRecord(line, nil)
		if code == "" && len(evs) == 0 {
			continue
		}
		for _, e := range evs {
			if issues := s.Apply(e); len(issues) > 0 {
				t.Fatalf("line %d: fold rejected %s: %+v", i+1, e.Kind, issues)
			}
			if issues := validate.Event(e); len(issues) > 0 {
				t.Fatalf("line %d: invalid %s: %+v", i+1, e.Kind, issues)
			}
		}
		g.Lines = append(g.Lines, goldenLine{Line: i + 1, Skipped: code, Events: evs})
	}
	g.Snapshot = s.Snapshot()
	if issues := validate.Snapshot(g.Snapshot, validate.Harnesses{Harness: true}); len(issues) > 0 {
		t.Fatalf("final snapshot invalid: %+v", issues)
	}
	return g
}

// TestGolden maps each journal in testdata/journals (recordings of real Pi
// sessions, and journals written from Pi's session format for the entries
// the recordings lack) and compares the result with testdata/golden.
func TestGolden(t *testing.T) {
	names, err := filepath.Glob(filepath.Join("testdata", "journals", "*.jsonl"))
	if err != nil || len(names) == 0 {
		t.Fatalf("no journals: %v", err)
	}
	for _, name := range names {
		base := strings.TrimSuffix(filepath.Base(name), ".jsonl")
		t.Run(base, func(t *testing.T) {
			data, err := os.ReadFile(name)
			if err != nil {
				t.Fatal(err)
			}
			got := replay(t, "s-"+base, data)
			path := filepath.Join("testdata", "golden", base+".json")
			if *update {
				b, err := json.MarshalIndent(got, "", "  ")
				if err != nil {
					t.Fatal(err)
				}
				if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(path, append(b, '\n'), 0o644); err != nil {
					t.Fatal(err)
				}
				return
			}
			b, err := os.ReadFile(path)
			if err != nil {
				t.Fatalf("%v (run go test ./sources/pi -update to create it)", err)
			}
			var want golden
			if err := json.Unmarshal(b, &want); err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("%s mismatch (-want +got):\n%s", base, diff)
			}
		})
	}
}
