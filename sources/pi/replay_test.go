package pi

import (
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentbridge/agentbridge/hub"
	"github.com/agentbridge/agentbridge/sources"
	"github.com/agentbridge/agentbridge/sources/internal/kittest"
	"github.com/agentbridge/agentbridge/sources/sourcestest"
)

// notRecorded lists phases whose journal the recordings lack, by scenario:
// they cannot be replayed (testdata/SOURCES.md).
var notRecorded = map[string][]string{
	// The recorder's own row for the pi process before its journal exists
	// (a "proc-<pid>" pre-session, born ready): Pi writes its journal only
	// once the first reply is complete, so a journal reader has no such
	// row. The journal's session is the one whose turns follow.
	"1-2_session-end":       {"session_birth"},
	"1-5_session-reset":     {"session_birth"},
	"1-6_checkpoint-rewind": {"session_birth"},
	// The other agent's transcript (Claude Code or Codex) was not recorded.
	"4-2_multiple-agents-same-workspace": {"agentB_turn_start", "agentB_turn_done"},
}

// splitJournals cuts a recording's transcript at each session header; the
// recording's log names a journal by its file stem, <timestamp>_<uuid>,
// the timestamp with ':' and '.' as '-'.
var splitJournals = sourcestest.SplitAt(func(line []byte) (string, bool) {
	var r struct {
		Type      string `json:"type"`
		ID        string `json:"id"`
		Timestamp string `json:"timestamp"`
	}
	if json.Unmarshal(line, &r) != nil || r.Type != "session" {
		return "", false
	}
	return strings.NewReplacer(":", "-", ".", "-").Replace(r.Timestamp) + "_" + r.ID, true
})

func replayer() sourcestest.Replay {
	return sourcestest.Replay{
		New:   func(home string) hub.Source { return New(sources.Options{Home: home}) },
		Split: splitJournals,
		// sessions/--<cwd>--/<file>.jsonl, as recorded
		Path: func(_, recorded string) string {
			return filepath.Join("sessions", filepath.Base(filepath.Dir(recorded)), filepath.Base(recorded))
		},
	}
}

// TestRecordings replays the real Pi recordings in testdata/irrlicht by
// the byte offsets they grew at, and checks every state their authors
// expect, in order (sourcestest.CheckPhases).
func TestRecordings(t *testing.T) {
	dirs, _ := filepath.Glob(filepath.Join("testdata", "irrlicht", "*-*"))
	if len(dirs) < 9 {
		t.Fatalf("found %d recorded scenarios, want 9", len(dirs))
	}
	for _, dir := range dirs {
		sc, err := sourcestest.LoadScenario(dir)
		if err != nil {
			t.Fatal(err)
		}
		sc.Phases = kittest.Drop(sc.Phases, notRecorded[sc.Name])
		t.Run(sc.Name, func(t *testing.T) { replayer().Check(t, sc) })
	}
}
