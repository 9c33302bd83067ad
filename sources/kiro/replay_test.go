package kiro

import (
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
	// A session's birth, idle before its first prompt: Kiro CLI creates the
	// journal empty and writes its sidecar when the session starts, but
	// the recordings log no size for an empty journal and hold no sidecar
	// of that moment, so the first record a replay has is the prompt.
	"1-2_session-end":            {"v1_session_birth", "v2_session_birth"},
	"1-3_long-idle-live-session": {"session_birth"},
	"1-4_session-resume":         {"v1_session_birth"},
	"1-6_checkpoint-rewind":      {"session_birth"},
	"1-8_model-context-display":  {"session_birth"},

	"2-2_auto-executed-tool-call": {"session_birth"}, // the same
	// The approval picker of a write leaves nothing in the journal until
	// it is answered (the open toolUse is all there is, as for a tool
	// that runs); the recorders' daemon guessed waiting after a 10 s
	// stall. The turn itself must still start and end.
	"2-11_auto-classified-permission": {"session_birth", "permission_waiting", "turn_resume"},
	// The other agent's transcript (Claude Code or Codex) was not recorded.
	"4-2_multiple-agents-same-workspace": {"agentB_turn_start", "agentB_turn_done"},
}

// ownJournal picks the recorded paths of Kiro CLI's own journals (not the
// other agent's in 4-2).
func ownJournal(recorded string) bool {
	return strings.HasSuffix(recorded, ".jsonl") && filepath.Base(filepath.Dir(recorded)) == "cli"
}

func replayer() sourcestest.Replay {
	return sourcestest.Replay{
		New: func(home string) hub.Source { return New(sources.Options{Home: home}) },
		Path: func(_, recorded string) string {
			return filepath.Join("sessions", "cli", filepath.Base(recorded))
		},
	}
}

// TestRecordings replays the real Kiro CLI recordings in testdata/irrlicht
// by the byte offsets they grew at (each journal cut from the transcript
// at its largest recorded size), and checks every state their authors
// expect, in order (sourcestest.CheckPhases).
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
		t.Run(sc.Name, func(t *testing.T) { kittest.CheckBySize(t, replayer(), sc, ownJournal, notRecorded[sc.Name]) })
	}
}
