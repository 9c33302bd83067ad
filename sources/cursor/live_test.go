package cursor

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agentbridge/agentbridge"
	"github.com/agentbridge/agentbridge/proc/proctest"
	"github.com/agentbridge/agentbridge/sources"
	"github.com/agentbridge/agentbridge/sources/sourcestest"
)

func run(t *testing.T, opt sources.Options) *sourcestest.Hub {
	t.Helper()
	return sourcestest.Start(t, New(opt), nil)
}

func snap(h *sourcestest.Hub, id string, cond func(agentbridge.Snapshot) bool) func(*sourcestest.Hub) bool {
	return func(*sourcestest.Hub) bool { s, ok := h.Shown(id); return ok && cond(s) }
}

const (
	sid    = "3f2a1b4c-5d6e-4f70-8192-a3b4c5d6e7f8"
	subID  = "9e8d7c6b-5a49-4382-9170-6f5e4d3c2b1a"
	prompt = `{"role":"user","message":{"content":[{"type":"text","text":"<user_query>Run the tests</user_query>"}]}}` + "\n"
	answer = `{"role":"assistant","message":{"content":[{"type":"text","text":"Running."},{"type":"tool_use","name":"Shell","input":{"command":"go test"}}]}}` + "\n"
)

// TestLiveTurn: a transcript written live, lines cut in two, shows
// prompt → running → done/completed, then a failed turn; the cwd is the
// project directory's name decoded against the disk.
func TestLiveTurn(t *testing.T) {
	home := t.TempDir()
	cwd := t.TempDir()
	if strings.Contains(cwd, "-") {
		t.Skip("the temporary directory's name has a dash")
	}
	slug := strings.ReplaceAll(strings.TrimPrefix(cwd, "/"), "/", "-")
	h := run(t, sources.Options{Home: home, Processes: proctest.Running(t, "/opt/cursor-agent/cursor-agent", cwd)})
	p := filepath.Join(ProjectsDir(home), slug, "agent-transcripts", sid, sid+".jsonl")
	sourcestest.Append(t, p, prompt[:20])
	time.Sleep(20 * time.Millisecond)
	if _, ok := h.Shown(sid); ok {
		t.Fatal("half a line made a session")
	}
	sourcestest.Append(t, p, prompt[20:]+answer[:30])
	h.WaitFor(t, "running", snap(h, sid, func(s agentbridge.Snapshot) bool {
		return s.Status == agentbridge.StatusRunning && s.Title == "Run the tests" && s.Cwd == cwd
	}))
	sourcestest.Append(t, p, answer[30:]+`{"type":"turn_ended","status":"success"}`+"\n")
	h.WaitFor(t, "done, completed", snap(h, sid, func(s agentbridge.Snapshot) bool {
		return s.Status == sourcestest.StatusDone && s.LastTurn == agentbridge.LastTurnCompleted
	}))
	sourcestest.Append(t, p, prompt+`{"type":"turn_ended","status":"error"}`+"\n")
	h.WaitFor(t, "done, failed", snap(h, sid, func(s agentbridge.Snapshot) bool {
		return s.Status == sourcestest.StatusDone && s.LastTurn == agentbridge.LastTurnFailed
	}))
	if d := h.Diagnostics(); len(d) > 0 {
		t.Errorf("diagnostics %+v", d)
	}
}

