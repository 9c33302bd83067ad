package claudecode

import (
	"bytes"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/agentbridge/agentbridge"
	"github.com/agentbridge/agentbridge/sources"
	"github.com/agentbridge/agentbridge/sources/sourcestest"
)

// TestRewrittenTranscript: Claude Code 2.1.242 can remove a record from a
// transcript it is writing (a reply it retracted: it opens the file "r+",
// truncates it at the record and writes the records after it back), then
// goes on appending. The bridge, past that record already, reads the file
// again: no garbage from the middle of a moved record, no second turn, the
// registry's wait kept, and the same final state as a fresh read of the
// file. The transcript is a real 2.1.242 one (testdata/SOURCES.md).
func TestRewrittenTranscript(t *testing.T) {
	data, err := os.ReadFile("testdata/journals/v2.1.242-live-bash-approved.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	recs := strings.SplitAfter(strings.TrimSuffix(string(data), "\n"), "\n")
	if len(recs) != 6 {
		t.Fatalf("fixture has %d records, want 6 (prompt, text, tool_use, tool_result, text, turn_duration)", len(recs))
	}
	const sid = "a2ee9691-4aae-47ae-923d-236b9e31361e"
	tr := filepath.Join("projects", "-home-user-project", sid+".jsonl")
	e := startLive(t, nil)
	pid := helper(t).Process.Pid
	e.registry(pid, sid, "busy", "", 1000)
	e.write(tr, strings.Join(recs[:3], ""))
	e.registry(pid, sid, "waiting", "permission prompt", 1100)
	s := e.view.waitFor(t, "waiting on the Bash tool", sid, func(s agentbridge.Snapshot, ok bool) bool {
		return ok && s.Status == agentbridge.StatusWaiting && strings.Contains(s.WaitingFor, "Bash")
	})
	if s.Title != "make the marker" {
		t.Fatalf("before the rewrite: %+v", s)
	}

	// First a rewrite that leaves the transcript where it was (the text
	// record removed, the tool_use moved up, a metadata record after it):
	// read again, the session is still waiting on the tool (the registry's
	// state applied again after the lines), and no client saw it move.
	p := filepath.Join(e.dir, tr)
	pad := `{"type":"permission-mode","permissionMode":"default","sessionId":"` + sid + `","pad":"` + strings.Repeat("x", len(recs[1])) + `"}` + "\n"
	f, err := os.OpenFile(p, os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteAt([]byte(recs[2]+pad), int64(len(recs[0]))); err != nil {
		t.Fatal(err)
	}
	f.Close()
	recs = []string{recs[0], recs[2], pad, recs[3], recs[4], recs[5]}
	// A barrier: another session's prompt, appended after the rewrite, is
	// seen once the rewrite's read was committed.
	const other = "eeeeeeee-0000-4000-8000-00000000000f"
	e.append(filepath.Join("projects", "-home-user-project", other+".jsonl"), prompt(other, 1, "p-o", "barrier"))
	e.view.waitFor(t, "the barrier session", other, func(_ agentbridge.Snapshot, ok bool) bool { return ok })
	s = e.view.waitFor(t, "still waiting after the re-read", sid, func(s agentbridge.Snapshot, ok bool) bool { return ok })
	e.view.mu.Lock()
	trail := slices.Clone(e.view.trail[sid])
	e.view.mu.Unlock()
	if s.Status != agentbridge.StatusWaiting || !strings.Contains(s.WaitingFor, "Bash") || trail[len(trail)-1] != agentbridge.StatusWaiting {
		t.Fatalf("after a rewrite that changed nothing shown: %+v, statuses %v", s, trail)
	}

	// Then the padding record (recs[2]) is removed in place: the records
	// after it move up, and what comes next is written after them, in one
	// write over the same inode (the file only grows: no truncation to
	// see), as 2.1.242's record removal and its next appends leave it.
	f, err = os.OpenFile(p, os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	at := int64(len(recs[0]) + len(recs[1]))
	rest := strings.Join(recs[3:6], "")
	if len(rest) <= len(recs[2]) {
		t.Fatal("the rewrite must grow the file")
	}
	if _, err := f.WriteAt([]byte(rest), at); err != nil {
		t.Fatal(err)
	}
	f.Close()
	recs = slices.Delete(recs, 2, 3)
	e.registry(pid, sid, "idle", "", 1200)
	s = e.view.waitFor(t, "the turn done after the rewrite", sid, status(sourcestest.StatusDone))
	if s.LastTurn != agentbridge.LastTurnCompleted || s.WaitingFor != "" || s.Title != "make the marker" {
		t.Errorf("after the rewrite: %+v", s)
	}
	e.view.mu.Lock()
	turns := e.view.turns[sid]
	trail = slices.Clone(e.view.trail[sid])
	diags := slices.Clone(e.view.diags)
	e.view.mu.Unlock()
	if turns != 1 {
		t.Errorf("%d turns started, want 1", turns)
	}
	if i := slices.Index(trail, agentbridge.StatusWaiting); i < 0 || !slices.Equal(trail[i:], []agentbridge.Status{agentbridge.StatusWaiting, sourcestest.StatusDone}) &&
		!slices.Equal(trail[i:], []agentbridge.Status{agentbridge.StatusWaiting, agentbridge.StatusRunning, sourcestest.StatusDone}) {
		t.Errorf("statuses %v: want waiting, (running,) done and nothing else", trail)
	}
	for _, d := range diags {
		t.Errorf("diagnostic %s: %s (a line read from the middle of a moved record?)", d.Code, d.Message)
	}

	// A fresh read of the same files ends in the same state.
	final, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	reg, err := os.ReadFile(filepath.Join(e.dir, "sessions", itoa(pid)+".json"))
	if err != nil {
		t.Fatal(err)
	}
	fresh := startLive(t, func(dir string) {
		os.MkdirAll(filepath.Join(dir, filepath.Dir(tr)), 0o755)
		os.WriteFile(filepath.Join(dir, tr), final, 0o644)
		os.WriteFile(filepath.Join(dir, "sessions", itoa(pid)+".json"), reg, 0o644)
	})
	want := fresh.view.waitFor(t, "a fresh read", sid, func(_ agentbridge.Snapshot, ok bool) bool { return ok })
	if !bytes.Equal(final, []byte(strings.Join(recs, ""))) {
		t.Fatal("the transcript is not what the rewrite should have left")
	}
	if !sameState(s, want) {
		t.Errorf("after the rewrite %+v\nfresh read      %+v", s, want)
	}
}

// sameState compares what a user sees of a session.
func sameState(a, b agentbridge.Snapshot) bool {
	return a.Status == b.Status && a.LastTurn == b.LastTurn && a.LastTurnEndedAt == b.LastTurnEndedAt &&
		a.Title == b.Title && a.Model == b.Model && a.Cwd == b.Cwd && a.PID == b.PID &&
		a.WaitingFor == b.WaitingFor && slices.Equal(a.Subagents, b.Subagents)
}

// TestSidecarAfterChild: 2.1.2+ writes a subagent's .meta.json before its
// transcript, from another thread; on a loaded machine the transcript's
// first line can be read first, and the parent's Agent tool_use after
// both. The subagent is still listed once, under the tool's id, with the
// sidecar's title and type.
func TestSidecarAfterChild(t *testing.T) {
	e := startLive(t, nil)
	pid := helper(t).Process.Pid
	const sid = "dddddddd-0000-4000-8000-00000000000e"
	dir := filepath.Join("projects", "-work-proj")
	e.registry(pid, sid, "busy", "", 1000)
	e.append(filepath.Join(dir, sid+".jsonl"), prompt(sid, 1, "p", "delegate"))
	e.view.waitFor(t, "running", sid, status(agentbridge.StatusRunning))
	reads := sources.ReadActivity().Reads
	e.append(filepath.Join(dir, sid, "subagents", "agent-a77.jsonl"),
		rec(sid, 2, "user", `"isSidechain":true,"agentId":"a77","message":{"role":"user","content":"count"}`))
	for deadline := time.Now().Add(10 * time.Second); sources.ReadActivity().Reads == reads; {
		if time.Now().After(deadline) {
			t.Fatal("the subagent transcript was not read")
		}
		time.Sleep(time.Millisecond)
	}
	e.write(filepath.Join(dir, sid, "subagents", "agent-a77.meta.json"), `{"agentType":"general-purpose","description":"Count the files","toolUseId":"toolu_A"}`)
	e.append(filepath.Join(dir, sid+".jsonl"), toolUse(sid, 3, "toolu_A", "Agent", `{"description":"Count the files","subagent_type":"general-purpose","prompt":"count"}`))
	s := e.view.waitFor(t, "the subagent", sid, func(s agentbridge.Snapshot, ok bool) bool { return ok && len(s.Subagents) > 0 })
	want := agentbridge.Subagent{ID: "toolu_A", Type: "general-purpose", Title: "Count the files", Status: agentbridge.SubagentRunning}
	if len(s.Subagents) != 1 || s.Subagents[0] != want {
		t.Errorf("subagents %+v, want [%+v]", s.Subagents, want)
	}
	// After the grace, still one.
	time.Sleep(metaGrace + 500*time.Millisecond)
	s = e.view.waitFor(t, "the subagent", sid, func(_ agentbridge.Snapshot, ok bool) bool { return ok })
	if len(s.Subagents) != 1 || s.Subagents[0] != want {
		t.Errorf("after the grace: subagents %+v, want [%+v]", s.Subagents, want)
	}
}
