package vibe

import (
	"path/filepath"
	"testing"

	"github.com/agentbridge/agentbridge/hub"
	"github.com/agentbridge/agentbridge/sources"
	"github.com/agentbridge/agentbridge/sources/internal/kittest"
	"github.com/agentbridge/agentbridge/sources/sourcestest"
)

// notRecorded lists phases whose journal the recordings lack, by scenario:
// they cannot be replayed (testdata/SOURCES.md).
var notRecorded = map[string][]string{
	// A session's birth, ready before its first turn: Vibe creates
	// messages.jsonl empty (touch) right before it appends the first
	// message, and the recorder showed the session in that instant; the
	// recordings log no size for an empty file, so the first record a
	// replay has is the prompt. Phases named *_session_birth before a
	// *_handoff, and s1/s2_presession_birth, are the recorder's own row for
	// the vibe process before any file (a "proc-<pid>" pre-session).
	"1-2_session-end":             {"v1_session_birth", "v1_handoff", "v2_session_birth", "v2_handoff"},
	"1-3_long-idle-live-session":  {"session_birth"},
	"1-4_session-resume":          {"v1_session_birth"},
	"1-5_session-reset":           {"new_session"},
	"1-6_checkpoint-rewind":       {"session_birth", "v1_session_handoff", "v2_session_birth"},
	"1-8_model-context-display":   {"session_birth"},
	"3-1_foreground-subagent":     {"parent_session_birth"},
	"3-4_subagent-orphan-cleanup": {"parent_session_birth"},
	"4-1_multiple-sessions-same-cwd": {
		"s1_presession_birth", "s1_birth", "s2_presession_birth", "s2_birth",
	},
	"4-2_multiple-agents-same-workspace": {"session_birth"},
}

// ownJournal picks the recorded paths of Vibe's session messages (not a
// subagent's under agents/, not the other agent's in 4-2).
func ownJournal(recorded string) bool {
	return filepath.Base(recorded) == messagesFile && filepath.Base(filepath.Dir(filepath.Dir(recorded))) == "session"
}

func replayer() sourcestest.Replay {
	return sourcestest.Replay{
		New: func(home string) hub.Source { return New(sources.Options{Home: home}) },
		Path: func(_, recorded string) string {
			return filepath.Join("logs", "session", filepath.Base(filepath.Dir(recorded)), messagesFile)
		},
	}
}

// TestRecordings replays the real Mistral Vibe recordings in
// testdata/irrlicht by the byte offsets they grew at (each session's
// messages cut from the transcript at their largest recorded size), and
// checks every state their authors expect, in order
// (sourcestest.CheckPhases).
func TestRecordings(t *testing.T) {
	dirs, _ := filepath.Glob(filepath.Join("testdata", "irrlicht", "*-*"))
	if len(dirs) < 11 {
		t.Fatalf("found %d recorded scenarios, want 11", len(dirs))
	}
	for _, dir := range dirs {
		sc, err := sourcestest.LoadScenario(dir)
		if err != nil {
			t.Fatal(err)
		}
		t.Run(sc.Name, func(t *testing.T) { kittest.CheckBySize(t, replayer(), sc, ownJournal, notRecorded[sc.Name]) })
	}
}