// TestLiveSubagent: a subagent's transcript shows as a running subagent of
// its parent, titled by its prompt, never as a session; its turn_ended
// ends it.
func TestLiveSubagent(t *testing.T) {
	home := t.TempDir()
	// cursor-agent runs (the chat names no folder: any cwd)
	h := run(t, sources.Options{Home: home, Processes: proctest.Running(t, "/opt/cursor-agent/cursor-agent", "/home/u")})
	dir := filepath.Join(ProjectsDir(home), "empty-window", "agent-transcripts", sid)
	sourcestest.Append(t, filepath.Join(dir, sid+".jsonl"), prompt+answer)
	h.WaitFor(t, "the parent running", snap(h, sid, func(s agentbridge.Snapshot) bool { return s.Status == agentbridge.StatusRunning }))
	sub := filepath.Join(dir, "subagents", subID+".jsonl")
	sourcestest.Append(t, sub, `{"role":"user","message":{"content":[{"type":"text","text":"Find the flaky test"}]}}`+"\n")
	h.WaitFor(t, "a running subagent", snap(h, sid, func(s agentbridge.Snapshot) bool {
		return len(s.Subagents) == 1 && s.Subagents[0].ID == subID && s.Subagents[0].Status == agentbridge.SubagentRunning &&
			s.Subagents[0].Title == "Find the flaky test"
	}))
	if got := h.Snapshots(); len(got) != 1 {
		t.Fatalf("sessions %+v: the subagent must not be one", got)
	}
	sourcestest.Append(t, sub, answer+`{"type":"turn_ended","status":"success"}`+"\n")
	h.WaitFor(t, "the subagent completed", snap(h, sid, func(s agentbridge.Snapshot) bool {
		return len(s.Subagents) == 1 && s.Subagents[0].Status == agentbridge.SubagentCompleted
	}))
	if s, _ := h.Shown(sid); s.Cwd != "" || s.Status != agentbridge.StatusRunning {
		t.Errorf("parent %+v: want running, no cwd (a chat without a folder)", s)
	}
}

// TestIgnoredFiles: files beside the transcripts (another extension, a
// stem that is not the directory's, a FIFO, deeper directories) are not
// sessions and cost no diagnostic.
func TestIgnoredFiles(t *testing.T) {
	home := t.TempDir()
	proj := filepath.Join(ProjectsDir(home), "empty-window")
	sourcestest.Append(t, filepath.Join(proj, "agent-transcripts", sid, "other.jsonl"), prompt)
	sourcestest.Append(t, filepath.Join(proj, "agent-transcripts", sid, sid+".txt"), prompt)
	sourcestest.Append(t, filepath.Join(proj, "agent-transcripts", sid, "deep", "x", sid+".jsonl"), prompt)
	sourcestest.Append(t, filepath.Join(proj, "worker.log"), "log\n")
	sourcestest.Append(t, filepath.Join(proj, "agent-transcripts", sid+".jsonl"), prompt)
	h := run(t, sources.Options{Home: home, Processes: proctest.Running(t, "/opt/cursor-agent/cursor-agent", "/home/u")})
	sourcestest.Append(t, filepath.Join(proj, "agent-transcripts", subID, subID+".jsonl"), prompt)
	h.WaitFor(t, "the real one", snap(h, subID, func(s agentbridge.Snapshot) bool { return s.Status == agentbridge.StatusRunning }))
	if got := h.Snapshots(); len(got) != 1 {
		t.Errorf("sessions %+v, want the one", got)
	}
	if d := h.Diagnostics(); len(d) > 0 {
		t.Errorf("diagnostics %+v", d)
	}
}

// TestRemoved: a session's transcript removed, the session leaves; a
// subagent's removed, it stays listed on its parent as it was.
func TestRemoved(t *testing.T) {
	home := t.TempDir()
	// cursor-agent runs (the chat names no folder: any cwd)
	h := run(t, sources.Options{Home: home, Processes: proctest.Running(t, "/opt/cursor-agent/cursor-agent", "/home/u")})
	dir := filepath.Join(ProjectsDir(home), "empty-window", "agent-transcripts", sid)
	sourcestest.Append(t, filepath.Join(dir, sid+".jsonl"), prompt)
	sub := filepath.Join(dir, "subagents", subID+".jsonl")
	sourcestest.Append(t, sub, prompt)
	h.WaitFor(t, "the subagent", snap(h, sid, func(s agentbridge.Snapshot) bool { return len(s.Subagents) == 1 }))
	if err := os.Remove(sub); err != nil {
		t.Fatal(err)
	}
	sourcestest.Append(t, filepath.Join(dir, sid+".jsonl"), `{"type":"turn_ended","status":"success"}`+"\n")
	h.WaitFor(t, "done, the subagent still listed", snap(h, sid, func(s agentbridge.Snapshot) bool {
		return s.Status == sourcestest.StatusDone && len(s.Subagents) == 1
	}))
	if err := os.Remove(filepath.Join(dir, sid+".jsonl")); err != nil {
		t.Fatal(err)
	}
	h.WaitFor(t, "the session gone", func(*sourcestest.Hub) bool { _, ok := h.Shown(sid); return !ok })
}
