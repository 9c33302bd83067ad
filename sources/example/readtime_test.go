package example

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/agentbridge/agentbridge"
	"github.com/agentbridge/agentbridge/hub"
	"github.com/agentbridge/agentbridge/sources/sourcestest"
)

// TestActivityFallsBackToReadTime: a journal whose records carry no ts
// gives no activity times for what the bridge found at start-up (its age
// is unknown), and the moment the bridge read each later record live.
func TestActivityFallsBackToReadTime(t *testing.T) {
	t.Parallel()
	home := t.TempDir()
	dir := SessionsDir(home)
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "s-1.jsonl")
	sourcestest.Append(t, path, `{"type":"session","title":"T"}`+"\n")
	var clock sourcestest.Clock
	clock.Set(1_000_000)
	r := sourcestest.RunReal(t, New(Config{Home: home, Linger: -1}), &clock, hub.Options{})
	r.WaitFor(t, "the session", func(*hub.Hub) bool { _, ok := r.Entry("s-1"); return ok })
	if e, _ := r.Entry("s-1"); e.Activity != nil && e.Activity.StatusSince != 0 {
		t.Errorf("found at start-up: statusSince %d, want none", e.Activity.StatusSince)
	}

	clock.Set(2_000_000)
	sourcestest.Append(t, path, `{"type":"prompt","turnId":"t1","text":"go"}`+"\n")
	r.WaitFor(t, "running", func(*hub.Hub) bool {
		e, _ := r.Entry("s-1")
		return e.Snapshot.Status == agentbridge.StatusRunning
	})
	e, _ := r.Entry("s-1")
	if a := e.Activity; a == nil || a.StatusSince != 2_000_000 || a.TurnStartedAt != 2_000_000 {
		t.Errorf("after a prompt read live: activity %+v, want statusSince and turnStartedAt 2000000", a)
	}

	clock.Set(3_000_000)
	sourcestest.Append(t, path, `{"type":"tool_started","toolId":"x","name":"Bash"}`+"\n")
	r.WaitFor(t, "the tool", func(*hub.Hub) bool {
		e, _ := r.Entry("s-1")
		return e.Activity != nil && e.Activity.Tool != nil
	})
	e, _ = r.Entry("s-1")
	if a := e.Activity; a.Tool.Since != 3_000_000 || a.StatusSince != 2_000_000 {
		t.Errorf("after a tool read live: activity %+v (tool %+v), want the tool since 3000000 and statusSince kept", a, a.Tool)
	}
}
