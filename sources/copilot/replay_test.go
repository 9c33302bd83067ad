package copilot

import (
	"encoding/json"
	"path/filepath"
	"slices"
	"testing"

	"github.com/agentbridge/agentbridge/hub"
	"github.com/agentbridge/agentbridge/proc/proctest"
	"github.com/agentbridge/agentbridge/sources"
	"github.com/agentbridge/agentbridge/sources/sourcestest"
)

// notRecorded lists phases whose journal the recordings lack, by scenario:
// they cannot be replayed (testdata/SOURCES.md).
var notRecorded = map[string][]string{
	// The other agent's transcript (Claude Code or Codex) was not recorded.
	"4-2_multiple-agents-same-workspace": {"agentB_turn_start", "agentB_turn_done"},
	// /undo rewrote the journal; only the file after the rewrite was kept,
	// so the second turn's records are gone. The recorder took the rewrite
	// for activity (rewind_activity: working, then ready); the bridge reads
	// the rewritten journal again and shows the session as it rebuilds it
	// (an upsert of its last state, done), so these are not ours either.
	"1-6_checkpoint-rewind": {"v2_turn_start", "v2_turn_end", "rewind_activity", "rewind_settled"},
}

// splitJournals cuts a recording's transcript at each session.start: each
// run of a session is its own journal, named by data.sessionId.
var splitJournals = sourcestest.SplitAt(func(line []byte) (string, bool) {
	var r struct {
		Type string `json:"type"`
		Data struct {
			SessionID string `json:"sessionId"`
		} `json:"data"`
	}
	if json.Unmarshal(line, &r) != nil || r.Type != typeSessionStart {
		return "", false
	}
	return r.Data.SessionID, true
})

func replayer() sourcestest.Replay {
	return sourcestest.Replay{
		// The recorded processes are not here: nothing is bound or ended
		// by processes (the recordings' own session.shutdown still ends).
		New:   func(home string) hub.Source { return New(sources.Options{Home: home, Processes: proctest.Unknown}) },
		Split: splitJournals,
		Path: func(session, _ string) string {
			return filepath.Join("session-state", session, journalName)
		},
		// session.shutdown is on disk: a process_exited phase is checked.
		Checked: sourcestest.Checked{Exits: true},
	}
}

// TestRecordings replays the real Copilot CLI recordings in
// testdata/irrlicht by the byte offsets they grew at, and checks every
// state their authors expect, in order (sourcestest.CheckPhases).
func TestRecordings(t *testing.T) {
	dirs, _ := filepath.Glob(filepath.Join("testdata", "irrlicht", "*-*"))
	if len(dirs) < 10 {
		t.Fatalf("found %d recorded scenarios, want 10", len(dirs))
	}
	for _, dir := range dirs {
		sc, err := sourcestest.LoadScenario(dir)
		if err != nil {
			t.Fatal(err)
		}
		skip := notRecorded[sc.Name]
		sc.Phases = slices.DeleteFunc(sc.Phases, func(p sourcestest.Phase) bool { return slices.Contains(skip, p.Name) })
		t.Run(sc.Name, func(t *testing.T) { replayer().Check(t, sc) })
	}
}
