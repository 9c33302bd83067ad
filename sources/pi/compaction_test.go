package pi

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"

	"github.com/agentbridge/agentbridge/sources/internal/kittest"
	"github.com/agentbridge/agentbridge/sources/sourcestest"
)

// TestCompactionIsATurn replays a real Pi session with a /compact between
// two prompts (testdata/SOURCES.md), entry by entry as Pi appends them, and
// checks the states its recording's authors expect: the compaction, a model
// call the user asked for, is one more running → idle arc of the same
// session. The recorder's own pre-session row (session_birth) has no
// journal.
func TestCompactionIsATurn(t *testing.T) {
	sc, err := sourcestest.LoadScenario(filepath.Join("testdata", "compaction"))
	if err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(filepath.Join("testdata", "journals", "irrlicht-context-compaction.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	const stem = "2026-05-25T02-42-59-084Z_019e5d03-9f8c-70cb-827f-ccaf24041c07"
	rec := &sourcestest.Recording{Name: "entry by entry", Transcript: data}
	for off := 0; off < len(data); {
		off += bytes.IndexByte(data[off:], '\n') + 1
		rec.Growth = append(rec.Growth, sourcestest.Growth{Session: stem, Path: "/rec/sessions/--cwd--/" + stem + ".jsonl", Size: int64(off)})
	}
	sc.Recordings = []*sourcestest.Recording{rec}
	sc.Phases = kittest.Drop(sc.Phases, []string{"session_birth"})
	replayer().Check(t, sc)
}
