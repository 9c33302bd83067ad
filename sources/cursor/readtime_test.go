package cursor

import (
	"path/filepath"
	"testing"
	"time"

	"github.com/agentbridge/agentbridge"
	"github.com/agentbridge/agentbridge/hub"
	"github.com/agentbridge/agentbridge/proc/proctest"
	"github.com/agentbridge/agentbridge/sources"
	"github.com/agentbridge/agentbridge/sources/sourcestest"
)

// TestActivityFallsBackToReadTime: Cursor's lines carry no times, so a
// session's statusSince is the moment the bridge read the line that
// changed its status live, and absent for what it found at start-up.
func TestActivityFallsBackToReadTime(t *testing.T) {
	t.Parallel()
	home := t.TempDir()
	path := filepath.Join(ProjectsDir(home), "empty-window", "agent-transcripts", "c-1", "c-1.jsonl")
	sourcestest.Append(t, path, `{"role":"user","message":{"content":[{"type":"text","text":"List the files."}]}}`+"\n"+
		`{"role":"assistant","message":{"content":[{"type":"text","text":"Here."}]}}`+"\n"+
		`{"type":"turn_ended","status":"success"}`+"\n")
	// Its cursor-agent runs (the slug names no directory: any one no
	// other session has).
	tree := proctest.Fake(t)
	tree.Add(proctest.Proc{PID: 10, PPID: 1, Exe: "/usr/bin/cursor-agent", Cwd: "/", Started: time.Now().Add(-time.Hour)})
	var clock sourcestest.Clock
	clock.Set(1_000_000)
	r := sourcestest.RunReal(t, New(sources.Options{Home: home, Processes: tree}), &clock, hub.Options{})
	r.WaitFor(t, "the session", func(*hub.Hub) bool { _, ok := r.Entry("c-1"); return ok })
	// Its ended turn has the hub's stamp for lastTurnEndedAt, but how long
	// it has been idle is unknown.
	if e, _ := r.Entry("c-1"); e.Activity != nil || e.Snapshot.LastTurnEndedAt != 1_000_000 {
		t.Errorf("found at start-up: activity %+v, lastTurnEndedAt %d; want no activity times, the turn's end stamped", e.Activity, e.Snapshot.LastTurnEndedAt)
	}

	clock.Set(2_000_000)
	sourcestest.Append(t, path, `{"role":"user","message":{"content":[{"type":"text","text":"Run ls."}]}}`+"\n")
	r.WaitFor(t, "running", func(*hub.Hub) bool {
		e, _ := r.Entry("c-1")
		return e.Snapshot.Status == agentbridge.StatusRunning
	})
	e, _ := r.Entry("c-1")
	if a := e.Activity; a == nil || a.StatusSince != 2_000_000 || a.TurnStartedAt != 2_000_000 {
		t.Errorf("after a prompt read live: activity %+v, want statusSince and turnStartedAt 2000000", a)
	}
}
