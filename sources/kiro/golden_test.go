package kiro

import (
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/agentbridge/agentbridge"
	"github.com/agentbridge/agentbridge/validate"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata/golden")

// golden is what one session becomes: per journal line (and, last, its
// sidecar), the events it maps to or the code it is skipped with, and the
// snapshot the events fold into.
type golden struct {
	Lines    []goldenLine         `json:"lines"`
	Sidecar  *goldenLine          `json:"sidecar,omitempty"`
	Snapshot agentbridge.Snapshot `json:"snapshot"`
}

type goldenLine struct {
	Line    int                 `json:"line,omitempty"`
	Skipped string              `json:"skipped,omitempty"`
	Events  []agentbridge.Event `json:"events,omitempty"`
}

func apply(t *testing.T, s *validate.Session, where string, evs []agentbridge.Event) {
	t.Helper()
	for _, e := range evs {
		if issues := validate.Event(e); len(issues) > 0 {
			t.Fatalf("%s: invalid %s: %+v", where, e.Kind, issues)
		}
		if issues := s.Apply(e); len(issues) > 0 {
			t.Fatalf("%s: fold rejected %s: %+v", where, e.Kind, issues)
		}
	}
}

// replay maps every journal line, then the sidecar (as the source reads
// it once the journal's writes are in), and folds the events, failing on
// an event the fold rejects.
func replay(t *testing.T, id string, journal, side []byte) golden {
	t.Helper()
	var g golden
	st := newSession()
	s := validate.NewSession(id, Harness)
	for i, line := range bytes.Split(bytes.TrimRight(journal, "\n"), []byte("\n")) {
		evs, code := st.mapRecord(line, nil)
		if code == "" && len(evs) == 0 {
			continue
		}
		apply(t, s, "line", evs)
		g.Lines = append(g.Lines, goldenLine{Line: i + 1, Skipped: code, Events: evs})
	}
	if side != nil {
		evs, code := st.mapSidecar(side, nil)
		apply(t, s, "sidecar", evs)
		g.Sidecar = &goldenLine{Skipped: code, Events: evs}
	}
	g.Snapshot = s.Snapshot()
	if issues := validate.Snapshot(g.Snapshot, validate.Harnesses{Harness: true}); len(issues) > 0 {
		t.Fatalf("final snapshot invalid: %+v", issues)
	}
	return g
}

// TestGolden maps each session in testdata/sessions (<name>.jsonl and its
// optional <name>.json sidecar: recordings of real Kiro CLI sessions, and
// sessions written from the format for what they lack) and compares the
// result with testdata/golden/<name>.json.
func TestGolden(t *testing.T) {
	names, err := filepath.Glob(filepath.Join("testdata", "sessions", "*.jsonl"))
	if err != nil || len(names) == 0 {
		t.Fatalf("no sessions: %v", err)
	}
	for _, name := range names {
		base := strings.TrimSuffix(filepath.Base(name), ".jsonl")
		t.Run(base, func(t *testing.T) {
			journal, err := os.ReadFile(name)
			if err != nil {
				t.Fatal(err)
			}
			side, err := os.ReadFile(strings.TrimSuffix(name, "l"))
			if err != nil && !errors.Is(err, fs.ErrNotExist) {
				t.Fatal(err)
			}
			got := replay(t, "s-"+base, journal, side)
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
				t.Fatalf("%v (run go test ./sources/kiro -update to create it)", err)
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
