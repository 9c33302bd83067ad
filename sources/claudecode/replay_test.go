package claudecode

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"

	"github.com/agentbridge/agentbridge"
	"github.com/agentbridge/agentbridge/hub"
	"github.com/agentbridge/agentbridge/sources"
	"github.com/agentbridge/agentbridge/sources/internal/kittest"
	"github.com/agentbridge/agentbridge/sources/sourcestest"
)

// byEntry is a recording of one journal that grew one entry at a time
// (the run's own log of sizes was not kept), cut after its first n lines
// (all of them when n < 0).
func byEntry(data []byte, sid string, n int) *sourcestest.Recording {
	rec := &sourcestest.Recording{Name: "entry by entry"}
	for off, lines := 0, 0; off < len(data) && lines != n; lines++ {
		off += bytes.IndexByte(data[off:], '\n') + 1
		rec.Transcript = data[:off]
		rec.Growth = append(rec.Growth, sourcestest.Growth{Session: sid, Path: "/rec/projects/-cwd/" + sid + ".jsonl", Size: int64(off)})
	}
	return rec
}

func replayer() sourcestest.Replay {
	return sourcestest.Replay{
		New:  func(home string) hub.Source { return New(sources.Options{Home: home}) },
		Path: func(_, recorded string) string { return filepath.Join("projects", "-cwd", filepath.Base(recorded)) },
	}
}

// TestGoalLoopTurn replays a real Claude Code session driven by /goal (an
// autonomous loop a Stop hook keeps going until its condition holds or it
// gives up; testdata/SOURCES.md), entry by entry, against the states its
// recording's authors expect. The loop's turn starts when /goal sends the
// model its instruction, not when the first reply lands 8.5 s later, and
// ends with the reply; /goal clear after it starts nothing.
func TestGoalLoopTurn(t *testing.T) {
	dir := filepath.Join("testdata", "irrlicht", "2-8_autonomous-loop-iteration-limit")
	sc, err := sourcestest.LoadScenario(dir)
	if err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(filepath.Join(dir, "2026-05-18-22-56-34.transcript.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	const sid = "f397e617-4134-4517-a9b5-b0008e71cde5"
	sc.Recordings = []*sourcestest.Recording{byEntry(data, sid, -1)}
	// The goal's evaluator gave up after the first reply (goal_status
	// failed, iterations 1): this run has no second iteration.
	sc.Phases = kittest.Drop(sc.Phases, []string{"iter2_turn_start", "iter2_turn_end"})
	replayer().Check(t, sc)

	// Cut after the instruction /goal sends the model (line 6): running.
	h := replayer().Run(t, byEntry(data, sid, 6))
	s, ok := h.Snapshot(sid)
	if !ok || s.Status != agentbridge.StatusRunning {
		t.Fatalf("after /goal's instruction: %+v (found %v), want running", s, ok)
	}
}
